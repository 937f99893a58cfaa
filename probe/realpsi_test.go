package probe

import (
	"bytes"
	"encoding/json"
	"io"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
)

// Tests of what broadcast and Blu-ray streams carry that simple muxers do not: PMTs before the
// PAT, registration descriptors, tables on the network PID other than the NIT, CA systems of
// many vendors.

// reg returns a registration_descriptor with a four-character format_identifier.
func reg(id string) []byte { return append([]byte{0x05, 4}, id...) }

func cat(bs ...[]byte) []byte { return bytes.Join(bs, nil) }

// probeBytes probes ts, read one byte at a time (as from a slow pipe), and fails the test on an
// error.
func probeBytes(t *testing.T, ts []byte) *Report {
	t.Helper()
	rep, err := Probe(iotest.OneByteReader(bytes.NewReader(ts)))
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// checkText requires each line of want in the text form of rep.
func checkText(t *testing.T, rep *Report, want ...string) {
	t.Helper()
	var b bytes.Buffer
	if err := rep.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	for _, w := range want {
		if !strings.Contains(b.String(), w) {
			t.Errorf("text lacks %q:\n%s", w, b.String())
		}
	}
}

// TestProbePMTBeforePAT reads a stream whose PMTs, SDT and CAT all come before its only PAT,
// as in a recording that starts just after a PAT: every service gets its PMT.
func TestProbePMTBeforePAT(t *testing.T) {
	sb := newStreamBuilder()
	sb.psi(0x0100, pmtSection(1, 0x101, caDesc(0x0B00, 0x200),
		esInfo{0x1B, 0x101, nil}, esInfo{0x06, 0x102, cat([]byte{0x6A, 1, 0}, caDesc(0x1801, 0x201))}))
	sb.psi(0x0110, pmtSection(2, 0x111, nil, esInfo{0x24, 0x111, nil}))
	sb.psi(0x0011, sdtSection(9, 1, sdtEntry{1, []byte("P"), []byte("First")}, sdtEntry{2, []byte("P"), []byte("Second")}))
	sb.psi(0x0001, catSection(caDesc(0x0B00, 0x300)))
	for range 5 {
		sb.pes(0x101, 2, -1, false)
		sb.pes(0x111, 0, -1, false)
	}
	sb.psi(0x0000, patSection(9, 0, 0x10, 1, 0x100, 2, 0x110))
	for range 5 {
		sb.pes(0x101, 3, -1, false)
	}
	rep := probeBytes(t, sb.buf)
	if len(rep.Services) != 2 {
		t.Fatalf("services %+v", rep.Services)
	}
	s1, s2 := rep.Services[0], rep.Services[1]
	if !s1.PMTSeen || !s2.PMTSeen || s1.Name != "First" || s2.Name != "Second" {
		t.Errorf("services not bound to their PMTs and SDT entries: %+v", rep.Services)
	}
	if len(s1.CA) != 1 || s1.CA[0] != (CA{0x0B00, "Conax", 0x200}) ||
		len(s1.Streams) != 2 || !slices.Equal(s1.Streams[1].CA, []CA{{0x1801, "Nagravision", 0x201}}) ||
		s1.Streams[1].TypeName != "AC-3 audio" || s2.Streams[0].TypeName != "HEVC video" {
		t.Errorf("service 1: %+v", s1)
	}
	if len(rep.EMM) != 1 || rep.PSIErrors != 0 {
		t.Errorf("EMM %+v, PSI errors %d", rep.EMM, rep.PSIErrors)
	}
	if p := pidEntry(rep, 0x101); p == nil || p.Description != "H.264 video of service 1" {
		t.Errorf("PID 0x101: %+v", p)
	}
	checkText(t, rep, "service 1 (0x0001) \"First\" from \"P\", PMT PID 0x0100, PCR PID 0x0101",
		"      CA Nagravision (0x1801), ECM PID 0x0201", "PMT of service 2")
}

// TestProbeUnboundPMT reads a PMT whose program the PAT does not list, and one on a PID
// other than the PAT gives: neither makes a service, both are named for what they are.
func TestProbeUnboundPMT(t *testing.T) {
	sb := newStreamBuilder()
	sb.psi(0x0000, patSection(1, 1, 0x100))
	sb.psi(0x0100, pmtSection(1, 0x101, nil, esInfo{0x02, 0x101, nil}))
	sb.psi(0x0700, pmtSection(7, 0x701, nil, esInfo{0x02, 0x701, nil}))
	sb.psi(0x0800, pmtSection(1, 0x101, nil, esInfo{0x1B, 0x101, nil})) // program 1, another PID
	rep := probeBytes(t, sb.buf)
	if len(rep.Services) != 1 || rep.Services[0].Streams[0].StreamType != 0x02 {
		t.Fatalf("services %+v", rep.Services)
	}
	for pid, want := range map[uint16]string{
		0x100: "PMT of service 1",
		0x700: "PMT of program 7 (not in the PAT)",
		0x800: "PMT of program 1 (not in the PAT)",
	} {
		if p := pidEntry(rep, pid); p == nil || p.Description != want || !slices.Equal(p.Tables, []string{"PMT"}) {
			t.Errorf("PID 0x%04X: %+v, want %q", pid, p, want)
		}
	}
}

// TestProbeHDMV reads a Blu-ray-like stream (192-byte packets, an "HDMV" registration in the
// program loop): the user-private stream types take their Blu-ray meaning, 0x86 among them.
func TestProbeHDMV(t *testing.T) {
	sb := newStreamBuilder()
	sb.psi(0x0000, patSection(0, 0, 0x1F, 1, 0x100))
	sb.psi(0x0100, pmtSection(1, 0x1011, cat(reg("HDMV"), []byte{0x88, 4, 0x0F, 0xFF, 0xFC, 0xFC}),
		esInfo{0x1B, 0x1011, nil},
		esInfo{0xEA, 0x1012, nil},
		esInfo{0x86, 0x1100, nil},
		esInfo{0x81, 0x1101, reg("AC-3")},
		esInfo{0x80, 0x1102, nil},
		esInfo{0x83, 0x1103, nil},
		esInfo{0x84, 0x1104, nil},
		esInfo{0x85, 0x1105, nil},
		esInfo{0x82, 0x1106, nil},
		esInfo{0xA1, 0x1A00, nil},
		esInfo{0x90, 0x1200, nil},
		esInfo{0x91, 0x1400, nil},
		esInfo{0x92, 0x1800, nil},
		esInfo{0xC5, 0x1900, nil}))
	rep := probeBytes(t, reframe(sb.buf, 192))
	if rep.Framing != 192 || len(rep.Services) != 1 {
		t.Fatalf("framing %d, services %+v", rep.Framing, rep.Services)
	}
	want := []string{"H.264 video", "VC-1 video", "DTS-HD Master Audio", "AC-3 audio", "LPCM audio",
		"Dolby TrueHD audio", "E-AC-3 audio", "DTS-HD High Resolution audio", "DTS audio",
		"E-AC-3 secondary audio", "PGS subtitles", "interactive graphics", "text subtitles", "user private (0xC5)"}
	var got []string
	for _, st := range rep.Services[0].Streams {
		got = append(got, st.TypeName)
	}
	if !slices.Equal(got, want) {
		t.Errorf("stream names\n got %q\nwant %q", got, want)
	}
	checkText(t, rep, "PID 0x1100  type 0x86  DTS-HD Master Audio", "PID 0x1200  type 0x90  PGS subtitles")
}

// TestProbeStreamTypes names streams from their DVB descriptors and registration descriptors
// where the stream type leaves the coding open.
func TestProbeStreamTypes(t *testing.T) {
	streams := []struct {
		es   esInfo
		want string
	}{
		{esInfo{0x86, 0, nil}, "SCTE 35 splice information"},
		{esInfo{0x86, 0, reg("CUEI")}, "SCTE 35 splice information"},
		{esInfo{0x06, 0, []byte{0x56, 5, 'd', 'e', 'u', 0x09, 0x00}}, "teletext"},
		{esInfo{0x06, 0, []byte{0x59, 8, 'e', 'n', 'g', 0x10, 0, 1, 0, 1}}, "DVB subtitles"},
		{esInfo{0x06, 0, []byte{0x7A, 1, 0}}, "E-AC-3 audio"},
		{esInfo{0x06, 0, []byte{0x7B, 5, 0, 0, 0, 0, 0}}, "DTS audio"},
		{esInfo{0x06, 0, []byte{0x7C, 1, 0x50}}, "AAC audio"},
		{esInfo{0x06, 0, []byte{0x7F, 4, 0x11, 0, 0, 0}}, "T2-MI"},
		{esInfo{0x06, 0, []byte{0x7F, 2, 0x15, 0}}, "AC-4 audio"},
		{esInfo{0x06, 0, []byte{0x7F, 2, 0x06, 0x80}}, "private data"}, // supplementary audio alone
		{esInfo{0x06, 0, reg("BSSD")}, "SMPTE 302M audio"},
		{esInfo{0x06, 0, cat(reg("Opus"), []byte{0x7F, 2, 0x80, 2})}, "Opus audio"},
		{esInfo{0x06, 0, reg("AV01")}, "AV1 video"},
		{esInfo{0x06, 0, reg("CUEI")}, "private data"}, // CUEI names SCTE 35 streams only
		{esInfo{0x15, 0, reg("KLVA")}, "KLV metadata"},
		{esInfo{0x15, 0, reg("ID3 ")}, "ID3 metadata"},
		{esInfo{0x81, 0, reg("AC-3")}, "AC-3 audio"},
		{esInfo{0x87, 0, nil}, "E-AC-3 audio"},
		{esInfo{0xEA, 0, reg("VC-1")}, "VC-1 video"},
		{esInfo{0xD1, 0, reg("drac")}, "Dirac video"},
		{esInfo{0x24, 0, reg("HEVC")}, "HEVC video"},
		{esInfo{0x1B, 0, reg("HDMV")}, "H.264 video"},
		{esInfo{0x90, 0, nil}, "user private (0x90)"}, // PGS only with HDMV
		{esInfo{0x05, 0, nil}, "private sections"},
		{esInfo{0x0B, 0, nil}, "DSM-CC U-N messages"},
	}
	var es []esInfo
	for i, s := range streams {
		s.es.pid = 0x200 + uint16(i)
		es = append(es, s.es)
	}
	sb := newStreamBuilder()
	sb.psi(0x0000, patSection(1, 1, 0x100))
	sb.psi(0x0100, pmtSection(1, 0x200, reg("CUEI"), es...))
	rep := probeBytes(t, sb.buf)
	if len(rep.Services) != 1 || len(rep.Services[0].Streams) != len(streams) {
		t.Fatalf("services %+v", rep.Services)
	}
	for i, st := range rep.Services[0].Streams {
		if st.TypeName != streams[i].want {
			t.Errorf("stream type 0x%02X with descriptors % X: %q, want %q", st.StreamType, streams[i].es.descs, st.TypeName, streams[i].want)
		}
	}
}

// TestProbeNetworkPIDTables names the tables of the network PID and of the reserved PIDs by
// their table_id: a SIT where the PAT's program 0 points (partial transport streams), a SIT
// on PID 0x1F, an SDT with a BAT, TDT and TOT, SCTE 35, ECMs and EMMs.
func TestProbeNetworkPIDTables(t *testing.T) {
	sit := section(0x7F, 0xFFFF, []byte{0xF0, 0x00, 0x00, 0x01, 0x80, 0x00})
	nit := section(0x40, 0x0001, []byte{0xF0, 0x00, 0xF0, 0x00})
	bat := section(0x4A, 0x0001, []byte{0xF0, 0x00, 0xF0, 0x00})
	eit := section(0x4E, 0x0001, []byte{0, 9, 0, 1, 0, 0x4E})
	tdt := []byte{0x70, 0x70, 0x05, 0xE7, 0x5A, 0x12, 0x34, 0x56}
	splice := section(0xFC, 0, nil) // long syntax is not SCTE 35's, but its table_id is
	ecm := []byte{0x80, 0x70, 0x04, 1, 2, 3, 4}
	emm := []byte{0x82, 0x70, 0x04, 5, 6, 7, 8}
	psip := section(0xC7, 0, []byte{0, 0})

	sb := newStreamBuilder()
	sb.psi(0x0000, patSection(1, 0, 0x10, 1, 0x100))
	sb.psi(0x0100, pmtSection(1, 0x8191, caDesc(0x4AE0, 0x600), esInfo{0x86, 0x500, reg("CUEI")},
		esInfo{0x05, 0x501, []byte{0x6F, 3, 0x00, 0x10, 0x01}}))
	sb.psi(0x0501, section(0x74, 0x0010, []byte{0xF0, 0x00, 0xF0, 0x00}))
	sb.psi(0x0010, sit)
	sb.psi(0x001F, sit)
	sb.psi(0x0011, sdtSection(1, 1, sdtEntry{1, nil, []byte("S")}))
	sb.psi(0x0011, bat)
	sb.psi(0x0012, eit)
	sb.psi(0x0014, tdt)
	sb.psi(0x0500, splice)
	sb.psi(0x0600, ecm)
	sb.psi(0x0601, emm)
	sb.psi(0x0602, nit) // a NIT on a PID nothing names
	sb.psi(0x1FFB, psip)
	rep := probeBytes(t, sb.buf)
	if rep.NITPID == nil || *rep.NITPID != 0x10 {
		t.Errorf("NIT PID %v", rep.NITPID)
	}
	for pid, want := range map[uint16]struct {
		desc   string
		tables []string
	}{
		0x0010: {"SIT", []string{"SIT"}},
		0x001F: {"SIT", []string{"SIT"}},
		0x0011: {"SDT/BAT", []string{"SDT", "BAT"}},
		0x0012: {"EIT", []string{"EIT"}},
		0x0014: {"TDT", []string{"TDT"}},
		0x0500: {"SCTE 35 splice information of service 1", []string{"SCTE 35"}},
		0x0501: {"private sections (AIT) of service 1", []string{"AIT"}},
		0x0600: {"ECM (DRE-Crypt (Cifra) 0x4AE0) of service 1", []string{"ECM"}},
		0x0601: {"EMM", []string{"EMM"}},
		0x0602: {"NIT", []string{"NIT"}},
		0x1FFB: {"MGT", []string{"MGT"}},
	} {
		p := pidEntry(rep, pid)
		if p == nil || p.Description != want.desc || !slices.Equal(p.Tables, want.tables) {
			t.Errorf("PID 0x%04X: %+v, want %q, tables %q", pid, p, want.desc, want.tables)
		}
	}
	checkText(t, rep, "  SIT\n", "  SDT/BAT\n")

	// The JSON carries the tables too, beside the description.
	js, _ := json.Marshal(rep)
	if !bytes.Contains(js, []byte(`"description":"SIT","tables":["SIT"]`)) {
		t.Errorf("JSON: %s", js)
	}
}

// TestProbeCASystems names CA systems of many vendors, from the DVB registry's ranges.
func TestProbeCASystems(t *testing.T) {
	want := map[uint16]string{
		0x0005: "ARIB B-CAS (ISDB) / OMA BCAST",
		0x0100: "Seca/Mediaguard (Canal+)", 0x01FF: "Seca/Mediaguard (Canal+)",
		0x0500: "Viaccess", 0x0604: "Irdeto", 0x0919: "NDS Videoguard", 0x0963: "NDS Videoguard",
		0x0B00: "Conax", 0x0D02: "Cryptoworks (Irdeto)", 0x0E11: "PowerVu (Scientific Atlanta)",
		0x1702: "BetaCrypt/Verimatrix", 0x1722: "BetaCrypt/Verimatrix", 0x1830: "Nagravision",
		0x2600: "BISS-1 (EBU)", 0x2602: "BISS-2 (EBU)", 0x26FF: "EBU (BISS)",
		0x4800: "Accessgate (Telemann)", 0x4825: "ChinaEPG",
		0x4A20: "AlphaCrypt", 0x4AE0: "DRE-Crypt (Cifra)", 0x4AE1: "DRE-Crypt (Cifra)",
		0x4AEA: "Cryptoguard", 0x1EC0: "Cryptoguard", 0x4AEE: "Bulcrypt (Deltacom)", 0x4AFC: "Panaccess",
		0x5601: "Verimatrix", 0x4B42: "CI Plus", 0x7BE1: "DRE-Crypt (OOO)",
		0x0003: "unknown", 0x3000: "unknown", 0xFFFF: "unknown",
	}
	var descs []byte
	ids := make([]uint16, 0, len(want))
	for id := range want {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for i, id := range ids {
		descs = append(descs, caDesc(id, 0x400+uint16(i))...)
	}
	sb := newStreamBuilder()
	sb.psi(0x0000, patSection(1, 1, 0x100))
	half := len(ids) / 2 * 6 // each CA descriptor is 6 bytes: half at each level
	sb.psi(0x0100, pmtSection(1, 0x101, descs[:half], esInfo{0x1B, 0x101, descs[half:]}))
	rep := probeBytes(t, sb.buf)
	got := map[uint16]string{}
	for _, ca := range rep.Services[0].CA {
		got[ca.SystemID] = ca.SystemName
	}
	for _, ca := range rep.Services[0].Streams[0].CA {
		got[ca.SystemID] = ca.SystemName
	}
	for id, w := range want {
		if got[id] != w {
			t.Errorf("CA system 0x%04X: %q, want %q", id, got[id], w)
		}
	}
}

// TestProbeDamagedPSIOnDataPIDs feeds a PID whose payloads only look like sections: it costs
// no PSI errors, and a PID of real PSI with a damaged section still counts it.
func TestProbeDamagedPSIOnDataPIDs(t *testing.T) {
	sb := newStreamBuilder()
	sb.psi(0x0000, patSection(1, 1, 0x100))
	sb.psi(0x0100, pmtSection(1, 0x101, nil, esInfo{0x06, 0x101, []byte{0x7F, 4, 0x11, 0, 0, 0}}))
	for i := range 40 {
		// T2-MI packets: a pointer_field, then packet headers that read as long sections
		// with CRCs that never match.
		junk := section(0x00, uint16(i), []byte{byte(i), 0x10, 0x20})
		junk[len(junk)-1] ^= 0xA5
		sb.psi(0x0101, junk)
	}
	// T2-MI packets as TS 102 773 lays them out: packet_type (0x00 baseband frame, 0x10 L1
	// current, 0x20 timestamp), packet_count, superframe_idx, rfu, payload_length in bits.
	for i := range 200 {
		typ := []byte{0x00, 0x10, 0x20}[i%3]
		p := bytes.Repeat([]byte{0xFF}, 188)
		p[0], p[1], p[2], p[3] = 0x47, 0x40|0x01, 0x02, 0x10|byte(i&15)
		copy(p[4:], []byte{0x00, typ, byte(i), 0x30, 0x00, 0x05, 0x80, 0x00, byte(i * 7)})
		for k := 13; k < 188; k++ {
			p[k] = byte(k * (i + 3))
		}
		sb.buf = append(sb.buf, p...)
	}
	rep := probeBytes(t, sb.buf)
	if rep.PSIErrors != 0 {
		t.Errorf("%d PSI errors from a T2-MI PID", rep.PSIErrors)
	}
	if p := pidEntry(rep, 0x102); p == nil || len(p.Tables) != 0 || p.Description != "not in the PSI" {
		t.Errorf("PID 0x102: %+v", p)
	}
	if p := pidEntry(rep, 0x101); p == nil || p.Description != "T2-MI of service 1" || len(p.Tables) != 0 {
		t.Errorf("PID 0x101: %+v", p)
	}
}

// TestProbePipe reads through an io.Pipe, as from stdin, a stream whose PMT precedes its PAT.
func TestProbePipe(t *testing.T) {
	sb := newStreamBuilder()
	sb.psi(0x0100, pmtSection(1, 0x101, nil, esInfo{0x1B, 0x101, nil}))
	sb.psi(0x0000, patSection(1, 1, 0x100))
	pr, pw := io.Pipe()
	go func() {
		for b := sb.buf; len(b) > 0; b = b[min(len(b), 100):] {
			pw.Write(b[:min(len(b), 100)])
		}
		pw.Close()
	}()
	rep, err := Probe(pr)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Services) != 1 || !rep.Services[0].PMTSeen {
		t.Errorf("services %+v", rep.Services)
	}
}
