package keys

// NoKey is the index KeyFor returns for a parity that has no control word.
const NoKey = -1

// Schedule decides which control word applies to each scrambled packet. It is fed the
// packets' parities in stream order, so it belongs to the one goroutine that classifies them.
//
// Every schedule is a cycle of crypto periods, each with the index of its control word (or
// NoKey): the first scrambled packet picks the starting period, and every change of parity,
// tracked over the whole stream (all PIDs together, as TSDuck does), moves to the next period,
// wrapping round at the end. The constructors differ only in how they build the cycle, so
// KeyFor is the same few instructions for all of them.
type Schedule struct {
	cws     [][]byte
	ring    []int  // CW index (or NoKey) of each crypto period, in stream order
	start   [2]int // position in ring of the first period when the stream starts even (0) or odd (1)
	pos     int    // position in ring of the current period
	last    int    // parity of the last scrambled packet, -1 before the first
	changes int
	// step is the distance in ring between the periods Candidates offers when the current
	// period's key does not fit: 1 for a CW list (any entry may be the right one), 2 for
	// periods of known parity (only those of the current parity), 0 for fixed keys.
	step int
}

// NewFixed returns a schedule with one control word per parity and no rotation. A nil CW
// leaves that parity without a key: its packets pass through still scrambled.
func NewFixed(even, odd []byte) *Schedule {
	// A cycle of two periods, even then odd: every parity change flips between them, so
	// each parity always finds its own key.
	s := &Schedule{ring: []int{NoKey, NoKey}, start: [2]int{0, 1}, last: -1}
	if even != nil {
		s.cws = append(s.cws, even)
		s.ring[0] = len(s.cws) - 1
	}
	if odd != nil {
		s.cws = append(s.cws, odd)
		s.ring[1] = len(s.cws) - 1
	}
	return s
}

// NewList returns a schedule over a CW list: the first control word applies to the first
// crypto period (whatever its parity); at each change of parity the next control word of the
// list is loaded into the new parity, wrapping round at the end of the list (TSDuck's
// convention for a CW file). An empty list gives a schedule without keys.
func NewList(cws [][]byte) *Schedule {
	s := &Schedule{cws: cws, ring: make([]int, len(cws)), last: -1, step: 1}
	for i := range s.ring {
		s.ring[i] = i
	}
	if len(s.ring) == 0 {
		s.ring = []int{NoKey}
	}
	return s
}

// NewPeriods returns a schedule over crypto periods of known parity, as read from a pair file
// or an OSCam .cwl log (see ReadKeyFile).
//
// The periods are first made to alternate in parity, as a stream's crypto periods do (the
// rules of KeyFile.Periods: a repeated period is dropped, a missing one is added without key).
// The stream's first scrambled packet then starts at the first period of its parity: a log
// begun one period before the recording, or a pair file whose stream starts odd, lines up by
// itself. Each change of parity moves on to the next period, wrapping round at the end, so a
// single pair "EVEN ODD" behaves like NewFixed(EVEN, ODD). Periods without key give NoKey.
func NewPeriods(periods []Period) *Schedule {
	ps, _ := alternate(periods)
	s := &Schedule{ring: make([]int, len(ps)), last: -1, step: 2}
	for i, p := range ps {
		s.ring[i] = NoKey
		if p.CW != nil {
			s.cws = append(s.cws, p.CW)
			s.ring[i] = len(s.cws) - 1
		}
	}
	switch {
	case len(ps) == 0:
		s.ring = []int{NoKey}
	case ps[0].Odd:
		s.start = [2]int{1, 0}
	default:
		s.start = [2]int{0, 1}
	}
	return s
}

// CWs returns the schedule's control words; KeyFor returns indexes into this slice.
func (s *Schedule) CWs() [][]byte { return s.cws }

// KeyFor returns the index of the control word for the next scrambled packet of the given
// parity (odd false: TSC 10; odd true: TSC 11), or NoKey. It does not allocate.
func (s *Schedule) KeyFor(odd bool) int {
	p := 0
	if odd {
		p = 1
	}
	if s.last != p {
		if s.last < 0 {
			s.pos = s.start[p]
		} else {
			s.changes++
			s.pos++
			if s.pos == len(s.ring) {
				s.pos = 0
			}
		}
		s.last = p
	}
	return s.ring[s.pos]
}

// Changes returns the number of parity changes seen so far (crypto periods minus one).
func (s *Schedule) Changes() int { return s.changes }
