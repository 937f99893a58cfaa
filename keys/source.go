package keys

import (
	"bytes"
	"sync"

	"github.com/tsdescramble/tsdescramble/scrambling"
)

// Source is a set of key slots, as a DVB descrambler's, filled while the stream runs (a key
// server answering the stream's ECMs, a CW log that grows): for each PID, the control words of
// each parity its slot received, in order of arrival. It decides nothing: which CW applies to
// which crypto period is decided by package keys/period, from what the slot received and when.
//
// Every CW a Source receives, repeats included, takes the next arrival number (Seq). A CW keeps
// its index (CW) for the life of the Source. CWs may arrive from other goroutines while the
// caller reads.
type Source interface {
	// Seq returns the arrival number of the latest CW received (0: none yet). A CW whose
	// arrival number is above a Seq read at some moment arrived after that moment.
	Seq() uint64
	// AppendSlot appends to dst, oldest first, the CWs of the given parity (odd false: TSC
	// 10; odd true: TSC 11) that pid's key slot received: the one it held at arrival number
	// since (the latest that arrived then or before), if it still remembers it, and each that
	// arrived after. A CW sent again while the slot holds it is one Arrival, whose Last says
	// when it was last sent. With since 0 it appends all the slot remembers.
	AppendSlot(dst []Arrival, pid uint16, odd bool, since uint64) []Arrival
	// CW returns control word i, sharing the source's storage: do not modify it.
	CW(i int) []byte
	// Arrived returns a channel that receives a value when new control words have arrived.
	Arrived() <-chan struct{}
}

// SystemSource is a Source whose CWs may each be for a scrambling system of their own: a key
// server that sets a descrambling mode per key slot (OSCam's DVBAPI CA_SET_DESCR_MODE: DVB-CSA,
// DES or AES-128, ECB or CBC, and the slot's IV). The one who decides which CW a period takes
// (package keys/period) checks a CW with its own system, and the pipeline descrambles with it.
type SystemSource interface {
	Source
	// System returns the system of CW i, or nil for the run's input system.
	System(i int) scrambling.System
}

// Arrival is a CW a key slot received for one parity.
type Arrival struct {
	CW   int    // its index (Source.CW)
	Seq  uint64 // its arrival number
	Last uint64 // the arrival number of the latest time it was sent, while the slot held it
}

// MaxLiveCWs bounds the distinct control words a Live source keeps at once: far more than a day
// of crypto periods of ten seconds on a few key slots. When a new CW would pass it, those that
// no key slot remembers and that are not among the latest are forgotten, so that a feed that
// runs for weeks goes on taking new CWs and a key server cannot make the process grow without
// bound.
const MaxLiveCWs = 1 << 16

// MaxLiveSlots bounds the key slots of a Live source (the descrambler indexes a DVBAPI server
// may name).
const MaxLiveSlots = 256

// MaxSlotCWs bounds the CWs of each parity a key slot of a Live source remembers: the one it
// holds and those before it.
const MaxSlotCWs = 64

// Live is a Source whose control words arrive while the stream runs, from a key server that
// answers the stream's ECMs. CWs are set per key slot and parity (Set); each PID uses slot 0
// unless MapPID says otherwise (a DVBAPI server's CA_SET_PID). A CW set with SetFor is for the
// system given, so that one slot may change its descrambling mode between keys and each parity
// keep the system its key came with: Live is a SystemSource.
//
// A slot holds the last CW of each parity until another replaces it, as a DVB descrambler's
// key slot does: a key server may send a CW again with every answer (a constant-CW reader, a
// CAS whose CW of one parity stays for several ECMs) or, as a DVBAPI server does, only when it
// changes. A slot remembers its last MaxSlotCWs CWs of each parity in order of arrival, not
// only the latest: a crypto period that waits past its end may be decided after the next key
// of its parity came.
type Live struct {
	mu      sync.Mutex
	cws     map[int]liveEntry     // the CWs kept, by CW index (in order of arrival, never reused)
	nextCW  int                   // the index the next new CW takes
	index   map[liveCW]int        // CW and its system to index
	slots   map[int]*[2][]Arrival // slot to the CWs received per parity (0 even, 1 odd), oldest first
	seq     uint64                // CWs received so far, repeats included: the arrival number of the latest
	pidSlot map[uint16]int
	arrived chan struct{}

	refused  int64
	received int64
}

// liveCW is a CW of a Live source with the system it is for (nil: the run's input system): the
// same bytes for two systems are two CWs.
type liveCW struct {
	sys scrambling.System
	cw  string
}

