package srt

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tsdescramble/tsdescramble/live"
)

// The Reader's and Writer's own logic (reconnection, turning callers away, the idle timeout,
// Close, batching into messages, dropping while unconnected) against a double of the library,
// in every build: libsrt_test.go runs them against libsrt itself.

// fakeNet plays the library: dial returns the connections queued on calls (or fails while
// refuse is set), a listener returns those queued on callers.
type fakeNet struct {
	calls   chan *fakeConn
	callers chan *fakeConn
	refuse  atomic.Bool
	dials   atomic.Int64
}

func newFakeNet() *fakeNet {
	return &fakeNet{calls: make(chan *fakeConn, 16), callers: make(chan *fakeConn, 16)}
}

func (n *fakeNet) dial(ctx context.Context, a *Address) (conn, error) {
	n.dials.Add(1)
	if n.refuse.Load() {
		return nil, &ConnectError{Addr: a.String(), Reason: "no answer"}
	}
	select {
	case c := <-n.calls:
		return c, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(50 * time.Millisecond):
		return nil, &ConnectError{Addr: a.String(), Reason: "no answer"}
	}
}

func (n *fakeNet) listen(*Address) (listener, error) { return fakeListener{n}, nil }

type fakeListener struct{ n *fakeNet }

func (l fakeListener) accept(wait time.Duration) (conn, string, error) {
	select {
	case c := <-l.n.callers:
		return c, "192.0.2.1:5000", nil
	case <-time.After(wait):
		return nil, "", nil
	}
}

func (fakeListener) close() {}

// fakeConn is one connection: messages to receive, what was sent, and whether it stands.
type fakeConn struct {
	in     chan []byte
	broken chan struct{}
	once   sync.Once
	closed atomic.Bool

	mu   sync.Mutex
	sent [][]byte
	room int // messages the send buffer takes; < 0: any number
}

func newFakeConn() *fakeConn {
	return &fakeConn{in: make(chan []byte, 64), broken: make(chan struct{}), room: -1}
}

func (c *fakeConn) breakOff() { c.once.Do(func() { close(c.broken) }) }

func (c *fakeConn) recv(b []byte, wait time.Duration) (n, msgs, pkts int, err error) {
	take := func(m []byte) {
		n += copy(b[n:], m)
		msgs++
		pkts += len(m) / 188
	}
	select {
	case m := <-c.in:
		take(m)
	case <-c.broken:
		return 0, 0, 0, errLost
	case <-time.After(wait):
		return 0, 0, 0, nil
	}
	for len(b)-n >= maxMessage {
		select {
		case m := <-c.in:
			take(m)
		default:
			return n, msgs, pkts, nil
		}
	}
	return n, msgs, pkts, nil
}

func (c *fakeConn) send(b []byte, size int) (int, error) {
	if !c.connected() {
		return 0, errLost
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for ; n < len(b) && c.room != 0; c.room-- {
		m := min(size, len(b)-n)
		c.sent = append(c.sent, bytes.Clone(b[n:n+m]))
		n += m
	}
	return n, nil
}

func (c *fakeConn) connected() bool {
	select {
	case <-c.broken:
		return false
	default:
		return !c.closed.Load()
	}
}

func (c *fakeConn) unsent() int                { return 0 }
func (c *fakeConn) peerLatency() time.Duration { return 0 }
func (c *fakeConn) stats() linkStats           { return linkStats{Lost: 1, Retransmitted: 2, Dropped: 3} }
func (c *fakeConn) close()                     { c.closed.Store(true) }

func (c *fakeConn) messages() [][]byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([][]byte(nil), c.sent...)
}

// packets returns n TS packets, each numbered in its bytes 1 and 2 from first on.
func packets(first, n int) []byte {
	b := make([]byte, n*188)
	for i := range n {
		b[i*188] = 0x47
		b[i*188+1], b[i*188+2] = byte((first+i)>>8), byte(first+i)
	}
	return b
}

// logLines gathers what a Reader or Writer logs.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) log(m string) {
	l.mu.Lock()
	l.lines = append(l.lines, m)
	l.mu.Unlock()
}

