package srt

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/tsdescramble/tsdescramble/internal/chunkq"
	"github.com/tsdescramble/tsdescramble/live"
)

const (
	// chunkSize is the most one hand-over to Read holds: the messages waiting in the library
	// when the receiving goroutine looks, up to 64 KiB. A slow stream passes each message on
	// as it comes.
	chunkSize = 64 << 10
	// chunks is how many chunks may wait for Read; past them the library's own receive
	// buffer holds the stream (8 MB by default).
	chunks = 8
)

// Options says how a Reader or a Writer runs; the zero value is the default.
type Options struct {
	// Log, when not nil, is told of each connection made (the first too) or lost, and of
	// callers turned away, in one line without a newline; addresses are redacted.
	Log func(msg string)
	// Warn, when not nil, is told the lines of Log that say something went wrong (a
	// connection lost or that could not be made, a caller turned away) in its place, so that
	// a log can give them a level of their own.
	Warn func(msg string)

	// t replaces the library, for the tests of the package's own logic.
	t transport
}

// Stats counts what a Reader received.
type Stats struct {
	Mode     string `json:"mode"`     // "caller" or "listener"
	Bytes    int64  `json:"bytes"`    // TS bytes received (passed on to Read, or waiting for it)
	Packets  int64  `json:"packets"`  // TS packets: the whole 188-byte units of each message
	Messages int64  `json:"messages"` // SRT messages received

	// Connections counts the connections made: calls that succeeded, or callers accepted.
	// Reconnects counts those after the first (a caller calling again after a lost
	// connection, a listener's next caller), and GapTime the time without a connection they
	// took, from each loss to the next connection.
	Connections int64         `json:"connections"`
	Reconnects  int64         `json:"reconnects"`
	GapTime     time.Duration `json:"gap_time_ns"`
	// Refused counts the callers a listener turned away while it received from another.
	Refused int64 `json:"refused,omitempty"`

	// The library's own counts over every connection (srt_bstats): data packets found
	// missing, received again after a loss report, dropped as too late to play (SRT's
	// too-late packet drop: a hole in the output), and that did not decrypt (a passphrase
	// changed under a running key).
	Lost          int64 `json:"srt_lost"`
	Retransmitted int64 `json:"srt_retransmitted"`
	Dropped       int64 `json:"srt_dropped"`
	Undecrypted   int64 `json:"srt_undecrypted"`
	// RTT is the round-trip time of the current connection in milliseconds, SRT's estimate.
	RTT float64 `json:"srt_rtt_ms,omitempty"`
}

// IdleError is the error Read returns when no byte has come for the idle timeout
// (SetIdleTimeout). errors.Is(err, live.ErrIdle) holds for it, as for a UDP input's. The
// Reader stays usable: a later Read waits again.
type IdleError struct {
	Addr string        // the input, redacted
	Mode Mode          // its mode, for the advice
	Idle time.Duration // the timeout that passed
}

func (e *IdleError) Error() string {
	what := "that a caller connects to this port, with the same passphrase"
	if e.Mode == Caller {
		what = "that the listener there is sending, with the same passphrase"
	}
	return fmt.Sprintf("no data from %s for %v; check %s", e.Addr, e.Idle, what)
}

// Unwrap makes errors.Is(err, live.ErrIdle) true.
func (e *IdleError) Unwrap() error { return live.ErrIdle }

// Timeout reports true, as a net.Error timeout does.
func (e *IdleError) Timeout() bool { return true }

// Reader receives a transport stream over SRT in live mode (see the package doc). A goroutine
// of its own connects, receives, and connects again when a connection is lost. Read must be
// called from one goroutine at a time; Stats, SetIdleTimeout, String and Close may be called
// from any.
type Reader struct {
	addr *Address
	t    transport
	logs

	cancel context.CancelFunc
	ended  chan struct{} // closed when the receiving goroutine has ended

	// q hands what the receiving goroutine gets to Read, in chunks of chunkSize, chunks of
	// them at most.
	q *chunkq.Queue

	closeOnce sync.Once

	mu     sync.Mutex // guards st, link, c and lostAt
	st     Stats
	link   linkStats // the library's counts of the connections that ended
	c      conn      // the connection received from, or nil
	lostAt time.Time // when the last connection ended
}

