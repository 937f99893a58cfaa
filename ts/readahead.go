package ts

import (
	"context"
	"io"
	"time"
)

// A live input must never hold its reader in a blocked Read while packets already read are due:
// a quiet network input or pipe would keep them for as long as it stays quiet. So the input is
// read by a goroutine of its own into a few blocks, and the reader of the stream takes them with
// a deadline: when nothing more has come by then, Read returns ErrPending, and a Framer over it
// hands out the whole packets it holds rather than waiting for the bytes of its look-ahead.

// ReadAhead reads an input in a goroutine of its own, a block at a time, and hands the blocks on
// in order through Read, waiting for the next one no later than the deadline set with
// SetDeadline. At most a fixed number of blocks are read ahead: memory stays bounded whatever
// the input does. The end of the input and a read error come out of Read in their place, after
// the bytes read before them.
//
// Read, SetDeadline, Deadline and Now belong to one goroutine, the reader of the stream.
type ReadAhead struct {
	ctx     context.Context // ends the waits of Read (SetContext)
	full    chan *block
	free    chan *block
	cur     *block
	off     int
	timer   *time.Timer
	closed  bool // the context ended and no block was left: Read returns its error
	onBlock func(size int, at time.Time)

	deadline time.Time
	now      time.Time
}

// BlockReader is an input that can hand its bytes over in a buffer of its own rather than copy
// them into the caller's: a live.Reader, which gathers datagrams into a buffer anyway. A
// ReadAhead over one trades buffers with it, a copy fewer per byte.
type BlockReader interface {
	// ReadBlock returns the next bytes of the input, at least one unless it returns an error,
	// and takes buf (its contents no longer needed) as a buffer of its own.
	ReadBlock(buf []byte) ([]byte, error)
}

// block is one read of the input, with the time it returned.
type block struct {
	buf []byte
	n   int
	err error
	at  time.Time
}

// NewReadAhead starts reading r into blocks of blockSize bytes, at most blocks of them ahead of
// Read. onBlock, if not nil, is called by Read each time it begins to hand on a block, with the
// block's size and when its read returned: a caller that must know when the bytes it holds
// arrived keeps that bookkeeping there (Source does).
//
// The goroutine ends at the end of the input or at a read error. When ctx ends it stops taking
// new blocks, but a read it has begun returns only when r's Read does: closing a live input
// ends its reads.
func NewReadAhead(ctx context.Context, r io.Reader, blockSize, blocks int, onBlock func(size int, at time.Time)) *ReadAhead {
	blocks = max(blocks, 1)
	a := &ReadAhead{ctx: ctx, full: make(chan *block, blocks), free: make(chan *block, blocks), onBlock: onBlock}
	for range blocks {
		a.free <- &block{buf: make([]byte, blockSize)}
	}
	a.timer = time.NewTimer(time.Hour)
	a.timer.Stop()
	br, _ := r.(BlockReader)
	go func() {
		for {
			var b *block
			select {
			case b = <-a.free:
			case <-ctx.Done(): // the goroutine's own: SetContext changes only Read's
				return
			}
			if br != nil {
				b.buf, b.err = br.ReadBlock(b.buf[:0])
				b.n = len(b.buf)
			} else {
				b.n, b.err = r.Read(b.buf[:cap(b.buf)])
			}
			b.at = time.Now()
			a.full <- b // full has room for every block
			if b.err != nil {
				return
			}
		}
	}()
	return a
}

// SetContext replaces the context whose end ends a wait of Read (the one NewReadAhead was given
// still ends the reading goroutine): a reader of the stream that outlives one run of it, a
// Source, ties its waits to the run at hand.
func (a *ReadAhead) SetContext(ctx context.Context) { a.ctx = ctx }

// SetDeadline sets when Read stops waiting for the next block and returns ErrPending. The zero
// time waits for it without limit; a time already past takes only a block already read.
func (a *ReadAhead) SetDeadline(t time.Time) { a.deadline = t }

// Deadline returns the deadline SetDeadline set.
func (a *ReadAhead) Deadline() time.Time { return a.deadline }

// Now returns the time Read last looked at the clock: when it took a block, or found none by
// the deadline. It is the zero time before then.
func (a *ReadAhead) Now() time.Time { return a.now }

// Read hands on the bytes of the current block, or of the next one, waiting for it until the
// deadline; past the deadline, with none read, it returns ErrPending. A Read never returns the
// bytes of two blocks. When the context ends, the blocks already read are handed on, then the
// context's error.
func (a *ReadAhead) Read(p []byte) (int, error) {
	if a.cur != nil && a.off == a.cur.n {
		if a.cur.err != nil {
			return 0, a.cur.err
		}
		a.free <- a.cur
		a.cur = nil
	}
	if a.cur == nil {
		if a.closed {
			return 0, a.ctx.Err()
		}
		b, err := a.next()
		if err != nil {
			return 0, err
		}
		a.cur, a.off = b, 0
		if a.onBlock != nil {
			a.onBlock(b.n, b.at)
		}
	}
	n := copy(p, a.cur.buf[a.off:a.cur.n])
	a.off += n
	if a.off == a.cur.n && a.cur.err != nil {
		return n, a.cur.err
	}
	return n, nil
}

// next waits for a block until the deadline.
func (a *ReadAhead) next() (*block, error) {
	if !a.deadline.IsZero() {
		// A block already read is taken even past the deadline: a reader behind its input
		// gains nothing by handing out less than it could.
		select {
		case b := <-a.full:
			a.now = time.Now()
			return b, nil
		default:
		}
		if a.now = time.Now(); !a.now.Before(a.deadline) {
			return nil, ErrPending
		}
		a.timer.Reset(a.deadline.Sub(a.now))
		defer a.timer.Stop()
		select {
		case b := <-a.full:
			a.now = time.Now()
			return b, nil
		case <-a.timer.C:
			a.now = time.Now()
			return nil, ErrPending
		case <-a.ctx.Done():
			return a.drain()
		}
	}
	select {
	case b := <-a.full:
		a.now = time.Now()
		return b, nil
	case <-a.ctx.Done():
		return a.drain()
	}
}

// drain returns a block already read after the context ended, or the context's error.
func (a *ReadAhead) drain() (*block, error) {
	select {
	case b := <-a.full:
		return b, nil
	default:
		a.closed = true
		return nil, a.ctx.Err()
	}
}
