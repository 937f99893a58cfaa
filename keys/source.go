package keys

import (
	"bytes"
	"slices"
	"sync"
)

// Source answers the question a descrambler asks at each crypto period of each PID: which
// control word applies to this period of this parity, now?
//
// Begin is called at the first packet of each of a PID's crypto periods (a change of its
// scrambling parity, or its first scrambled packet); the periods Begin starts are numbered per
// PID from 1. Current asks again, later, for one of them: the one Begin just started, or an
// earlier one still waiting for its key after the PID's parity changed again (on a live input
// a key server may answer after the next period began). Both return the index of the CW (see
// CW) and whether the answer is final: a final NoKey means no key will come for the period
// (its packets pass as they came), a NoKey that is not final means the key has not arrived yet
// and the caller may hold the period's packets and ask again when Arrived signals, until it
// gives up.
//
// A Source's CW indexes are stable: a CW keeps its index for the life of the Source. Begin and
// Current belong to one goroutine (the one that follows the stream); the CWs of a live source
// may arrive from others.
type Source interface {
	// Begin starts a crypto period of pid with the given parity (odd false: TSC 10; odd
	// true: TSC 11) and returns its CW index, and whether that answer is final.
	Begin(pid uint16, odd bool) (cw int, final bool)
	// Current returns the CW index of pid's period number period (the period-th Begin for
	// pid, from 1), and whether that answer is final.
	Current(pid uint16, period int) (cw int, final bool)
	// CW returns control word i, sharing the source's storage: do not modify it.
	CW(i int) []byte
	// Arrived returns a channel that receives a value when new control words have arrived,
	// or nil for a source whose keys are all known from the start.
	Arrived() <-chan struct{}
	// Reject says that the CW Begin or Current gave pid's period number period does not fit
	// it (the caller checked it on the period's first unit start): the period waits again,
	// and that CW is not given to it again. A source whose answers are final answers the
	// same.
	Reject(pid uint16, period int)
	// GiveUp says that the caller stopped waiting for the key of pid's period number period:
	// a CW that comes later is not given to it, but kept for the periods after it.
	GiveUp(pid uint16, period int)
	// Fresh says what is known of the CW Begin or Current gave pid's period number period,
	// for a caller that has no unit start to check it on, or that found it not to fit. A
	// source whose answers are final says New.
	Fresh(pid uint16, period int) Freshness
}

// MaxLiveCWs bounds the distinct control words a Live source keeps at once: far more than a day
// of crypto periods of ten seconds on a few key slots. When a new CW would pass it, those that
// no key slot and no remembered period refers to any more are forgotten, so that a feed that
// runs for weeks goes on taking new CWs and a key server cannot make the process grow without
// bound.
const MaxLiveCWs = 1 << 16

// MaxLiveSlots bounds the key slots of a Live source (the descrambler indexes a DVBAPI server
// may name).
const MaxLiveSlots = 256

// MaxLiveWaiting bounds the periods of each PID a Live source remembers, the current one and
// those before it that may still wait for their key: a period that far back gets no key
// (Current answers NoKey, final).
const MaxLiveWaiting = 64

// Live is a Source whose control words arrive while the stream runs, from a key server that
// answers the stream's ECMs. CWs are set per key slot and parity (Set); each PID uses slot 0
// unless MapPID says otherwise (a DVBAPI server's CA_SET_PID).
//
// A slot holds the last CW of each parity until another replaces it, as a DVB descrambler's
// key slot does: a key server may send a CW again with every answer (a constant-CW reader, a
// CAS whose CW of one parity stays for several ECMs) or, as a DVBAPI server does, only when it
// changes. A PID's period takes the CW its slot holds for the period's parity when the period
// begins, whether or not an earlier period used the same CW; the caller checks it on the
// period's first checkable unit start and rejects it (Reject) when it does not fit: the period
// then waits, and takes the first CW of its parity that arrives after it began and that it has
// not rejected. A period that begins before any CW of its parity has come waits the same way.
// A late key applies from the period's first packet, which the caller still holds, and a
// period keeps waiting after the PID's parity changes again (Current names it by number), so a
// key that comes after the next period began still reaches it.
//
// Without a check, a CW may be the previous period's that the server has not replaced yet:
// Fresh says whether the period's CW is new to it, the only one its parity has had, or stale.
// A period that never gets a key is the caller's to give up on, after a wait of its choosing.
type Live struct {
	mu      sync.Mutex
	cws     map[int][]byte       // the CWs kept, by CW index (in order of arrival, never reused)
	nextCW  int                  // the index the next new CW takes
	index   map[string]int       // CW bytes to index
	slots   map[int]*[2][]slotCW // slot to the CWs received per parity (0 even, 1 odd), oldest first
	seq     uint64               // CWs received so far, repeats included: the arrival number of the latest
	pidSlot map[uint16]int
	pids    map[uint16]*livePID
	arrived chan struct{}

	applied  map[AppliedKey]int64
	refused  int64
	received int64
}

