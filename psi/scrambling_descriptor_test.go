package psi

import (
	"bytes"
	"reflect"
	"testing"
)

// scramblingDesc is a scrambling_descriptor with the given mode.
func scramblingDesc(mode ScramblingMode) []byte { return []byte{TagScrambling, 1, byte(mode)} }

// countTag counts the descriptors with tag in every loop of the PMT section s.
func countTag(t *testing.T, s []byte, tag byte) int {
	t.Helper()
	n := 0
	if !walkPMT(s, len(s)-4, func(at int, _ bool) {
		if s[at] == tag {
			n++
		}
	}) {
		t.Fatalf("section % x: loops do not add up", s)
	}
	return n
}

// servicesOf feeds a PAT naming program 1 on PMT PID 0x100, then the packets, to a new Tracker
// and returns what it read.
func servicesOf(t *testing.T, pkts ...[]byte) []Service {
	t.Helper()
	tr, c := NewTracker(), carousel{}
	feed(tr, c.packets(PATPID, pat(1, 0, 1, 0x100, 2, 0x100))...)
	feed(tr, pkts...)
	if st := tr.Stats(); st.CRCErrors+st.Malformed+st.Discontinuities != 0 {
		t.Fatalf("tracker stats %+v", st)
	}
	return tr.Services()
}

// withDescriptor returns the services with a scrambling_descriptor added at the end of the
// program_info loop of service 1, as the Tracker reads it.
func withDescriptor(svcs []Service, mode ScramblingMode) []Service {
	svcs[0].Descriptors = append(svcs[0].Descriptors, scramblingDesc(mode)...)
	return svcs
}

var (
	// sdPMT has a CA descriptor in its program_info loop and a language descriptor on one stream.
	sdPMT = pmt(1, 3, 0x101, caDesc(0x2600, 0x1FF0),
		es{0x1B, 0x101, nil},
		es{0x0F, 0x102, []byte{0x0A, 4, 'e', 'n', 'g', 0}})
	// sdPMTWith carries a scrambling_descriptor for DVB-CSA2 already, at both levels.
	sdPMTWith = pmt(1, 3, 0x101, append(caDesc(0x2600, 0x1FF0), scramblingDesc(ScramblingCSA2)...),
		es{0x1B, 0x101, scramblingDesc(ScramblingCSA2)},
		es{0x0F, 0x102, nil})
)

func TestAppendScramblingModeAdds(t *testing.T) {
	out, ok := AppendScramblingMode(nil, sdPMT, ScramblingCISSA1)
	if !ok {
		t.Fatal("not rewritten")
	}
	if len(out) != len(sdPMT)+3 {
		t.Fatalf("length %d, want %d", len(out), len(sdPMT)+3)
	}
	if CRC32(out) != 0 {
		t.Fatal("CRC_32 does not check")
	}
	if got, want := int(be16(out[1:])&0x0FFF), len(out)-3; got != want {
		t.Errorf("section_length %d, want %d", got, want)
	}
	info := int(be16(sdPMT[10:]) & 0x0FFF)
	if got := int(be16(out[10:]) & 0x0FFF); got != info+3 {
		t.Errorf("program_info_length %d, want %d", got, info+3)
	}
	// The descriptor ends the program_info loop; every other byte is where it was.
	end := 12 + info
	if !bytes.Equal(out[end:end+3], scramblingDesc(ScramblingCISSA1)) {
		t.Errorf("program_info loop ends % x, want the descriptor", out[end:end+3])
	}
	if !bytes.Equal(out[:10], append([]byte{sdPMT[0], sdPMT[1], sdPMT[2] + 3}, sdPMT[3:10]...)) ||
		!bytes.Equal(out[12:end], sdPMT[12:end]) || !bytes.Equal(out[end+3:len(out)-4], sdPMT[end:len(sdPMT)-4]) {
		t.Errorf("other bytes moved:\n got % x\nfrom % x", out, sdPMT)
	}
	if out[5] != sdPMT[5] {
		t.Errorf("version/current_next byte %#x, want %#x as it was", out[5], sdPMT[5])
	}
	if m, ok := PMTScramblingMode(out); !ok || m != ScramblingCISSA1 {
		t.Errorf("PMTScramblingMode = %v, %v", m, ok)
	}
	// The Tracker reads the same service from it as from the original, the descriptor added.
	c := carousel{}
	want := withDescriptor(servicesOf(t, c.packets(0x100, sdPMT)...), ScramblingCISSA1)
	got := servicesOf(t, c.packets(0x100, out)...)
	if !reflect.DeepEqual(got, want) || !got[0].PMTSeen {
		t.Errorf("tracker reads\n%+v\nwant\n%+v", got, want)
	}
	// Setting the same mode again changes nothing.
	again, ok := AppendScramblingMode(nil, out, ScramblingCISSA1)
	if !ok || !bytes.Equal(again, out) {
		t.Errorf("second pass changed the section:\n% x\n% x", again, out)
	}
}

