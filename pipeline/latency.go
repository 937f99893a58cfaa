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
// read by a goroutine of its own, the feed, into a few blocks, and the reading goroutine of Run
// takes them with a deadline: when the oldest packet it holds is due, the feed's Read returns
// ts.ErrPending, the framer returns the whole packets it has, and the unit of work is cut.

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

// feedBuf is one read of the input, with the time it returned.
type feedBuf struct {
	buf []byte
	n   int
	err error
	at  time.Time
}

// arrival is where a block handed to the framer ends in the input, and when it arrived.
type arrival struct {
	end int64
	at  time.Time
}

// feed reads r in its own goroutine; its Read, called by the framer, hands the blocks on.
type feed struct {
	ctx     context.Context
	latency time.Duration
	full    chan *feedBuf
	free    chan *feedBuf
	cur     *feedBuf
	off     int
	timer   *time.Timer
	closed  bool // the context ended and no block was left: Read returns its error

	// deadline, when not zero, is when Read stops handing blocks on and returns ts.ErrPending.
	// The reading goroutine sets it before each packet it asks the framer for: when its
	// oldest packet held is due, or zero when it holds none. Read sets it when it hands on a
	// block while it is zero: the framer may want more bytes before it returns a packet of
	// that block, and must not wait for them past the block's own deadline.
	deadline time.Time
	// report, when not zero, is when the next Options.Report is due: a deadline too.
	report time.Time
	// now is the time Read last looked at the clock: when it handed on a block, or found
	// none by the deadline.
	now time.Time
	// read counts the bytes handed on; arrivals says when each block still in the framer's
	// buffer arrived (arrivals[head:] in order).
	read     int64
	arrivals []arrival
	head     int
}

// newFeed starts reading r. The goroutine ends at the end of the input or at a read error; when
// ctx ends, it stops taking new blocks, but a read it has begun returns only when r's Read does.
func newFeed(ctx context.Context, r io.Reader, latency time.Duration) *feed {
	f := &feed{ctx: ctx, latency: latency, full: make(chan *feedBuf, feedBlocks), free: make(chan *feedBuf, feedBlocks)}
	for range feedBlocks {
		f.free <- &feedBuf{buf: make([]byte, feedBlock)}
	}
	f.timer = time.NewTimer(time.Hour)
	f.timer.Stop()
	go func() {
		for {
			var b *feedBuf
			select {
			case b = <-f.free:
			case <-ctx.Done():
				return
			}
			b.n, b.err = r.Read(b.buf)
			b.at = time.Now()
			f.full <- b // full has room for every block
			if b.err != nil {
				return
			}
		}
	}()
	return f
}

// Read hands on the bytes of the next block, waiting for one until the deadline; past the
// deadline it returns ts.ErrPending. When the run's context ends, the blocks already read are
// handed on, then the context's error.
func (f *feed) Read(p []byte) (int, error) {
	if f.cur != nil && f.off == f.cur.n {
		if f.cur.err != nil {
			return 0, f.cur.err
		}
		f.free <- f.cur
		f.cur = nil
	}
	if f.cur == nil {
		if f.closed {
			return 0, f.ctx.Err()
		}
		b, err := f.next()
		if err != nil {
			return 0, err
		}
		f.cur, f.off = b, 0
		f.read += int64(b.n)
		f.arrivals = append(f.arrivals, arrival{end: f.read, at: b.at})
		if len(f.arrivals)-f.head > maxArrivals {
			// Bytes the framer holds that long are garbage it is skipping: forget when
			// the oldest came, so that the list stays bounded.
			f.head = len(f.arrivals) - maxArrivals
		}
		f.compact()
		if f.deadline.IsZero() {
			f.deadline = b.at.Add(f.latency)
		}
	}
	n := copy(p, f.cur.buf[f.off:f.cur.n])
	f.off += n
	if f.off == f.cur.n && f.cur.err != nil {
		return n, f.cur.err
	}
	return n, nil
}

// next waits for a block until the deadline.
func (f *feed) next() (*feedBuf, error) {
	if !f.deadline.IsZero() {
		// A block already read is taken even past the deadline: the run is behind the
		// input then, and cutting its units of work short would only slow it further (a
		// unit of a hundred packets fills few of the engine's lanes). Past the deadline,
		// Read waits for nothing.
		select {
		case b := <-f.full:
			f.now = time.Now()
			return b, nil
		default:
		}
		if f.now = time.Now(); !f.now.Before(f.deadline) {
			return nil, ts.ErrPending
		}
		f.timer.Reset(f.deadline.Sub(f.now))
		defer f.timer.Stop()
		select {
		case b := <-f.full:
			f.now = time.Now()
			return b, nil
		case <-f.timer.C:
			f.now = time.Now()
			return nil, ts.ErrPending
		case <-f.ctx.Done():
			return f.drain()
		}
	}
	select {
	case b := <-f.full:
		f.now = time.Now()
		return b, nil
	case <-f.ctx.Done():
		return f.drain()
	}
}

// drain returns a block already read after the context ended, or the context's error.
func (f *feed) drain() (*feedBuf, error) {
	select {
	case b := <-f.full:
		return b, nil
	default:
		f.closed = true
		return nil, f.ctx.Err()
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
	return f.now
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
		t = held[0].due
	case c.n > 0:
		t = c.due
	case !stalled && fr.Buffered() > 0:
		t = fd.arrivedAt(fr.BytesRead() - int64(fr.Buffered())).Add(fd.latency)
	}
	if !fd.report.IsZero() && (t.IsZero() || fd.report.Before(t)) {
		t = fd.report // a report is due first
	}
	return t
}
