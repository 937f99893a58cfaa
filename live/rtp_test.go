package live

import (
	"bytes"
	"encoding/binary"
	"slices"
	"testing"

	"github.com/tsdescramble/tsdescramble/ts"
)

func rtpDatagram(seq uint16, pt uint8, payload []byte) []byte {
	b := make([]byte, rtpHeaderSize, rtpHeaderSize+len(payload))
	putRTPHeader(b, seq, 0, 1)
	b[1] = pt
	return append(b, payload...)
}

func TestParseRTP(t *testing.T) {
	ts := bytes.Repeat([]byte{0x47, 1, 2, 3}, 47)
	plain := rtpDatagram(7, 33, ts)
	if p, st := parseRTP(plain); st != rtpOK || p.seq != 7 || p.pt != 33 || !bytes.Equal(p.payload, ts) {
		t.Errorf("plain header: %v %+v", st, p)
	}
	// Two CSRCs and a 2-word extension before the payload, 3 bytes of padding after it.
	b := rtpDatagram(9, 96, nil)
	b[0] |= 0x10 | 0x20 | 2
	b = append(b, make([]byte, 8)...)                       // CSRC list
	b = append(b, 0xBE, 0xDE, 0, 2, 1, 2, 3, 4, 5, 6, 7, 8) // extension
	b = append(b, ts...)
	b = append(b, 0, 0, 3)
	if p, st := parseRTP(b); st != rtpOK || p.seq != 9 || p.pt != 96 || !bytes.Equal(p.payload, ts) {
		t.Errorf("CSRC, extension and padding: %v seq %d pt %d len %d", st, p.seq, p.pt, len(p.payload))
	}
	for _, c := range []struct {
		name string
		b    []byte
		want rtpStatus
	}{
		{"TS packet", ts, rtpNotRTP},
		{"empty", nil, rtpNotRTP},
		{"short header", plain[:11], rtpTruncated},
		{"CSRCs past the end", append([]byte{0x8F}, plain[1:20]...), rtpTruncated},
		{"extension past the end", append([]byte{0x90}, plain[1:14]...), rtpTruncated},
		{"extension length past the end", append(append([]byte{0x90}, plain[1:12]...), 0, 0, 0, 9), rtpTruncated},
		{"zero padding", append(append([]byte{0xA0}, plain[1:]...), 0), rtpTruncated},
		{"padding past the header", append(append([]byte{0xA0}, plain[1:12]...), 1, 200), rtpTruncated},
	} {
		if _, st := parseRTP(c.b); st != c.want {
			t.Errorf("%s: status %v, want %v", c.name, st, c.want)
		}
	}
	if !looksLikeRTP(plain) || looksLikeRTP(ts) || looksLikeRTP(rtpDatagram(1, 96, ts)) || looksLikeRTP(rtpDatagram(1, 33, []byte{0, 1})) {
		t.Error("looksLikeRTP: wrong")
	}
}

// seqRun feeds the sequencer datagrams whose payload is their sequence number and returns what
// came out, in order, after a final flush.
func seqRun(arrivals []uint16) ([]uint16, *sequencer) {
	var out []uint16
	q := &sequencer{}
	q.emit = func(b []byte) { out = append(out, binary.BigEndian.Uint16(b)) }
	for _, s := range arrivals {
		q.push(s, binary.BigEndian.AppendUint16(nil, s))
	}
	q.flush()
	return out, q
}