func TestAppendScramblingModeReplaces(t *testing.T) {
	out, ok := AppendScramblingMode([]byte("prefix"), sdPMTWith, ScramblingATISIDSA)
	if !ok || string(out[:6]) != "prefix" {
		t.Fatalf("ok %v, result % x", ok, out)
	}
	out = out[6:]
	if len(out) != len(sdPMTWith) || CRC32(out) != 0 {
		t.Fatalf("length %d (want %d) or CRC wrong", len(out), len(sdPMTWith))
	}
	if n := countTag(t, out, TagScrambling); n != 2 {
		t.Errorf("%d scrambling_descriptors, want the 2 there were", n)
	}
	walkPMT(out, len(out)-4, func(at int, _ bool) {
		if out[at] == TagScrambling && out[at+2] != byte(ScramblingATISIDSA) {
			t.Errorf("descriptor at %d has mode %#x", at, out[at+2])
		}
	})
	if m, _ := PMTScramblingMode(out); m != ScramblingATISIDSA {
		t.Errorf("mode %v", m)
	}
}

// A scrambling_descriptor of one component only: the program level gets one too, and the
// component's is set to the same mode.
func TestAppendScramblingModeComponentOnly(t *testing.T) {
	s := pmt(7, 0, 0x101, nil, es{0x1B, 0x101, scramblingDesc(ScramblingCSA1)})
	if m, ok := PMTScramblingMode(s); !ok || m != ScramblingCSA1 {
		t.Fatalf("component-level mode: %v %v", m, ok)
	}
	out, ok := AppendScramblingMode(nil, s, ScramblingSerpent)
	if !ok || len(out) != len(s)+3 || countTag(t, out, TagScrambling) != 2 {
		t.Fatalf("ok %v, % x", ok, out)
	}
	walkPMT(out, len(out)-4, func(at int, _ bool) {
		if out[at] == TagScrambling && out[at+2] != byte(ScramblingSerpent) {
			t.Errorf("descriptor at %d has mode %#x", at, out[at+2])
		}
	})
}

func TestPMTScramblingMode(t *testing.T) {
	both := pmt(1, 0, 0x101, scramblingDesc(ScramblingDFC), es{0x1B, 0x101, scramblingDesc(ScramblingCSA2)})
	for _, tc := range []struct {
		name string
		s    []byte
		mode ScramblingMode
		ok   bool
	}{
		{"none", sdPMT, 0, false},
		{"program level wins", both, ScramblingDFC, true},
		{"both levels", sdPMTWith, ScramblingCSA2, true},
		{"bad CRC", append(bytes.Clone(both[:len(both)-1]), both[len(both)-1]^1), 0, false},
		{"PAT", pat(1, 0, 1, 0x100), 0, false},
		{"empty", nil, 0, false},
	} {
		if m, ok := PMTScramblingMode(tc.s); m != tc.mode || ok != tc.ok {
			t.Errorf("%s: %v %v, want %v %v", tc.name, m, ok, tc.mode, tc.ok)
		}
	}
}

func TestAppendScramblingModeRefuses(t *testing.T) {
	bad := bytes.Clone(sdPMT)
	bad[len(bad)-1] ^= 0x01
	lengths := bytes.Clone(sdPMT)
	lengths[11] = 0xFF                                    // a program_info_length past the section
	long := pmt(1, 0, 0x101, make([]byte, maxSection-16)) // section_length 1021, the most a PMT may have
	if len(long) != maxSection {
		t.Fatalf("test section of %d bytes", len(long))
	}
	for name, s := range map[string][]byte{
		"bad CRC":              bad,
		"lengths":              recrc(lengths),
		"would be too long":    long,
		"not a PMT":            pat(1, 0, 1, 0x100),
		"section_number 1":     section(tableIDPMT, 1, 0, 1, 1, sdPMT[8:len(sdPMT)-4]),
		"truncated":            sdPMT[:len(sdPMT)-1],
		"only the header":      sdPMT[:8],
		"longer than declared": append(bytes.Clone(sdPMT), 0),
	} {
		dst := []byte{1, 2}
		out, ok := AppendScramblingMode(dst, s, ScramblingDFC)
		if ok || !bytes.Equal(out, dst) {
			t.Errorf("%s: ok %v, % x", name, ok, out)
		}
	}
	// A section already at the limit that carries the descriptor can still have it replaced.
	pad := append(make([]byte, maxSection-16-6), 0x80, 1, 0) // descriptors of tag 0 and one private one
	full := pmt(1, 0, 0x101, append(pad, scramblingDesc(ScramblingCSA2)...))
	if out, ok := AppendScramblingMode(nil, full, ScramblingDFC); !ok || len(out) != maxSection {
		t.Errorf("full section with a descriptor: ok %v, %d bytes", ok, len(out))
	}
}

