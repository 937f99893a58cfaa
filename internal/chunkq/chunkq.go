// Package chunkq hands the bytes that a goroutine receives from the network to the one reader
// of an input, in order, in a fixed set of buffers: the HTTP and HLS input (web) and the SRT
// input (srt) each receive in a goroutine of their own and read through a Queue. The receiving
// goroutine takes an empty buffer (Buffer), fills it and passes it on (Pass), or gives it back
// unused (Unused), and says why it ended (Finish); the reader takes the chunks with Read, or
// with ReadBlock, which hands each chunk over in the buffer it came in. Memory stays bounded by
// the buffers made at the start, however fast the network and however slow the reader. The
// reader may be told to give up after a silence (SetIdleTimeout), and Close ends its waits.
package chunkq

import (
	"context"
	"io"
	"sync"
	"sync/atomic"
	"time"
)

// Queue is the hand-over of one input's chunks. Buffer, Unused, Pass and Finish are the
// receiving goroutine's; Read and ReadBlock the reader's, one goroutine at a time;
// SetIdleTimeout, Arrived and Close may be called from any goroutine.
type Queue struct {
	size    int
	idleErr func(idle time.Duration) error

	data   chan []byte   // chunks received, in order; closed by Finish
	free   chan []byte   // buffers the reader is done with
	closed chan struct{} // closed by Close
	kick   chan struct{} // SetIdleTimeout tells a waiting Read to start its wait again
	end    error         // why the receiving ended (Finish); read once data is closed

	cur  []byte // the rest of the chunk the reader is being given
	buf  []byte // cur's buffer, to give back to free
	done error  // what Read returns from now on, once data is closed and drained

	idle        atomic.Int64 // time.Duration; 0 = wait forever
	lastArrival atomic.Int64 // unix nanoseconds of the last bytes that came

	closeOnce sync.Once
}

// New returns a Queue of chunks buffers of size bytes each. idleErr makes the error a Read
// returns when nothing came for the idle timeout idle (SetIdleTimeout): the input's own, which
// names it.
func New(chunks, size int, idleErr func(idle time.Duration) error) *Queue {
	q := &Queue{
		size:    size,
		idleErr: idleErr,
		data:    make(chan []byte, chunks),
		free:    make(chan []byte, chunks),
		closed:  make(chan struct{}),
		kick:    make(chan struct{}, 1),
	}
	for range chunks {
		q.free <- make([]byte, size)
	}
	q.Arrived()
	return q
}

// Arrived counts the idle timeout from now, as if bytes had just come: an input that connected
// now (its first response read) has not been silent yet.
func (q *Queue) Arrived() { q.lastArrival.Store(time.Now().UnixNano()) }

// Buffer returns an empty buffer of the Queue's size, waiting for the reader to give one back
// until ctx is done; waited says it had to wait (the reader was busy, not the network).
func (q *Queue) Buffer(ctx context.Context) (b []byte, waited bool, err error) {
	select {
	case b := <-q.free:
		return b[:cap(b)], false, nil
	default:
	}
	select {
	case b := <-q.free:
		return b[:cap(b)], true, nil
	case <-ctx.Done():
		return nil, true, ctx.Err()
	}
}

// Unused gives back a buffer from Buffer that received nothing.
func (q *Queue) Unused(b []byte) { q.free <- b }

