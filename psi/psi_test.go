package psi

import (
	"bytes"
	"reflect"
	"slices"
	"testing"
)

// section builds a section with the long syntax: table_id, table_id_extension, version,
// current_next_indicator 1, section_number, last_section_number, body and a correct CRC_32.
func section(tid byte, ext uint16, version, sn, last byte, body []byte) []byte {
	n := 5 + len(body) + 4 // section_length
	s := []byte{tid, 0xB0 | byte(n>>8), byte(n), byte(ext >> 8), byte(ext), 0xC1 | version<<1, sn, last}
	s = append(s, body...)
	return withCRC(s)
}

// withCRC appends the CRC_32 of s.
func withCRC(s []byte) []byte {
	c := CRC32(s)
	return append(s, byte(c>>24), byte(c>>16), byte(c>>8), byte(c))
}

// recrc recomputes the CRC_32 of a whole section after the test has changed it.
func recrc(s []byte) []byte { return withCRC(s[: len(s)-4 : len(s)-4]) }

func pat(tsid uint16, version byte, progs ...uint16) []byte {
	var body []byte
	for i := 0; i+1 < len(progs); i += 2 {
		body = append(body, byte(progs[i]>>8), byte(progs[i]), 0xE0|byte(progs[i+1]>>8), byte(progs[i+1]))
	}
	return section(tableIDPAT, tsid, version, 0, 0, body)
}

type es struct {
	typ  byte
	pid  uint16
	desc []byte
}

func pmt(program uint16, version byte, pcr uint16, progDesc []byte, streams ...es) []byte {
	body := []byte{0xE0 | byte(pcr>>8), byte(pcr), 0xF0 | byte(len(progDesc)>>8), byte(len(progDesc))}
	body = append(body, progDesc...)
	for _, e := range streams {
		body = append(body, e.typ, 0xE0|byte(e.pid>>8), byte(e.pid), 0xF0|byte(len(e.desc)>>8), byte(len(e.desc)))
		body = append(body, e.desc...)
	}
	return section(tableIDPMT, program, version, 0, 0, body)
}

func caDesc(system, pid uint16, private ...byte) []byte {
	d := []byte{tagCA, byte(4 + len(private)), byte(system >> 8), byte(system), 0xE0 | byte(pid>>8), byte(pid)}
	return append(d, private...)
}

// packet builds one TS packet, its payload padded with 0xFF.
func packet(pid uint16, start bool, cc byte, payload []byte) []byte {
	p := make([]byte, PacketSize)
	p[0], p[1], p[2], p[3] = 0x47, byte(pid>>8)&0x1F, byte(pid), 0x10|cc&0x0F
	if start {
		p[1] |= 0x40
	}
	if len(payload) > PacketSize-4 {
		panic("payload too long")
	}
	n := copy(p[4:], payload)
	for i := 4 + n; i < PacketSize; i++ {
		p[i] = 0xFF
	}
	return p
}

// carousel cuts sections, sent back to back, into packets of pid: the first packet starts
// with pointer_field 0, the following ones continue; ccs counts per PID.
type carousel map[uint16]byte

func (c carousel) packets(pid uint16, sections ...[]byte) [][]byte {
	data := append([]byte{0}, bytes.Join(sections, nil)...)
	var pkts [][]byte
	for first := true; len(data) > 0; first = false {
		n := min(len(data), PacketSize-4)
		pkts = append(pkts, packet(pid, first, c[pid], data[:n]))
		c[pid]++
		data = data[n:]
	}
	return pkts
}

func feed(tr *Tracker, pkts ...[]byte) {
	for _, p := range pkts {
		tr.Feed(p)
	}
}

