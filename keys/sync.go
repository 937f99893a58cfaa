package keys

// Key synchronisation: a CW list or log need not start at the stream's first crypto period, and
// a list can fall out of step with the stream (a missed period, a recording that was cut). The
// pipeline checks the first PES start of each crypto period after descrambling; when the key of
// the schedule's current period does not fit, it tries the other periods' keys through these
// methods and aligns the schedule to the one that fits.

// Position returns the ring position of the current crypto period.
func (s *Schedule) Position() int { return s.pos }

// Periods returns the number of crypto periods in the schedule's cycle.
func (s *Schedule) Periods() int { return len(s.ring) }

// KeyAt returns the CW index of the crypto period at ring position pos, or NoKey.
func (s *Schedule) KeyAt(pos int) int { return s.ring[pos] }

// Candidates appends to dst the ring positions whose keys could replace the current period's,
// nearest first: every other period of a CW list, the other periods of the same parity of a
// pair file or log, none for fixed keys.
func (s *Schedule) Candidates(dst []int) []int {
	if s.step == 0 {
		return dst
	}
	for d := s.step; d < len(s.ring); d += s.step {
		dst = append(dst, (s.pos+d)%len(s.ring))
	}
	return dst
}

// Align makes the period at ring position pos the current one; later parity changes go on
// from there.
func (s *Schedule) Align(pos int) { s.pos = pos }
