package relay_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tsdescramble/tsdescramble/psi"
	"github.com/tsdescramble/tsdescramble/relay"
	"github.com/tsdescramble/tsdescramble/ts"
)

// patEvery is the period of the test stream's PAT, in units.
const patEvery = 25

var framings = []ts.Framing{ts.Framing188, ts.Framing192, ts.Framing204}

// patSection is a PAT with one program, 1, whose PMT is on PID 0x1000.
var patSection = func() []byte {
	s := []byte{0x00, 0xB0, 0x0D, 0x00, 0x01, 0xC1, 0x00, 0x00, 0x00, 0x01, 0xF0, 0x00}
	return binary.BigEndian.AppendUint32(s, psi.CRC32(s))
}()

// unit returns unit i of the test stream in framing f. Every patEvery units it holds a PAT;
// between them, a PMT start, a PES start and a PID 0 packet without a unit start, none of which
// a client may join at. Each unit carries its index, so a reader knows where it is, and no two
// units are alike.
func unit(i int, f ts.Framing) []byte {
	u := make([]byte, f.Size)
	binary.BigEndian.PutUint32(u, uint32(i)) // a 192-byte unit's prefix; overwritten otherwise
	p := u[f.Prefix : f.Prefix+ts.PacketSize]
	pid, start := uint16(0x100), false
	switch i % patEvery {
	case 0:
		pid, start = 0, true
	case 1:
		pid, start = 0x1000, true
	case 5:
		start = true
	case patEvery - 1:
		pid = 0
	}
	p[0], p[1], p[2], p[3] = ts.SyncByte, byte(pid>>8), byte(pid), 0x10|byte(i&0x0F)
	if start {
		p[1] |= 0x40
	}
	for k := 4; k < ts.PacketSize; k++ {
		p[k] = byte(i*31 + k)
	}
	if pid == 0 && start {
		p[4] = 0 // pointer_field
		n := copy(p[5:], patSection)
		for k := 5 + n; k < ts.PacketSize; k++ {
			p[k] = 0xFF
		}
	}
	binary.BigEndian.PutUint64(p[ts.PacketSize-8:], uint64(i))
	for k := f.Prefix + ts.PacketSize; k < f.Size; k++ {
		u[k] = byte(i + k) // a 204-byte unit's trailer
	}
	return u
}

// indexOf returns the index of a unit of the test stream.
func indexOf(u []byte, f ts.Framing) int {
	return int(binary.BigEndian.Uint64(u[f.Prefix+ts.PacketSize-8:]))
}

// units returns units from to from+n-1 of the test stream.
func units(from, n int, f ts.Framing) []byte {
	b := make([]byte, 0, n*f.Size)
	for i := from; i < from+n; i++ {
		b = append(b, unit(i, f)...)
	}
	return b
}

// nextPAT is the index of the first PAT of the test stream at or after unit i.
func nextPAT(i int) int { return (i + patEvery - 1) / patEvery * patEvery }

// isPAT reports whether u's packet starts a PAT.
func isPAT(u []byte, f ts.Framing) bool {
	p := u[f.Prefix:]
	return p[0] == ts.SyncByte && ts.PID(p) == 0 && ts.PUSI(p)
}

// logLines gathers what a Server logs; the server logs from several goroutines.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) add(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, s)
}

func (l *logLines) count(substr string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, s := range l.lines {
		if strings.Contains(s, substr) {
			n++
		}
	}
	return n
}

// listen starts a server on loopback, closed when the test ends.
func listen(t testing.TB, opts relay.Options) *relay.Server {
	t.Helper()
	srv, err := relay.Listen("127.0.0.1:0", "/stream.ts", opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv
}

func url(srv *relay.Server, path string) string { return "http://" + srv.Addr().String() + path }

// client returns an HTTP client of its own, so that no connection is shared between tests,
// whose requests and bodies end within a bound.
func client(t testing.TB) *http.Client {
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 30 * time.Second}
}

// get requests path and fails the test unless the answer is status.
func get(t testing.TB, c *http.Client, srv *relay.Server, path string, status int) *http.Response {
	t.Helper()
	resp, err := c.Get(url(srv, path))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != status {
		t.Fatalf("GET %s: %s, want %d", path, resp.Status, status)
	}
	return resp
}

// stalled connects to the stream and asks for it, and then reads nothing: a client that has
// paused, or a link that has stopped. Its receive buffer is made small, so that the kernel
// holds little of the stream for it and the server's queue fills soon.
func stalled(t testing.TB, srv *relay.Server) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", srv.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	conn.(*net.TCPConn).SetReadBuffer(4096)
	if _, err := io.WriteString(conn, "GET /stream.ts HTTP/1.1\r\nHost: relay\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	return conn
}

// waitFor waits up to 10 s for cond.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// waitClients waits until n clients are connected, so that the next Write sees them.
func waitClients(t testing.TB, srv *relay.Server, n int64) {
	t.Helper()
	waitFor(t, "clients to connect", func() bool { return srv.Stats().Clients == n })
}

// follower reads the test stream from a response as it comes and checks each unit, so that a
// long stream needs no copy of what was written.
type follower struct {
	f     ts.Framing
	first int          // index of the first unit received, -1 before it
	next  atomic.Int64 // index of the unit expected next
	bytes int64
	bad   int // units out of sequence or not as written
	err   error
	done  chan struct{}
}

func follow(body io.Reader, f ts.Framing) *follower {
	r := &follower{f: f, first: -1, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		u := make([]byte, f.Size)
		for {
			if _, err := io.ReadFull(body, u); err != nil {
				if !errors.Is(err, io.EOF) {
					r.err = err
				}
				return
			}
			r.bytes += int64(len(u))
			i := indexOf(u, f)
			if r.first < 0 {
				r.first = i
			} else if int64(i) != r.next.Load() {
				r.bad++
			}
			if !bytes.Equal(u, unit(i, f)) {
				r.bad++
			}
			r.next.Store(int64(i + 1))
		}
	}()
	return r
}

// check waits for the response to end and fails the test unless it held every unit from the
// first PAT at or after from to end, each once, in order, as written.
func (r *follower) check(t *testing.T, name string, from, end int) {
	t.Helper()
	select {
	case <-r.done:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: the response did not end", name)
	}
	if r.err != nil {
		t.Errorf("%s: %v", name, r.err)
	}
	if want := nextPAT(from); r.first != want || r.next.Load() != int64(end) || r.bad != 0 {
		t.Errorf("%s: got units %d to %d, %d out of place; want %d (the first PAT at or after %d) to %d",
			name, r.first, r.next.Load()-1, r.bad, want, from, end-1)
	}
}