// pmtPacket returns the packet of one section on pid that fits it, after a pointer_field of 0.
func pmtPacket(pid uint16, cc byte, sections ...[]byte) []byte {
	return packet(pid, true, cc, append([]byte{0}, bytes.Join(sections, nil)...))
}

// sectionIn returns the section that starts at the pointer of a one-packet PUSI packet.
func sectionIn(t *testing.T, pkt []byte) []byte {
	t.Helper()
	q := 5 + int(pkt[4])
	n := 3 + int(be16(pkt[q+1:])&0x0FFF)
	return pkt[q : q+n]
}

func TestPMTSignallerOnePacket(t *testing.T) {
	in := pmtPacket(0x100, 5, sdPMT)
	pkt := bytes.Clone(in)
	s := &PMTSignaller{Mode: ScramblingDFC}
	r := s.Packet(pkt)
	if !r.Changed || r.Signalled != 1 || r.Left != 0 {
		t.Fatalf("result %+v", r)
	}
	want, _ := AppendScramblingMode(nil, sdPMT, ScramblingDFC)
	if !bytes.Equal(sectionIn(t, pkt), want) {
		t.Fatalf("section in the packet\n% x\nwant\n% x", sectionIn(t, pkt), want)
	}
	if !bytes.Equal(pkt[:4], in[:4]) {
		t.Errorf("header % x, was % x", pkt[:4], in[:4])
	}
	for i := 5 + len(want); i < PacketSize; i++ {
		if pkt[i] != 0xFF {
			t.Fatalf("byte %d after the section is %#x, want stuffing", i, pkt[i])
		}
	}
	if got := servicesOf(t, pkt); !reflect.DeepEqual(got, withDescriptor(servicesOf(t, in), ScramblingDFC)) {
		t.Errorf("tracker reads %+v", got)
	}
	// The PMT repeated: each repetition comes out the same; the output, fed again, stays as it is.
	for cc := byte(6); cc < 40; cc++ {
		rep := pmtPacket(0x100, cc, sdPMT)
		if r := s.Packet(rep); !r.Changed || r.Signalled != 1 {
			t.Fatalf("repetition %d: %+v", cc, r)
		}
		if !bytes.Equal(rep[4:], pkt[4:]) {
			t.Fatalf("repetition %d differs", cc)
		}
		if r := s.Packet(rep); r.Changed || r.Signalled != 1 {
			t.Fatalf("second pass over repetition %d: %+v", cc, r)
		}
	}
}

func TestPMTSignallerRoom(t *testing.T) {
	// Sections that leave 2, 3 and 4 bytes of stuffing in a packet of 184 payload bytes.
	streams := []es{{0x1B, 0x101, nil}, {0x0F, 0x102, []byte{0x0A, 4, 'e', 'n', 'g', 0}}}
	base := len(pmt(1, 3, 0x101, nil, streams...))
	for _, room := range []int{0, 2, 3, 4, 30} {
		// A private descriptor in the program_info loop pads the section to 183-room bytes,
		// after the pointer_field.
		pad := 183 - room - base - 2
		s := pmt(1, 3, 0x101, append([]byte{0x80, byte(pad)}, make([]byte, pad)...), streams...)
		if 1+len(s) != 184-room {
			t.Fatalf("room %d: section of %d bytes", room, len(s))
		}
		in := pmtPacket(0x100, 0, s)
		pkt := bytes.Clone(in)
		r := (&PMTSignaller{Mode: ScramblingSerpent}).Packet(pkt)
		if room < 3 {
			if r.Changed || r.Left != 1 || r.Spans || r.Program != 1 || !bytes.Equal(pkt, in) {
				t.Errorf("room %d: %+v, changed bytes %v", room, r, !bytes.Equal(pkt, in))
			}
			continue
		}
		if !r.Changed || r.Signalled != 1 {
			t.Errorf("room %d: %+v", room, r)
		}
		if m, ok := PMTScramblingMode(sectionIn(t, pkt)); !ok || m != ScramblingSerpent {
			t.Errorf("room %d: mode %v %v", room, m, ok)
		}
	}
}

