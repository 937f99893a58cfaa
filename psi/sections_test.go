package psi

import (
	"bytes"
	"reflect"
	"slices"
	"testing"
)

// gathered collects what a SectionReader hands over.
type gathered struct {
	pids     []uint16
	sections [][]byte
}

func (g *gathered) add(pid uint16, s []byte) {
	g.pids = append(g.pids, pid)
	g.sections = append(g.sections, bytes.Clone(s))
}

func readAll(r *SectionReader, pkts ...[]byte) *gathered {
	g := &gathered{}
	for _, p := range pkts {
		r.Feed(p, g.add)
	}
	return g
}

// shortSection builds a section with the short syntax and no CRC, as ECMs are sent.
func shortSection(tid byte, body []byte) []byte {
	return append([]byte{tid, 0x70 | byte(len(body)>>8), byte(len(body))}, body...)
}

func TestSectionReader(t *testing.T) {
	c := carousel{}
	// A PMT before the PAT that names its PID, a SIT on the network PID, a long private
	// section over several packets, an ECM, a PES PID and a scrambled PID.
	sit := section(0x7F, 0xFFFF, 0, 0, 0, []byte{0xF0, 0x00, 0x00, 0x01, 0x80, 0x00})
	private := section(0x90, 7, 0, 0, 0, bytes.Repeat([]byte{0x33}, 3000))
	ecm := shortSection(0x80, bytes.Repeat([]byte{0x44}, 60))
	var pkts [][]byte
	pkts = append(pkts, c.packets(0x100, demoPMT1)...)
	pkts = append(pkts, packet(0x101, true, 0, []byte{0, 0, 1, 0xE0, 0, 0, 0x80}))
	scrambled := packet(0x500, true, 0, append([]byte{0}, demoPAT...))
	scrambled[3] |= 0x80
	pkts = append(pkts, scrambled)
	pkts = append(pkts, c.packets(PATPID, demoPAT)...)
	pkts = append(pkts, c.packets(0x0010, sit)...)
	pkts = append(pkts, c.packets(0x0777, private)...)
	pkts = append(pkts, c.packets(0x0300, ecm)...)
	r := NewSectionReader()
	g := readAll(r, pkts...)
	want := []uint16{0x100, PATPID, 0x0010, 0x0777, 0x0300}
	if !slices.Equal(g.pids, want) {
		t.Fatalf("sections on PIDs %#x, want %#x", g.pids, want)
	}
	for i, s := range [][]byte{demoPMT1, demoPAT, sit, private, ecm} {
		if !bytes.Equal(g.sections[i], s) {
			t.Errorf("section %d on PID %#x differs", i, g.pids[i])
		}
	}
	if st := r.Stats(); st.Sections != 5 || st.CRCErrors+st.Malformed+st.Discontinuities != 0 {
		t.Errorf("stats %+v", st)
	}
	if st := r.PIDStats(0x777); st.Sections != 1 {
		t.Errorf("PID 0x777 stats %+v", st)
	}
	if st := r.PIDStats(0x101); st != (Stats{}) {
		t.Errorf("PES PID stats %+v", st)
	}
}

func TestSectionReaderDamage(t *testing.T) {
	c := carousel{}
	bad := bytes.Clone(demoPMT1)
	bad[len(bad)-5] ^= 1
	r := NewSectionReader()
	g := readAll(r, append(c.packets(0x100, bad), c.packets(0x100, demoPMT1)...)...)
	if len(g.sections) != 1 || !bytes.Equal(g.sections[0], demoPMT1) {
		t.Fatalf("sections %x", g.sections)
	}
	if st := r.PIDStats(0x100); st.CRCErrors != 1 || st.Sections != 1 {
		t.Errorf("stats %+v: want the bad CRC counted, the good section read", st)
	}

	// A PID whose payloads only look like sections is given up after a few of them.
	r = NewSectionReader()
	junk := func(i int) []byte {
		s := section(0x91, uint16(i), 0, 0, 0, []byte{byte(i), 1, 2, 3})
		s[len(s)-1] ^= 0x5A
		return s
	}
	for i := range 2 * giveUp {
		readAll(r, c.packets(0x200, junk(i))...)
		readAll(r, c.packets(0x12, junk(i))...)
	}
	if st := r.PIDStats(0x200); st.CRCErrors != giveUp {
		t.Errorf("junk PID: %+v, want %d CRC errors and no more", st, giveUp)
	}
	if st := r.PIDStats(0x12); st.CRCErrors != 2*giveUp {
		t.Errorf("reserved PID: %+v, want it read to the end", st)
	}
	// The TOT's CRC_32 is checked although its syntax is short.
	tot := recrc(shortSection(0x73, []byte{0xE7, 0x5A, 0x12, 0x34, 0x56, 0xF0, 0x00, 0, 0, 0, 0}))
	badTOT := bytes.Clone(tot)
	badTOT[4] ^= 1
	r = NewSectionReader()
	g = readAll(r, append(c.packets(0x14, badTOT), c.packets(0x14, tot)...)...)
	if len(g.sections) != 1 || r.PIDStats(0x14).CRCErrors != 1 {
		t.Errorf("TOT: %d sections, stats %+v", len(g.sections), r.PIDStats(0x14))
	}
}