// demo is a PAT with two programs and a NIT entry, and the two PMTs.
var (
	demoPAT  = pat(0x0042, 0, 0, 0x0010, 1, 0x0100, 2, 0x0200)
	demoPMT1 = pmt(1, 0, 0x0101, caDesc(0x0B00, 0x0300, 0xAA),
		es{0x02, 0x0101, nil},
		es{0x04, 0x0102, append([]byte{0x0A, 4, 'e', 'n', 'g', 0}, caDesc(0x0100, 0x0301)...)})
	demoPMT2 = pmt(2, 0, NullPID, nil, es{0x1B, 0x0201, nil}, es{0x0F, 0x0202, nil})
)

var demoServices = []Service{
	{Number: 1, PMTPID: 0x100, PMTSeen: true, PCRPID: 0x101,
		CA:          []CA{{SystemID: 0x0B00, PID: 0x300, Private: []byte{0xAA}}},
		Descriptors: caDesc(0x0B00, 0x0300, 0xAA),
		Streams: []Stream{
			{PID: 0x101, Type: 0x02},
			{PID: 0x102, Type: 0x04, CA: []CA{{SystemID: 0x0100, PID: 0x301}},
				Descriptors: append([]byte{0x0A, 4, 'e', 'n', 'g', 0}, caDesc(0x0100, 0x0301)...)},
		}},
	{Number: 2, PMTPID: 0x200, PMTSeen: true, PCRPID: NullPID,
		Streams: []Stream{{PID: 0x201, Type: 0x1B}, {PID: 0x202, Type: 0x0F}}},
}

func demo(t *testing.T) (*Tracker, carousel) {
	t.Helper()
	tr, c := NewTracker(), carousel{}
	feed(tr, c.packets(PATPID, demoPAT)...)
	feed(tr, c.packets(0x100, demoPMT1)...)
	feed(tr, c.packets(0x200, demoPMT2)...)
	if got := tr.Services(); !reflect.DeepEqual(got, demoServices) {
		t.Fatalf("services\n got %+v\nwant %+v", got, demoServices)
	}
	return tr, c
}

func TestTracker(t *testing.T) {
	tr, c := NewTracker(), carousel{}
	// Before the first PAT any PID from 0x20 on may carry a PMT; the reserved ones do not.
	if tr.Wants(0x100) || !tr.Wants(PATPID) || !tr.Reads(0x100) || tr.Reads(0x11) || tr.Reads(NullPID) || len(tr.Services()) != 0 {
		t.Fatal("new tracker")
	}
	if _, ok := tr.TransportStreamID(); ok {
		t.Fatal("TSID before the PAT")
	}
	// A PMT before the PAT is read when the PAT names its PID; one on a PID the PAT does
	// not name is forgotten.
	feed(tr, c.packets(0x100, demoPMT1)...)
	feed(tr, c.packets(0x300, demoPMT2)...)
	if len(tr.Services()) != 0 {
		t.Fatal("services before the PAT")
	}
	feed(tr, c.packets(PATPID, demoPAT)...)
	if tr.Reads(0x300) || tr.Reads(0x101) || !tr.Wants(0x100) {
		t.Fatal("PIDs read after the PAT that it does not name as PMT PIDs")
	}
	if !tr.IsPMTPID(0x100) || !tr.IsPMTPID(0x200) || tr.IsPMTPID(0x10) || tr.IsPMTPID(0x101) || tr.IsPMTPID(0xFFFF) {
		t.Fatal("PMT PIDs")
	}
	if id, ok := tr.TransportStreamID(); !ok || id != 0x42 {
		t.Fatalf("TSID %#x %v", id, ok)
	}
	if _, ok := tr.ServicePIDs(2); ok {
		t.Fatal("service PIDs before its PMT")
	}
	pids, ok := tr.ServicePIDs(1)
	if !ok || !reflect.DeepEqual(pids, []uint16{0x100, 0x101, 0x102}) {
		t.Fatalf("service 1 from its PMT before the PAT: %#x %v", pids, ok)
	}
	want := []Service{demoServices[0], {Number: 2, PMTPID: 0x200}}
	if got := tr.Services(); !reflect.DeepEqual(got, want) {
		t.Fatalf("services before the second PMT: %+v", got)
	}
	g := tr.Generation()
	feed(tr, c.packets(0x100, demoPMT1)...)
	feed(tr, c.packets(0x200, demoPMT2)...)
	if got := tr.Services(); !reflect.DeepEqual(got, demoServices) {
		t.Fatalf("services\n got %+v\nwant %+v", got, demoServices)
	}
	if tr.Generation() != g+1 {
		t.Fatalf("generation %d, want %d (the first PMT's repetition changes nothing)", tr.Generation(), g+1)
	}
	pids, ok = tr.ServicePIDs(1)
	if !ok || !reflect.DeepEqual(pids, []uint16{0x100, 0x101, 0x102}) {
		t.Fatalf("service 1: %#x %v", pids, ok)
	}
	pids, ok = tr.ServicePIDs(2)
	if !ok || !reflect.DeepEqual(pids, []uint16{0x200, 0x201, 0x202}) {
		t.Fatalf("service 2: %#x %v", pids, ok)
	}
	if _, ok := tr.ServicePIDs(3); ok {
		t.Fatal("service 3")
	}
	// Repetitions change nothing.
	g = tr.Generation()
	for range 3 {
		feed(tr, c.packets(PATPID, demoPAT)...)
		feed(tr, c.packets(0x100, demoPMT1)...)
	}
	// Sections: the two PMTs before the PAT, the PAT, the two PMTs, and the six repetitions.
	if tr.Generation() != g || tr.Stats() != (Stats{Sections: 11}) {
		t.Fatalf("repetitions: generation %d→%d, stats %+v", g, tr.Generation(), tr.Stats())
	}
	// Services returns a copy.
	s := tr.Services()
	s[0].CA[0].Private[0] = 0
	s[0].Streams[1].CA[0].PID = 0
	if !reflect.DeepEqual(tr.Services(), demoServices) {
		t.Fatal("Services shares its storage")
	}
}

