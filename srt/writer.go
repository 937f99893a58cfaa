package srt

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// WriterStats counts what a Writer sent and what it could not.
type WriterStats struct {
	Mode     string `json:"mode"`     // "caller" or "listener"
	Bytes    int64  `json:"bytes"`    // TS bytes the library took to send
	Packets  int64  `json:"packets"`  // TS packets the library took to send
	Messages int64  `json:"messages"` // SRT messages the library took to send
	// Short counts the messages sent short of 7 packets by Flush (the latency bound of a
	// quiet stream).
	Short int64 `json:"short_messages"`

	// Connections counts the connections made (calls that succeeded, callers accepted),
	// Reconnects those after the first, GapTime the time without one between them.
	Connections int64         `json:"connections"`
	Reconnects  int64         `json:"reconnects"`
	GapTime     time.Duration `json:"gap_time_ns"`
	// Refused counts the callers a listener turned away while it served another.
	Refused int64 `json:"refused,omitempty"`

	// Unconnected counts the TS packets dropped because no peer was connected (a listener
	// before its first caller, a caller calling again); Full those dropped because the
	// library's send buffer was full (a link slower than the stream).
	Unconnected int64 `json:"dropped_unconnected"`
	Full        int64 `json:"dropped_buffer_full"`

	// The library's own counts over every connection (srt_bstats): data packets reported
	// lost by the receiver, retransmitted, and dropped as too late to send.
	Lost          int64   `json:"srt_lost"`
	Retransmitted int64   `json:"srt_retransmitted"`
	Dropped       int64   `json:"srt_dropped"`
	RTT           float64 `json:"srt_rtt_ms,omitempty"` // of the current connection, in milliseconds
}

// Writer sends a transport stream over SRT in live mode, 7 packets a message (MessageSize),
// in the order written. A Write need not hold whole packets or messages: the rest waits for
// the next Write or Flush. Sending never waits: what comes while no peer is connected, or
// while the library's send buffer is full, is dropped and counted, so that a run is never held
// up by its output. Write, Flush and Close must not be called concurrently; Stats may be
// called from any goroutine.
type Writer struct {
	addr *Address
	t    transport
	logs

	cancel context.CancelFunc
	ended  chan struct{} // closed when the connecting goroutine has ended
	lost   chan conn     // a connection Write found gone, for the goroutine to replace

	pend []byte // bytes of the message being filled

	mu     sync.Mutex // guards c, link, lostAt, and the counts below that are not atomic
	c      conn       // the connection sent to, or nil
	link   linkStats  // the library's counts of the connections that ended
	lostAt time.Time
	conns  int64
	again  int64
	gap    time.Duration

	bytes, packets, messages, short, refused, unconnected, full atomic.Int64
}

// NewWriter starts sending to a: as a caller it connects at once, and fails when the listener
// refuses or does not answer within the library's connection timeout (3 s); a connection
// lost later is called again in the background, with backoff. As a listener it binds the
// address, fails when it cannot, and serves one caller at a time: the first until it leaves.
// In a build without SRT, NewWriter returns ErrNotBuilt.
func NewWriter(a *Address, opts ...Options) (*Writer, error) {
	var o Options
	if len(opts) > 0 {
		o = opts[0]
	}
	t := o.t
	if t == nil {
		t = library
	}
	w := &Writer{addr: a, t: t, logs: o.logs(), ended: make(chan struct{}), lost: make(chan conn, 1), pend: make([]byte, 0, MessageSize)}
	c, l, err := begin(context.Background(), t, a)
	if err != nil {
		return nil, err
	}
	if c != nil {
		w.connected(c, "")
	}
	ctx, cancel := context.WithCancel(context.Background())
	w.cancel = cancel
	go w.run(ctx, l)
	return w, nil
}

// run keeps a connection up until ctx is done: a caller calls again when one is lost, a
// listener accepts a caller when none is served and turns away the others.
func (w *Writer) run(ctx context.Context, l listener) {
	defer close(w.ended)
	if l != nil {
		defer l.close()
	}
	var last string // the reason of the last failed call, said once
	for i := 0; ctx.Err() == nil; {
		// A connection Write found gone, or one the peer closed while nothing was sent.
		select {
		case c := <-w.lost:
			w.drop(c, "connection lost")
		default:
		}
		w.mu.Lock()
		c := w.c
		w.mu.Unlock()
		if c != nil && !c.connected() {
			w.drop(c, "connection lost")
			c = nil
		}
		if l != nil {
			nc, peer, err := l.accept(poll)
			switch {
			case err != nil:
				w.warnf("%s: %v", w.addr, err)
				sleep(ctx, poll)
			case nc != nil && c != nil:
				nc.close()
				w.refused.Add(1)
				w.warnf("%s: caller %s turned away: another caller is served", w.addr, peer)
			case nc != nil:
				w.connected(nc, peer)
			}
			continue
		}
		if c != nil {
			i = 0
			sleep(ctx, poll)
			continue
		}
		if sleep(ctx, backoff(i)) != nil {
			return
		}
		i++
		nc, err := w.t.dial(ctx, w.addr)
		if err != nil {
			if msg := err.Error(); msg != last && ctx.Err() == nil {
				w.warnf("%s; dropping the output and calling again, every %v at most", msg, maxBackoff)
				last = msg
			}
			continue
		}
		last = ""
		w.connected(nc, "")
	}
}