func TestSectionReaderBounded(t *testing.T) {
	r := NewSectionReader()
	c := carousel{}
	for pid := uint16(0x20); pid < 0x20+2*maxReaderPIDs; pid++ {
		readAll(r, c.packets(pid, demoPMT2)...)
	}
	n := 0
	for pid := range MaxPID + 1 {
		if r.PIDStats(uint16(pid)).Sections > 0 {
			n++
		}
	}
	if n != maxReaderPIDs {
		t.Errorf("%d PIDs read, want the bound %d", n, maxReaderPIDs)
	}
}

func TestSectionReaderDoesNotAllocate(t *testing.T) {
	c := carousel{}
	var pkts [][]byte
	for range 8 {
		pkts = append(pkts, c.packets(PATPID, demoPAT)...)
		pkts = append(pkts, c.packets(0x100, demoPMT1)...)
		pkts = append(pkts, packet(0x101, true, 0, []byte{0, 0, 1, 0xE0}))
	}
	r := NewSectionReader()
	n := 0
	fn := func(uint16, []byte) { n++ }
	readAll(r, pkts...) // the PIDs' buffers are made here
	i := 0
	if a := testing.AllocsPerRun(1000, func() { r.Feed(pkts[i%len(pkts)], fn); i++ }); a != 0 {
		t.Fatalf("%v allocations per packet", a)
	}
	if n == 0 {
		t.Fatal("no section read")
	}
}

func TestParsers(t *testing.T) {
	tsid, progs, ok := ParsePAT(demoPAT)
	if !ok || tsid != 0x42 || !slices.Equal(progs, []Program{{0, 0x10}, {1, 0x100}, {2, 0x200}}) {
		t.Errorf("PAT: %#x %v %v", tsid, progs, ok)
	}
	svc, ok := ParsePMT(0x100, demoPMT1)
	if !ok || !reflect.DeepEqual(svc, demoServices[0]) {
		t.Errorf("PMT:\n got %+v\nwant %+v", svc, demoServices[0])
	}
	cat := section(0x01, 0xFFFF, 0, 0, 0, append(caDesc(0x0B00, 0x300), caDesc(0x1801, 0x301, 1, 2)...))
	if cas, ok := ParseCAT(cat); !ok || !reflect.DeepEqual(cas, []CA{{0x0B00, 0x300, nil}, {0x1801, 0x301, []byte{1, 2}}}) {
		t.Errorf("CAT %+v %v", cas, ok)
	}
	svcDesc := func(typ byte, provider, name string) []byte {
		d := []byte{0x48, byte(3 + len(provider) + len(name)), typ, byte(len(provider))}
		d = append(d, provider...)
		return append(append(d, byte(len(name))), name...)
	}
	body := []byte{0x12, 0x34, 0xFF} // original_network_id, reserved
	for _, e := range []struct {
		id   uint16
		desc []byte
	}{{1, svcDesc(0x01, "prov", "one")}, {2, nil}, {3, append([]byte{0x5F, 4, 0, 0, 0, 1}, svcDesc(0x19, "", "HD")...)}} {
		body = append(body, byte(e.id>>8), byte(e.id), 0xFC, 0x80|byte(len(e.desc)>>8), byte(len(e.desc)))
		body = append(body, e.desc...)
	}
	sdt, ok := ParseSDT(section(0x42, 0x0042, 0, 0, 0, body))
	if !ok || !sdt.Actual || sdt.TransportStreamID != 0x42 || sdt.OriginalNetworkID != 0x1234 || len(sdt.Services) != 3 ||
		string(sdt.Services[0].Name) != "one" || string(sdt.Services[0].Provider) != "prov" || sdt.Services[0].Type != 1 ||
		sdt.Services[1].Name != nil || string(sdt.Services[2].Name) != "HD" || sdt.Services[2].Type != 0x19 {
		t.Errorf("SDT %+v %v", sdt, ok)
	}
	if other, ok := ParseSDT(section(0x46, 0x0043, 0, 0, 0, body)); !ok || other.Actual {
		t.Errorf("SDT other %+v %v", other, ok)
	}

	// Damage is refused: a bad CRC, the wrong table, lengths that do not add up, a section
	// not yet applicable.
	bad := bytes.Clone(demoPMT1)
	bad[12]++
	notYet := bytes.Clone(demoPAT)
	notYet[5] &^= 1
	notYet = recrc(notYet)
	shortLoop := recrc(append(bytes.Clone(demoPMT1[:len(demoPMT1)-4]), 0x1B, 0xE1, 0x00, 0xF0, 0x05, 0, 0, 0, 0))
	shortLoop[2] += 9
	shortLoop = recrc(shortLoop)
	if _, ok := ParsePMT(0x100, bad); ok {
		t.Error("PMT with a bad CRC")
	}
	if _, ok := ParsePMT(0x100, demoPAT); ok {
		t.Error("PAT read as a PMT")
	}
	if _, ok := ParsePMT(0x100, shortLoop); ok {
		t.Error("PMT whose ES_info_length overruns the section")
	}
	if _, _, ok := ParsePAT(notYet); ok {
		t.Error("PAT with current_next_indicator 0")
	}
	if _, ok := ParseSDT(demoPAT); ok {
		t.Error("PAT read as an SDT")
	}
	if _, ok := ParseCAT(nil); ok {
		t.Error("empty CAT")
	}
}

