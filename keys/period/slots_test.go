package period

import (
	"bytes"
	"testing"

	"github.com/tsdescramble/tsdescramble/keys"
)

// These tests drive the slot assignment (slotKeys) over a keys.Live directly, period by period,
// as the Tracker does: begin at each period's first packet, current while it waits, reject
// when its CW did not fit, giveUp when it stopped waiting.

func TestSlotKeyTakesEffectAtNextPeriodOfItsParity(t *testing.T) {
	cw := func(b byte) []byte { return []byte{b, b, b, 3 * b, b, b, b, 3 * b} }
	l := keys.NewLive()
	s := newSlotKeys(l)
	// Nothing yet: the first period waits.
	if k, final := s.begin(0x100, false); k != keys.NoKey || final {
		t.Fatalf("no key yet: %d %v", k, final)
	}
	select {
	case <-l.Arrived():
		t.Fatal("Arrived before any Set")
	default:
	}
	// A late key for the current parity decides the waiting period.
	l.Set(0, false, cw(1))
	l.Set(0, true, cw(2))
	<-l.Arrived()
	if k, final := s.current(0x100, 1); !final || !bytes.Equal(l.CW(k), cw(1)) {
		t.Fatalf("late even key not applied: %d %v", k, final)
	}
	// A new even key while the even period runs: not mid-period.
	l.Set(0, false, cw(3))
	if k, _ := s.current(0x100, 1); !bytes.Equal(l.CW(k), cw(1)) {
		t.Fatalf("key changed mid-period: %X", l.CW(k))
	}
	// The odd period takes the odd key that was already there.
	if k, final := s.begin(0x100, true); !final || !bytes.Equal(l.CW(k), cw(2)) {
		t.Fatalf("odd period: %d %v", k, final)
	}
	// The next even period takes the even key that arrived during the last one.
	if k, final := s.begin(0x100, false); !final || !bytes.Equal(l.CW(k), cw(3)) {
		t.Fatalf("even period: %d %v", k, final)
	}
	// The next odd period is offered the CW the slot holds, the one the last odd period used:
	// the only odd CW so far (a constant key, or one not replaced yet).
	if k, final := s.begin(0x100, true); !final || !bytes.Equal(l.CW(k), cw(2)) {
		t.Fatalf("odd period 4: %d %v, want the slot's CW", k, final)
	}
	if f := s.fresh(0x100, 4); f != freshConstant {
		t.Fatalf("the only odd CW so far is %v, want constant", f)
	}
	// The caller found it does not fit: the period waits, and a repeat does not bring it back.
	s.reject(0x100, 4)
	l.Set(0, true, cw(2))
	if k, final := s.current(0x100, 4); k != keys.NoKey || final {
		t.Fatalf("rejected odd key used again: %d %v", k, final)
	}
	l.Set(0, true, cw(4))
	if k, final := s.current(0x100, 4); !final || !bytes.Equal(l.CW(k), cw(4)) {
		t.Fatalf("late odd key: %d %v", k, final)
	}
	if f := s.fresh(0x100, 4); f != freshNew {
		t.Fatalf("a CW new to the period is %v, want new", f)
	}
	// Another PID starting now takes the latest of its parity.
	if k, final := s.begin(0x101, false); !final || !bytes.Equal(l.CW(k), cw(3)) {
		t.Fatalf("second PID: %d %v", k, final)
	}
	got := s.applied
	if got[AppliedKey{0x100, false}] != 2 || got[AppliedKey{0x100, true}] != 2 || got[AppliedKey{0x101, false}] != 1 {
		t.Fatalf("applied counts %v", got)
	}
	if n := l.NumCWs(); n != 4 {
		t.Fatalf("%d distinct CWs, want 4", n)
	}
}

