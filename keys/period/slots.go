package period

import (
	"slices"

	"github.com/tsdescramble/tsdescramble/keys"
)

// Which CW of a key slot goes to which crypto period.
//
// A keys.Source is a set of key slots: for each PID, the CWs of each parity its slot received,
// in order, with their arrival numbers. slotKeys remembers each PID's latest periods, with the
// arrival number at which each began, and gives a period the CW its slot holds for the
// period's parity: the first that arrived after the period began, other than the CW the PID's
// last period of that parity used and not one the period rejected, else the one the slot held
// when it began (a constant key, or one not replaced yet), unless rejected. A CW goes to the
// oldest waiting period it is new to, so a period that began after another of its parity still
// waiting does not take that one's key. The Tracker asks when a period begins (begin) and,
// while it waits, again (current, by the period's number); it says when a CW did not fit
// (reject) and when it stopped waiting (giveUp). Without a check, fresh says whether the CW is
// new to the period, the only one its parity has had, or may be the previous period's.

// maxWaiting bounds the periods of each PID slotKeys remembers, the current one and those
// before it that may still wait for their key: a period that far back gets no key (current
// answers NoKey, final).
const maxWaiting = 64

// AppliedKey names the periods of one PID and parity, for Waits.Applied.
type AppliedKey struct {
	PID uint16
	Odd bool
}

// slotKeys decides which of a Source's CWs each crypto period of each PID takes.
type slotKeys struct {
	src     keys.Source
	pids    map[uint16]*slotPID
	applied map[AppliedKey]int64 // periods that took a CW, per PID and parity
	// takes counts the CWs given to periods, per PID: as applied, but never taken back, so
	// that it only grows (a metric's counter).
	takes map[uint16]int64
	buf   []keys.Arrival // what a slot received, read again for each decision
}

// slotPID is what slotKeys remembers of a PID: its latest periods, and the CW of the last
// period of each parity it no longer remembers.
type slotPID struct {
	begun  int          // periods begun
	recent []slotPeriod // the latest periods, oldest first, at most maxWaiting
	gone   [2]int       // CW of the last period of each parity dropped from recent that had one, or NoKey
}

// slotPeriod is one of a PID's periods.
type slotPeriod struct {
	number int
	odd    bool
	begun  uint64 // the Source's Seq when it began: the CWs that arrived after are its candidates
	gaveUp bool   // the Tracker stopped waiting for its key (giveUp)
	held   bool   // cw is the one the slot held when it began, not one that arrived after
	cw     int    // its CW, or NoKey while it waits
	// rejected holds the CWs the Tracker found not to fit the period.
	rejected []int
}

func newSlotKeys(src keys.Source) *slotKeys {
	return &slotKeys{src: src, pids: make(map[uint16]*slotPID), applied: make(map[AppliedKey]int64),
		takes: make(map[uint16]int64)}
}

// slot returns what pid's slot received of the given parity since arrival number since: the
// CW it held then, and those after.
func (s *slotKeys) slot(pid uint16, odd bool, since uint64) []keys.Arrival {
	s.buf = s.src.AppendSlot(s.buf[:0], pid, odd, since)
	return s.buf
}

// begin starts a crypto period of pid with the given parity and returns its CW index, and
// whether that answer is final (NoKey, not final: the key has not come yet).
func (s *slotKeys) begin(pid uint16, odd bool) (int, bool) {
	p := s.pids[pid]
	if p == nil {
		p = &slotPID{gone: [2]int{keys.NoKey, keys.NoKey}}
		s.pids[pid] = p
	}
	if len(p.recent) == maxWaiting {
		old := p.recent[0]
		if old.cw != keys.NoKey {
			p.gone[parityIndex(old.odd)] = old.cw
		}
		// The rejected list's storage goes with the period that reuses the place.
		rejected := old.rejected[:0]
		p.recent = append(p.recent[:0], p.recent[1:]...)
		p.recent = append(p.recent, slotPeriod{rejected: rejected})
	} else {
		p.recent = append(p.recent, slotPeriod{})
	}
	p.begun++
	i := len(p.recent) - 1
	p.recent[i] = slotPeriod{number: p.begun, odd: odd, cw: keys.NoKey, begun: s.src.Seq(), rejected: p.recent[i].rejected[:0]}
	s.decideUpTo(pid, p, i)
	return p.recent[i].cw, p.recent[i].cw != keys.NoKey
}

// period returns the position in p.recent of period number n, or -1.
func (p *slotPID) period(n int) int {
	i := len(p.recent) - 1 - (p.begun - n)
	if i < 0 || i >= len(p.recent) {
		return -1
	}
	return i
}

// current returns the CW index of pid's period number n (the n-th begin for pid, from 1),
// and whether that answer is final.
func (s *slotKeys) current(pid uint16, n int) (int, bool) {
	p := s.pids[pid]
	if p == nil {
		return keys.NoKey, false
	}
	i := p.period(n)
	if i < 0 {
		// Not begun yet (not final: begin may start it), or no longer remembered.
		return keys.NoKey, n <= p.begun
	}
	if w := &p.recent[i]; w.gaveUp {
		return keys.NoKey, true
	}
	if w := &p.recent[i]; w.held && s.arrivedSince(pid, p, i) {
		// The slot held a CW when the period began, and another has arrived since: asked
		// again, the period takes the one that arrived (the Tracker has not settled on the
		// held one, or it would not ask).
		s.unapply(pid, w)
	}
	s.decideUpTo(pid, p, i)
	return p.recent[i].cw, p.recent[i].cw != keys.NoKey
}