// Open starts receiving from a: as a caller it connects at once, and fails when the
// listener refuses (a wrong passphrase, a stream ID it does not serve) or does not answer
// within the library's connection timeout (3 s); as a listener it binds the address and
// fails when it cannot, and callers come when they come. The Reader ends (Read returns
// io.EOF after what already came) when ctx is done or Close is called. In a build without
// SRT, Open returns ErrNotBuilt.
func Open(ctx context.Context, a *Address, opts ...Options) (*Reader, error) {
	var o Options
	if len(opts) > 0 {
		o = opts[0]
	}
	t := o.t
	if t == nil {
		t = library
	}
	r := &Reader{
		addr:  a,
		t:     t,
		logs:  o.logs(),
		ended: make(chan struct{}),
	}
	r.q = chunkq.New(chunks, chunkSize, func(idle time.Duration) error {
		return &IdleError{Addr: a.String(), Mode: a.Mode, Idle: idle}
	})
	r.st.Mode = a.Mode.String()
	c, l, err := begin(ctx, t, a)
	if err != nil {
		return nil, err
	}
	if c != nil {
		r.connected(c, "")
	}
	rctx, cancel := context.WithCancel(ctx)
	r.cancel = cancel
	r.q.Arrived()
	go r.run(rctx, c, l)
	return r, nil
}

// begin makes a Reader's or a Writer's first move: a caller's connection, or a listener's
// socket.
func begin(ctx context.Context, t transport, a *Address) (conn, listener, error) {
	if a.Mode == Caller {
		c, err := t.dial(ctx, a)
		return c, nil, err
	}
	l, err := t.listen(a)
	return nil, l, err
}

// logs is where a Reader or a Writer says what becomes of its connections: Options.Log, and
// Options.Warn (or Log without it) for what goes wrong.
type logs struct{ log, warn func(string) }

func (o Options) logs() logs {
	l := logs{log: o.Log, warn: o.Warn}
	if l.warn == nil {
		l.warn = o.Log
	}
	return l
}

// logf tells Options.Log, if any.
func (l logs) logf(format string, args ...any) {
	if l.log != nil {
		l.log(fmt.Sprintf(format, args...))
	}
}

// warnf tells Options.Warn, or Log, of something gone wrong.
func (l logs) warnf(format string, args ...any) {
	if l.warn != nil {
		l.warn(fmt.Sprintf(format, args...))
	}
}

// run receives from one connection after another until ctx is done; then it ends the chunks
// Read takes (io.EOF after them).
func (r *Reader) run(ctx context.Context, c conn, l listener) {
	defer close(r.ended)
	defer r.q.Finish(io.EOF)
	if l != nil {
		defer l.close()
	}
	for {
		if c == nil {
			if c = r.connect(ctx, l); c == nil {
				return // ctx is done
			}
		}
		err := r.receive(ctx, c, l)
		r.drop(c)
		c = nil
		if ctx.Err() != nil {
			return
		}
		if r.addr.Mode == Caller {
			r.warnf("%s: %v; calling again", r.addr, err)
		} else {
			r.warnf("%s: %v; waiting for a caller", r.addr, err)
		}
	}
}

// connect makes the next connection: a caller calls with backoff until it gets through, a
// listener waits for a caller. It returns nil when ctx is done first.
func (r *Reader) connect(ctx context.Context, l listener) conn {
	if l != nil {
		for ctx.Err() == nil {
			c, peer, err := l.accept(poll)
			switch {
			case err != nil:
				r.warnf("%s: %v", r.addr, err)
				if sleep(ctx, poll) != nil {
					return nil
				}
			case c != nil:
				r.connected(c, peer)
				return c
			}
		}
		return nil
	}
	var last string
	for i := 0; ; i++ {
		if sleep(ctx, backoff(i)) != nil {
			return nil
		}
		c, err := r.t.dial(ctx, r.addr)
		if err == nil {
			r.connected(c, "")
			return c
		}
		if ctx.Err() != nil {
			return nil
		}
		// Said once for each reason, not at every call of an outage.
		if msg := err.Error(); msg != last {
			r.warnf("%s; calling again, every %v at most", msg, maxBackoff)
			last = msg
		}
	}
}