func TestMultiPacketPMT(t *testing.T) {
	var streams []es
	for i := range 40 {
		streams = append(streams, es{0x06, uint16(0x400 + i), caDesc(0x2600, uint16(0x500+i), 1, 2, 3)})
	}
	sec := pmt(7, 3, 0x400, caDesc(0x0B00, 0x600), streams...)
	if len(sec) < 3*184 {
		t.Fatalf("PMT of %d bytes: want one over 3 packets", len(sec))
	}
	check := func(t *testing.T, tr *Tracker) {
		t.Helper()
		ss := tr.Services()
		if len(ss) != 1 || !ss[0].PMTSeen || len(ss[0].Streams) != 40 || ss[0].Version != 3 ||
			ss[0].Streams[39].PID != 0x427 || ss[0].Streams[39].CA[0].PID != 0x527 || !bytes.Equal(ss[0].Streams[39].CA[0].Private, []byte{1, 2, 3}) {
			t.Fatalf("services %+v, stats %+v", ss, tr.Stats())
		}
		pids, _ := tr.ServicePIDs(7)
		if len(pids) != 41 {
			t.Fatalf("%d PIDs", len(pids))
		}
	}
	t.Run("in order", func(t *testing.T) {
		tr, c := NewTracker(), carousel{}
		feed(tr, c.packets(PATPID, pat(1, 0, 7, 0x1000))...)
		feed(tr, c.packets(0x1000, sec)...)
		check(t, tr)
	})
	t.Run("a packet sent twice", func(t *testing.T) {
		tr, c := NewTracker(), carousel{}
		feed(tr, c.packets(PATPID, pat(1, 0, 7, 0x1000))...)
		pkts := c.packets(0x1000, sec)
		feed(tr, pkts[0], pkts[1], pkts[1], pkts[2])
		feed(tr, pkts[3:]...)
		check(t, tr)
	})
	t.Run("a muxer that never advances the counter", func(t *testing.T) {
		tr, c := NewTracker(), carousel{}
		feed(tr, c.packets(PATPID, pat(1, 0, 7, 0x1000))...)
		for _, p := range c.packets(0x1000, sec) {
			p[3] &^= 0x0F
			tr.Feed(p)
		}
		check(t, tr)
	})
	t.Run("192-byte units: the caller passes the TS packet", func(t *testing.T) {
		tr, c := NewTracker(), carousel{}
		for _, p := range append(c.packets(PATPID, pat(1, 0, 7, 0x1000)), c.packets(0x1000, sec)...) {
			unit := append([]byte{0x12, 0x34, 0x56, 0x78}, p...)
			tr.Feed(unit[4:])
		}
		check(t, tr)
	})
}