// A stuffing byte that is not 0xFF after a section is not room to grow into.
func TestPMTSignallerDirtyStuffing(t *testing.T) {
	in := pmtPacket(0x100, 0, sdPMT)
	in[PacketSize-1] = 0x00
	pkt := bytes.Clone(in)
	if r := (&PMTSignaller{Mode: ScramblingDFC}).Packet(pkt); r.Changed || r.Left != 1 || !bytes.Equal(pkt, in) {
		t.Errorf("%+v", r)
	}
}

func TestPMTSignallerMultiPacket(t *testing.T) {
	var streams []es
	for i := range 40 {
		streams = append(streams, es{0x06, uint16(0x200 + i), []byte{0x0A, 4, 'e', 'n', 'g', 0}})
	}
	big := pmt(1, 0, 0x101, nil, streams...)
	pkts := carousel{}.packets(0x100, big)
	if len(pkts) < 2 {
		t.Fatal("the test PMT fits one packet")
	}
	s := &PMTSignaller{Mode: ScramblingDFC}
	for i, p := range pkts {
		in := bytes.Clone(p)
		r := s.Packet(p)
		want := SignalResult{}
		if i == 0 {
			want = SignalResult{Left: 1, Spans: true, Program: 1}
		}
		if r != want || !bytes.Equal(p, in) {
			t.Errorf("packet %d: %+v, want %+v; changed %v", i, r, want, !bytes.Equal(p, in))
		}
	}
	// The header of the section cut by the end of the packet: the program is not known.
	cut := packet(0x100, true, 0, append(append([]byte{0}, make([]byte, 179)...), tableIDPMT, 0xB0, 0x20, 0x00))
	cut[5] = 0xC0 // a private section of 179 bytes first
	cut[6], cut[7] = 0x30|byte((179-3)>>8), byte(179-3)
	if r := s.Packet(cut); r != (SignalResult{Left: 1, Spans: true}) {
		t.Errorf("cut header: %+v", r)
	}
}

// Two programs whose PMTs share a PID and a packet: both are signalled, the second moves.
func TestPMTSignallerTwoSections(t *testing.T) {
	p2 := pmt(2, 0, 0x201, nil, es{0x1B, 0x201, nil})
	in := pmtPacket(0x100, 0, sdPMT, p2)
	pkt := bytes.Clone(in)
	r := (&PMTSignaller{Mode: ScramblingCISSA1}).Packet(pkt)
	if !r.Changed || r.Signalled != 2 {
		t.Fatalf("%+v", r)
	}
	w1, _ := AppendScramblingMode(nil, sdPMT, ScramblingCISSA1)
	w2, _ := AppendScramblingMode(nil, p2, ScramblingCISSA1)
	want := pmtPacket(0x100, 0, w1, w2)
	if !bytes.Equal(pkt, want) {
		t.Fatalf("packet\n% x\nwant\n% x", pkt, want)
	}
	// Only program 2 wanted: program 1 passes as it was, program 2 moves by nothing.
	pkt = bytes.Clone(in)
	r = (&PMTSignaller{Mode: ScramblingCISSA1, Want: func(p uint16) bool { return p == 2 }}).Packet(pkt)
	if want := pmtPacket(0x100, 0, sdPMT, w2); !r.Changed || r.Signalled != 1 || !bytes.Equal(pkt, want) {
		t.Fatalf("program 2 only: %+v\n% x\nwant\n% x", r, pkt, pmtPacket(0x100, 0, sdPMT, w2))
	}
	// No program wanted: untouched.
	pkt = bytes.Clone(in)
	if r := (&PMTSignaller{Mode: ScramblingCISSA1, Want: func(uint16) bool { return false }}).Packet(pkt); r != (SignalResult{}) || !bytes.Equal(pkt, in) {
		t.Fatalf("none wanted: %+v", r)
	}
}