// liveEntry is a CW kept, with its bytes as CW returns them.
type liveEntry struct {
	id liveCW
	cw []byte
}

// NewLive returns a Live source without keys.
func NewLive() *Live {
	return &Live{
		index:   make(map[liveCW]int),
		cws:     make(map[int]liveEntry),
		slots:   make(map[int]*[2][]Arrival),
		pidSlot: make(map[uint16]int),
		arrived: make(chan struct{}, 1),
	}
}

// Set stores cw as slot's latest control word of the given parity and signals Arrived. It
// returns false, and keeps nothing, for a slot out of range, an empty CW or one of more than
// 16 bytes. The CW is copied. It is for the run's input system.
func (l *Live) Set(slot int, odd bool, cw []byte) bool {
	return l.SetFor(slot, odd, nil, cw)
}

// SetFor is Set for a CW of the given system (nil: the run's input system), which the CW keeps
// whatever the slot receives after. Systems compare as values: scrambling's constructors give
// one value per mode and IV.
func (l *Live) SetFor(slot int, odd bool, sys scrambling.System, cw []byte) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if slot < 0 || slot >= MaxLiveSlots || len(cw) == 0 || len(cw) > 16 {
		l.refused++
		return false
	}
	id := liveCW{sys: sys, cw: string(cw)}
	idx, ok := l.index[id]
	if !ok {
		if len(l.cws) >= MaxLiveCWs {
			l.forget()
		}
		idx = l.nextCW
		l.nextCW++
		l.cws[idx] = liveEntry{id: id, cw: bytes.Clone(cw)}
		l.index[id] = idx
	}
	l.received++
	sl := l.slots[slot]
	if sl == nil {
		sl = new([2][]Arrival)
		l.slots[slot] = sl
	}
	h := &sl[parityIndex(odd)]
	l.seq++
	if n := len(*h); n > 0 && (*h)[n-1].CW == idx {
		(*h)[n-1].Last = l.seq // the slot's CW sent again: it still holds
	} else {
		if n == MaxSlotCWs {
			*h = append((*h)[:0], (*h)[1:]...)
		}
		*h = append(*h, Arrival{CW: idx, Seq: l.seq, Last: l.seq})
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

// Seq implements Source.
func (l *Live) Seq() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.seq
}

// AppendSlot implements Source.
func (l *Live) AppendSlot(dst []Arrival, pid uint16, odd bool, since uint64) []Arrival {
	l.mu.Lock()
	defer l.mu.Unlock()
	sl := l.slots[l.pidSlot[pid]]
	if sl == nil {
		return dst
	}
	h := sl[parityIndex(odd)]
	i := len(h)
	for i > 0 && h[i-1].Seq > since {
		i--
	}
	if i > 0 {
		i-- // the one the slot held at since
	}
	return append(dst, h[i:]...)
}

// Held returns the index of the CW of the given parity that pid's key slot holds now, or NoKey.
func (l *Live) Held(pid uint16, odd bool) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if sl := l.slots[l.pidSlot[pid]]; sl != nil {
		if h := sl[parityIndex(odd)]; len(h) > 0 {
			return h[len(h)-1].CW
		}
	}
	return NoKey
}

// CW implements Source. It returns nil for a CW forgotten (see MaxLiveCWs).
func (l *Live) CW(i int) []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.cws[i].cw
}

// System implements SystemSource: the system CW i was set for (SetFor), or nil.
func (l *Live) System(i int) scrambling.System {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.cws[i].id.sys
}

// forget drops the CWs that no slot remembers (its last MaxSlotCWs CWs of each parity) and
// that are not among the latest keepLatestCWs: periods long gone, on a feed that runs for
// weeks. Their indexes are not reused.
func (l *Live) forget() {
	keep := make(map[int]bool)
	for _, sl := range l.slots {
		for _, h := range sl {
			for _, e := range h {
				keep[e.CW] = true
			}
		}
	}
	for i, e := range l.cws {
		if !keep[i] && i < l.nextCW-keepLatestCWs {
			delete(l.index, e.id)
			delete(l.cws, i)
		}
	}
}

// keepLatestCWs is how many of the latest CWs forget keeps whatever refers to them: a caller
// that decided a period with one may still be using it.
const keepLatestCWs = 4096

// NumCWs returns the number of distinct control words kept.
func (l *Live) NumCWs() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.cws)
}

// Arrived implements Source.
func (l *Live) Arrived() <-chan struct{} { return l.arrived }

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
