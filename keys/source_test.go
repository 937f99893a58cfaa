package keys

import (
	"bytes"
	"testing"

	"github.com/tsdescramble/tsdescramble/scrambling"
)

// A slot keeps the CWs of each parity in order of arrival: a repeat of the CW it holds is
// one arrival, sent again; AppendSlot gives the one held at a moment and those after.
func TestLiveSlotHistory(t *testing.T) {
	cw := func(b byte) []byte { return []byte{b, b, b, 3 * b, b, b, b, 3 * b} }
	l := NewLive()
	if l.Seq() != 0 || l.Held(0x100, false) != NoKey || len(l.AppendSlot(nil, 0x100, false, 0)) != 0 {
		t.Fatal("a new source holds something")
	}
	select {
	case <-l.Arrived():
		t.Fatal("Arrived before any Set")
	default:
	}
	l.Set(0, false, cw(1)) // 1
	l.Set(0, true, cw(2))  // 2
	l.Set(0, false, cw(1)) // 3: sent again
	<-l.Arrived()
	begun := l.Seq()
	l.Set(0, false, cw(3)) // 4
	l.Set(0, false, cw(1)) // 5: back to cw(1), a new arrival
	if begun != 3 || l.Seq() != 5 {
		t.Fatalf("Seq %d then %d, want 3 and 5", begun, l.Seq())
	}
	k1 := l.Held(0x100, false)
	h := l.AppendSlot(nil, 0x100, false, begun)
	if len(h) != 3 || h[0] != (Arrival{CW: k1, Seq: 1, Last: 3}) || h[2] != (Arrival{CW: k1, Seq: 5, Last: 5}) {
		t.Fatalf("even CWs since %d: %+v", begun, h)
	}
	k3 := h[1].CW
	if !bytes.Equal(l.CW(k3), cw(3)) || h[1].Seq != 4 {
		t.Fatalf("the CW that arrived after: %+v", h[1])
	}
	if all := l.AppendSlot(nil, 0x100, false, 0); len(all) != 3 {
		t.Fatalf("all even CWs: %+v", all)
	}
	if h := l.AppendSlot(nil, 0x100, true, l.Seq()); len(h) != 1 || !bytes.Equal(l.CW(h[0].CW), cw(2)) {
		t.Fatalf("the odd CW held now: %+v", h)
	}
	// A slot remembers its last MaxSlotCWs CWs of each parity.
	for i := range MaxSlotCWs + 5 {
		l.Set(0, true, cw(byte(10+i)))
	}
	if h := l.AppendSlot(nil, 0x100, true, 0); len(h) != MaxSlotCWs || !bytes.Equal(l.CW(h[len(h)-1].CW), cw(byte(10+MaxSlotCWs+4))) {
		t.Fatalf("%d odd CWs remembered, want %d, the latest last", len(h), MaxSlotCWs)
	}
}

func TestLiveSlotsAndBounds(t *testing.T) {
	l := NewLive()
	if l.Set(-1, false, []byte{1}) || l.Set(MaxLiveSlots, false, []byte{1}) || l.Set(0, false, nil) || l.Set(0, false, make([]byte, 17)) {
		t.Fatal("Set accepted a bad slot or CW")
	}
	if l.MapPID(0x100, MaxLiveSlots) {
		t.Fatal("MapPID accepted a bad slot")
	}
	l.MapPID(0x101, 1)
	l.Set(0, false, []byte{1, 1, 1, 3, 1, 1, 1, 3})
	l.Set(1, false, []byte{2, 2, 2, 6, 2, 2, 2, 6})
	k0, k1 := l.Held(0x100, false), l.Held(0x101, false)
	if l.CW(k0)[0] != 1 || l.CW(k1)[0] != 2 {
		t.Fatalf("slots mixed up: %X %X", l.CW(k0), l.CW(k1))
	}
	if _, refused := l.Received(); refused != 4 {
		t.Fatalf("refused %d, want 4", refused)
	}
	// The number of distinct CWs kept is bounded, by age: a feed that runs for weeks goes on
	// taking new ones, and the old ones no slot remembers are forgotten.
	cw := make([]byte, 8)
	for i := range MaxLiveCWs + 10 {
		cw[0], cw[1], cw[2] = byte(i), byte(i>>8), byte(i>>16)
		if !l.Set(0, true, cw) {
			t.Fatalf("CW %d refused", i)
		}
		if n := l.NumCWs(); n > MaxLiveCWs {
			t.Fatalf("%d CWs kept, over the bound %d", n, MaxLiveCWs)
		}
	}
	if k := l.Held(0x102, true); k == NoKey || !bytes.Equal(l.CW(k), cw) {
		t.Fatalf("the latest odd CW after %d distinct ones: %d", MaxLiveCWs+10, k)
	}
	if l.CW(k0)[0] != 1 {
		t.Fatal("the even CW the slot still holds was forgotten")
	}
	if l.CW(2) != nil {
		t.Fatal("an odd CW no slot remembers, among the oldest, was kept")
	}
}

// A CW set for a system keeps it: the same bytes for another system are another CW, and the
// same bytes for the same system sent again are the CW the slot holds.
func TestLiveCWSystems(t *testing.T) {
	var l Source = NewLive()
	live := l.(*Live)
	ss, ok := l.(SystemSource)
	if !ok {
		t.Fatal("Live is not a SystemSource")
	}
	cw := []byte{1, 2, 3, 6, 4, 5, 6, 15}
	des := scrambling.DESECB()
	live.Set(0, false, cw)
	plain := live.Held(0x100, false)
	live.SetFor(0, false, des, cw)
	k := live.Held(0x100, false)
	if k == plain || ss.System(k) != des || ss.System(plain) != nil || !bytes.Equal(live.CW(k), cw) {
		t.Fatalf("CW %d (system %v) and %d (system %v) for the same bytes", plain, ss.System(plain), k, ss.System(k))
	}
	live.SetFor(0, false, des, cw)
	if h := live.AppendSlot(nil, 0x100, false, 0); len(h) != 2 || h[1].CW != k || h[1].Last != 3 {
		t.Fatalf("the DES CW sent again is not the one the slot holds: %+v", h)
	}
	if live.NumCWs() != 2 || ss.System(99) != nil {
		t.Fatalf("%d CWs kept; System of an unknown CW: %v", live.NumCWs(), ss.System(99))
	}
}
