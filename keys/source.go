package keys

import (
	"bytes"
	"sync"
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
// unless MapPID says otherwise (a DVBAPI server's CA_SET_PID).
//
// A slot holds the last CW of each parity until another replaces it, as a DVB descrambler's
// key slot does: a key server may send a CW again with every answer (a constant-CW reader, a
// CAS whose CW of one parity stays for several ECMs) or, as a DVBAPI server does, only when it
// changes. A slot remembers its last MaxSlotCWs CWs of each parity in order of arrival, not
// only the latest: a crypto period that waits past its end may be decided after the next key
// of its parity came.
type Live struct {
	mu      sync.Mutex
	cws     map[int][]byte        // the CWs kept, by CW index (in order of arrival, never reused)
	nextCW  int                   // the index the next new CW takes
	index   map[string]int        // CW bytes to index
	slots   map[int]*[2][]Arrival // slot to the CWs received per parity (0 even, 1 odd), oldest first
	seq     uint64                // CWs received so far, repeats included: the arrival number of the latest
	pidSlot map[uint16]int
	arrived chan struct{}

	refused  int64
	received int64
}

// NewLive returns a Live source without keys.
func NewLive() *Live {
	return &Live{
		index:   make(map[string]int),
		cws:     make(map[int][]byte),
		slots:   make(map[int]*[2][]Arrival),
		pidSlot: make(map[uint16]int),
		arrived: make(chan struct{}, 1),
	}
}

// Set stores cw as slot's latest control word of the given parity and signals Arrived. It
// returns false, and keeps nothing, for a slot out of range, an empty CW or one of more than
// 16 bytes. The CW is copied.
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
	return l.cws[i]
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