func TestSequencer(t *testing.T) {
	type counts struct{ lost, reordered, late, dups, jumps int64 }
	for _, c := range []struct {
		name     string
		arrivals []uint16
		out      []uint16
		want     counts
	}{
		{"in order", []uint16{1, 2, 3, 4}, []uint16{1, 2, 3, 4}, counts{}},
		{"wraps", []uint16{65534, 65535, 0, 1}, []uint16{65534, 65535, 0, 1}, counts{}},
		{"swap", []uint16{1, 3, 2, 4}, []uint16{1, 2, 3, 4}, counts{reordered: 1}},
		{"swap across the wrap", []uint16{65535, 1, 0, 2}, []uint16{65535, 0, 1, 2}, counts{reordered: 1}},
		{"one lost, window fills", []uint16{1, 3, 4, 5, 6, 7, 8}, []uint16{1, 3, 4, 5, 6, 7, 8}, counts{lost: 1}},
		{"one lost at the end", []uint16{1, 3, 4}, []uint16{1, 3, 4}, counts{lost: 1}},
		{"four late: still in the window", []uint16{1, 3, 4, 5, 6, 2, 7}, []uint16{1, 2, 3, 4, 5, 6, 7}, counts{reordered: 1}},
		{"five late: past the window", []uint16{1, 3, 4, 5, 6, 7, 2, 8}, []uint16{1, 3, 4, 5, 6, 7, 2, 8}, counts{late: 1}},
		{"duplicate", []uint16{1, 2, 2, 3}, []uint16{1, 2, 3}, counts{dups: 1}},
		{"duplicate held", []uint16{1, 3, 3, 2}, []uint16{1, 2, 3}, counts{reordered: 1, dups: 1}},
		{"duplicate of a late one", []uint16{1, 3, 4, 5, 6, 7, 2, 2, 8}, []uint16{1, 3, 4, 5, 6, 7, 2, 8}, counts{late: 1, dups: 1}},
		{"reversed three", []uint16{1, 4, 3, 2, 5}, []uint16{1, 2, 3, 4, 5}, counts{reordered: 2}},
		{"burst lost", []uint16{10, 20, 21, 22, 23, 24}, []uint16{10, 20, 21, 22, 23, 24}, counts{lost: 9}},
		{"sender restart", []uint16{100, 101, 40000, 40001}, []uint16{100, 101, 40000, 40001}, counts{jumps: 1}},
		{"first two swapped", []uint16{2, 1, 3}, []uint16{2, 1, 3}, counts{late: 1}},
	} {
		out, q := seqRun(c.arrivals)
		got := counts{q.Lost, q.Reordered, q.Late, q.Duplicates, q.Jumps}
		if !slices.Equal(out, c.out) || got != c.want {
			t.Errorf("%s: out %v %+v, want %v %+v", c.name, out, got, c.out, c.want)
		}
	}
}

// A long run with every kind of damage: everything that arrived comes out exactly once, and
// Lost counts exactly the numbers that never came.
func TestSequencerConserves(t *testing.T) {
	var arrivals []uint16
	sent := map[uint16]bool{}
	for s := uint16(60000); s != 5000; s++ { // across the wrap
		switch {
		case s%37 == 0: // lost
		case s%23 == 0:
			arrivals = append(arrivals, s, s)
			sent[s] = true
		case s%19 == 0 && len(arrivals) > 0:
			// swap with the previous arrival
			n := len(arrivals)
			arrivals = append(arrivals, arrivals[n-1])
			arrivals[n-1] = s
			sent[s] = true
		default:
			arrivals = append(arrivals, s)
			sent[s] = true
		}
	}
	out, q := seqRun(arrivals)
	seen := map[uint16]int{}
	for _, s := range out {
		seen[s]++
	}
	for s := range sent {
		if seen[s] != 1 {
			t.Fatalf("sequence %d came out %d times", s, seen[s])
		}
	}
	if len(out) != len(sent) {
		t.Fatalf("%d out, %d sent", len(out), len(sent))
	}
	lost := 0
	for s := uint16(60000); s != 5000; s++ {
		if !sent[s] {
			lost++
		}
	}
	if q.Lost != int64(lost) || q.Late != 0 || q.Jumps != 0 {
		t.Errorf("lost %d (want %d), late %d, jumps %d", q.Lost, lost, q.Late, q.Jumps)
	}
	if !slices.IsSortedFunc(out, func(a, b uint16) int { return int(int16(a - b)) }) {
		t.Error("not in order")
	}
}