func TestSlotsMappedAndBounded(t *testing.T) {
	l := keys.NewLive()
	s := newSlotKeys(l)
	if l.Set(-1, false, []byte{1}) || l.Set(keys.MaxLiveSlots, false, []byte{1}) || l.Set(0, false, nil) || l.Set(0, false, make([]byte, 17)) {
		t.Fatal("Set accepted a bad slot or CW")
	}
	if l.MapPID(0x100, keys.MaxLiveSlots) {
		t.Fatal("MapPID accepted a bad slot")
	}
	l.MapPID(0x101, 1)
	l.Set(0, false, []byte{1, 1, 1, 3, 1, 1, 1, 3})
	l.Set(1, false, []byte{2, 2, 2, 6, 2, 2, 2, 6})
	k0, _ := s.begin(0x100, false)
	k1, _ := s.begin(0x101, false)
	if l.CW(k0)[0] != 1 || l.CW(k1)[0] != 2 {
		t.Fatalf("slots mixed up: %X %X", l.CW(k0), l.CW(k1))
	}
	if _, refused := l.Received(); refused != 4 {
		t.Fatalf("refused %d, want 4", refused)
	}
	// The number of distinct CWs kept is bounded, by age: a feed that runs for weeks goes on
	// taking new ones, and the old ones no slot or period refers to are forgotten.
	cw := make([]byte, 8)
	for i := range keys.MaxLiveCWs + 10 {
		cw[0], cw[1], cw[2] = byte(i), byte(i>>8), byte(i>>16)
		if !l.Set(0, true, cw) {
			t.Fatalf("CW %d refused", i)
		}
		if n := l.NumCWs(); n > keys.MaxLiveCWs {
			t.Fatalf("%d CWs kept, over the bound %d", n, keys.MaxLiveCWs)
		}
	}
	k, final := s.begin(0x102, true)
	if !final || !bytes.Equal(l.CW(k), cw) {
		t.Fatalf("the latest odd CW after %d distinct ones: %d %v", keys.MaxLiveCWs+10, k, final)
	}
	if l.CW(k0)[0] != 1 {
		t.Fatal("the even CW the slot still holds was forgotten")
	}
}

// A CW the caller rejects is not given to the period again, and does not count as applied;
// the next new CW of the parity is, and the period after the rejection compares with the CW
// the PID really used.
func TestSlotReject(t *testing.T) {
	k1, stale, k3 := []byte{1, 1, 1, 3, 1, 1, 1, 3}, []byte{2, 2, 2, 6, 2, 2, 2, 6}, []byte{3, 3, 3, 9, 3, 3, 3, 9}
	l := keys.NewLive()
	s := newSlotKeys(l)
	l.Set(0, false, k1)
	if cw, final := s.begin(0x100, false); cw == keys.NoKey || !final {
		t.Fatalf("first period: CW %d, final %v", cw, final)
	}
	l.Set(0, false, stale)
	cw, _ := s.begin(0x100, false)
	if !bytes.Equal(l.CW(cw), stale) {
		t.Fatalf("second period: CW %d, want the stale one", cw)
	}
	s.reject(0x100, 2)
	if cw, final := s.current(0x100, 2); cw != keys.NoKey || final {
		t.Fatalf("after Reject: CW %d, final %v; want a wait", cw, final)
	}
	l.Set(0, false, stale) // sent again: still not for this period
	if cw, _ := s.current(0x100, 2); cw != keys.NoKey {
		t.Fatalf("the rejected CW was given again")
	}
	l.Set(0, false, k3)
	if cw, final := s.current(0x100, 2); cw == keys.NoKey || !final || !bytes.Equal(l.CW(cw), k3) {
		t.Fatalf("after a new CW: CW %d, final %v", cw, final)
	}
	if n := s.applied[AppliedKey{PID: 0x100}]; n != 2 {
		t.Fatalf("%d periods applied, want 2", n)
	}
	// The next period of the parity is offered k3, which the slot still holds; the parity has
	// had other CWs, so unchecked it is Stale.
	if cw, _ := s.begin(0x100, false); !bytes.Equal(l.CW(cw), k3) {
		t.Fatalf("third period took CW %d, want the slot's k3", cw)
	}
	if f := s.fresh(0x100, 3); f != freshStale {
		t.Fatalf("k3 again after other even CWs is %v, want stale", f)
	}
	// Sent again by the server after the period began, it holds: New.
	l.Set(0, false, k3)
	if f := s.fresh(0x100, 3); f != freshNew {
		t.Fatalf("k3 sent again is %v, want new", f)
	}
}