func TestSectionsSharingPackets(t *testing.T) {
	// Two programs on one PMT PID; the second section starts in the packet where the first
	// ends, after pointer_field bytes that finish the first.
	var streams []es
	for i := range 40 {
		streams = append(streams, es{0x02, uint16(0x110 + i), nil})
	}
	a := pmt(1, 0, 0x110, nil, streams...) // 16+5*40 bytes: spans two packets
	b := pmt(2, 0, 0x120, nil, es{0x03, 0x121, nil})
	c := pmt(3, 0, 0x130, nil, es{0x03, 0x131, nil})
	tr := NewTracker()
	feed(tr, carousel{}.packets(PATPID, pat(1, 0, 1, 0x100, 2, 0x100, 3, 0x100))...)
	// Packet 1: pointer 0, then the first 183 bytes of a.
	p1 := packet(0x100, true, 0, append([]byte{0}, a[:183]...))
	// Packet 2: pointer = the rest of a, then b and c back to back, then stuffing.
	rest := a[183:]
	pl := append([]byte{byte(len(rest))}, rest...)
	pl = append(pl, b...)
	pl = append(pl, c...)
	p2 := packet(0x100, true, 1, pl)
	feed(tr, p1, p2)
	ss := tr.Services()
	if len(ss) != 3 || len(ss[0].Streams) != 40 || ss[1].PCRPID != 0x120 || ss[2].Streams[0].PID != 0x131 {
		t.Fatalf("services %+v stats %+v", ss, tr.Stats())
	}
	if tr.Stats() != (Stats{Sections: 4}) {
		t.Fatalf("stats %+v", tr.Stats())
	}
}

func TestMultiSectionPAT(t *testing.T) {
	tr, c := NewTracker(), carousel{}
	s0 := section(tableIDPAT, 9, 4, 0, 1, []byte{0, 1, 0xE1, 0x00})
	s1 := section(tableIDPAT, 9, 4, 1, 1, []byte{0, 2, 0xE2, 0x00})
	feed(tr, c.packets(PATPID, s0)...)
	if len(tr.Services()) != 0 || tr.IsPMTPID(0x100) {
		t.Fatal("PAT in force before its last section")
	}
	feed(tr, c.packets(PATPID, s1)...)
	if ss := tr.Services(); len(ss) != 2 || !tr.IsPMTPID(0x100) || !tr.IsPMTPID(0x200) {
		t.Fatalf("services %+v", ss)
	}
}

