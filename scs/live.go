package scs

import (
	"io"
	"time"

	"github.com/tsdescramble/tsdescramble/ts"
)

// A live input is read by a goroutine of its own, so that the Stage can tell a quiet input from
// one that has more: a Read of the Stage hands out what it has as soon as the input has nothing
// more for now, rather than waiting for a full read, and the framer hands out the whole packets
// it holds (ts.ErrPending) rather than waiting for the bytes of its look-ahead.

// liveBlock is the size of one read of a live input: a live.Reader returns a batch of
// datagrams per read.
const liveBlock = 64 << 10

type liveRead struct {
	buf []byte
	n   int
	err error
}

// liveSource reads r in its own goroutine. Its Read returns ts.ErrPending when no bytes have
// come, unless wait is set: then it waits for them (and clears wait).
type liveSource struct {
	full chan *liveRead
	free chan *liveRead
	cur  *liveRead
	off  int
	wait bool
}

func newLiveSource(r io.Reader) *liveSource {
	s := &liveSource{full: make(chan *liveRead, 4), free: make(chan *liveRead, 4)}
	for range 4 {
		s.free <- &liveRead{buf: make([]byte, liveBlock)}
	}
	// The goroutine ends at the input's end or error: closing a live input ends its reads.
	go func() {
		for {
			b := <-s.free
			b.n, b.err = r.Read(b.buf)
			s.full <- b // full has room for every block
			if b.err != nil {
				return
			}
		}
	}()
	return s
}

func (s *liveSource) Read(p []byte) (int, error) {
	if s.cur != nil && s.off == s.cur.n {
		if s.cur.err != nil {
			return 0, s.cur.err
		}
		s.free <- s.cur
		s.cur = nil
	}
	if s.cur == nil {
		if s.wait {
			s.cur = <-s.full
			s.wait = false
		} else {
			select {
			case s.cur = <-s.full:
			default:
				return 0, ts.ErrPending
			}
		}
		s.off = 0
	}
	n := copy(p, s.cur.buf[s.off:s.cur.n])
	s.off += n
	if s.off == s.cur.n && s.cur.err != nil {
		return n, s.cur.err
	}
	return n, nil
}

// wallClock is the time of a live input: from the arrival of its first packet.
type wallClock struct{ t0 time.Time }

func (w *wallClock) now() time.Duration {
	if w.t0.IsZero() {
		w.t0 = time.Now()
	}
	return time.Since(w.t0)
}