// livePID is what a Live source remembers of a PID: its latest periods, and the CW of the last
// period of each parity it no longer remembers.
type livePID struct {
	begun  int          // periods begun
	recent []livePeriod // the latest periods, oldest first, at most MaxLiveWaiting
	gone   [2]int       // CW of the last period of each parity dropped from recent that had one, or NoKey
}

// slotCW is a CW received for a slot and parity, with its arrival number and that of the
// latest time it was sent again while the slot held it.
type slotCW struct {
	cw        int
	seq, last uint64
}

// livePeriod is one of a PID's periods.
type livePeriod struct {
	number int
	odd    bool
	begun  uint64 // Live.seq when it began: the CWs that arrived after are its candidates
	gaveUp bool   // the caller stopped waiting for its key (GiveUp)
	held   bool   // cw is the one the slot held when it began, not one that arrived after
	cw     int    // its CW, or NoKey while it waits
	// rejected holds the CWs the caller found not to fit the period.
	rejected []int
}

// AppliedKey names the CWs a Live source gave, per PID and parity, for Live.Applied.
type AppliedKey struct {
	PID uint16
	Odd bool
}

// NewLive returns a Live source without keys.
func NewLive() *Live {
	return &Live{
		index:   make(map[string]int),
		cws:     make(map[int][]byte),
		slots:   make(map[int]*[2][]slotCW),
		pidSlot: make(map[uint16]int),
		pids:    make(map[uint16]*livePID),
		arrived: make(chan struct{}, 1),
		applied: make(map[AppliedKey]int64),
	}
}

// Set stores cw as slot's latest control word of the given parity and signals Arrived. It
// returns false, and keeps nothing, for a slot out of range, an empty CW or one of more than
// 16 bytes, or when MaxLiveCWs distinct CWs are already kept. The CW is copied.
func (l *Live) Set(slot int, odd bool, cw []byte) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if slot < 0 || slot >= MaxLiveSlots || len(cw) == 0 || len(cw) > 16 {
		l.refused++
		return false
	}
	idx, ok := l.index[string(cw)]
	if !ok {
		if len(l.cws) >= MaxLiveCWs {
			l.forget()
		}
		idx = l.nextCW
		l.nextCW++
		l.cws[idx] = bytes.Clone(cw)
		l.index[string(cw)] = idx
	}
	l.received++
	sl := l.slots[slot]
	if sl == nil {
		sl = new([2][]slotCW)
		l.slots[slot] = sl
	}
	h := &sl[parityIndex(odd)]
	l.seq++
	if n := len(*h); n > 0 && (*h)[n-1].cw == idx {
		(*h)[n-1].last = l.seq // the slot's CW sent again: it still holds
	} else {
		if n == MaxLiveWaiting {
			*h = append((*h)[:0], (*h)[1:]...)
		}
		*h = append(*h, slotCW{cw: idx, seq: l.seq, last: l.seq})
	}
	select {
	case l.arrived <- struct{}{}:
	default:
	}
	return true
}

// MapPID makes pid use the CWs of slot (by default every PID uses slot 0). It returns false
// for a slot out of range.
func (l *Live) MapPID(pid uint16, slot int) bool {
	if slot < 0 || slot >= MaxLiveSlots {
		return false
	}
	l.mu.Lock()
	l.pidSlot[pid&0x1FFF] = slot
	l.mu.Unlock()
	return true
}

// Begin implements Source.
func (l *Live) Begin(pid uint16, odd bool) (int, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	p := l.pids[pid]
	if p == nil {
		p = &livePID{gone: [2]int{NoKey, NoKey}}
		l.pids[pid] = p
	}
	if len(p.recent) == MaxLiveWaiting {
		old := p.recent[0]
		if old.cw != NoKey {
			p.gone[parityIndex(old.odd)] = old.cw
		}
		// The rejected list's storage goes with the period that reuses the slot.
		rejected := old.rejected[:0]
		p.recent = append(p.recent[:0], p.recent[1:]...)
		p.recent = append(p.recent, livePeriod{rejected: rejected})
	} else {
		p.recent = append(p.recent, livePeriod{})
	}
	p.begun++
	i := len(p.recent) - 1
	p.recent[i] = livePeriod{number: p.begun, odd: odd, cw: NoKey, begun: l.seq, rejected: p.recent[i].rejected[:0]}
	l.decideUpTo(pid, p, i)
	return p.recent[i].cw, p.recent[i].cw != NoKey
}

