package probe

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"github.com/tsdescramble/tsdescramble/ts"
	"io"
	"math"
	"runtime"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/tsdescramble/tsdescramble/psi"
)

// checkCounts compares the PIDs of a report with the counts worked out while building the stream.
func checkCounts(t *testing.T, rep *Report, want map[uint16]*expected) {
	t.Helper()
	if len(rep.PIDs) != len(want) {
		var got []uint16
		for _, p := range rep.PIDs {
			got = append(got, p.PID)
		}
		t.Errorf("report lists %d PIDs %#x, want %d", len(rep.PIDs), got, len(want))
	}
	var total int64
	for _, p := range rep.PIDs {
		w := want[p.PID]
		if w == nil {
			t.Errorf("PID 0x%04X in the report is not in the stream", p.PID)
			continue
		}
		got := expected{packets: p.Packets, clear: p.Clear, even: p.Even, odd: p.Odd, reserved: p.Reserved, periods: p.CryptoPeriods}
		w2 := *w
		w2.last = 0
		if got != w2 {
			t.Errorf("PID 0x%04X (%s): got packets %d clear %d even %d odd %d reserved %d periods %d, want %d %d %d %d %d %d",
				p.PID, p.Description, got.packets, got.clear, got.even, got.odd, got.reserved, got.periods,
				w.packets, w.clear, w.even, w.odd, w.reserved, w.periods)
		}
		total += p.Packets
	}
	if total != rep.Packets {
		t.Errorf("PID counts add up to %d packets, report says %d", total, rep.Packets)
	}
}

func pidEntry(rep *Report, pid uint16) *PID {
	for i := range rep.PIDs {
		if rep.PIDs[i].PID == pid {
			return &rep.PIDs[i]
		}
	}
	return nil
}

