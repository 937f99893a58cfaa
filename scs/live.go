package scs

import "time"

// wallClock is the time of a live input: from the arrival of its first packet. A live feed's
// packets are handled in the call that brings each one, without waiting for a PCR
// (Config.Live): the time one is handled stands for the time it came.
type wallClock struct{ t0 time.Time }

func (w *wallClock) now() time.Duration {
	if w.t0.IsZero() {
		w.t0 = time.Now()
	}
	return time.Since(w.t0)
}