// A packet whose pointer_field skips the end of an earlier section, and one with an adaptation field.
func TestPMTSignallerPointerAndAdaptation(t *testing.T) {
	tail := []byte{0xAA, 0xBB, 0xCC}
	in := packet(0x100, true, 0, append(append([]byte{byte(len(tail))}, tail...), sdPMT...))
	pkt := bytes.Clone(in)
	if r := (&PMTSignaller{Mode: ScramblingDFC}).Packet(pkt); !r.Changed || r.Signalled != 1 || !bytes.Equal(pkt[:8], in[:8]) {
		t.Fatalf("%+v", r)
	}
	want, _ := AppendScramblingMode(nil, sdPMT, ScramblingDFC)
	if !bytes.Equal(pkt[8:8+len(want)], want) {
		t.Fatalf("section after the pointer\n% x\nwant\n% x", pkt[8:8+len(want)], want)
	}

	af := make([]byte, PacketSize)
	copy(af, []byte{0x47, 0x41, 0x00, 0x30, 7, 0x10, 1, 2, 3, 4, 5, 6, 0})
	copy(af[13:], sdPMT)
	for i := 13 + len(sdPMT); i < PacketSize; i++ {
		af[i] = 0xFF
	}
	pkt = bytes.Clone(af)
	if r := (&PMTSignaller{Mode: ScramblingDFC}).Packet(pkt); !r.Changed || !bytes.Equal(pkt[:13], af[:13]) || !bytes.Equal(pkt[13:13+len(want)], want) {
		t.Fatalf("with an adaptation field: %+v", r)
	}
}

func TestPMTSignallerLeavesOthers(t *testing.T) {
	base := pmtPacket(0x100, 0, sdPMT)
	for name, mod := range map[string]func(p []byte){
		"no PUSI":         func(p []byte) { p[1] &^= 0x40 },
		"scrambled":       func(p []byte) { p[3] |= 0x80 },
		"transport error": func(p []byte) { p[1] |= 0x80 },
		"no payload":      func(p []byte) { p[3] = p[3]&0xCF | 0x20; p[4] = 183 },
		"bad CRC":         func(p []byte) { p[10] ^= 1 },
		"pointer too far": func(p []byte) { p[4] = 184 },
		"no sync":         func(p []byte) { p[0] = 0 },
		"short":           nil,
	} {
		in := bytes.Clone(base)
		if mod != nil {
			mod(in)
		} else {
			in = in[:100]
		}
		pkt := bytes.Clone(in)
		if r := (&PMTSignaller{Mode: ScramblingDFC}).Packet(pkt); r.Changed || r.Signalled != 0 || !bytes.Equal(pkt, in) {
			t.Errorf("%s: %+v", name, r)
		}
	}
}

// With ReplaceOnly, sections without the descriptor pass unchanged and uncounted, spanning ones
// too; those with one, at either level, get the mode.
func TestPMTSignallerReplaceOnly(t *testing.T) {
	s := &PMTSignaller{Mode: ScramblingCSA2, ReplaceOnly: true}
	in := pmtPacket(0x100, 0, sdPMT)
	pkt := bytes.Clone(in)
	if r := s.Packet(pkt); r != (SignalResult{}) || !bytes.Equal(pkt, in) {
		t.Errorf("without a descriptor: %+v", r)
	}
	var streams []es
	for i := range 40 {
		streams = append(streams, es{0x06, uint16(0x200 + i), nil})
	}
	big := carousel{}.packets(0x100, pmt(1, 0, 0x101, scramblingDesc(ScramblingDFC), streams...))
	if r := s.Packet(big[0]); r != (SignalResult{}) {
		t.Errorf("spanning: %+v", r)
	}
	component := pmt(1, 0, 0x101, nil, es{0x1B, 0x101, scramblingDesc(ScramblingSerpent)})
	for _, sec := range [][]byte{
		pmt(1, 0, 0x101, scramblingDesc(ScramblingDFC), es{0x1B, 0x101, nil}),
		component,
	} {
		pkt := pmtPacket(0x100, 0, sec, sdPMT)
		r := s.Packet(pkt)
		if !r.Changed || r.Signalled != 1 {
			t.Fatalf("%+v", r)
		}
		got := sectionIn(t, pkt)
		if m, ok := PMTScramblingMode(got); !ok || m != ScramblingCSA2 || len(got) != len(sec) || countTag(t, got, TagScrambling) != 1 {
			t.Errorf("% x: mode %v %v", got, m, ok)
		}
		if rest := pkt[5+len(sec):]; !bytes.Equal(rest[:len(sdPMT)], sdPMT) {
			t.Errorf("the section without descriptor changed")
		}
	}
}