func TestProbeSynthetic(t *testing.T) {
	syn := buildSynthetic(12)
	rep, err := Probe(bytes.NewReader(syn.ts))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Framing != 188 || rep.Bytes != int64(len(syn.ts)) || rep.Packets != int64(len(syn.ts)/188) || rep.SkippedBytes != 0 {
		t.Errorf("framing %d, bytes %d, packets %d, skipped %d; want 188, %d, %d, 0",
			rep.Framing, rep.Bytes, rep.Packets, rep.SkippedBytes, len(syn.ts), len(syn.ts)/188)
	}
	if rep.PSIErrors != 0 || rep.PSIFailure != "" {
		t.Errorf("PSI errors %d %q", rep.PSIErrors, rep.PSIFailure)
	}
	checkCounts(t, rep, syn.want)

	// Timing: the PCRs cross the 33-bit wrap one second in.
	tm := rep.Timing
	if tm == nil {
		t.Fatal("no timing")
	}
	if tm.PCRPID != synVideo1 || tm.PCRs != syn.pcrs || tm.Discontinuities != 0 {
		t.Errorf("timing on PID 0x%04X with %d PCRs, %d discontinuities; want 0x%04X, %d, 0", tm.PCRPID, tm.PCRs, tm.Discontinuities, synVideo1, syn.pcrs)
	}
	if math.Abs(tm.DurationSeconds-syn.duration) > 1e-9 {
		t.Errorf("duration %.9f s, want %.9f s", tm.DurationSeconds, syn.duration)
	}
	wantRate := float64(syn.pcrPackets*188*8) / syn.duration
	if math.Abs(float64(tm.Bitrate)-wantRate) > 1 {
		t.Errorf("bitrate %d, want %.0f", tm.Bitrate, wantRate)
	}

	// Tables.
	if rep.TransportStreamID == nil || *rep.TransportStreamID != synTSID {
		t.Errorf("transport_stream_id %v, want 0x%04X", rep.TransportStreamID, synTSID)
	}
	if len(rep.Services) != 2 {
		t.Fatalf("%d services, want 2: %+v", len(rep.Services), rep.Services)
	}
	s1, s2 := rep.Services[0], rep.Services[1]
	if s1.Number != 1 || s1.PMTPID != synPMT1 || !s1.PMTSeen || s1.PCRPID == nil || *s1.PCRPID != synVideo1 {
		t.Errorf("service 1: %+v", s1)
	}
	if s1.Name != "Unicode \u00dcber" || s1.Provider != "Test Provider" || s2.Name != "Two" {
		t.Errorf("names %q (%q), %q", s1.Name, s1.Provider, s2.Name)
	}
	if len(s1.CA) != 1 || s1.CA[0] != (CA{0x0B00, "Conax", synECM1}) {
		t.Errorf("service 1 CA %+v, want Conax 0x0B00 with ECM PID 0x%04X", s1.CA, synECM1)
	}
	wantStreams := []Stream{
		{PID: synVideo1, StreamType: 0x1B, TypeName: "H.264 video", CA: []CA{}},
		{PID: synAudio1, StreamType: 0x06, TypeName: "AC-3 audio", CA: []CA{{0x0500, "Viaccess", synECM2}}},
	}
	if !streamsEqual(s1.Streams, wantStreams) {
		t.Errorf("service 1 streams %+v, want %+v", s1.Streams, wantStreams)
	}
	if s2.Number != 2 || s2.PMTPID != synPMT2 || len(s2.CA) != 0 || !streamsEqual(s2.Streams, []Stream{
		{PID: synVideo2, StreamType: 0x02, TypeName: "MPEG-2 video", CA: []CA{}},
		{PID: synAudio2, StreamType: 0x0F, TypeName: "AAC audio", CA: []CA{}},
	}) {
		t.Errorf("service 2: %+v", s2)
	}
	wantEMM := []EMM{{0x0B00, "Conax", synEMM1}, {0x0500, "Viaccess", synEMM2}}
	if len(rep.EMM) != 2 || rep.EMM[0] != wantEMM[0] || rep.EMM[1] != wantEMM[1] {
		t.Errorf("EMM %+v, want %+v (the CAT is sent %d times: each entry once)", rep.EMM, wantEMM, 12)
	}

	// Descriptions.
	for pid, want := range map[uint16]string{
		0x0000:    "PAT",
		0x0001:    "CAT",
		0x0011:    "SDT", // by the table read there, not by the PID's reservation (SDT/BAT)
		0x1FFF:    "null packets",
		synPMT1:   "PMT of service 1",
		synPMT2:   "PMT of service 2",
		synVideo1: "H.264 video of service 1",
		synAudio1: "AC-3 audio of service 1",
		synVideo2: "MPEG-2 video of service 2",
		synAudio2: "AAC audio of service 2",
		synECM1:   "ECM (Conax 0x0B00) of service 1",
		synECM2:   "ECM (Viaccess 0x0500) of service 1",
		synEMM1:   "EMM (Conax 0x0B00)",
		synEMM2:   "EMM (Viaccess 0x0500)",
		synStray:  "not in the PSI",
	} {
		if p := pidEntry(rep, pid); p == nil || p.Description != want {
			t.Errorf("PID 0x%04X: %+v, want description %q", pid, p, want)
		}
	}
	if p := pidEntry(rep, synVideo1); p == nil || p.PCRs != syn.pcrs {
		t.Errorf("PID 0x%04X: %+v, want %d PCRs", synVideo1, p, syn.pcrs)
	}

	// The text form carries the same facts.
	var txt bytes.Buffer
	if err := rep.WriteText(&txt); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"framing:   188-byte packets",
		`service 1 (0x0001) "Unicode Über" from "Test Provider", PMT PID 0x0100, PCR PID 0x0101`,
		"  CA Conax (0x0B00), ECM PID 0x0200",
		"  PID 0x0102  type 0x06  AC-3 audio",
		"      CA Viaccess (0x0500), ECM PID 0x0201",
		`service 2 (0x0002) "Two"`,
		"  CA Conax (0x0B00), EMM PID 0x0300",
		"TS id:     66 (0x0042)",
	} {
		if !strings.Contains(txt.String(), want) {
			t.Errorf("text output lacks %q:\n%s", want, txt.String())
		}
	}
	v1 := pidEntry(rep, synVideo1)
	row := textRow(v1)
	if !strings.Contains(txt.String(), row) {
		t.Errorf("text output lacks the row %q:\n%s", row, txt.String())
	}

	// And the JSON form parses back to the same report.
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	b2, _ := json.Marshal(&back)
	if !bytes.Equal(b, b2) {
		t.Errorf("JSON does not round-trip:\n%s\n%s", b, b2)
	}
}

