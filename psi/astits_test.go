package psi

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/asticode/go-astits"
)

// go-astits is the oracle of this package's section parsers: both read the same PAT, PMT,
// CAT and SDT sections, and where both read a section they must say the same of it: program
// numbers and PIDs; stream types and elementary PIDs; the CA_system_ID and CA_PID of every
// CA_descriptor; how each descriptor loop is cut into descriptors (tag and length); the
// transport_stream_id, original_network_id, service_ids and service names of an SDT.
//
// Where they differ on what to accept, nothing is compared: psi refuses sections that go-astits
// reads (the section_syntax_indicator clear, current_next_indicator 0, a PMT that is not
// section 0, loops that overrun their section: go-astits reads on into the CRC_32), and
// go-astits refuses sections that psi reads (a descriptor it knows whose body is not as it
// expects fails the whole section). go-astits has no CAT parser (table_id 0x01 ends its
// section loop, and its demuxer leaves PID 1 to the caller), so the descriptor loop of a CAT
// is handed to it as the program_info loop of a PMT made for the purpose; nor does it decode
// the CA_descriptor (tag 0x09 comes back as an unknown descriptor's raw bytes), so its
// system and PID are read from the first 4 bytes of the body it delimited.

var updateSeeds = flag.Bool("update-seeds", false, "rewrite testdata/fuzz/FuzzAstitsOracle from astitsSeeds")

// astitsSeeds are the seed sections of FuzzAstitsOracle, each prefixed with the mode byte the
// target reads (0: the section as it is). They cover every table both read, with every kind of
// descriptor compared, and the sections of the ffmpeg-made testdata/two-programs.ts.
func astitsSeeds(t testing.TB) [][]byte {
	caPMT := pmt(0x1234, 3, 0x101, append(caDesc(0x0B00, 0x1FF0), caDesc(0x2600, 0x0100, 1, 2, 3)...),
		es{0x1B, 0x101, nil},
		es{0x0F, 0x102, append([]byte{0x0A, 4, 'e', 'n', 'g', 0}, caDesc(0x0500, 0x0200)...)},
		es{0x06, 0x103, []byte{0x05, 4, 'A', 'C', '-', '3', 0x52, 1, 7}})
	pat := sized([]byte{0x00, 0xB0, 0, 0x00, 0x07, 0xC1, 0, 0, 0, 0, 0xE0, 0x10, 0, 1, 0xE1, 0, 0x12, 0x34, 0xE1, 0x10})
	cat := sized(append([]byte{0x01, 0xB0, 0, 0xFF, 0xFF, 0xC1, 0, 0}, append(caDesc(0x0B00, 0x1F00), caDesc(0x1801, 0x1F01, 0xAA)...)...))
	sdt := sdtSection(0x42, 7, 0x20, []sdtEntry{
		{1, serviceDesc(1, "Provider", "One")},
		{2, append([]byte{0x5F, 4, 0, 0, 0, 2}, serviceDesc(0x19, "", "\x15Two UTF-8")...)},
		{3, nil},
	})
	other := sdtSection(0x46, 9, 0x21, []sdtEntry{{5, serviceDesc(2, "P", "Radio")}})
	seeds := [][]byte{pat, caPMT, cat, sdt, other, sdPMT, sdPMTWith}

	stream, err := os.ReadFile("testdata/two-programs.ts")
	if err != nil {
		t.Fatal(err)
	}
	r := NewSectionReader()
	seen := map[string]bool{}
	for i := 0; i+PacketSize <= len(stream); i += PacketSize {
		r.Feed(stream[i:i+PacketSize], func(_ uint16, s []byte) {
			switch s[0] {
			case 0x00, 0x01, 0x02, 0x42, 0x46:
				if !seen[string(s)] {
					seen[string(s)] = true
					seeds = append(seeds, bytes.Clone(s))
				}
			}
		})
	}
	for i, s := range seeds {
		seeds[i] = append([]byte{0}, s...)
	}
	return seeds
}

type sdtEntry struct {
	id    uint16
	descs []byte
}

// sdtSection returns an SDT section (EN 300 468, 5.2.3) of table_id tid.
func sdtSection(tid byte, tsid, onid uint16, services []sdtEntry) []byte {
	s := []byte{tid, 0xF0, 0, byte(tsid >> 8), byte(tsid), 0xC1, 0, 0, byte(onid >> 8), byte(onid), 0xFF}
	for _, e := range services {
		s = append(s, byte(e.id>>8), byte(e.id), 0xFC|0x01, 0x80|0x10|byte(len(e.descs)>>8), byte(len(e.descs)))
		s = append(s, e.descs...)
	}
	return sized(s)
}