func TestVersionChange(t *testing.T) {
	tr, c := demo(t)
	g := tr.Generation()
	// PMT version 1 of program 1: a new audio PID, no CA.
	v1 := pmt(1, 1, 0x101, nil, es{0x02, 0x101, nil}, es{0x04, 0x103, nil})
	feed(tr, c.packets(0x100, v1)...)
	if pids, _ := tr.ServicePIDs(1); !reflect.DeepEqual(pids, []uint16{0x100, 0x101, 0x103}) || tr.Generation() != g+1 {
		t.Fatalf("after PMT v1: %#x, generation %d", pids, tr.Generation())
	}
	if s := tr.Services()[0]; s.Version != 1 || s.CA != nil {
		t.Fatalf("%+v", s)
	}
	// A next table (current_next_indicator 0) is not in force yet.
	next := pmt(1, 2, 0x101, nil, es{0x02, 0x104, nil})
	next[5] &^= 1
	feed(tr, c.packets(0x100, recrc(next))...)
	if pids, _ := tr.ServicePIDs(1); !reflect.DeepEqual(pids, []uint16{0x100, 0x101, 0x103}) {
		t.Fatalf("next table applied: %#x", pids)
	}
	// A changed PMT whose muxer forgot to change the version is still read.
	same := pmt(1, 1, 0x101, nil, es{0x02, 0x101, nil}, es{0x04, 0x105, nil})
	feed(tr, c.packets(0x100, same)...)
	if pids, _ := tr.ServicePIDs(1); !reflect.DeepEqual(pids, []uint16{0x100, 0x101, 0x105}) {
		t.Fatalf("same version, new content: %#x", pids)
	}
	// PAT version 1: program 2 leaves, program 1 moves its PMT to 0x150.
	g = tr.Generation()
	feed(tr, c.packets(PATPID, pat(0x42, 1, 1, 0x150))...)
	if tr.IsPMTPID(0x100) || tr.IsPMTPID(0x200) || !tr.IsPMTPID(0x150) || tr.Generation() != g+1 {
		t.Fatal("PMT PIDs after the PAT change")
	}
	if ss := tr.Services(); len(ss) != 1 || ss[0].PMTSeen || ss[0].PMTPID != 0x150 {
		t.Fatalf("services %+v", ss)
	}
	if _, ok := tr.ServicePIDs(1); ok {
		t.Fatal("PIDs of the old PMT")
	}
	// The old PMT PID is no longer read; the new one is.
	feed(tr, c.packets(0x100, v1)...)
	if _, ok := tr.ServicePIDs(1); ok {
		t.Fatal("PMT read on the old PID")
	}
	feed(tr, c.packets(0x150, pmt(1, 0, 0x151, nil, es{0x02, 0x151, nil}))...)
	if pids, ok := tr.ServicePIDs(1); !ok || !reflect.DeepEqual(pids, []uint16{0x150, 0x151}) {
		t.Fatalf("after the move: %#x %v", pids, ok)
	}
	// A program that stays keeps its PMT across a PAT change.
	feed(tr, c.packets(PATPID, pat(0x42, 2, 1, 0x150, 5, 0x500))...)
	if _, ok := tr.ServicePIDs(1); !ok || len(tr.Services()) != 2 {
		t.Fatal("program 1 lost its PMT when program 5 joined")
	}
}