// pcrPacket is a packet of the given PID carrying a PCR in its adaptation field.
func pcrPacket(pid int, pcr int64, disc bool) []byte {
	p := make([]byte, 188)
	p[0], p[1], p[2], p[3] = 0x47, byte(pid>>8), byte(pid), 0x30
	p[4], p[5] = 183, 0x10
	if disc {
		p[5] |= 0x80
	}
	base, ext := pcr/300, pcr%300
	p[6], p[7], p[8], p[9] = byte(base>>25), byte(base>>17), byte(base>>9), byte(base>>1)
	p[10] = byte(base<<7) | 0x7E | byte(ext>>8)
	p[11] = byte(ext)
	return p
}

// TestPCRClock follows the PCR values that the RTP timestamps and the Pacer's schedule are
// made of, as the clock in ts gives them.
func TestPCRClock(t *testing.T) {
	var c ts.PCRClock
	if _, ok := c.PCRAt(0); ok {
		t.Fatal("a time before any PCR")
	}
	observePCR(&c, pcrPacket(0x200, 5000, false), 3) // another PID's PCR comes first and is the one followed
	observePCR(&c, pcrPacket(0x100, 1_000_000, false), 5)
	observePCR(&c, pcrPacket(0x200, 5000+1000, false), 13)
	if got, _ := c.PCRAt(23); got != 5000+2000 {
		t.Errorf("extrapolated PCR %d, want 7000", got)
	}
	if got, _ := c.PCRAt(8); got != 6000-500 {
		t.Errorf("PCR before the last one: %d, want 5500", got)
	}
	if tick := observePCR(&c, pcrPacket(0x200, ts.PCRWrap-100, false), 20); tick != ts.PCRJumped { // backwards: a discontinuity
		t.Errorf("backward PCR not taken as a jump: %v", tick)
	}
	if tick := observePCR(&c, pcrPacket(0x200, 200, false), 30); tick != ts.PCRStepped { // across the wrap, 300 ticks later
		t.Errorf("across the wrap: %v", tick)
	}
	if got, _ := c.PCRAt(40); got != 500 {
		t.Errorf("across the wrap: %d", got)
	}
	if tick := observePCR(&c, pcrPacket(0x200, 800, true), 40); tick != ts.PCRJumped {
		t.Error("discontinuity_indicator ignored")
	}
	notPacket := pcrPacket(0x200, 900, false)
	notPacket[0] = 0
	if tick := observePCR(&c, notPacket, 50); tick != ts.NoPCR {
		t.Error("a PCR read from bytes without the sync byte")
	}
	for _, pcr := range []int64{0, 1, 299, 300, ts.PCRWrap - 1} {
		if got, _, ok := ts.PCR(pcrPacket(1, pcr, false)); !ok || got != pcr {
			t.Errorf("PCR(%d) = %d %v", pcr, got, ok)
		}
	}
}

// A sender that starts over with numbers the old sequence passed a full cycle ago, its first
// two datagrams swapped: the jump starts a new sequence, and the datagram that comes second is
// passed late, not dropped as a duplicate of the number's last cycle.
func TestSequencerJumpAfterFullCycle(t *testing.T) {
	var arrivals []uint16
	for i := range 70000 {
		arrivals = append(arrivals, uint16(i))
	}
	arrivals = append(arrivals, 20001, 20000, 20002)
	out, q := seqRun(arrivals)
	if n := len(out); n != 70003 || !slices.Equal(out[n-3:], []uint16{20001, 20000, 20002}) {
		t.Fatalf("%d out, ending %v; want 70003 ending 20001 20000 20002", n, out[max(0, n-3):])
	}
	if q.Jumps != 1 || q.Late != 1 || q.Duplicates != 0 || q.Lost != 0 {
		t.Errorf("jumps %d, late %d, duplicates %d, lost %d; want one jump, one late", q.Jumps, q.Late, q.Duplicates, q.Lost)
	}
}