// period returns the position in p.recent of period number n, or -1.
func (p *livePID) period(n int) int {
	i := len(p.recent) - 1 - (p.begun - n)
	if i < 0 || i >= len(p.recent) {
		return -1
	}
	return i
}

// Current implements Source.
func (l *Live) Current(pid uint16, period int) (int, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	p := l.pids[pid]
	if p == nil {
		return NoKey, false
	}
	i := p.period(period)
	if i < 0 {
		// Not begun yet (not final: Begin may start it), or no longer remembered.
		return NoKey, period <= p.begun
	}
	if w := &p.recent[i]; w.gaveUp {
		return NoKey, true
	}
	if w := &p.recent[i]; w.held && l.arrivedSince(pid, p, i) {
		// The slot held a CW when the period began, and another has arrived since: asked
		// again, the period takes the one that arrived (the caller has not settled on the
		// held one, or it would not ask).
		l.unapply(pid, w)
	}
	l.decideUpTo(pid, p, i)
	return p.recent[i].cw, p.recent[i].cw != NoKey
}

// decideUpTo decides, oldest first, the periods up to recent[i] that wait for their key: a CW
// goes to the oldest period it is new to, so a period that began after another of its parity
// still waiting does not take that one's key.
func (l *Live) decideUpTo(pid uint16, p *livePID, i int) {
	for j := 0; j <= i; j++ {
		if w := &p.recent[j]; w.cw == NoKey && !w.gaveUp {
			l.decide(pid, p, j)
		}
	}
}

// GiveUp implements Source.
func (l *Live) GiveUp(pid uint16, period int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if p := l.pids[pid]; p != nil {
		if i := p.period(period); i >= 0 && p.recent[i].cw == NoKey {
			p.recent[i].gaveUp = true
		}
	}
}

// decide gives pid's waiting period recent[i] the CW its slot holds for its parity: the first
// that arrived after it began, other than the one the PID's last period of its parity used and
// not rejected by it, else the one the slot held when it began, unless rejected. Each CW that arrives is kept in order, not only the latest: a period
// that waits past its end may be asked after the next key of its parity came.
func (l *Live) decide(pid uint16, p *livePID, i int) {
	sl := l.slots[l.pidSlot[pid]]
	if sl == nil {
		return
	}
	w := &p.recent[i]
	h := sl[parityIndex(w.odd)]
	held := NoKey // the slot's CW when the period began
	used := p.before(i)
	for _, e := range h {
		if e.seq <= w.begun {
			held = e.cw
			continue
		}
		// A CW that arrived since, unless it is the one the PID's period of this parity
		// before used: a period that waited past its end may have taken it.
		if e.cw != used && l.take(pid, w, e.cw) {
			return
		}
	}
	if held != NoKey && l.take(pid, w, held) {
		w.held = true
	}
}

// before returns the CW of the PID's last period before recent[i] of the same parity that
// had one, remembered or forgotten, or NoKey.
func (p *livePID) before(i int) int {
	odd := p.recent[i].odd
	for j := i - 1; j >= 0; j-- {
		if p.recent[j].odd == odd && p.recent[j].cw != NoKey {
			return p.recent[j].cw
		}
	}
	return p.gone[parityIndex(odd)]
}

// take gives period w CW cw unless the caller rejected it for the period.
func (l *Live) take(pid uint16, w *livePeriod, cw int) bool {
	if slices.Contains(w.rejected, cw) {
		return false
	}
	w.cw, w.held = cw, false
	l.applied[AppliedKey{PID: pid, Odd: w.odd}]++
	return true
}

// Freshness says what is known of a period's CW before it is checked (Source.Fresh).
type Freshness int8

const (
	// Stale: the CW is the one the PID's last period of the same parity used, and the source
	// has had other CWs of that parity: it may be the previous period's, not replaced yet.
	Stale Freshness = iota
	// Constant: the CW is the one the PID's last period of the same parity used, and the only
	// CW of its parity the source has had so far.
	Constant
	// New: the CW differs from the one the PID's last period of the same parity used, or was
	// sent (again) after the period began.
	New
)