func TestRegistrations(t *testing.T) {
	loop := append(append(reg("HDMV"), 0x0A, 4, 'e', 'n', 'g', 0), reg("CUEI")...)
	if got := Registrations(loop); !slices.Equal(got, []uint32{RegHDMV, RegCUEI}) {
		t.Errorf("registrations %#x", got)
	}
	var tags []uint8
	for tag := range EachDescriptor(append(bytes.Clone(loop), 0x52, 9, 1)) { // a damaged last one
		tags = append(tags, tag)
	}
	if !slices.Equal(tags, []uint8{0x05, 0x0A, 0x05}) {
		t.Errorf("tags %#x", tags)
	}
	for tag := range EachDescriptor(loop) {
		if tag == 0x0A {
			break // stopping early must not panic
		}
	}
}

func FuzzSectionReader(f *testing.F) {
	c := carousel{}
	var seed []byte
	for _, p := range append(c.packets(PATPID, demoPAT), c.packets(0x100, demoPMT1)...) {
		seed = append(seed, p...)
	}
	f.Add(seed)
	f.Add([]byte{0x47, 0x41, 0x00, 0x10, 0x00, 0x02, 0xB0, 0x20})
	f.Fuzz(func(t *testing.T, b []byte) {
		r := NewSectionReader()
		for len(b) > 0 {
			var p [PacketSize]byte
			n := copy(p[:], b)
			p[0] = 0x47
			r.Feed(p[:], func(pid uint16, s []byte) {
				if len(s) < 3 || 3+(int(s[1]&0x0F)<<8|int(s[2])) != len(s) {
					t.Fatalf("section of %d bytes with section_length %d", len(s), int(s[1]&0x0F)<<8|int(s[2]))
				}
				if s[1]&0x80 != 0 && CRC32(s) != 0 {
					t.Fatal("a long section with a bad CRC handed over")
				}
				ParsePAT(s)
				ParsePMT(pid, s)
				ParseCAT(s)
				ParseSDT(s)
			})
			b = b[n:]
		}
	})
}

// BenchmarkSectionReader feeds a mix of PSI and PES packets, in MB/s of packets.
func BenchmarkSectionReader(b *testing.B) {
	c := carousel{}
	var pkts [][]byte
	pkts = append(pkts, c.packets(PATPID, demoPAT)...)
	pkts = append(pkts, c.packets(0x100, demoPMT1)...)
	for i := range 30 {
		pkts = append(pkts, packet(0x101, i == 0, byte(i), []byte{0, 0, 1, 0xE0}))
	}
	r := NewSectionReader()
	fn := func(uint16, []byte) {}
	b.SetBytes(int64(len(pkts) * PacketSize))
	for b.Loop() {
		for _, p := range pkts {
			r.Feed(p, fn)
		}
	}
}
