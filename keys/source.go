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
// scrambling parity, or its first scrambled packet); Current asks again, later, for the period
// Begin started. Both return the index of the CW (see CW) and whether the answer is final: a
// final NoKey means no key will come for this period (its packets pass as they came), a NoKey
// that is not final means the key has not arrived yet and the caller may hold the period's
// packets and ask again when Arrived signals, until it gives up.
//
// A Source's CW indexes are stable: a CW keeps its index for the life of the Source. Begin and
// Current belong to one goroutine (the one that follows the stream); the CWs of a live source
// may arrive from others.
type Source interface {
	// Begin starts a crypto period of pid with the given parity (odd false: TSC 10; odd
	// true: TSC 11) and returns its CW index, and whether that answer is final.
	Begin(pid uint16, odd bool) (cw int, final bool)
	// Current returns the CW index of pid's current period (the one the last Begin for pid
	// started), and whether that answer is final.
	Current(pid uint16) (cw int, final bool)
	// CW returns control word i, sharing the source's storage: do not modify it.
	CW(i int) []byte
	// Arrived returns a channel that receives a value when new control words have arrived,
	// or nil for a source whose keys are all known from the start.
	Arrived() <-chan struct{}
	// Reject says that the CW Begin or Current gave pid's current period does not fit it
	// (the caller checked it on the period's first unit start): the period waits again, and
	// that CW is not given to it again. A source whose answers are final answers the same.
	Reject(pid uint16)
}

// ScheduleSource puts a Schedule behind the Source interface: each PID follows the schedule's
// cycle from the position of its first period's parity, moving on at each of its periods. Every
// answer is final. (Key synchronisation, Schedule.Sync, realigns a PID when a period's expected
// key does not fit; a caller that checks keys uses the Schedule itself for that.)
type ScheduleSource struct {
	s   *Schedule
	pos map[uint16]int
}

// NewScheduleSource returns a Source over s, the fixed CWs, CW list, pair file or .cwl log it
// was built from.
func NewScheduleSource(s *Schedule) *ScheduleSource {
	return &ScheduleSource{s: s, pos: make(map[uint16]int)}
}

// Begin implements Source.
func (ss *ScheduleSource) Begin(pid uint16, odd bool) (int, bool) {
	pos, ok := ss.pos[pid]
	if ok {
		pos = ss.s.Next(pos)
	} else {
		pos = ss.s.Start(odd)
	}
	ss.pos[pid] = pos
	return ss.s.KeyAt(pos), true
}

// Current implements Source.
func (ss *ScheduleSource) Current(pid uint16) (int, bool) {
	pos, ok := ss.pos[pid]
	if !ok {
		return NoKey, true
	}
	return ss.s.KeyAt(pos), true
}

// CW implements Source.
func (ss *ScheduleSource) CW(i int) []byte { return ss.s.CW(i) }

// Arrived implements Source: a schedule's keys are all known from the start.
func (ss *ScheduleSource) Arrived() <-chan struct{} { return nil }

// Reject implements Source: a schedule has no other key for the period.
func (ss *ScheduleSource) Reject(uint16) {}

// MaxLiveCWs bounds the distinct control words a Live source keeps: far more than a day of
// crypto periods of ten seconds on a few key slots. Past it, Set refuses new CWs (SetRefused
// counts them), so that a key server cannot make the process grow without bound.
const MaxLiveCWs = 1 << 16

// MaxLiveSlots bounds the key slots of a Live source (the descrambler indexes a DVBAPI server
// may name).
const MaxLiveSlots = 256