func TestPMTSignallerDoesNotAllocate(t *testing.T) {
	s := &PMTSignaller{Mode: ScramblingDFC, Want: func(p uint16) bool { return p == 1 }}
	in := pmtPacket(0x100, 0, sdPMT)
	var big [][]byte
	var streams []es
	for i := range 40 {
		streams = append(streams, es{0x06, uint16(0x200 + i), nil})
	}
	big = carousel{}.packets(0x100, pmt(1, 0, 0x101, nil, streams...))
	pkt := make([]byte, PacketSize)
	if n := testing.AllocsPerRun(100, func() {
		copy(pkt, in)
		s.Packet(pkt)
		s.Packet(big[0])
	}); n != 0 {
		t.Errorf("%v allocations per packet", n)
	}
}

func TestServiceScramblingMode(t *testing.T) {
	c := carousel{}
	tr := NewTracker()
	p1, _ := AppendScramblingMode(nil, sdPMT, ScramblingCISSA1)
	var streams []es
	for i := range 40 {
		streams = append(streams, es{0x06, uint16(0x300 + i), scramblingDesc(ScramblingSerpent)})
	}
	p2 := pmt(2, 0, 0x201, nil, streams...) // a PMT of three packets, signalled by its components
	p3 := pmt(3, 0, 0x301, nil, es{0x1B, 0x301, nil})
	feed(tr, c.packets(PATPID, pat(9, 0, 1, 0x100, 2, 0x200, 3, 0x300))...)
	feed(tr, c.packets(0x100, p1)...)
	feed(tr, c.packets(0x200, p2)...)
	feed(tr, c.packets(0x300, p3)...)
	got := map[uint16]ScramblingMode{}
	for _, s := range tr.Services() {
		if !s.PMTSeen {
			t.Fatalf("service %d: PMT not read", s.Number)
		}
		if m, ok := s.ScramblingMode(); ok {
			got[s.Number] = m
		}
	}
	if want := map[uint16]ScramblingMode{1: ScramblingCISSA1, 2: ScramblingSerpent}; !reflect.DeepEqual(got, want) {
		t.Errorf("modes %v, want %v", got, want)
	}
	var none Service
	if _, ok := none.ScramblingMode(); ok {
		t.Error("a service without PMT signals a mode")
	}
}

func TestScramblingModeString(t *testing.T) {
	for m, want := range map[ScramblingMode]string{
		0x01: "DVB-CSA1", 0x10: "DVB-CISSA version 1", 0x70: "ATIS-IDSA", 0x11: "unknown 0x11", 0xD1: "Serpent (tsdescramble's user-defined 0xD1)",
		0x7F: "unknown 0x7F", 0x80: "user-defined 0x80", 0xF0: "user-defined 0xF0", 0xFF: "reserved 0xFF", 0x00: "reserved 0x00",
	} {
		if got := m.String(); got != want {
			t.Errorf("%#x: %q, want %q", uint8(m), got, want)
		}
	}
}

// FuzzPMTSignaller checks that no packet makes Packet panic, that it changes a packet only into
// one whose sections are whole and intact, and that a rewritten packet stays as it is when fed again.
func FuzzPMTSignaller(f *testing.F) {
	f.Add(pmtPacket(0x100, 0, sdPMT))
	f.Add(pmtPacket(0x100, 0, sdPMTWith, pmt(2, 0, 0x201, nil)))
	f.Add(carousel{}.packets(0x100, pmt(1, 0, 0x101, make([]byte, 300)))[0])
	f.Add(packet(0x100, true, 0, []byte{3, 1, 2, 3}))
	f.Fuzz(func(t *testing.T, pkt []byte) {
		s := &PMTSignaller{Mode: ScramblingDFC}
		in := bytes.Clone(pkt)
		r := s.Packet(pkt)
		if len(pkt) != len(in) || !r.Changed && !bytes.Equal(pkt, in) || r.Changed && r.Signalled == 0 {
			t.Fatalf("%+v: changed %v", r, !bytes.Equal(pkt, in))
		}
		if !r.Changed {
			return
		}
		if !bytes.Equal(pkt[:4], in[:4]) || !bytes.Equal(pkt[PacketSize:], in[PacketSize:]) {
			t.Fatal("bytes outside the payload changed")
		}
		if again := bytes.Clone(pkt); s.Packet(again).Changed {
			t.Fatal("a rewritten packet changed again")
		}
	})
}