// connected makes c the connection sent to; peer is the caller a listener accepted, or "".
func (w *Writer) connected(c conn, peer string) {
	w.mu.Lock()
	w.c = c
	w.conns++
	again := w.conns > 1
	var gap time.Duration
	if again {
		w.again++
		gap = time.Since(w.lostAt)
		w.gap += gap
	}
	w.mu.Unlock()
	switch {
	case peer != "":
		w.logf("%s: caller %s connected", w.addr, peer)
	case again:
		w.logf("%s: connected again after %v; what came meanwhile was dropped", w.addr, gap.Round(time.Millisecond))
	default:
		w.logf("%s: connected", w.addr)
	}
}

// drop closes c, if it is still the connection sent to, and counts it.
func (w *Writer) drop(c conn, why string) {
	w.mu.Lock()
	if w.c != c {
		w.mu.Unlock()
		return
	}
	w.c = nil
	w.link.add(c.stats())
	w.lostAt = time.Now()
	w.mu.Unlock()
	c.close()
	w.warnf("%s: %s; dropping the output until a peer is connected again", w.addr, why)
}

// Write sends every full message p completes and keeps the rest for the next Write or
// Flush. Full messages in p are sent from p itself, without a copy. It never fails: what
// cannot be sent is counted (Stats).
func (w *Writer) Write(p []byte) (int, error) {
	n := len(p)
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.pend) > 0 {
		k := min(MessageSize-len(w.pend), len(p))
		w.pend = append(w.pend, p[:k]...)
		p = p[k:]
		if len(w.pend) < MessageSize {
			return n, nil
		}
		w.send(w.pend)
		w.pend = w.pend[:0]
	}
	full := len(p) / MessageSize * MessageSize
	if full > 0 {
		w.send(p[:full])
	}
	w.pend = append(w.pend, p[full:]...)
	return n, nil
}

// Flush sends the bytes waiting for a full message as a shorter one, so that a quiet stream is
// not held back by the message size: the latency bound of a live output.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.pend) > 0 {
		if w.send(w.pend) > 0 {
			w.short.Add(1)
		}
		w.pend = w.pend[:0]
	}
	return nil
}

// send hands b to the connection in messages, with w.mu held, and counts what went and what
// was dropped; it returns the bytes sent.
func (w *Writer) send(b []byte) int {
	if w.c == nil {
		w.unconnected.Add(int64(len(b) / 188))
		return 0
	}
	n, err := w.c.send(b, MessageSize)
	w.bytes.Add(int64(n))
	w.packets.Add(int64(n / 188))
	w.messages.Add(int64((n + MessageSize - 1) / MessageSize))
	if rest := int64((len(b) - n) / 188); err != nil {
		w.unconnected.Add(rest)
		select {
		case w.lost <- w.c: // the goroutine closes it and connects again
		default:
		}
	} else {
		w.full.Add(rest)
	}
	return n
}

// Stats returns the counts so far.
func (w *Writer) Stats() WriterStats {
	s := WriterStats{
		Mode: w.addr.Mode.String(), Bytes: w.bytes.Load(), Packets: w.packets.Load(), Messages: w.messages.Load(),
		Short: w.short.Load(), Refused: w.refused.Load(), Unconnected: w.unconnected.Load(), Full: w.full.Load(),
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	s.Connections, s.Reconnects, s.GapTime = w.conns, w.again, w.gap
	l := w.link
	if w.c != nil {
		cs := w.c.stats()
		l.add(cs)
		s.RTT = cs.RTT
	}
	s.Lost, s.Retransmitted, s.Dropped = l.Lost, l.Retransmitted, l.Dropped
	return s
}

// String returns the address, its passphrase hidden.
func (w *Writer) String() string { return w.addr.String() }

// Close sends what waits (Flush), waits for the peer to acknowledge what was sent and to hand
// it on, within a bound, then closes the connection and a listener's port. The library drops
// what is unsent when a live-mode socket closes (SRTO_LINGER is 0 in live mode), and a receiver
// holds what it acknowledged for its latency before it hands it on, which some drop when the
// connection closes (srt-live-transmit): without the wait, the last messages of a run would be
// lost. A peer that has gone does not hold the run for long.
func (w *Writer) Close() error {
	w.Flush()
	w.cancel()
	select {
	case <-w.ended:
	case <-time.After(10 * poll):
	}
	// Write is not called during Close, and the goroutine has ended: c stays put while it
	// lingers, without the lock, which Stats takes.
	w.mu.Lock()
	c := w.c
	w.mu.Unlock()
	if c == nil {
		return nil
	}
	lat := c.peerLatency()
	end := time.Now().Add(time.Second + 2*lat)
	for c.connected() && c.unsent() > 0 && time.Now().Before(end) {
		time.Sleep(10 * time.Millisecond)
	}
	if c.connected() {
		// The last message was sent by now, and is played its latency after it was sent.
		time.Sleep(min(lat+20*time.Millisecond, time.Until(end)))
	}
	w.mu.Lock()
	w.link.add(c.stats())
	w.c = nil
	w.mu.Unlock()
	c.close()
	return nil
}
