// Package roundtrip keeps the round-trip times of a key server's answers, in bounded memory, for
// the median and maximum a run reports.
package roundtrip

import (
	"slices"
	"time"
)

// keep bounds the times kept: past it, the older half is dropped (the recent half is enough for
// the figures of a run that never ends).
const keep = 1 << 16

// Times is a list of round-trip times. The zero value is empty and ready. It is not safe for
// concurrent use: its owner's lock guards it.
type Times struct{ d []time.Duration }

// Add records a round trip.
func (t *Times) Add(d time.Duration) {
	if len(t.d) >= keep {
		t.d = append(t.d[:0], t.d[len(t.d)/2:]...)
	}
	t.d = append(t.d, d)
}

// Summary returns the median and the maximum of the times kept, zero when there are none.
func (t *Times) Summary() (median, max time.Duration) {
	n := len(t.d)
	if n == 0 {
		return 0, 0
	}
	s := slices.Clone(t.d)
	slices.Sort(s)
	return s[n/2], s[n-1]
}