// Fresh implements Source: what Freshness the CW of pid's period number period has. A period
// without a CW is Stale.
func (l *Live) Fresh(pid uint16, period int) Freshness {
	l.mu.Lock()
	defer l.mu.Unlock()
	p := l.pids[pid]
	if p == nil {
		return Stale
	}
	i := p.period(period)
	if i < 0 || p.recent[i].cw == NoKey {
		return Stale
	}
	w := &p.recent[i]
	if w.cw != p.before(i) {
		return New
	}
	sl := l.slots[l.pidSlot[pid]]
	if sl == nil {
		return Stale
	}
	h := sl[parityIndex(w.odd)]
	for _, e := range h {
		if e.cw == w.cw && e.last > w.begun {
			return New // sent again since the period began: the server says it still holds
		}
	}
	for j := range i {
		if slices.Contains(p.recent[j].rejected, w.cw) {
			return Stale // an earlier period found it does not fit: not a constant key
		}
	}
	if len(h) <= 1 {
		return Constant
	}
	return Stale
}

// arrivedSince reports whether a CW that decide would give recent[i] before the one its slot
// held arrived after it began: one other than its own and its parity's last period's, that it
// has not rejected.
func (l *Live) arrivedSince(pid uint16, p *livePID, i int) bool {
	sl := l.slots[l.pidSlot[pid]]
	if sl == nil {
		return false
	}
	w, used := &p.recent[i], p.before(i)
	for _, e := range sl[parityIndex(w.odd)] {
		if e.seq > w.begun && e.cw != w.cw && e.cw != used && !slices.Contains(w.rejected, e.cw) {
			return true
		}
	}
	return false
}

// unapply takes w's CW back: it waits again.
func (l *Live) unapply(pid uint16, w *livePeriod) {
	if a := (AppliedKey{PID: pid, Odd: w.odd}); l.applied[a] > 1 {
		l.applied[a]--
	} else {
		delete(l.applied, a)
	}
	w.cw, w.held = NoKey, false
}

// Periods returns the number of crypto periods of pid begun so far: the number of the latest.
func (l *Live) Periods(pid uint16) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if p := l.pids[pid]; p != nil {
		return p.begun
	}
	return 0
}

// Reject implements Source.
func (l *Live) Reject(pid uint16, period int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	p := l.pids[pid]
	if p == nil {
		return
	}
	i := p.period(period)
	if i < 0 || p.recent[i].cw == NoKey {
		return
	}
	w := &p.recent[i]
	w.rejected = append(w.rejected, w.cw)
	l.unapply(pid, w)
}

// CW implements Source.
func (l *Live) CW(i int) []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.cws[i]
}

// forget drops the CWs that no slot holds (its last MaxLiveWaiting CWs of each parity), no
// remembered period of a PID has, used or rejected, and that are not among the latest
// keepLatestCWs: periods long gone, on a feed that runs for weeks. Their indexes are not
// reused.
func (l *Live) forget() {
	keep := make(map[int]bool)
	for _, sl := range l.slots {
		for _, h := range sl {
			for _, e := range h {
				keep[e.cw] = true
			}
		}
	}
	for _, p := range l.pids {
		keep[p.gone[0]], keep[p.gone[1]] = true, true
		for _, w := range p.recent {
			keep[w.cw] = true
			for _, r := range w.rejected {
				keep[r] = true
			}
		}
	}
	for i, cw := range l.cws {
		if !keep[i] && i < l.nextCW-keepLatestCWs {
			delete(l.index, string(cw))
			delete(l.cws, i)
		}
	}
}

// keepLatestCWs is how many of the latest CWs forget keeps whatever refers to them: a caller
// that decided a period with one may still be using it.
const keepLatestCWs = 4096

// NumCWs returns the number of distinct control words received so far.
func (l *Live) NumCWs() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.cws)
}

// Arrived implements Source.
func (l *Live) Arrived() <-chan struct{} { return l.arrived }

// Applied returns how many crypto periods got a CW, per PID and parity.
func (l *Live) Applied() map[AppliedKey]int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	m := make(map[AppliedKey]int64, len(l.applied))
	for k, v := range l.applied {
		m[k] = v
	}
	return m
}

// Received returns the number of CWs Set accepted, and the number it refused.
func (l *Live) Received() (accepted, refused int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.received, l.refused
}

func parityIndex(odd bool) int {
	if odd {
		return 1
	}
	return 0
}