// decideUpTo decides, oldest first, the periods up to recent[i] that wait for their key: a CW
// goes to the oldest period it is new to, so a period that began after another of its parity
// still waiting does not take that one's key.
func (s *slotKeys) decideUpTo(pid uint16, p *slotPID, i int) {
	for j := 0; j <= i; j++ {
		if w := &p.recent[j]; w.cw == keys.NoKey && !w.gaveUp {
			s.decide(pid, p, j)
		}
	}
}

// giveUp says that the Tracker stopped waiting for the key of pid's period number n: a CW
// that comes later is not given to it, but kept for the periods after it.
func (s *slotKeys) giveUp(pid uint16, n int) {
	if p := s.pids[pid]; p != nil {
		if i := p.period(n); i >= 0 && p.recent[i].cw == keys.NoKey {
			p.recent[i].gaveUp = true
		}
	}
}

// decide gives pid's waiting period recent[i] the CW its slot holds for its parity: the first
// that arrived after it began, other than the one the PID's last period of its parity used and
// not rejected by it, else the one the slot held when it began, unless rejected.
func (s *slotKeys) decide(pid uint16, p *slotPID, i int) {
	w := &p.recent[i]
	held := keys.NoKey // the slot's CW when the period began
	used := p.before(i)
	for _, e := range s.slot(pid, w.odd, w.begun) {
		if e.Seq <= w.begun {
			held = e.CW
			continue
		}
		// A CW that arrived since, unless it is the one the PID's period of this parity
		// before used: a period that waited past its end may have taken it.
		if e.CW != used && s.take(pid, w, e.CW) {
			return
		}
	}
	if held != keys.NoKey && s.take(pid, w, held) {
		w.held = true
	}
}

// before returns the CW of the PID's last period before recent[i] of the same parity that
// had one, remembered or forgotten, or NoKey.
func (p *slotPID) before(i int) int {
	odd := p.recent[i].odd
	for j := i - 1; j >= 0; j-- {
		if p.recent[j].odd == odd && p.recent[j].cw != keys.NoKey {
			return p.recent[j].cw
		}
	}
	return p.gone[parityIndex(odd)]
}

// take gives period w CW cw unless the Tracker rejected it for the period.
func (s *slotKeys) take(pid uint16, w *slotPeriod, cw int) bool {
	if slices.Contains(w.rejected, cw) {
		return false
	}
	w.cw, w.held = cw, false
	s.applied[AppliedKey{PID: pid, Odd: w.odd}]++
	s.takes[pid]++
	return true
}

// freshness says what is known of a period's CW before it is checked (slotKeys.fresh).
type freshness int8

const (
	// freshStale: the CW is the one the PID's last period of the same parity used, and the slot
	// has had other CWs of that parity: it may be the previous period's, not replaced yet.
	freshStale freshness = iota
	// freshConstant: the CW is the one the PID's last period of the same parity used, and the
	// only CW of its parity the slot has had so far.
	freshConstant
	// freshNew: the CW differs from the one the PID's last period of the same parity used, or
	// was sent (again) after the period began.
	freshNew
)

// fresh says what freshness the CW of pid's period number n has, for a Tracker that has no
// unit start to check it on, or that found it not to fit. A period without a CW is stale.
func (s *slotKeys) fresh(pid uint16, n int) freshness {
	p := s.pids[pid]
	if p == nil {
		return freshStale
	}
	i := p.period(n)
	if i < 0 || p.recent[i].cw == keys.NoKey {
		return freshStale
	}
	w := &p.recent[i]
	if w.cw != p.before(i) {
		return freshNew
	}
	h := s.slot(pid, w.odd, 0)
	for _, e := range h {
		if e.CW == w.cw && e.Last > w.begun {
			return freshNew // sent again since the period began: the server says it still holds
		}
	}
	for j := range i {
		if slices.Contains(p.recent[j].rejected, w.cw) {
			return freshStale // an earlier period found it does not fit: not a constant key
		}
	}
	if len(h) <= 1 {
		return freshConstant
	}
	return freshStale
}

// arrivedSince reports whether a CW that decide would give recent[i] before the one its slot
// held arrived after it began: one other than its own and its parity's last period's, that it
// has not rejected.
func (s *slotKeys) arrivedSince(pid uint16, p *slotPID, i int) bool {
	w, used := &p.recent[i], p.before(i)
	for _, e := range s.slot(pid, w.odd, w.begun) {
		if e.Seq > w.begun && e.CW != w.cw && e.CW != used && !slices.Contains(w.rejected, e.CW) {
			return true
		}
	}
	return false
}

// unapply takes w's CW back: it waits again.
func (s *slotKeys) unapply(pid uint16, w *slotPeriod) {
	if a := (AppliedKey{PID: pid, Odd: w.odd}); s.applied[a] > 1 {
		s.applied[a]--
	} else {
		delete(s.applied, a)
	}
	w.cw, w.held = keys.NoKey, false
}

// reject says that the CW begin or current gave pid's period number n does not fit it (the
// Tracker checked it on the period's first unit start): the period waits again, and that CW is
// not given to it again.
func (s *slotKeys) reject(pid uint16, n int) {
	p := s.pids[pid]
	if p == nil {
		return
	}
	i := p.period(n)
	if i < 0 || p.recent[i].cw == keys.NoKey {
		return
	}
	w := &p.recent[i]
	w.rejected = append(w.rejected, w.cw)
	s.unapply(pid, w)
}

func parityIndex(odd bool) int {
	if odd {
		return 1
	}
	return 0
}