// textRow returns the line WriteText prints for p in its table of PIDs.
func textRow(p *PID) string {
	var b bytes.Buffer
	r := &Report{PIDs: []PID{*p}, Framing: 188}
	r.WriteText(&b)
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	return lines[len(lines)-1]
}

func streamsEqual(a, b []Stream) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].PID != b[i].PID || a[i].StreamType != b[i].StreamType || a[i].TypeName != b[i].TypeName || len(a[i].CA) != len(b[i].CA) {
			return false
		}
		for j := range a[i].CA {
			if a[i].CA[j] != b[i].CA[j] {
				return false
			}
		}
	}
	return true
}

// sameButFraming reports whether two reports agree on everything the framing does not change.
func sameButFraming(t *testing.T, a, b *Report) {
	t.Helper()
	a2, b2 := *a, *b
	a2.Framing, b2.Framing, a2.Bytes, b2.Bytes = 0, 0, 0, 0
	ja, _ := json.Marshal(&a2)
	jb, _ := json.Marshal(&b2)
	if !bytes.Equal(ja, jb) {
		t.Errorf("reports differ:\n%s\n%s", ja, jb)
	}
}

func TestProbeFramings(t *testing.T) {
	syn := buildSynthetic(6)
	ref, err := Probe(bytes.NewReader(syn.ts))
	if err != nil {
		t.Fatal(err)
	}
	for _, size := range []int{192, 204} {
		stream := reframe(syn.ts, size)
		rep, err := Probe(bytes.NewReader(stream))
		if err != nil {
			t.Fatalf("%d: %v", size, err)
		}
		if rep.Framing != size || rep.Bytes != int64(len(stream)) {
			t.Errorf("%d: framing %d, bytes %d (want %d)", size, rep.Framing, rep.Bytes, len(stream))
		}
		sameButFraming(t, ref, rep)
	}
}

func TestProbeGarbage(t *testing.T) {
	syn := buildSynthetic(4)
	stream := append(bytes.Repeat([]byte{0x47, 0x00, 0x11}, 100), syn.ts...) // garbage with false sync bytes
	stream = append(stream, syn.ts[:100]...)                                 // a cut last packet
	rep, err := Probe(bytes.NewReader(stream))
	if err != nil {
		t.Fatal(err)
	}
	if rep.SkippedBytes+rep.TruncatedBytes != 400 || rep.Bytes != int64(len(stream)) {
		t.Errorf("skipped %d + truncated %d, bytes %d; want 400 bytes dropped of %d", rep.SkippedBytes, rep.TruncatedBytes, rep.Bytes, len(stream))
	}
	checkCounts(t, rep, syn.want)
}

func TestProbeErrors(t *testing.T) {
	if _, err := Probe(bytes.NewReader(nil)); !errors.Is(err, ErrEmpty) {
		t.Errorf("empty input: %v, want ErrEmpty", err)
	}
	if _, err := Probe(strings.NewReader(strings.Repeat("not a transport stream ", 1000))); !errors.Is(err, ts.ErrNoSync) {
		t.Errorf("text input: %v, want ErrNoSync", err)
	}
	boom := errors.New("boom")
	syn := buildSynthetic(8)
	r := io.MultiReader(bytes.NewReader(syn.ts[:len(syn.ts)/2]), iotest.ErrReader(boom))
	if _, err := Probe(r); !errors.Is(err, boom) {
		t.Errorf("failing reader: %v, want %v", err, boom)
	}
}

