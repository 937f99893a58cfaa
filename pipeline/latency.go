package pipeline

import (
	"time"

	"github.com/tsdescramble/tsdescramble/ts"
)

// A run with a latency bound (Options.Latency) must never wait on a read while it holds packets
// that are due: a blocked read of a quiet live input would hold a partial unit of work, or a
// crypto period waiting for its decision, for as long as the input stays quiet. So the source
// reads its input ahead, in a goroutine of its own (ts.Source.SetLatency), and the reading
// goroutine of Run takes its packets with a deadline: when the oldest packet it holds is due,
// the source returns the whole packets it has, then ts.ErrPending, and the unit of work is
// cut. A block already read is taken even past the deadline: the run is behind the input then,
// and cutting its units of work short would only slow it further (a unit of a hundred packets
// fills few of the engine's lanes).

// due returns the deadline of the next read of a run with a latency bound: when the oldest
// packet held is due, in a held chunk, in the chunk being filled, or still in the source;
// zero when there is none, when the packets held wait for their crypto periods to be decided
// (without decideOnTime), or when the framer could not make a packet of what it holds (stalled):
// then only more input can help.
func due(held []*chunk, c *chunk, src *ts.Source, latency time.Duration, stalled, decideOnTime bool) time.Time {
	var t time.Time
	switch {
	case len(held) > 0:
		// Without decideOnTime the held chunks wait for the stream to decide their periods:
		// nothing is due, and a chunk cut short would only join them (and could use up the
		// pool of chunks before the packet bound decides them).
		if decideOnTime {
			t = held[0].due
		}
	case c.n > 0:
		t = c.due
	case !stalled:
		if at, ok := src.HeldSince(); ok {
			t = at.Add(latency)
		}
	}
	return t
}