// connected counts a connection made; peer is the caller a listener accepted, or "".
func (r *Reader) connected(c conn, peer string) {
	r.mu.Lock()
	r.c = c
	r.st.Connections++
	again := r.st.Connections > 1
	var gap time.Duration
	if again {
		r.st.Reconnects++
		gap = time.Since(r.lostAt)
		r.st.GapTime += gap
	}
	r.mu.Unlock()
	switch {
	case peer != "":
		r.logf("%s: caller %s connected", r.addr, peer)
	case again:
		r.logf("%s: connected again after %v without a connection", r.addr, gap.Round(time.Millisecond))
	default:
		r.logf("%s: connected", r.addr)
	}
}

// drop closes a connection that ended, its counts kept.
func (r *Reader) drop(c conn) {
	r.mu.Lock()
	r.link.add(c.stats())
	r.c = nil
	r.lostAt = time.Now()
	r.mu.Unlock()
	c.close()
}

// receive passes c's messages to Read until the connection ends (its error) or ctx is done.
// A listener meanwhile turns away the callers that come.
func (r *Reader) receive(ctx context.Context, c conn, l listener) error {
	looked := time.Now()
	for {
		b, _, err := r.q.Buffer(ctx)
		if err != nil {
			return err
		}
		n, msgs, pkts, err := c.recv(b, poll)
		if n > 0 {
			r.mu.Lock()
			r.st.Bytes += int64(n)
			r.st.Messages += int64(msgs)
			r.st.Packets += int64(pkts)
			r.mu.Unlock()
			if perr := r.q.Pass(ctx, b[:n]); perr != nil {
				return perr
			}
		} else {
			r.q.Unused(b)
		}
		if err != nil {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if l != nil && time.Since(looked) >= poll {
			r.refuse(l)
			looked = time.Now()
		}
	}
}

// refuse turns away a caller that came while another is served: one stream comes in at a
// time, and the one that came first keeps the input until it leaves.
func (r *Reader) refuse(l listener) {
	c, peer, err := l.accept(0)
	if err != nil || c == nil {
		return
	}
	c.close()
	r.mu.Lock()
	r.st.Refused++
	r.mu.Unlock()
	r.warnf("%s: caller %s turned away: another caller is connected", r.addr, peer)
}

// Read reads TS bytes. It returns what has come as soon as something has, waiting otherwise
// until bytes come, the idle timeout passes (an *IdleError), or the Reader is closed (io.EOF
// after what already came). A lost connection is not an error: the Reader connects again.
func (r *Reader) Read(p []byte) (int, error) { return r.q.Read(p) }

// ReadBlock is Read without the copy out, for a reader that reads ahead into blocks of its own
// (ts.BlockReader): it returns a chunk as it came, in the buffer it came in, and takes buf in
// exchange, for the chunks to come.
func (r *Reader) ReadBlock(buf []byte) ([]byte, error) { return r.q.ReadBlock(buf) }

// SetIdleTimeout makes Read return an *IdleError (errors.Is live.ErrIdle) when no byte has
// come for d; 0 waits forever, the default. It may be called while a Read waits (a reader that
// reads ahead in a goroutine of its own): that wait then ends after d at the latest, as if it
// had begun now.
func (r *Reader) SetIdleTimeout(d time.Duration) { r.q.SetIdleTimeout(d) }

// Stats returns the counts so far.
func (r *Reader) Stats() Stats {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, l := r.st, r.link
	if r.c != nil {
		cs := r.c.stats()
		l.add(cs)
		s.RTT = cs.RTT
	}
	s.Lost, s.Retransmitted, s.Dropped, s.Undecrypted = l.Lost, l.Retransmitted, l.Dropped, l.Undecrypted
	return s
}

// String returns the address, its passphrase hidden.
func (r *Reader) String() string { return r.addr.String() }

// Close stops the Reader: Read returns the bytes that already came, then io.EOF. The
// connection is closed and a listener's port freed before Close returns. It is safe from any
// goroutine, and more than once.
func (r *Reader) Close() error {
	r.closeOnce.Do(func() {
		r.q.Close()
		r.cancel()
		// The goroutine sees the context within a poll of the library; a library that
		// hangs must not hang the caller, so the wait is bounded.
		select {
		case <-r.ended:
		case <-time.After(10 * poll):
		}
	})
	return nil
}