func TestProbeNoPSI(t *testing.T) {
	sb := newStreamBuilder()
	for i := range 50 {
		sb.pes(0x0100, byte(2+i/10%2), -1, false)
	}
	rep, err := Probe(bytes.NewReader(sb.buf))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Timing != nil || rep.TransportStreamID != nil || len(rep.Services) != 0 || len(rep.EMM) != 0 {
		t.Errorf("tables from nowhere: %+v", rep)
	}
	if p := pidEntry(rep, 0x100); p == nil || p.Even != 30 || p.Odd != 20 || p.CryptoPeriods != 5 {
		t.Errorf("PID 0x100: %+v, want 30 even, 20 odd, 5 periods", p)
	}
	var b bytes.Buffer
	if err := rep.WriteText(&b); err != nil || !strings.Contains(b.String(), "no PCR") || !strings.Contains(b.String(), "no services") {
		t.Errorf("text: %v\n%s", err, b.String())
	}
	js, _ := json.Marshal(rep)
	if !bytes.Contains(js, []byte(`"services":[]`)) || bytes.Contains(js, []byte(`"timing"`)) {
		t.Errorf("JSON: %s", js)
	}
}

// TestPCRTiming: the duration and bitrate sum the steps between PCRs that are time that
// passed, across the wrap of the base, and leave out the jumps (ts.PCRStep), which they count.
func TestPCRTiming(t *testing.T) {
	sb := newStreamBuilder()
	for i, pcr := range []struct {
		ticks int64
		disc  bool
	}{
		{ts.PCRWrap - 13_500_000, false}, // 0.5 s before the wrap
		{13_500_000, false},              // 0.5 s after it: 1 s on, the longest step that is time
		{13_500_000 + 27_000, false},     // 1 ms on
		{5_000_000, false},               // a step back: a jump
		{5_000_000 + 2_700_000, false},
		{7_700_000 + 40_500_000, false}, // 1.5 s on: a jump
		{900_000_000, false},            // 30 s on: a jump
		{900_027_000, true},             // flagged
		{900_054_000, false},
	} {
		if i > 0 {
			for range 9 {
				sb.pes(0x100, 0, -1, false)
			}
		}
		sb.pes(0x100, 0, pcr.ticks, pcr.disc)
		sb.pes(0x101, 0, 0, false) // another PID's PCRs count for that PID alone
	}
	rep, err := Probe(bytes.NewReader(sb.buf))
	if err != nil {
		t.Fatal(err)
	}
	tm := rep.Timing
	if tm == nil || tm.PCRPID != 0x100 || tm.PCRs != 9 || tm.Discontinuities != 4 {
		t.Fatalf("timing %+v; want 9 PCRs on PID 0x100, 4 discontinuities", tm)
	}
	elapsed := int64(27_000_000 + 27_000 + 2_700_000 + 27_000)
	if want := float64(elapsed) / 27e6; tm.DurationSeconds != want {
		t.Errorf("duration %v s, want %v", tm.DurationSeconds, want)
	}
	if want := int64(float64(4*11*188*8) * 27e6 / float64(elapsed)); tm.Bitrate != want { // 11 packets a step
		t.Errorf("bitrate %d, want %d", tm.Bitrate, want)
	}
}

