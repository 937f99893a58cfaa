package split_test

import (
	"bytes"
	"io"
	"testing"

	"github.com/tsdescramble/tsdescramble/psi"
	"github.com/tsdescramble/tsdescramble/split"
	"github.com/tsdescramble/tsdescramble/ts"
)

// changingMux is a stream of three services (PMT PID 0x100+N, elementary PID 0x200+N) in
// cycles of two elementary packets of each, the PAT and PMTs, and two more of each: tables in
// the middle, so that a service started at a PAT misses the packets before it.
func changingMux(cycles int) []byte {
	var b []byte
	var cc [0x300]byte
	put := func(pid uint16, p []byte) {
		p[3] = p[3]&0xF0 | cc[pid]&0x0F
		cc[pid]++
		b = append(b, p...)
	}
	es := func() {
		for range 2 {
			for n := uint16(1); n <= 3; n++ {
				p := make([]byte, ts.PacketSize)
				p[0], p[1], p[2], p[3] = ts.SyncByte, 0x02, byte(n), 0x10
				for i := 4; i < len(p); i++ {
					p[i] = byte(len(b)/ts.PacketSize + i) // every packet differs
				}
				put(0x200+n, p)
			}
		}
	}
	for range cycles {
		es()
		put(psi.PATPID, packet(psi.PATPID, 0, pat(0, 1, 0x101, 2, 0x102, 3, 0x103)))
		for n := uint16(1); n <= 3; n++ {
			put(0x100+n, packet(0x100+n, 0, pmt(n, 0x200+n, 0x200+n)))
		}
		es()
	}
	return b
}

func splitAll(t *testing.T, stream []byte, services ...uint16) map[uint16]*bytes.Buffer {
	t.Helper()
	bufs := map[uint16]*bytes.Buffer{}
	ws := map[uint16]io.Writer{}
	for _, n := range services {
		bufs[n] = &bytes.Buffer{}
		ws[n] = bufs[n]
	}
	if _, err := split.New(ws).Write(stream); err != nil {
		t.Fatal(err)
	}
	return bufs
}

// Between two writes, a service removed ends with the packets written so far, one added
// starts at the next PAT, one restarted on another writer starts there too with its tables'
// continuity counters going on, and the service left alone gets what it would have got with
// no change at all.
func TestAddRemoveRestart(t *testing.T) {
	const cut = 10 * 16 // after ten cycles, a cycle being 16 packets
	stream := changingMux(20)
	whole := splitAll(t, stream, 1, 2, 3)
	first := splitAll(t, stream[:cut*ts.PacketSize], 1, 2, 3)

	var out1, out2, out3, again1 bytes.Buffer
	s := split.New(map[uint16]io.Writer{1: &out1, 2: &out2})
	// Cut where a packet is not whole: the change comes between writes, the cut packet is
	// the next one's.
	if _, err := s.Write(stream[:cut*ts.PacketSize+100]); err != nil {
		t.Fatal(err)
	}
	s.Add(3, &out3)
	st2 := s.Remove(2)
	st1 := s.Restart(1, &again1)
	if _, err := s.Write(stream[cut*ts.PacketSize+100:]); err != nil {
		t.Fatal(err)
	}

	if !bytes.Equal(out2.Bytes(), first[2].Bytes()) || st2.Packets != int64(out2.Len()/ts.PacketSize) {
		t.Errorf("removed: %d bytes (stats %d packets), want the %d of the stream until the change", out2.Len(), st2.Packets, first[2].Len())
	}
	if !bytes.Equal(out1.Bytes(), first[1].Bytes()) || st1.Packets != int64(out1.Len()/ts.PacketSize) {
		t.Errorf("restarted, its first writer: %d bytes (stats %d packets), want the %d until the change", out1.Len(), st1.Packets, first[1].Len())
	}
	for name, b := range map[string][]byte{"added": out3.Bytes(), "restarted": again1.Bytes()} {
		if len(b) == 0 || ts.PID(b) != psi.PATPID {
			t.Fatalf("%s: does not start with a PAT", name)
		}
	}
	// The added service: the elementary packets of the whole split from the first PAT after
	// the change on, all of them: the second half of cycle 11 and the nine cycles after.
	n3 := byPIDOf(out3.Bytes())[0x203]
	all3 := byPIDOf(whole[3].Bytes())[0x203]
	if want := all3[len(all3)-len(n3):]; len(n3) != 2+9*4 || !equalPackets(n3, want) {
		t.Errorf("added: %d elementary packets, want the last 38 of the stream", len(n3))
	}
	// The restarted service: its PAT's continuity counter goes on from the first writer's.
	pats := append(byPIDOf(out1.Bytes())[psi.PATPID], byPIDOf(again1.Bytes())[psi.PATPID]...)
	for i := 1; i < len(pats); i++ {
		if pats[i][3]&0x0F != (pats[i-1][3]+1)&0x0F {
			t.Fatalf("restarted: the PAT's continuity counter breaks at its packet %d", i)
		}
	}
	if len(pats) != 20 {
		t.Errorf("restarted: %d PATs, want 20", len(pats))
	}
}

func byPIDOf(b []byte) map[uint16][][]byte {
	m := map[uint16][][]byte{}
	for i := 0; i+ts.PacketSize <= len(b); i += ts.PacketSize {
		m[ts.PID(b[i:])] = append(m[ts.PID(b[i:])], b[i:i+ts.PacketSize])
	}
	return m
}

func equalPackets(a, b [][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}
