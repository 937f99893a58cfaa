package keys

// NoKey is the index KeyFor returns for a parity that has no control word.
const NoKey = -1

// Schedule decides which control word applies to each crypto period of a stream.
//
// Every schedule is a cycle of crypto periods (the ring), each with the index of its control
// word (or NoKey): a stream's first period starts at the ring position Start gives for its
// parity, and every change of parity moves to the next position (Next), wrapping round at the
// end. The constructors differ only in how they build the cycle.
//
// A Schedule's cycle is immutable, so one Schedule serves any number of PIDs, each following
// its own crypto periods with a ring position of its own (as the pipeline does), and Sync
// finds the period whose key fits when the expected one does not. KeyFor and Changes keep one
// position for callers that follow a stream as a whole; they belong to one goroutine.
//
// The control words are stored back to back, 8 bytes a CSA2 CW, and a CW list's ring is
// implicit, so a list of millions of CWs costs little more than its bytes.
type Schedule struct {
	cwData []byte  // the control words back to back
	cwSize int     // the size of every CW when they all have one size, else 0
	cwEnd  []int   // end offsets of the CWs in cwData when sizes differ
	ncw    int     // number of control words
	ring   []int32 // CW index (or NoKey) of each crypto period; nil for a list: period i has CW i
	nring  int     // number of crypto periods in the cycle
	start  [2]int  // position in the ring of the first period when the stream starts even (0) or odd (1)
	// step is the distance in the ring between the periods Candidate offers when a period's
	// key does not fit: 1 for a CW list (any entry may be the right one), 2 for periods of
	// known parity (only those of the same parity), 0 for fixed keys.
	step int

	// One stream-wide cursor for KeyFor.
	pos     int
	last    int // parity of the last scrambled packet, -1 before the first
	changes int
}

// setCWs stores cws back to back.
func (s *Schedule) setCWs(cws [][]byte) {
	s.ncw = len(cws)
	total := 0
	for i, cw := range cws {
		total += len(cw)
		if i == 0 {
			s.cwSize = len(cw)
		} else if len(cw) != s.cwSize {
			s.cwSize = -1
		}
	}
	s.cwData = make([]byte, 0, total)
	for _, cw := range cws {
		s.cwData = append(s.cwData, cw...)
	}
	if s.cwSize < 0 {
		s.cwSize = 0
		s.cwEnd = make([]int, len(cws))
		end := 0
		for i, cw := range cws {
			end += len(cw)
			s.cwEnd[i] = end
		}
	}
}

// NewFixed returns a schedule with one control word per parity and no rotation. A nil CW
// leaves that parity without a key: its packets pass through still scrambled.
func NewFixed(even, odd []byte) *Schedule {
	// A cycle of two periods, even then odd: every parity change flips between them, so
	// each parity always finds its own key.
	s := &Schedule{ring: []int32{NoKey, NoKey}, nring: 2, start: [2]int{0, 1}, last: -1}
	var cws [][]byte
	for i, cw := range [][]byte{even, odd} {
		if cw != nil {
			s.ring[i] = int32(len(cws))
			cws = append(cws, cw)
		}
	}
	s.setCWs(cws)
	return s
}

// NewList returns a schedule over a CW list: the first control word applies to the first
// crypto period (whatever its parity); at each change of parity the next control word of the
// list is loaded into the new parity, wrapping round at the end of the list (TSDuck's
// convention for a CW file). An empty list gives a schedule without keys. The control words
// are copied.
func NewList(cws [][]byte) *Schedule {
	s := &Schedule{nring: len(cws), last: -1, step: 1}
	s.setCWs(cws)
	if len(cws) == 0 {
		s.ring, s.nring = []int32{NoKey}, 1
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
	s := &Schedule{ring: make([]int32, len(ps)), nring: len(ps), last: -1, step: 2}
	var cws [][]byte
	for i, p := range ps {
		s.ring[i] = NoKey
		if p.CW != nil {
			s.ring[i] = int32(len(cws))
			cws = append(cws, p.CW)
		}
	}
	s.setCWs(cws)
	switch {
	case len(ps) == 0:
		s.ring, s.nring = []int32{NoKey}, 1
	case ps[0].Odd:
		s.start = [2]int{1, 0}
	default:
		s.start = [2]int{0, 1}
	}
	return s
}

// NumCWs returns the number of control words of the schedule.
func (s *Schedule) NumCWs() int { return s.ncw }

// CW returns control word i (0 <= i < NumCWs), sharing the schedule's storage: do not modify it.
func (s *Schedule) CW(i int) []byte {
	if s.cwEnd != nil {
		begin := 0
		if i > 0 {
			begin = s.cwEnd[i-1]
		}
		return s.cwData[begin:s.cwEnd[i]:s.cwEnd[i]]
	}
	return s.cwData[i*s.cwSize : (i+1)*s.cwSize : (i+1)*s.cwSize]
}

// CWs returns the schedule's control words, indexed as KeyFor and KeyAt return them. It
// allocates the slice of views on each call; CW reads one without allocating.
func (s *Schedule) CWs() [][]byte {
	cws := make([][]byte, s.ncw)
	for i := range cws {
		cws[i] = s.CW(i)
	}
	return cws
}

// Start returns the ring position of a stream's (or a PID's) first crypto period, given its
// parity (odd false: TSC 10; odd true: TSC 11).
func (s *Schedule) Start(odd bool) int {
	if odd {
		return s.start[1]
	}
	return s.start[0]
}

// Next returns the ring position of the crypto period after the one at pos.
func (s *Schedule) Next(pos int) int {
	if pos++; pos >= s.nring {
		return 0
	}
	return pos
}

// Fixed reports whether the schedule has one key per parity and nothing to align: each
// parity always finds its own control word.
func (s *Schedule) Fixed() bool { return s.step == 0 }

// KeyFor returns the index of the control word for the next scrambled packet of the given
// parity (odd false: TSC 10; odd true: TSC 11), or NoKey, following the stream's parity
// changes over all its packets together. It does not allocate.
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
			s.pos = s.Next(s.pos)
		}
		s.last = p
	}
	return s.KeyAt(s.pos)
}

// Changes returns the number of parity changes KeyFor has seen (crypto periods minus one).
func (s *Schedule) Changes() int { return s.changes }