func TestDamaged(t *testing.T) {
	long := func() []byte { // a PMT of 3 packets for program 1
		var streams []es
		for i := range 100 {
			streams = append(streams, es{0x06, uint16(0x400 + i), nil})
		}
		return pmt(1, 5, 0x400, nil, streams...)
	}()
	if n := len(carousel{}.packets(0x100, long)); n != 3 {
		t.Fatalf("long PMT in %d packets", n)
	}
	tests := []struct {
		name  string
		pkts  func(c carousel) [][]byte
		stats Stats // added to those of demo
	}{
		{"bad CRC", func(c carousel) [][]byte {
			s := pmt(1, 1, 0x101, nil, es{0x02, 0x999, nil})
			s[len(s)-1] ^= 1
			return c.packets(0x100, s)
		}, Stats{CRCErrors: 1}},
		{"bad CRC on the PAT", func(c carousel) [][]byte {
			s := pat(0x42, 1, 1, 0x700)
			s[9] ^= 0x10
			return c.packets(PATPID, s)
		}, Stats{CRCErrors: 1}},
		{"truncated: a new section starts before the end", func(c carousel) [][]byte {
			p := c.packets(0x100, long)
			q := c.packets(0x100, demoPMT1)[0]
			q[3] = q[3]&0xF0 | (p[0][3]+1)&0x0F
			return [][]byte{p[0], q}
		}, Stats{Malformed: 1, Sections: 1}},
		{"truncated: the stream ends", func(c carousel) [][]byte {
			return c.packets(0x100, long)[:2]
		}, Stats{}},
		{"pointer_field past the end", func(c carousel) [][]byte {
			return [][]byte{packet(0x100, true, c[0x100], []byte{184})}
		}, Stats{Malformed: 1}},
		{"pointer_field past the end mid-section", func(c carousel) [][]byte {
			p := c.packets(0x100, long)
			p[1][1] |= 0x40
			p[1][4] = 200
			return p
		}, Stats{Malformed: 1}},
		{"a lost packet", func(c carousel) [][]byte {
			p := c.packets(0x100, long)
			return append(p[:1], p[2:]...)
		}, Stats{Discontinuities: 1}},
		{"a transport error", func(c carousel) [][]byte {
			p := c.packets(0x100, long)
			p[1][1] |= 0x80
			return p
		}, Stats{Discontinuities: 1}},
		{"section_length over 1021", func(c carousel) [][]byte {
			s := pmt(1, 1, 0x101, nil)
			s[1] = 0xB3
			s[2] = 0xFF
			return c.packets(0x100, s)
		}, Stats{Malformed: 1}},
		{"section_length under the header", func(c carousel) [][]byte {
			return [][]byte{packet(0x100, true, c[0x100], []byte{0, tableIDPMT, 0xB0, 5, 0, 1, 0xC1, 0, 0})}
		}, Stats{Malformed: 1}},
		{"section_syntax_indicator 0", func(c carousel) [][]byte {
			s := pmt(1, 1, 0x101, nil, es{0x02, 0x999, nil})
			s[1] &^= 0x80
			return c.packets(0x100, recrc(s))
		}, Stats{Malformed: 1}},
		{"ES_info_length past the end", func(c carousel) [][]byte {
			s := pmt(1, 1, 0x101, nil, es{0x02, 0x999, nil})
			s[12+4] = 0x20
			return c.packets(0x100, recrc(s), recrc(s)) // parsed once, counted twice
		}, Stats{Malformed: 2, Sections: 2}},
		{"ES loop entry cut short", func(c carousel) [][]byte {
			s := pmt(1, 1, 0x101, nil, es{0x02, 0x999, nil})
			n := len(s) - 4 - 5 + 3 // keep 3 bytes of the ES entry
			s = append(s[:n:n], 0, 0, 0, 0)
			s[1], s[2] = 0xB0, byte(len(s)-3)
			return c.packets(0x100, recrc(s))
		}, Stats{Malformed: 1, Sections: 1}},
		{"program_info_length past the end", func(c carousel) [][]byte {
			s := pmt(1, 1, 0x101, nil, es{0x02, 0x999, nil})
			s[11] = 0x40
			return c.packets(0x100, recrc(s))
		}, Stats{Malformed: 1, Sections: 1}},
		{"descriptor past its loop", func(c carousel) [][]byte {
			s := pmt(1, 1, 0x101, caDesc(0x0B00, 0x300), es{0x02, 0x999, nil})
			s[13] = 9
			return c.packets(0x100, recrc(s))
		}, Stats{Malformed: 1, Sections: 1}},
		{"PMT with a section_number", func(c carousel) [][]byte {
			s := pmt(1, 1, 0x101, nil, es{0x02, 0x999, nil})
			s[6], s[7] = 1, 1
			return c.packets(0x100, recrc(s))
		}, Stats{Malformed: 1, Sections: 1}},
		{"PAT with a partial entry", func(c carousel) [][]byte {
			return c.packets(PATPID, section(tableIDPAT, 0x42, 3, 0, 0, []byte{0, 1, 0xE7, 0, 0, 2}))
		}, Stats{Malformed: 1, Sections: 1}},
		{"PAT section_number past last_section_number", func(c carousel) [][]byte {
			return c.packets(PATPID, section(tableIDPAT, 0x42, 3, 2, 1, []byte{0, 1, 0xE7, 0}))
		}, Stats{Malformed: 1, Sections: 1}},
		{"adaptation field leaving no payload", func(c carousel) [][]byte {
			p := packet(0x100, true, c[0x100], nil)
			p[3] |= 0x30
			p[4] = 183
			return [][]byte{p}
		}, Stats{Malformed: 1}},
		{"ignored: short, unsynchronised, scrambled, reserved AFC, AF only", func(c carousel) [][]byte {
			good := c.packets(0x100, pmt(1, 1, 0x101, nil, es{0x02, 0x999, nil}))[0]
			short := good[:187]
			nosync := bytes.Clone(good)
			nosync[0] = 0x48
			scr := bytes.Clone(good)
			scr[3] |= 0x80
			afc0 := bytes.Clone(good)
			afc0[3] &^= 0x30
			afonly := bytes.Clone(good)
			afonly[3] = afonly[3]&^0x30 | 0x20
			return [][]byte{nil, short, nosync, scr, afc0, afonly}
		}, Stats{}},
		{"PMT for a program not in the PAT, or on another PID", func(c carousel) [][]byte {
			return append(c.packets(0x100, pmt(9, 1, 0x101, nil)), c.packets(0x200, pmt(1, 1, 0x101, nil))...)
		}, Stats{Sections: 2}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr, c := demo(t)
			before, g := tr.Stats(), tr.Generation()
			feed(tr, tc.pkts(c)...)
			want := before
			want.Sections += tc.stats.Sections
			want.CRCErrors += tc.stats.CRCErrors
			want.Malformed += tc.stats.Malformed
			want.Discontinuities += tc.stats.Discontinuities
			if got := tr.Stats(); got != want {
				t.Errorf("stats %+v, want %+v", got, want)
			}
			if !reflect.DeepEqual(tr.Services(), demoServices) || tr.Generation() != g {
				t.Errorf("tables changed: %+v", tr.Services())
			}
			// The tracker still reads a good PMT afterwards.
			feed(tr, c.packets(0x100, long)...)
			if pids, ok := tr.ServicePIDs(1); !ok || len(pids) != 101 {
				t.Fatalf("good PMT after the damage: %d PIDs, %v; stats %+v", len(pids), ok, tr.Stats())
			}
		})
	}
}

