package keys

// NoKey is the index KeyFor returns for a parity that has no control word.
const NoKey = -1

// Schedule decides which control word applies to each scrambled packet. It is fed the
// packets' parities in stream order, so it belongs to the one goroutine that classifies them.
type Schedule struct {
	cws      [][]byte
	rotating bool
	cur      [2]int // index into cws for the even (0) and odd (1) parity
	next     int    // next list entry to load at a parity change
	last     int    // parity of the last scrambled packet, -1 before the first
	changes  int
}

// NewFixed returns a schedule with one control word per parity and no rotation. A nil CW
// leaves that parity without a key: its packets pass through still scrambled.
func NewFixed(even, odd []byte) *Schedule {
	s := &Schedule{cur: [2]int{NoKey, NoKey}, last: -1}
	if even != nil {
		s.cws = append(s.cws, even)
		s.cur[0] = len(s.cws) - 1
	}
	if odd != nil {
		s.cws = append(s.cws, odd)
		s.cur[1] = len(s.cws) - 1
	}
	return s
}

// NewList returns a schedule over a CW list: the first control word applies to the first
// crypto period (whatever its parity); at each change of parity the next control word of the
// list is loaded into the new parity, wrapping round at the end of the list.
func NewList(cws [][]byte) *Schedule {
	return &Schedule{cws: cws, rotating: true, cur: [2]int{0, 0}, next: 1, last: -1}
}

// CWs returns the schedule's control words; KeyFor returns indexes into this slice.
func (s *Schedule) CWs() [][]byte { return s.cws }

// KeyFor returns the index of the control word for the next scrambled packet of the given
// parity (odd false: TSC 10; odd true: TSC 11), or NoKey.
func (s *Schedule) KeyFor(odd bool) int {
	p := 0
	if odd {
		p = 1
	}
	if s.last != p {
		if s.last >= 0 {
			s.changes++
			if s.rotating {
				s.cur[p] = s.next % len(s.cws)
				s.next = (s.next + 1) % len(s.cws)
			}
		}
		s.last = p
	}
	return s.cur[p]
}

// Changes returns the number of parity changes seen so far (crypto periods minus one).
func (s *Schedule) Changes() int { return s.changes }