// FuzzAppendScramblingMode checks that every section it accepts comes out a valid PMT section
// carrying the mode, and that it never panics.
func FuzzAppendScramblingMode(f *testing.F) {
	f.Add(sdPMT, byte(0x10))
	f.Add(sdPMTWith, byte(0xD1))
	f.Fuzz(func(t *testing.T, s []byte, mode byte) {
		out, ok := AppendScramblingMode(nil, s, ScramblingMode(mode))
		if !ok {
			return
		}
		if !isPMTSection(out) || (len(out) != len(s) && len(out) != len(s)+3) {
			t.Fatalf("% x\nfrom\n% x", out, s)
		}
		if m, ok := PMTScramblingMode(out); !ok || m != ScramblingMode(mode) {
			t.Fatalf("mode %v %v", m, ok)
		}
	})
}

// FuzzPMTSignallerSections builds packets of PMT sections with good CRCs from fuzzed bodies, so
// that the rewriting paths run, and checks the outcome against the sections that went in.
func FuzzPMTSignallerSections(f *testing.F) {
	f.Add(sdPMT[8:len(sdPMT)-4], []byte{}, uint8(0), uint8(0))
	f.Add(sdPMTWith[8:len(sdPMTWith)-4], sdPMT[8:len(sdPMT)-4], uint8(2), uint8(1))
	f.Fuzz(func(t *testing.T, body1, body2 []byte, skip, flags uint8) {
		secs := [][]byte{section(tableIDPMT, 1, 0, 0, 0, body1)}
		if flags&1 != 0 {
			secs = append(secs, section(tableIDPMT, 2, 0, 0, 0, body2))
		}
		tail := make([]byte, int(skip)%8)
		payload := append(append([]byte{byte(len(tail))}, tail...), bytes.Join(secs, nil)...)
		if len(payload) > PacketSize-4 {
			payload = payload[:PacketSize-4] // the last section runs on into a next packet
		}
		pkt := packet(0x100, true, 0, payload)
		in := bytes.Clone(pkt)
		s := &PMTSignaller{Mode: ScramblingSerpent}
		if flags&2 != 0 {
			s.Want = func(p uint16) bool { return p == 2 }
		}
		r := s.Packet(pkt)
		if !r.Changed {
			if !bytes.Equal(pkt, in) {
				t.Fatal("changed without saying so")
			}
			return
		}
		// Every section that went in is there, in order, as AppendScramblingMode makes it
		// when wanted and valid, and stuffing follows. A last section that runs on into a
		// next packet (a section in place before it can change: a descriptor replaced at its
		// size) keeps the bytes this packet holds of it as they came.
		q := 5 + len(tail)
		for _, sec := range secs {
			want := sec
			if q+len(sec) > PacketSize {
				if !bytes.Equal(pkt[q:], in[q:]) {
					t.Fatalf("the section at %d runs on into a next packet, and its bytes here changed:\n% x\nwere\n% x", q, pkt[q:], in[q:])
				}
				return
			}
			if s.wants(be16(sec[3:])) {
				if out, ok := AppendScramblingMode(nil, sec, s.Mode); ok {
					want = out
				}
			}
			if q+len(want) > PacketSize || !bytes.Equal(pkt[q:q+len(want)], want) {
				t.Fatalf("section at %d:\n% x\nwant\n% x", q, pkt[q:min(q+len(want), PacketSize)], want)
			}
			q += len(want)
		}
		for ; q < PacketSize; q++ {
			if pkt[q] != 0xFF {
				t.Fatalf("byte %d after the sections is %#x", q, pkt[q])
			}
		}
	})
}