func (l *logLines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// readN reads n bytes from r within limit.
func readN(t *testing.T, r *Reader, n int, limit time.Duration) []byte {
	t.Helper()
	r.SetIdleTimeout(limit)
	got := make([]byte, 0, n)
	buf := make([]byte, 4096)
	for len(got) < n {
		k, err := r.Read(buf)
		got = append(got, buf[:k]...)
		if err != nil {
			t.Fatalf("after %d bytes of %d: %v", len(got), n, err)
		}
	}
	return got
}

func mustParse(t testing.TB, s string) *Address {
	t.Helper()
	a, err := ParseAddress(s)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// A caller whose connection breaks calls again, with backoff, through failed calls, and the
// stream goes on from the new connection; the connections, the gap and the library's counts
// of both are in the Stats, and the log says it once per reason: what went wrong (the calls
// that failed) to Warn, the connection made to Log.
func TestReaderCallerCallsAgain(t *testing.T) {
	n := newFakeNet()
	c1, c2 := newFakeConn(), newFakeConn()
	n.calls <- c1
	var logs, warns logLines
	r, err := Open(context.Background(), mustParse(t, "srt://192.0.2.1:9000?passphrase=0123456789"), Options{t: n, Log: logs.log, Warn: warns.log})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	c1.in <- packets(0, 7)
	c1.in <- packets(7, 3)
	if got := readN(t, r, 10*188, 5*time.Second); !bytes.Equal(got, packets(0, 10)) {
		t.Fatal("the first connection's bytes differ")
	}
	n.refuse.Store(true)
	c1.breakOff()
	for end := time.Now().Add(5 * time.Second); n.dials.Load() < 3 && time.Now().Before(end); {
		time.Sleep(10 * time.Millisecond)
	}
	n.refuse.Store(false)
	n.calls <- c2
	c2.in <- packets(10, 7)
	if got := readN(t, r, 7*188, 10*time.Second); !bytes.Equal(got, packets(10, 7)) {
		t.Fatal("the second connection's bytes differ")
	}
	s := r.Stats()
	if s.Mode != "caller" || s.Connections != 2 || s.Reconnects != 1 || s.GapTime <= 0 || s.Messages != 3 || s.Packets != 17 || s.Bytes != 17*188 {
		t.Errorf("stats %+v", s)
	}
	if s.Lost != 2 || s.Retransmitted != 4 || s.Dropped != 6 {
		t.Errorf("the library's counts of both connections: %+v", s)
	}
	l, w := logs.String(), warns.String()
	if strings.Count(w, "cannot connect: no answer; calling again") != 1 || strings.Contains(w, "connected") || strings.Contains(w, "0123456789") {
		t.Errorf("Warn:\n%s", w)
	}
	if !strings.Contains(l, "connected again after") || strings.Contains(l, "calling again") || strings.Contains(l, "0123456789") {
		t.Errorf("Log:\n%s", l)
	}
}

// Without Options.Warn, what goes wrong goes to Log with the rest.
func TestWarnFallsBackOnLog(t *testing.T) {
	var logs logLines
	l := Options{Log: logs.log}.logs()
	l.logf("made")
	l.warnf("lost")
	if got := logs.String(); !strings.Contains(got, "made") || !strings.Contains(got, "lost") {
		t.Fatalf("Log got %q", got)
	}
}

// A listener serves one caller at a time: a second is turned away while the first is
// connected, and the next is taken once the first has left.
func TestReaderListenerOneCallerAtATime(t *testing.T) {
	n := newFakeNet()
	var logs logLines
	r, err := Open(context.Background(), mustParse(t, "srt://:9000"), Options{t: n, Log: logs.log})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	c1, c2, c3 := newFakeConn(), newFakeConn(), newFakeConn()
	n.callers <- c1
	c1.in <- packets(0, 7)
	readN(t, r, 7*188, 5*time.Second)
	n.callers <- c2
	for end := time.Now().Add(5 * time.Second); !c2.closed.Load(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("the second caller was not turned away")
		}
	}
	c1.breakOff()
	n.callers <- c3
	c3.in <- packets(7, 7)
	if got := readN(t, r, 7*188, 5*time.Second); !bytes.Equal(got, packets(7, 7)) {
		t.Fatal("the third caller's bytes differ")
	}
	if s := r.Stats(); s.Mode != "listener" || s.Connections != 2 || s.Reconnects != 1 || s.Refused != 1 {
		t.Errorf("stats %+v", s)
	}
	if l := logs.String(); !strings.Contains(l, "caller 192.0.2.1:5000 turned away") || strings.Count(l, "caller 192.0.2.1:5000 connected") != 2 {
		t.Errorf("log:\n%s", l)
	}
}

// The idle timeout fails a Read with an error for which errors.Is(err, live.ErrIdle) holds,
// naming the address without its passphrase; a Read after it waits again; Close ends a Read
// that waits, at once, with io.EOF.
func TestReaderIdleAndClose(t *testing.T) {
	n := newFakeNet()
	r, err := Open(context.Background(), mustParse(t, "srt://:9000?passphrase=0123456789"), Options{t: n})
	if err != nil {
		t.Fatal(err)
	}
	r.SetIdleTimeout(50 * time.Millisecond)
	_, err = r.Read(make([]byte, 188))
	var ie *IdleError
	if !errors.Is(err, live.ErrIdle) || !errors.As(err, &ie) || strings.Contains(err.Error(), "0123456789") || !strings.Contains(err.Error(), "passphrase=xxxxx") {
		t.Fatalf("got %v", err)
	}
	r.SetIdleTimeout(0)
	done := make(chan error, 1)
	go func() {
		_, err := r.Read(make([]byte, 188))
		done <- err
	}()
	time.Sleep(50 * time.Millisecond)
	t0 := time.Now()
	r.Close()
	select {
	case err := <-done:
		if err != io.EOF || time.Since(t0) > time.Second {
			t.Fatalf("Read returned %v, %v after Close", err, time.Since(t0))
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not end the Read")
	}
	r.Close() // twice is harmless
}

// A Close while a caller calls again ends the calls: the goroutine has ended when it returns.
func TestReaderCloseWhileCalling(t *testing.T) {
	n := newFakeNet()
	c := newFakeConn()
	n.calls <- c
	r, err := Open(context.Background(), mustParse(t, "srt://192.0.2.1:9000"), Options{t: n})
	if err != nil {
		t.Fatal(err)
	}
	n.refuse.Store(true)
	c.breakOff()
	time.Sleep(150 * time.Millisecond)
	r.Close()
	select {
	case <-r.ended:
	default:
		t.Fatal("the receiving goroutine outlived Close")
	}
	if !c.closed.Load() {
		t.Error("the broken connection was not closed")
	}
}

// ReadBlock hands over the chunks as they came and takes the caller's buffers for the next.
func TestReaderReadBlock(t *testing.T) {
	n := newFakeNet()
	c := newFakeConn()
	n.calls <- c
	r, err := Open(context.Background(), mustParse(t, "srt://192.0.2.1:9000"), Options{t: n})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	r.SetIdleTimeout(5 * time.Second)
	var got []byte
	buf := make([]byte, 0, chunkSize)
	for i := range 40 {
		c.in <- packets(i*7, 7)
		for len(got) < (i+1)*7*188 {
			b, err := r.ReadBlock(buf)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, b...)
			buf = b[:0]
		}
	}
	if !bytes.Equal(got, packets(0, 280)) {
		t.Fatal("the bytes differ")
	}
}

// The Writer sends 7 packets a message whatever the cut of its writes, a short message on
// Flush, and no message while no caller is connected to a listener: those are counted.
func TestWriterMessages(t *testing.T) {
	n := newFakeNet()
	var logs logLines
	w, err := NewWriter(mustParse(t, "srt://:9000?latency=20"), Options{t: n, Log: logs.log})
	if err != nil {
		t.Fatal(err)
	}
	w.Write(packets(0, 10)) // no caller yet: dropped
	c := newFakeConn()
	n.callers <- c
	for end := time.Now().Add(5 * time.Second); w.Stats().Connections == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("the caller was not taken")
		}
	}
	stream := packets(100, 30)
	for off, cut := 0, 1; off < len(stream); cut = cut*3 + 1 {
		k := min(cut, len(stream)-off)
		w.Write(stream[off : off+k])
		off += k
	}
	w.Flush()
	w.Close()
	// The first message's worth went while no caller was there; the 3 packets after it
	// waited for the next write, and lead the stream.
	want := append(packets(7, 3), stream...)
	ms := c.messages()
	if len(ms) != 5 || !bytes.Equal(bytes.Join(ms, nil), want) {
		t.Fatalf("%d messages, %d bytes", len(ms), len(bytes.Join(ms, nil)))
	}
	for i, m := range ms[:4] {
		if len(m) != MessageSize {
			t.Errorf("message %d: %d bytes", i, len(m))
		}
	}
	s := w.Stats()
	if s.Unconnected != 7 || s.Packets != 33 || s.Messages != 5 || s.Short != 1 || s.Connections != 1 || s.Full != 0 {
		t.Errorf("stats %+v", s)
	}
	if !c.closed.Load() {
		t.Error("Close left the connection open")
	}
}

