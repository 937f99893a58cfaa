package keys

// Key synchronisation: a CW list or log need not start at the stream's first crypto period, and
// a list can fall out of step with the stream (a missed period, a recording that was cut). The
// caller checks the first unit start of each crypto period after descrambling; when the key of
// the expected period does not fit, Sync tries the keys of the other periods, nearest first, and
// says which one fits.

// Periods returns the number of crypto periods in the schedule's cycle.
func (s *Schedule) Periods() int { return s.nring }

// KeyAt returns the CW index of the crypto period at ring position pos, or NoKey.
func (s *Schedule) KeyAt(pos int) int {
	if s.ring == nil {
		return pos
	}
	return int(s.ring[pos])
}

// Sync looks for the crypto period whose key fits when the key of the period at ring position
// pos does not: it calls fits with the CW index of the other periods' keys, nearest first on
// either side (pos+step, pos-step, pos+2·step, ...; every other period of a CW list, the other
// periods of the same parity of a pair file or log, none for fixed keys), each CW once and never
// the expected one, until fits returns true, and returns that period's position. limit, when
// positive, bounds the periods tried. A stream that skipped a period, or a list that starts one
// period late, is found in the first few calls.
func (s *Schedule) Sync(pos, limit int, fits func(cw int) bool) (found int, ok bool) {
	n := s.numCandidates()
	if limit > 0 {
		n = min(n, limit)
	}
	expected := s.KeyAt(pos)
	for i := range n {
		c := s.candidate(pos, i)
		k := s.KeyAt(c)
		if k == NoKey || k == expected {
			continue
		}
		if fits(k) {
			return c, true
		}
	}
	return 0, false
}

// numCandidates returns how many ring positions Sync may try for one period.
func (s *Schedule) numCandidates() int {
	if s.step == 0 {
		return 0
	}
	return (s.nring - 1) / s.step
}

// candidate returns the i-th (0 <= i < numCandidates) ring position Sync tries for the period
// at pos, nearest first on either side, each position once.
func (s *Schedule) candidate(pos, i int) int {
	n := s.numCandidates()
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