// Live is a Source whose control words arrive while the stream runs, from a key server that
// answers the stream's ECMs. CWs are set per key slot and parity (Set); each PID uses slot 0
// unless MapPID says otherwise (a DVBAPI server's CA_SET_PID).
//
// A CW that arrives for a parity takes effect at each PID's next period of that parity, never
// in the middle of a period whose key is already decided. A PID's period takes the slot's
// latest CW of its parity if that CW is new to the PID: different from the CW the PID's last
// period of the same parity used (a key server answers the ECM of the next period during the
// current one, so the new key is there before the parity changes). Otherwise the period waits
// (Begin and Current answer NoKey, not final), and the first new CW of its parity that arrives
// decides it: a late key applies from the period's first packet, which the caller still holds.
// A CW the caller rejects (Reject: it does not fit the period's first unit start) is new no
// more for that period, which waits for the next one: a key server that also sends the other
// parity's previous key sends it late, after a period that got no key, and that stale key is
// new to the PID.
// A period that never gets a key is the caller's to give up on, after a wait of its choosing.
//
// A stream whose key of one parity repeats from one period of that parity to the next (a
// constant key that still flips parity) waits at every period with this rule: give such keys
// with NewFixed instead.
type Live struct {
	mu      sync.Mutex
	cws     [][]byte        // distinct CWs in order of arrival; their index is the CW index
	index   map[string]int  // CW bytes to index
	slots   map[int]*[2]int // slot to latest CW index per parity (0 even, 1 odd), or NoKey
	pidSlot map[uint16]int
	pids    map[uint16]*livePID
	arrived chan struct{}

	applied  map[AppliedKey]int64
	refused  int64
	received int64
}

// livePID is what a Live source remembers of a PID: its current period, and the CW its last
// period of each parity used.
type livePID struct {
	started bool
	odd     bool
	cw      int    // CW of the current period, or NoKey while it waits
	last    [2]int // CW index the PID's last period of each parity used, or NoKey
	// rejected holds the CWs the caller found not to fit the current period.
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
		slots:   make(map[int]*[2]int),
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
			l.refused++
			return false
		}
		idx = len(l.cws)
		l.cws = append(l.cws, bytes.Clone(cw))
		l.index[string(cw)] = idx
	}
	l.received++
	sl := l.slots[slot]
	if sl == nil {
		sl = &[2]int{NoKey, NoKey}
		l.slots[slot] = sl
	}
	sl[parityIndex(odd)] = idx
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
		p = &livePID{last: [2]int{NoKey, NoKey}}
		l.pids[pid] = p
	}
	if p.started && p.cw != NoKey {
		p.last[parityIndex(p.odd)] = p.cw
	}
	p.started, p.odd, p.cw = true, odd, NoKey
	p.rejected = p.rejected[:0]
	l.decide(pid, p)
	return p.cw, p.cw != NoKey
}

// Current implements Source.
func (l *Live) Current(pid uint16) (int, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	p := l.pids[pid]
	if p == nil || !p.started {
		return NoKey, false
	}
	if p.cw == NoKey {
		l.decide(pid, p)
	}
	return p.cw, p.cw != NoKey
}

// decide gives pid's waiting period the slot's latest CW of its parity when it is new to the PID.
func (l *Live) decide(pid uint16, p *livePID) {
	sl := l.slots[l.pidSlot[pid]]
	if sl == nil {
		return
	}
	cw := sl[parityIndex(p.odd)]
	if cw == NoKey || cw == p.last[parityIndex(p.odd)] || slices.Contains(p.rejected, cw) {
		return
	}
	p.cw = cw
	l.applied[AppliedKey{PID: pid, Odd: p.odd}]++
}

// Reject implements Source.
func (l *Live) Reject(pid uint16) {
	l.mu.Lock()
	defer l.mu.Unlock()
	p := l.pids[pid]
	if p == nil || !p.started || p.cw == NoKey {
		return
	}
	p.rejected = append(p.rejected, p.cw)
	if a := (AppliedKey{PID: pid, Odd: p.odd}); l.applied[a] > 1 {
		l.applied[a]--
	} else {
		delete(l.applied, a)
	}
	p.cw = NoKey
}

// CW implements Source.
func (l *Live) CW(i int) []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.cws[i]
}

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