// A full send buffer drops what it cannot take, counted, and never blocks; a lost connection
// drops the output until the caller is connected again.
func TestWriterDropsNeverBlocks(t *testing.T) {
	n := newFakeNet()
	c1, c2 := newFakeConn(), newFakeConn()
	c1.room = 2
	n.calls <- c1
	var logs logLines
	w, err := NewWriter(mustParse(t, "srt://192.0.2.1:9000"), Options{t: n, Log: logs.log})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	w.Write(packets(0, 21))
	if s := w.Stats(); s.Packets != 14 || s.Full != 7 {
		t.Fatalf("stats %+v", s)
	}
	c1.breakOff()
	w.Write(packets(21, 7)) // the connection is gone: dropped, and the goroutine told
	n.calls <- c2
	for end := time.Now().Add(5 * time.Second); w.Stats().Connections < 2; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("not connected again; log:\n%s", logs.String())
		}
	}
	w.Write(packets(28, 7))
	if ms := c2.messages(); len(ms) != 1 || !bytes.Equal(ms[0], packets(28, 7)) {
		t.Fatalf("the new connection got %d messages", len(ms))
	}
	if s := w.Stats(); s.Unconnected != 7 || s.Reconnects != 1 {
		t.Errorf("stats %+v", s)
	}
	if l := logs.String(); !strings.Contains(l, "connection lost") || !strings.Contains(l, "connected again") {
		t.Errorf("log:\n%s", l)
	}
}