// TestPMTSignallerCA: the rewriter adds a CA_descriptor (SimulCrypt's use), alone or after the
// scrambling_mode, takes the room both need, and leaves a section it names already as it is.
func TestPMTSignallerCA(t *testing.T) {
	ca := &CA{SystemID: 0x4ADC, PID: 0x1FF0}
	for _, tc := range []struct {
		name string
		s    PMTSignaller
		grow int
	}{
		{"ca", PMTSignaller{CA: ca}, 6},
		{"ca+mode", PMTSignaller{CA: ca, Mode: ScramblingDFC}, 9},
		{"ca+replace-only", PMTSignaller{CA: ca, Mode: ScramblingCSA2, ReplaceOnly: true}, 6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pkt := pmtPacket(0x100, 5, sdPMT)
			if r := tc.s.Packet(pkt); !r.Changed || r.Signalled != 1 {
				t.Fatalf("result %+v", r)
			}
			sec := sectionIn(t, pkt)
			svc, ok := ParsePMT(0x100, sec)
			// The new descriptor comes first, the BISS one the section had after it.
			if !ok || len(sec) != len(sdPMT)+tc.grow || len(svc.CA) != 2 || svc.CA[0].SystemID != 0x4ADC ||
				svc.CA[0].PID != 0x1FF0 || svc.CA[1].SystemID != 0x2600 {
				t.Fatalf("section of %d bytes (was %d), CA %+v", len(sec), len(sdPMT), svc.CA)
			}
			if mode, ok := PMTScramblingMode(sec); ok != (tc.s.Mode != 0 && !tc.s.ReplaceOnly) || ok && mode != tc.s.Mode {
				t.Errorf("scrambling_mode %v %v", mode, ok)
			}
			again := bytes.Clone(pkt)
			if r := tc.s.Packet(again); r.Changed || r.Signalled != 1 {
				t.Errorf("second pass: %+v", r)
			}
		})
	}
	// 8 bytes of stuffing after the PMT and a private section: room for the CA_descriptor
	// alone, not for both descriptors, and then the packet keeps every byte.
	n := 188 - 5 - len(sdPMT) - 3 - 8
	private := append([]byte{0x80, 0x70 | byte(n>>8), byte(n)}, make([]byte, n)...)
	pkt := pmtPacket(0x100, 5, sdPMT, private)
	if r := (&PMTSignaller{CA: ca}).Packet(bytes.Clone(pkt)); !r.Changed || r.Signalled != 1 {
		t.Errorf("room for the CA_descriptor: %+v", r)
	}
	in := bytes.Clone(pkt)
	if r := (&PMTSignaller{CA: ca, Mode: ScramblingDFC}).Packet(pkt); r.Changed || r.Left != 1 || !bytes.Equal(pkt, in) {
		t.Errorf("no room: %+v", r)
	}
}

// A descrambler's PMT: every scrambling_descriptor out, of the program and of each component,
// every other descriptor and field kept, the lengths and CRC_32 right, and the packet's
// stuffing grown by what the section lost.
func TestRemoveScrambling(t *testing.T) {
	scr := []byte{TagScrambling, 1, byte(ScramblingDFC)}
	lang := []byte{0x0A, 4, 'e', 'n', 'g', 0}
	with := pmt(7, 3, 0x101, append(append(caDesc(0x0B00, 0x1FF0), scr...), lang...),
		es{0x1B, 0x101, scr},
		es{0x0F, 0x102, append(append([]byte(nil), lang...), scr...)},
		es{0x06, 0x103, nil})
	want := pmt(7, 3, 0x101, append(caDesc(0x0B00, 0x1FF0), lang...),
		es{0x1B, 0x101, nil},
		es{0x0F, 0x102, lang},
		es{0x06, 0x103, nil})
	got, ok := AppendWithoutScrambling(nil, with)
	if !ok || !bytes.Equal(got, want) {
		t.Fatalf("without the scrambling_descriptors:\n got %x\nwant %x", got, want)
	}
	if again, ok := AppendWithoutScrambling(nil, got); !ok || !bytes.Equal(again, got) {
		t.Errorf("a section without one changed: %x", again)
	}
	bad := bytes.Clone(with)
	bad[len(bad)-1] ^= 1
	if out, ok := AppendWithoutScrambling([]byte{1}, bad); ok || !bytes.Equal(out, []byte{1}) {
		t.Errorf("a section with a bad CRC_32 was rewritten")
	}

	pkt := pmtPacket(0x100, 5, with)
	s := &PMTSignaller{Remove: true}
	r := s.Packet(pkt)
	if !r.Changed || r.Signalled != 1 || !bytes.Equal(sectionIn(t, pkt), want) {
		t.Fatalf("packet: %+v, section %x", r, sectionIn(t, pkt))
	}
	if !bytes.Equal(pkt, pmtPacket(0x100, 5, want)) {
		t.Errorf("the packet's tail is not stuffing")
	}

	// A section followed by one that runs into the next packet keeps its bytes: the next
	// section's start cannot move.
	long := pmt(8, 0, 0x201, nil, es{0x1B, 0x201, make([]byte, 150)})
	pkt = append([]byte{0x47, 0x41, 0x00, 0x15, 0}, append(bytes.Clone(with), long...)...)[:PacketSize]
	in := bytes.Clone(pkt)
	if r := s.Packet(pkt); r.Changed || r.Left != 1 || !bytes.Equal(pkt, in) {
		t.Errorf("before a section that runs on: %+v, changed bytes: %v", r, !bytes.Equal(pkt, in))
	}
}
