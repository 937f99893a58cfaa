package scs

import (
	"context"
	"io"
	"time"

	"github.com/tsdescramble/tsdescramble/ts"
)

// A live input is read ahead by a goroutine of its own (ts.ReadAhead), so that the Stage can
// tell a quiet input from one that has more: a Read of the Stage hands out what it has as soon
// as the input has nothing more for now, rather than waiting for a full read, and the framer
// hands out the whole packets it holds (ts.ErrPending) rather than waiting for the bytes of its
// look-ahead.

const (
	// liveBlock is the size of one read of a live input: a live.Reader returns a batch of
	// datagrams per read.
	liveBlock = 64 << 10
	// liveBlocks is how many blocks are read ahead.
	liveBlocks = 4
)

// noWait is a deadline long past: a Read with it takes only a block already read.
var noWait = time.Unix(0, 1)

// liveSource is the read-ahead of a live input. Its Read returns ts.ErrPending when no bytes
// have come, unless wait is set: then it waits for them (and clears wait).
type liveSource struct {
	ra   *ts.ReadAhead
	wait bool
}

// newLiveSource starts reading r. Its goroutine ends at the input's end or error: closing a live
// input ends its reads.
func newLiveSource(r io.Reader) *liveSource {
	return &liveSource{ra: ts.NewReadAhead(context.Background(), r, liveBlock, liveBlocks, nil)}
}

func (s *liveSource) Read(p []byte) (int, error) {
	if s.wait {
		s.ra.SetDeadline(time.Time{})
	} else {
		s.ra.SetDeadline(noWait)
	}
	n, err := s.ra.Read(p)
	if err != ts.ErrPending {
		s.wait = false
	}
	return n, err
}

// wallClock is the time of a live input: from the arrival of its first packet.
type wallClock struct{ t0 time.Time }

func (w *wallClock) now() time.Duration {
	if w.t0.IsZero() {
		w.t0 = time.Now()
	}
	return time.Since(w.t0)
}