// A listener Writer turns a second caller away while it serves one.
func TestWriterListenerOneCaller(t *testing.T) {
	n := newFakeNet()
	w, err := NewWriter(mustParse(t, "srt://:9000"), Options{t: n})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	c1, c2 := newFakeConn(), newFakeConn()
	n.callers <- c1
	n.callers <- c2
	for end := time.Now().Add(5 * time.Second); !c2.closed.Load(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("the second caller was not turned away")
		}
	}
	w.Write(packets(0, 7))
	if len(c1.messages()) != 1 || w.Stats().Refused != 1 {
		t.Errorf("stats %+v", w.Stats())
	}
}

// Write allocates nothing: the hot path of an output.
func TestWriterNoAllocs(t *testing.T) {
	n := newFakeNet()
	c := &allocFreeConn{}
	w, err := NewWriter(mustParse(t, "srt://:9000"), Options{t: n})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	w.connected(c, "")
	unit := packets(0, 100)
	if a := testing.AllocsPerRun(100, func() {
		w.Write(unit[:1000])
		w.Write(unit[1000:])
		w.Flush()
	}); a != 0 {
		t.Errorf("%v allocations a round", a)
	}
}

// allocFreeConn takes everything and keeps nothing.
type allocFreeConn struct{ fakeConn }

func (*allocFreeConn) send(b []byte, _ int) (int, error) { return len(b), nil }
func (*allocFreeConn) connected() bool                   { return true }

func TestBackoff(t *testing.T) {
	var got []string
	for i := range 8 {
		got = append(got, fmt.Sprint(backoff(i)))
	}
	if s := strings.Join(got, " "); s != "100ms 200ms 400ms 800ms 1.6s 3.2s 5s 5s" {
		t.Errorf("backoff: %s", s)
	}
}
