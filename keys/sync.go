package keys

// Key synchronisation: a CW list or log need not start at the stream's first crypto period, and
// a list can fall out of step with the stream (a missed period, a recording that was cut). The
// pipeline checks the first PES start of each crypto period after descrambling; when the key of
// the expected period does not fit, it tries the keys of the other periods through Candidate,
// nearest first, and goes on from the one that fits.

// Position returns the ring position of KeyFor's current crypto period.
func (s *Schedule) Position() int { return s.pos }

// Periods returns the number of crypto periods in the schedule's cycle.
func (s *Schedule) Periods() int { return s.nring }

// KeyAt returns the CW index of the crypto period at ring position pos, or NoKey.
func (s *Schedule) KeyAt(pos int) int {
	if s.ring == nil {
		return pos
	}
	return int(s.ring[pos])
}

// NumCandidates returns how many ring positions Candidate offers for one period: every other
// period of a CW list, the other periods of the same parity of a pair file or log, none for
// fixed keys.
func (s *Schedule) NumCandidates() int {
	if s.step == 0 {
		return 0
	}
	return (s.nring - 1) / s.step
}

// Candidate returns the i-th (0 <= i < NumCandidates) ring position whose key could replace
// that of the period at pos, nearest first on either side: pos+step, pos-step, pos+2·step,
// pos-2·step, ..., each position once. A stream that skipped a period, or a list that starts
// one period late, is found in the first few.
func (s *Schedule) Candidate(pos, i int) int {
	n := s.NumCandidates()
	// Offsets d = step·k for k = 1..n, taken alternately forwards and backwards; once the
	// distance passes half the cycle, forward and backward offsets would meet, so the
	// backward ones stop where the forward ones have covered the rest.
	back := n / 2 // backward offsets used: k = 1..back
	k := i/2 + 1
	var d int
	switch {
	case i < 2*back && i%2 == 0:
		d = k * s.step
	case i < 2*back:
		d = -k * s.step
	default:
		d = (i - back + 1) * s.step
	}
	p := (pos + d) % s.nring
	if p < 0 {
		p += s.nring
	}
	return p
}

// Candidates appends to dst the ring positions Candidate offers for KeyFor's current period,
// nearest first.
func (s *Schedule) Candidates(dst []int) []int {
	for i := range s.NumCandidates() {
		dst = append(dst, s.Candidate(s.pos, i))
	}
	return dst
}

// Align makes the period at ring position pos KeyFor's current one; later parity changes go on
// from there.
func (s *Schedule) Align(pos int) { s.pos = pos }