func TestNames(t *testing.T) {
	for id, want := range map[uint16]string{
		0x0100: "Seca/Mediaguard (Canal+)", 0x0500: "Viaccess", 0x0604: "Irdeto", 0x0963: "NDS Videoguard",
		0x0B00: "Conax", 0x0D05: "Cryptoworks (Irdeto)", 0x0E00: "PowerVu (Scientific Atlanta)",
		0x1702: "BetaCrypt/Verimatrix", 0x1801: "Nagravision", 0x2600: "BISS-1 (EBU)", 0x2602: "BISS-2 (EBU)",
		0x2610: "EBU (BISS)", 0x4AE0: "DRE-Crypt (Cifra)", 0x4A20: "AlphaCrypt", 0xFFFF: "unknown",
	} {
		if got := CASystemName(id); got != want {
			t.Errorf("CASystemName(0x%04X) = %q, want %q", id, got, want)
		}
	}
	for typ, want := range map[uint8]string{0x02: "MPEG-2 video", 0x1B: "H.264 video", 0x24: "HEVC video", 0x0F: "AAC audio",
		0x03: "MPEG-1 audio", 0x06: "private data", 0x81: "AC-3 audio", 0x99: "user private (0x99)", 0x3A: "stream type 0x3A"} {
		if got := StreamTypeName(typ); got != want {
			t.Errorf("StreamTypeName(0x%02X) = %q, want %q", typ, got, want)
		}
	}
	for in, want := range map[string]string{
		"Plain":                      "Plain",
		"\x15Gr\u00fc\u00dfe":        "Grüße",
		"\x10\x00\x01Caf\xe9":        "Café",
		"\x05Caf\xe9":                "Caf\uFFFD",
		"\x86Bold\x87 \x8aNext":      "Bold Next",
		"\x15bad \xff utf8":          "bad \uFFFD utf8",
		"Latin\xa0default \xe9t\xe9": "Latin\u00a0default été",
		"":                           "",
	} {
		if got := dvbString([]byte(in)); got != want {
			t.Errorf("dvbString(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestProbeNoLeak checks that Probe leaves no goroutine behind, whatever way it ends.
func TestProbeNoLeak(t *testing.T) {
	syn := buildSynthetic(4)
	before := runtime.NumGoroutine()
	for range 5 {
		Probe(bytes.NewReader(syn.ts))
		Probe(bytes.NewReader(nil))
		Probe(strings.NewReader(strings.Repeat("x", 5000)))
		Probe(io.MultiReader(bytes.NewReader(syn.ts[:188*50]), iotest.ErrReader(errors.New("boom"))))
		Probe(iotest.OneByteReader(bytes.NewReader(syn.ts)))
	}
	deadline := time.Now().Add(2 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		buf := make([]byte, 1<<16)
		t.Errorf("%d goroutines before, %d after:\n%s", before, n, buf[:runtime.Stack(buf, true)])
	}
}

// TestProbePSIErrors damages the first PMT and the first CAT: they are counted and skipped,
// and their next repetitions are read.
func TestProbePSIErrors(t *testing.T) {
	sb := newStreamBuilder()
	pmt := pmtSection(1, 0x101, caDesc(0x0B00, 0x200), esInfo{0x1B, 0x101, nil})
	cat := catSection(caDesc(0x0B00, 0x300))
	bad := func(sec []byte) []byte {
		b := bytes.Clone(sec)
		b[len(b)-6] ^= 0x01 // a body byte: the CRC no longer matches
		return b
	}
	sb.psi(0x0000, patSection(7, 0, 0x0015, 1, 0x100))
	sb.psi(0x0100, bad(pmt))
	sb.psi(0x0001, bad(cat))
	for range 3 {
		sb.pes(0x101, 0, -1, false)
	}
	sb.psi(0x0000, patSection(7, 0, 0x0015, 1, 0x100))
	sb.psi(0x0100, pmt)
	sb.psi(0x0001, cat)
	sb.pes(0x0015, 0, -1, false)
	for range 3 {
		sb.pes(0x101, 0, -1, false)
	}
	rep, err := Probe(bytes.NewReader(sb.buf))
	if err != nil {
		t.Fatal(err)
	}
	if rep.PSIErrors != 2 {
		t.Errorf("%d PSI errors, want 2 (one PMT, one CAT)", rep.PSIErrors)
	}
	if len(rep.Services) != 1 || !rep.Services[0].PMTSeen || len(rep.Services[0].CA) != 1 || len(rep.EMM) != 1 {
		t.Errorf("tables not read from the good repetitions: %+v, EMM %+v", rep.Services, rep.EMM)
	}
	if rep.NITPID == nil || *rep.NITPID != 0x15 {
		t.Errorf("NIT PID %v, want 0x15", rep.NITPID)
	}
	if p := pidEntry(rep, 0x15); p == nil || p.Description != "NIT" {
		t.Errorf("PID 0x15: %+v, want the NIT", p)
	}
	var b bytes.Buffer
	rep.WriteText(&b)
	if !strings.Contains(b.String(), "2 damaged sections ignored") || !strings.Contains(b.String(), "ECM PID 0x0200  (no packets)") {
		t.Errorf("text does not tell of the damaged sections:\n%s", b.String())
	}
}

// TestProbeTwoSectionPAT reads a PAT whose two programs come in two sections.
func TestProbeTwoSectionPAT(t *testing.T) {
	numbered := func(sec []byte, n, last byte) []byte {
		s := bytes.Clone(sec[:len(sec)-4])
		s[6], s[7] = n, last
		return binary.BigEndian.AppendUint32(s, psi.CRC32(s))
	}
	sb := newStreamBuilder()
	for range 2 {
		sb.psi(0x0000, numbered(patSection(9, 1, 0x100), 0, 1))
		sb.psi(0x0000, numbered(patSection(9, 2, 0x200), 1, 1))
		sb.psi(0x0100, pmtSection(1, 0x101, nil, esInfo{0x24, 0x101, nil}))
		sb.psi(0x0200, pmtSection(2, 0x201, nil, esInfo{0x1B, 0x201, nil}))
	}
	rep, err := Probe(bytes.NewReader(sb.buf))
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Services) != 2 || !rep.Services[0].PMTSeen || !rep.Services[1].PMTSeen ||
		rep.Services[0].Streams[0].TypeName != "HEVC video" || rep.Services[1].Streams[0].TypeName != "H.264 video" {
		t.Errorf("services %+v", rep.Services)
	}
}

// TestProbeCryptoPeriods: probe counts crypto periods by the descrambler's rules (keys/period):
// a single packet of the other parity inside a run is a glitch, not two periods; and the count
// stays exact over more periods than the tracker keeps at once (it forgets decided periods).
func TestProbeCryptoPeriods(t *testing.T) {
	sb := newStreamBuilder()
	// PID 0x100: even 10, one odd packet (a glitch), even 10, odd 10: two periods.
	for i := range 31 {
		tsc := byte(2)
		if i == 10 || i >= 21 {
			tsc = 3
		}
		sb.pes(0x0100, tsc, -1, false)
	}
	// PIDs 0x101 and 0x102, interleaved: 6,000 periods of three packets each.
	const long = 6000
	for i := range long * 3 {
		tsc := byte(2 + i/3%2)
		sb.pes(0x0101, tsc, -1, false)
		sb.pes(0x0102, tsc, -1, false)
	}
	rep, err := Probe(bytes.NewReader(sb.buf))
	if err != nil {
		t.Fatal(err)
	}
	if p := pidEntry(rep, 0x100); p == nil || p.Even != 20 || p.Odd != 11 || p.CryptoPeriods != 2 {
		t.Errorf("PID 0x100 (a one-packet glitch): %+v, want 20 even, 11 odd, 2 periods", p)
	}
	for _, pid := range []uint16{0x101, 0x102} {
		if p := pidEntry(rep, pid); p == nil || p.CryptoPeriods != long {
			t.Errorf("PID %#x: %+v, want %d periods", pid, p, long)
		}
	}
}
