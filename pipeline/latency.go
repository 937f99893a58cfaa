package pipeline

import (
	"context"
	"io"
	"time"

	"github.com/tsdescramble/tsdescramble/ts"
)

// A run with a latency bound (Options.Latency) must never wait on a read while it holds packets
// that are due: a blocked read of a quiet live input would hold a partial unit of work, or a
// crypto period waiting for its decision, for as long as the input stays quiet. So the input is
// read ahead by a goroutine of its own (ts.ReadAhead, the feed), and the reading goroutine of
// Run takes its blocks with a deadline: when the oldest packet it holds is due, the feed's Read
// returns ts.ErrPending, the framer returns the whole packets it has, and the unit of work is
// cut. A block already read is taken even past the deadline: the run is behind the input then,
// and cutting its units of work short would only slow it further (a unit of a hundred packets
// fills few of the engine's lanes).

const (
	// feedBlock is the size of one read of the input. A live.Reader returns a batch of
	// datagrams per read (16 of 1316 bytes is 21 kB); a pipe returns what it holds (64 kB on
	// Linux).
	feedBlock = 64 << 10
	// feedBlocks is how many blocks may wait for the reading goroutine: with the framer's own
	// buffer, the read-ahead of a run stays under 1 MiB.
	feedBlocks = 8
	// maxArrivals bounds the arrival times kept: far more blocks than the framer's buffer
	// holds (256 kB: a few hundred datagrams).
	maxArrivals = 4096
)

// arrival is where a block handed to the framer ends in the input, and when it arrived.
type arrival struct {
	end int64
	at  time.Time
}

// feed is the input of a run with a latency bound: a ts.ReadAhead, with when each block it
// handed on arrived, to know when the oldest packet the framer holds is due.
type feed struct {
	*ts.ReadAhead
	latency time.Duration

	// read counts the bytes handed on; arrivals says when each block still in the framer's
	// buffer arrived (arrivals[head:] in order).
	read     int64
	arrivals []arrival
	head     int
}

// newFeed starts reading r (see ts.NewReadAhead). The reading goroutine of Run sets the feed's
// deadline before each packet it asks the framer for: when its oldest packet held is due, or
// zero when it holds none. The feed sets it when it hands on a block while it is zero: the
// framer may want more bytes before it returns a packet of that block, and must not wait for
// them past the block's own deadline.
func newFeed(ctx context.Context, r io.Reader, latency time.Duration) *feed {
	f := &feed{latency: latency}
	f.ReadAhead = ts.NewReadAhead(ctx, r, feedBlock, feedBlocks, f.handedOn)
	return f
}

// handedOn notes a block the framer is given.
func (f *feed) handedOn(n int, at time.Time) {
	f.read += int64(n)
	f.arrivals = append(f.arrivals, arrival{end: f.read, at: at})
	if len(f.arrivals)-f.head > maxArrivals {
		// Bytes the framer holds that long are garbage it is skipping: forget when the
		// oldest came, so that the list stays bounded.
		f.head = len(f.arrivals) - maxArrivals
	}
	f.compact()
	if f.Deadline().IsZero() {
		f.SetDeadline(at.Add(f.latency))
	}
}

// arrivedAt returns when the input's byte at offset off arrived (off counts from 0; it must
// not come before an offset asked for earlier). Blocks wholly before off are forgotten.
func (f *feed) arrivedAt(off int64) time.Time {
	for f.head < len(f.arrivals)-1 && f.arrivals[f.head].end <= off {
		f.head++
	}
	f.compact()
	if f.head < len(f.arrivals) {
		return f.arrivals[f.head].at
	}
	return f.Now()
}

// compact drops the arrivals forgotten, when they are most of the list.
func (f *feed) compact() {
	if f.head > 64 && f.head*2 > len(f.arrivals) {
		f.arrivals = f.arrivals[:copy(f.arrivals, f.arrivals[f.head:])]
		f.head = 0
	}
}

// due returns the deadline of the next read of a run with a latency bound: when the oldest
// packet held is due, in a held chunk, in the chunk being filled, or still in the framer's buffer;
// zero when there is none, when the packets held wait for their crypto periods to be decided
// (without decideOnTime), or when the framer could not make a packet of what it holds (stalled):
// then only more input can help.
func due(held []*chunk, c *chunk, fr *ts.Framer, fd *feed, stalled, decideOnTime bool) time.Time {
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
	case !stalled && fr.Buffered() > 0:
		t = fd.arrivedAt(fr.BytesRead() - int64(fr.Buffered())).Add(fd.latency)
	}
	return t
}