// A period still waiting when its PID's parity changes again keeps waiting: the key that comes
// after the next period began reaches it (named by its number); the next period of its parity
// is offered what the slot holds. A period maxWaiting periods back is forgotten: no key.
func TestSlotPeriodWaitsPastItsEnd(t *testing.T) {
	cw := func(b byte) []byte { return []byte{b, b, b, 3 * b, b, b, b, 3 * b} }
	l := keys.NewLive()
	s := newSlotKeys(l)
	if k, final := s.begin(0x100, false); k != keys.NoKey || final {
		t.Fatalf("period 1 before any key: %d %v", k, final)
	}
	l.Set(0, true, cw(2))
	if k, final := s.begin(0x100, true); !final || !bytes.Equal(l.CW(k), cw(2)) {
		t.Fatalf("period 2: %d %v", k, final)
	}
	// Period 1's key comes now, with the answer to period 2's ECM.
	l.Set(0, false, cw(1))
	if k, final := s.current(0x100, 1); !final || !bytes.Equal(l.CW(k), cw(1)) {
		t.Fatalf("period 1 after period 2 began: %d %v", k, final)
	}
	if k, _ := s.current(0x100, 2); !bytes.Equal(l.CW(k), cw(2)) {
		t.Fatalf("period 2 changed: %X", l.CW(k))
	}
	// Period 3 (even) is offered cw(1), which the slot holds; when cw(3) arrives before the
	// caller settles, asked again, it takes cw(3).
	if k, final := s.begin(0x100, false); !final || !bytes.Equal(l.CW(k), cw(1)) {
		t.Fatalf("period 3: %d %v, want the slot's cw(1)", k, final)
	}
	l.Set(0, false, cw(3))
	if k, final := s.current(0x100, 3); !final || !bytes.Equal(l.CW(k), cw(3)) {
		t.Fatalf("period 3: %d %v", k, final)
	}
	// Two periods of a parity waiting (their slot CW rejected): a key that arrives goes to the
	// older; the newer skips it, as its parity's last period's, and takes the next.
	s.begin(0x100, true) // 4: odd, offered cw(2)
	s.reject(0x100, 4)
	s.begin(0x100, false) // 5: even
	s.begin(0x100, true)  // 6: odd, offered cw(2)
	s.reject(0x100, 6)
	if k, final := s.current(0x100, 6); k != keys.NoKey || final {
		t.Fatalf("period 6 took a key: %d %v", k, final)
	}
	l.Set(0, true, cw(4))
	l.Set(0, true, cw(6))
	if k, final := s.current(0x100, 4); !final || !bytes.Equal(l.CW(k), cw(4)) {
		t.Fatalf("period 4: %d %v", k, final)
	}
	if k, final := s.current(0x100, 6); !final || !bytes.Equal(l.CW(k), cw(6)) {
		t.Fatalf("period 6: %d %v", k, final)
	}
	// Forgotten: no key will come; not begun: a key may.
	for range maxWaiting {
		s.begin(0x100, false)
	}
	if k, final := s.current(0x100, 4); k != keys.NoKey || !final {
		t.Fatalf("a period %d back: %d %v, want no key, final", maxWaiting, k, final)
	}
	if k, final := s.current(0x100, 7+maxWaiting); k != keys.NoKey || final {
		t.Fatalf("a period not begun: %d %v", k, final)
	}
}

// A period the caller gave up on takes no key that comes later: the next period of its parity
// does, though it began after the key came for the period before.
func TestSlotGiveUp(t *testing.T) {
	cw := func(b byte) []byte { return []byte{b, b, b, 3 * b, b, b, b, 3 * b} }
	l := keys.NewLive()
	s := newSlotKeys(l)
	s.begin(0x100, false) // 1: waits
	s.begin(0x100, true)  // 2: waits
	s.giveUp(0x100, 1)
	if k, final := s.current(0x100, 1); k != keys.NoKey || !final {
		t.Fatalf("period 1 after GiveUp: %d %v, want no key, final", k, final)
	}
	l.Set(0, false, cw(3))
	if k, final := s.begin(0x100, false); !final || !bytes.Equal(l.CW(k), cw(3)) {
		t.Fatalf("period 3: %d %v", k, final)
	}
	if k, _ := s.current(0x100, 1); k != keys.NoKey {
		t.Fatalf("period 1 took a key after GiveUp: %d", k)
	}
}