// Pass hands b, bytes just received into a buffer from Buffer, to the reader, waiting until
// ctx is done for room.
func (q *Queue) Pass(ctx context.Context, b []byte) error {
	q.Arrived()
	select {
	case q.data <- b:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Finish ends the chunks: the reader gets those passed, then err (io.EOF at the input's end).
// The receiving goroutine calls it once, last.
func (q *Queue) Finish(err error) {
	q.end = err
	close(q.data)
}

// Read reads the bytes received. It returns what has come as soon as something has, waiting
// otherwise until bytes come, the idle timeout passes (the error of New's idleErr), or the
// input ends: the error given to Finish, or io.EOF after Close.
func (q *Queue) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if err := q.wait(); err != nil {
		return 0, err
	}
	n := copy(p, q.cur)
	q.cur = q.cur[n:]
	if len(q.cur) == 0 {
		q.free <- q.buf
		q.cur, q.buf = nil, nil
	}
	return n, nil
}

// ReadBlock is Read without the copy out, for a reader that reads ahead into blocks of its own
// (ts.BlockReader): it returns a chunk as it came, in the buffer it came in, and takes buf in
// exchange, for the chunks to come.
func (q *Queue) ReadBlock(buf []byte) ([]byte, error) {
	if err := q.wait(); err != nil {
		return buf[:0], err
	}
	if len(q.cur) < len(q.buf) {
		// The rest of a chunk a Read began: copied out, its buffer kept.
		out := append(buf[:0], q.cur...)
		q.free <- q.buf
		q.cur, q.buf = nil, nil
		return out, nil
	}
	out := q.cur
	q.cur, q.buf = nil, nil
	if cap(buf) < q.size {
		buf = make([]byte, q.size)
	}
	// One buffer out, one in: the buffers in use stay as many as free has room for.
	q.free <- buf[:0]
	return out, nil
}

// wait returns once q.cur holds bytes, or with the error Read is to return: the idle timeout,
// the end of the input or the error that ended it.
func (q *Queue) wait() error {
	var timer *time.Timer
	var timeout <-chan time.Time
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	idleFrom := time.Time{} // when the wait began again, for a timeout set while it waits
	for {
		if len(q.cur) > 0 {
			return nil
		}
		if q.done != nil {
			return q.done
		}
		select {
		case b, ok := <-q.data:
			q.take(b, ok)
			continue
		default:
		}
		idle := time.Duration(q.idle.Load())
		if idle > 0 && timer == nil {
			// No byte for idle: counted from the last that came, unless the caller was busy
			// longer than that (then the bytes were waiting, not missing): from now.
			dl := time.Unix(0, q.lastArrival.Load()).Add(idle)
			if !idleFrom.IsZero() {
				dl = idleFrom.Add(idle)
			}
			if now := time.Now(); dl.Before(now) {
				dl = now.Add(idle)
			}
			timer = time.NewTimer(time.Until(dl))
			timeout = timer.C
		}
		select {
		case b, ok := <-q.data:
			q.take(b, ok)
		case <-q.closed:
			// What already came is returned, then io.EOF, without waiting for the receiver.
			select {
			case b, ok := <-q.data:
				q.take(b, ok)
			default:
				q.done = io.EOF
			}
		case <-q.kick:
			if timer != nil {
				timer.Stop()
				timer, timeout = nil, nil
			}
			idleFrom = time.Now()
		case <-timeout:
			timer, timeout = nil, nil
			select {
			case b, ok := <-q.data: // came as the timer fired: not idle
				q.take(b, ok)
				continue
			default:
			}
			if d := time.Duration(q.idle.Load()); d > 0 {
				return q.idleErr(d)
			}
		}
	}
}

// take takes a chunk from the data channel, or the end of the input when it is closed.
func (q *Queue) take(b []byte, ok bool) {
	if !ok {
		q.done = q.end
		return
	}
	q.cur, q.buf = b, b
}

// SetIdleTimeout makes Read return the idle error when no byte has come for d; 0 waits
// forever, the default. It may be called while a Read waits (a reader that reads ahead in a
// goroutine of its own): that wait then ends after d at the latest, as if it had begun now.
func (q *Queue) SetIdleTimeout(d time.Duration) {
	q.idle.Store(int64(d))
	select {
	case q.kick <- struct{}{}:
	default:
	}
}

// Close makes the reader's Read return the chunks already passed, then io.EOF, without
// waiting for the receiving goroutine (which the caller stops). It is safe from any
// goroutine, and more than once.
func (q *Queue) Close() {
	q.closeOnce.Do(func() { close(q.closed) })
}