func TestFeedDoesNotAllocate(t *testing.T) {
	tr, c := demo(t)
	var pkts [][]byte
	for range 16 {
		pkts = append(pkts, c.packets(PATPID, demoPAT)...)
		pkts = append(pkts, c.packets(0x100, demoPMT1)...)
		pkts = append(pkts, packet(0x101, true, 0, []byte{0, 0, 1, 0xE0})) // not PSI
	}
	i := 0
	if n := testing.AllocsPerRun(1000, func() { tr.Feed(pkts[i%len(pkts)]); i++ }); n != 0 {
		t.Fatalf("%v allocations per packet", n)
	}
	if n := testing.AllocsPerRun(1000, func() { tr.IsPMTPID(0x100) }); n != 0 {
		t.Fatalf("%v allocations per IsPMTPID", n)
	}
}

func TestCRC(t *testing.T) {
	// The check value of CRC-32/MPEG-2 (the CRC of the ASCII digits 1 to 9).
	if c := CRC32([]byte("123456789")); c != 0x0376E6E7 {
		t.Fatalf("CRC %#08x", c)
	}
	if CRC32(demoPAT) != 0 {
		t.Fatal("a section with its CRC does not check to 0")
	}
}

func FuzzTracker(f *testing.F) {
	c := carousel{}
	var seed []byte
	for _, p := range append(append(c.packets(PATPID, demoPAT), c.packets(0x100, demoPMT1)...), c.packets(0x200, demoPMT2)...) {
		seed = append(seed, p...)
	}
	f.Add(seed)
	f.Add(append(bytes.Clone(seed[:PacketSize]), packet(0x100, true, 0, []byte{0, 2, 0xB3, 0xFF})...))
	f.Add(append(bytes.Clone(seed[:PacketSize]), packet(0x100, true, 0, []byte{183})...))
	f.Add([]byte{0x47, 0x40, 0, 0x10, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		tr := NewTracker()
		// The fuzzer's bytes follow a good PAT so that PMT PIDs are in play, and are fed both
		// as they come and as 188-byte packets with the sync byte forced.
		tr.Feed(seed[:PacketSize])
		for len(b) > 0 {
			n := min(len(b), PacketSize)
			var p [PacketSize]byte
			copy(p[:], b[:n])
			tr.Feed(b[:n])
			p[0] = 0x47
			tr.Feed(p[:])
			b = b[n:]
		}
		for _, s := range tr.Services() {
			pids, ok := tr.ServicePIDs(s.Number)
			if ok != s.PMTSeen {
				t.Fatalf("service %d: PMTSeen %v, ServicePIDs ok %v", s.Number, s.PMTSeen, ok)
			}
			for _, pid := range pids {
				if pid > MaxPID {
					t.Fatalf("PID %#x", pid)
				}
			}
			if !tr.IsPMTPID(s.PMTPID) {
				t.Fatalf("PMT PID %#x of service %d not a PMT PID", s.PMTPID, s.Number)
			}
		}
	})
}