// serviceDesc returns a service_descriptor (EN 300 468, 6.2.33).
func serviceDesc(typ byte, provider, name string) []byte {
	b := []byte{0x48, byte(3 + len(provider) + len(name)), typ, byte(len(provider))}
	b = append(b, provider...)
	b = append(b, byte(len(name)))
	return append(b, name...)
}

// sized sets section_length of the section s (without its CRC_32) and appends the CRC_32.
func sized(s []byte) []byte {
	s[1], s[2] = s[1]&0xF0|byte((len(s)+1)>>8), byte(len(s)+1)
	return withCRC(s)
}

// TestAstitsSeeds: on every seed, both parsers read the section, and agree; the seed corpus in
// testdata is the seeds'. Without this, a parser that refused everything would pass the fuzz
// target, which compares only what both read.
func TestAstitsSeeds(t *testing.T) {
	seeds := astitsSeeds(t)
	dir := filepath.Join("testdata", "fuzz", "FuzzAstitsOracle")
	if *updateSeeds {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for i, s := range seeds {
		path := filepath.Join(dir, fmt.Sprintf("seed-%02d-table-%02x", i, s[1]))
		file := "go test fuzz v1\n[]byte(" + strconv.Quote(string(s)) + ")\n"
		if *updateSeeds {
			if err := os.WriteFile(path, []byte(file), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if b, err := os.ReadFile(path); err != nil || string(b) != file {
			t.Errorf("%s is not seed %d (go test ./psi -run TestAstitsSeeds -update-seeds): %v", path, i, err)
		}
		if both, err := compareWithAstits(s); err != nil || !both {
			t.Errorf("seed %d (table_id %#02x): both read it: %v; %v", i, s[1], both, err)
		}
	}
}

// FuzzAstitsOracle holds psi's parsers to go-astits's. The input is a mode byte and a
// section; with bit 0 of the mode set, section_length is set to fit and a right CRC_32 is
// appended, so that the fuzzer reaches the loops inside sections rather than their CRC.
func FuzzAstitsOracle(f *testing.F) {
	for _, s := range astitsSeeds(f) {
		f.Add(s)
		fixed := append([]byte{1}, s[1:len(s)-4]...) // the same, CRC_32 made by the target
		f.Add(fixed)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if _, err := compareWithAstits(in); err != nil {
			t.Fatal(err)
		}
	})
}

// compareWithAstits reads the section of the fuzz input in with psi and, when psi reads it,
// with go-astits, and returns whether both read it, and an error saying where they disagree.
func compareWithAstits(in []byte) (both bool, err error) {
	if len(in) < 4 {
		return false, nil
	}
	sec := bytes.Clone(in[1:])
	if in[0]&1 != 0 {
		sec = sized(sec[:min(len(sec), maxSection-4)])
	}
	switch sec[0] {
	case tableIDPAT:
		tsid, progs, ok := ParsePAT(sec)
		if !ok {
			return false, nil
		}
		a := astitsRead(packetize(0, 0, sec)).PAT
		if a == nil {
			return false, nil
		}
		if a.TransportStreamID != tsid || len(a.Programs) != len(progs) {
			return true, fmt.Errorf("PAT: psi reads transport_stream_id %#x, %d programs; astits %#x, %d", tsid, len(progs), a.TransportStreamID, len(a.Programs))
		}
		for i, p := range progs {
			if a.Programs[i].ProgramNumber != p.Number || a.Programs[i].ProgramMapID != p.PID {
				return true, fmt.Errorf("PAT program %d: psi %d on %#x, astits %d on %#x", i, p.Number, p.PID, a.Programs[i].ProgramNumber, a.Programs[i].ProgramMapID)
			}
		}
		return true, nil
	case tableIDPMT:
		svc, ok := ParsePMT(0x100, sec)
		if !ok {
			return false, nil
		}
		d := astitsPMT(sec)
		if d == nil {
			return false, nil
		}
		return true, comparePMT(svc, d)
	case 0x01:
		cas, ok := ParseCAT(sec)
		if !ok {
			return false, nil
		}
		loop := sec[8 : len(sec)-4]
		if 12+len(loop)+4 > maxSection {
			return false, nil
		}
		wrap := sized(append([]byte{0x02, 0xB0, 0, 0, 1, 0xC1, 0, 0, 0xFF, 0xFF, 0xF0 | byte(len(loop)>>8), byte(len(loop))}, loop...))
		d := astitsPMT(wrap)
		if d == nil {
			return false, nil
		}
		if err := compareLoop("CAT", loop, d.ProgramDescriptors); err != nil {
			return true, err
		}
		return true, compareCA("CAT", cas, d.ProgramDescriptors)
	case 0x42, 0x46:
		sdt, ok := ParseSDT(sec)
		if !ok {
			return false, nil
		}
		d := astitsRead(packetize(0x11, 0, sec)).SDT
		if d == nil {
			return false, nil
		}
		return true, compareSDT(sdt, d)
	}
	return false, nil
}

// astitsPMT reads the PMT section sec with go-astits, after a PAT that puts its program on
// PID 0x100 (go-astits reads a PMT only on a PID a PAT named), or returns nil.
func astitsPMT(sec []byte) *astits.PMTData {
	program := be16(sec[3:])
	pat := sized([]byte{0x00, 0xB0, 0, 0, 1, 0xC1, 0, 0, byte(program >> 8), byte(program), 0xE1, 0x00})
	return astitsRead(append(packetize(0, 0, pat), packetize(0x100, 0, sec)...)).PMT
}

// astitsData is the last table of each kind that go-astits read from a stream.
type astitsData struct {
	PAT *astits.PATData
	PMT *astits.PMTData
	SDT *astits.SDTData
}

// astitsRead demuxes the TS packets stream with go-astits.
func astitsRead(stream []byte) (out astitsData) {
	defer func() {
		// A panic of go-astits on a damaged section is its own failure, not a disagreement:
		// it reads nothing then.
		if recover() != nil {
			out = astitsData{}
		}
	}()
	dmx := astits.NewDemuxer(context.Background(), bytes.NewReader(stream), astits.DemuxerOptPacketSize(PacketSize))
	for range 16 {
		d, err := dmx.NextData()
		if errors.Is(err, astits.ErrNoMorePackets) {
			break
		}
		if err != nil || d == nil {
			continue
		}
		switch {
		case d.PAT != nil:
			out.PAT = d.PAT
		case d.PMT != nil:
			out.PMT = d.PMT
		case d.SDT != nil:
			out.SDT = d.SDT
		}
	}
	return out
}

// packetize cuts the section s into TS packets of pid, the first with a pointer_field of 0,
// the last filled with stuffing.
func packetize(pid uint16, cc byte, s []byte) []byte {
	var out []byte
	payload := append([]byte{0}, s...)
	for first := true; first || len(payload) > 0; first = false {
		p := bytes.Repeat([]byte{0xFF}, PacketSize)
		p[0], p[1], p[2], p[3] = 0x47, byte(pid>>8), byte(pid), 0x10|cc&0x0F
		if first {
			p[1] |= 0x40
		}
		payload = payload[copy(p[4:], payload):]
		out = append(out, p...)
		cc++
	}
	return out
}

func comparePMT(svc Service, d *astits.PMTData) error {
	if d.ProgramNumber != svc.Number || d.PCRPID != svc.PCRPID || len(d.ElementaryStreams) != len(svc.Streams) {
		return fmt.Errorf("PMT: psi reads program %d, PCR PID %#x, %d streams; astits %d, %#x, %d",
			svc.Number, svc.PCRPID, len(svc.Streams), d.ProgramNumber, d.PCRPID, len(d.ElementaryStreams))
	}
	if err := compareLoop("program_info", svc.Descriptors, d.ProgramDescriptors); err != nil {
		return err
	}
	if err := compareCA("program_info", svc.CA, d.ProgramDescriptors); err != nil {
		return err
	}
	for i, st := range svc.Streams {
		a := d.ElementaryStreams[i]
		if uint8(a.StreamType) != st.Type || a.ElementaryPID != st.PID {
			return fmt.Errorf("PMT stream %d: psi reads type %#x on %#x; astits %#x on %#x", i, st.Type, st.PID, uint8(a.StreamType), a.ElementaryPID)
		}
		what := fmt.Sprintf("ES_info %d", i)
		if err := compareLoop(what, st.Descriptors, a.ElementaryStreamDescriptors); err != nil {
			return err
		}
		if err := compareCA(what, st.CA, a.ElementaryStreamDescriptors); err != nil {
			return err
		}
	}
	return nil
}

// compareLoop checks that go-astits cut the descriptor loop as psi does: the same tags and
// lengths, in order.
func compareLoop(what string, loop []byte, ds []*astits.Descriptor) error {
	i := 0
	for tag, body := range EachDescriptor(loop) {
		if i >= len(ds) || ds[i].Tag != tag || int(ds[i].Length) != len(body) {
			return fmt.Errorf("%s descriptor %d: psi reads tag %#x of %d bytes; astits %s", what, i, tag, len(body), describe(ds, i))
		}
		i++
	}
	if i != len(ds) {
		return fmt.Errorf("%s: psi reads %d descriptors, astits %d", what, i, len(ds))
	}
	return nil
}

func describe(ds []*astits.Descriptor, i int) string {
	if i >= len(ds) {
		return "none"
	}
	return fmt.Sprintf("tag %#x of %d bytes", ds[i].Tag, ds[i].Length)
}

// compareCA checks psi's CA descriptors against the CA_descriptors that go-astits delimited.
func compareCA(what string, cas []CA, ds []*astits.Descriptor) error {
	var want []CA
	for _, d := range ds {
		if d.Tag != TagCA || d.Length < 4 || d.Unknown == nil {
			continue
		}
		b := d.Unknown.Content
		want = append(want, CA{SystemID: be16(b), PID: be16(b[2:]) & 0x1FFF, Private: b[4:]})
	}
	if len(want) != len(cas) {
		return fmt.Errorf("%s: psi reads %d CA_descriptors, astits %d", what, len(cas), len(want))
	}
	for i, c := range cas {
		if c.SystemID != want[i].SystemID || c.PID != want[i].PID || !bytes.Equal(c.Private, want[i].Private) {
			return fmt.Errorf("%s CA_descriptor %d: psi reads %#04x on %#x (% x), astits %#04x on %#x (% x)", what, i,
				c.SystemID, c.PID, c.Private, want[i].SystemID, want[i].PID, want[i].Private)
		}
	}
	return nil
}

func compareSDT(sdt SDT, d *astits.SDTData) error {
	if d.TransportStreamID != sdt.TransportStreamID || d.OriginalNetworkID != sdt.OriginalNetworkID || len(d.Services) != len(sdt.Services) {
		return fmt.Errorf("SDT: psi reads transport_stream_id %#x, original_network_id %#x, %d services; astits %#x, %#x, %d",
			sdt.TransportStreamID, sdt.OriginalNetworkID, len(sdt.Services), d.TransportStreamID, d.OriginalNetworkID, len(d.Services))
	}
	for i, s := range sdt.Services {
		a := d.Services[i]
		if a.ServiceID != s.ID {
			return fmt.Errorf("SDT service %d: psi reads service_id %d, astits %d", i, s.ID, a.ServiceID)
		}
		what := fmt.Sprintf("SDT service %d", s.ID)
		if err := compareLoop(what, s.Descriptors, a.Descriptors); err != nil {
			return err
		}
		// psi names the service from the first service_descriptor whose names fit in it;
		// go-astits decodes each one, reading on past its end when the lengths inside run
		// over (it seeks back to the descriptor's end after), so only the one psi took is
		// compared.
		k := 0
		for tag, b := range EachDescriptor(s.Descriptors) {
			if tag == 0x48 && len(b) >= 2 && 2+int(b[1]) < len(b) && 3+int(b[1])+int(b[2+int(b[1])]) <= len(b) {
				sd := a.Descriptors[k].Service
				if sd == nil || sd.Type != s.Type || !bytes.Equal(sd.Provider, s.Provider) || !bytes.Equal(sd.Name, s.Name) {
					return fmt.Errorf("%s: psi reads type %#x, provider %q, name %q; astits %+v", what, s.Type, s.Provider, s.Name, sd)
				}
				break
			}
			k++
		}
	}
	return nil
}

// TestParseSDTDescriptorLoop: an SDT whose service descriptor loop is not filled exactly by its
// descriptors is refused, as a PMT's is; go-astits would read the descriptor that overruns the
// loop from the bytes after it (the fuzz input that found it is kept in testdata).
func TestParseSDTDescriptorLoop(t *testing.T) {
	good := sdtSection(0x42, 1, 2, []sdtEntry{{1, serviceDesc(1, "P", "N")}})
	if _, ok := ParseSDT(good); !ok {
		t.Fatal("a good SDT refused")
	}
	for _, loop := range [][]byte{{0x48}, {0x48, 5, 1, 0, 0}, append(serviceDesc(1, "P", "N"), 0x30, 0x30)} {
		if _, ok := ParseSDT(sdtSection(0x42, 1, 2, []sdtEntry{{1, loop}})); ok {
			t.Errorf("loop % x read", loop)
		}
	}
}