// FuzzSections reaches the table parsers: the fuzzer's bytes become the body of a PAT or
// PMT section with a correct CRC_32, which random packets would almost never have.
func FuzzSections(f *testing.F) {
	f.Add(false, demoPMT1[3:len(demoPMT1)-4])
	f.Add(true, demoPAT[3:len(demoPAT)-4])
	f.Add(false, []byte{0, 1, 0xC1, 0, 0, 0xE1, 0, 0xF0, 0x10})
	f.Fuzz(func(t *testing.T, isPAT bool, body []byte) {
		if len(body) > maxSection-3-4 {
			return
		}
		tr, c := demo(t)
		tid, pid := byte(tableIDPMT), uint16(0x100)
		if isPAT {
			tid, pid = tableIDPAT, PATPID
		}
		n := len(body) + 4
		s := withCRC(append([]byte{tid, 0xB0 | byte(n>>8), byte(n)}, body...))
		feed(tr, c.packets(pid, s)...)
		for _, sv := range tr.Services() {
			if pids, ok := tr.ServicePIDs(sv.Number); ok != sv.PMTSeen || (ok && len(pids) == 0) {
				t.Fatalf("service %+v: PIDs %v %v", sv, pids, ok)
			}
		}
	})
}

// TestTrackerManyServices: a PAT of more programs than the PMTs kept before the first PAT still
// has every PMT read, the last one too.
func TestTrackerManyServices(t *testing.T) {
	tr, c := NewTracker(), carousel{}
	var progs []uint16
	for n := uint16(1); n <= 2*maxEarlyPMTs; n++ {
		progs = append(progs, n, 0x1000+n)
	}
	feed(tr, c.packets(PATPID, pat(0x0042, 0, progs...))...)
	for n := uint16(1); n <= 2*maxEarlyPMTs; n++ {
		feed(tr, c.packets(0x1000+n, pmt(n, 0, NullPID, nil, es{0x1B, 0x0800 + n, nil}))...)
	}
	for _, n := range []uint16{1, maxEarlyPMTs + 1, 2 * maxEarlyPMTs} {
		if pids, ok := tr.ServicePIDs(n); !ok || !slices.Contains(pids, 0x0800+n) {
			t.Errorf("service %d: PIDs %#x, read %v", n, pids, ok)
		}
	}
}
