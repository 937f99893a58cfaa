package relay_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tsdescramble/tsdescramble/relay"
	"github.com/tsdescramble/tsdescramble/ts"
)

// A client gets the stream from the first PAT written after it connected, unit for unit as
// written, to the end of the response at Close; in each framing, found from the bytes alone.
func TestClientJoinsAtPAT(t *testing.T) {
	for _, f := range framings {
		t.Run("framing="+f.String(), func(t *testing.T) {
			srv := listen(t, relay.Options{})
			var stream []byte
			write := func(b []byte) {
				t.Helper()
				if n, err := srv.Write(b); n != len(b) || err != nil {
					t.Fatalf("Write: %d, %v", n, err)
				}
				stream = append(stream, b...)
			}
			write(units(0, 60, f)) // no client yet: nobody gets these
			resp := get(t, client(t), srv, "/stream.ts", http.StatusOK)
			if ct := resp.Header.Get("Content-Type"); ct != "video/mp2t" {
				t.Errorf("Content-Type %q", ct)
			}
			if te := resp.TransferEncoding; len(te) != 1 || te[0] != "chunked" {
				t.Errorf("Transfer-Encoding %q, want chunked", te)
			}
			waitClients(t, srv, 1)
			// The writes after the client came start between two PATs and vary in size, so the
			// PAT it joins at lies inside a Write.
			i := 60
			for n := 1; i < 700; n = n%40 + 1 {
				write(units(i, n, f))
				i += n
			}
			if err := srv.Close(); err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(resp.Body) // a clean end of the chunked response
			if err != nil {
				t.Fatalf("reading the response: %v", err)
			}
			want := stream[nextPAT(60)*f.Size:]
			if len(got) < f.Size || !isPAT(got[:f.Size], f) {
				t.Fatalf("the response does not start with a PAT (%d bytes)", len(got))
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("got %d bytes, want the %d written from unit %d on", len(got), len(want), nextPAT(60))
			}
			if s := srv.Stats(); s.Served != 1 || s.BytesOut != int64(len(want)) || s.Clients != 0 || s.Dropped != 0 {
				t.Errorf("stats %+v, want 1 served, %d bytes out, none connected or dropped", s, len(want))
			}
		})
	}
}

// Three clients, one of which never reads: the other two get every unit from the PAT they
// joined at to the end, the stalled one is dropped, counted and logged once, and no Write waits
// for it.
func TestStalledClientDropped(t *testing.T) {
	const (
		per    = 64   // units a Write
		behind = 1024 // units the readers may lag, well inside ClientBuffer
	)
	f := ts.Framing188
	logs := &logLines{}
	srv := listen(t, relay.Options{ClientBuffer: 512 << 10, Log: logs.add})
	c := client(t)
	a := follow(get(t, c, srv, "/stream.ts", http.StatusOK).Body, f)
	b := follow(get(t, c, srv, "/stream.ts", http.StatusOK).Body, f)
	slow := stalled(t, srv)
	waitClients(t, srv, 3)

	start := time.Now()
	var slowest time.Duration
	i, dropAt := 0, -1
	for dropAt < 0 || i < dropAt+5000 {
		if time.Since(start) > 30*time.Second || i > 1<<20 {
			t.Fatalf("the stalled client was not dropped after %d units in %v", i, time.Since(start))
		}
		p := units(i, per, f)
		t0 := time.Now()
		if _, err := srv.Write(p); err != nil {
			t.Fatal(err)
		}
		slowest = max(slowest, time.Since(t0))
		i += per
		if dropAt < 0 && srv.Stats().Dropped > 0 {
			dropAt = i
		}
		// The server does not wait for its clients: the test waits for the two that read, so
		// that only the stalled one falls behind.
		waitFor(t, "the readers to keep up", func() bool {
			return min(a.next.Load(), b.next.Load()) >= int64(i-behind)
		})
	}
	if slowest > time.Second {
		t.Errorf("the slowest Write took %v", slowest)
	}
	t.Logf("%d units written, the stalled client dropped after %d; slowest Write %v", i, dropAt, slowest)

	// The server reset the stalled client's connection: reading it ends at once, it does not
	// wait for more.
	slow.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.Copy(io.Discard, slow); err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatal("the stalled client's connection is still open")
		}
	}
	if s := srv.Stats(); s.Clients != 2 || s.Dropped != 1 {
		t.Errorf("stats %+v, want 2 clients and 1 dropped", s)
	}
	srv.Close()
	a.check(t, "client 1", 0, i)
	b.check(t, "client 2", 0, i)
	s := srv.Stats()
	if s.Served != 3 || s.Dropped != 1 || s.Clients != 0 || s.BytesOut < a.bytes+b.bytes {
		t.Errorf("stats %+v, want 3 served, 1 dropped, none left, at least %d bytes out", s, a.bytes+b.bytes)
	}
	if n := logs.count("dropped"); n != 1 {
		t.Errorf("%d log lines about a drop, want 1: %q", n, logs.lines)
	}
}

// Handlers given in Options answer on the stream's port; another path is 404, a method other
// than GET or HEAD 405, a client past MaxClients 503, and the place is free again when a
// client leaves.
func TestHandlersAndLimits(t *testing.T) {
	logs := &logLines{}
	health := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok\n") })
	srv := listen(t, relay.Options{MaxClients: 1, Log: logs.add, Handlers: map[string]http.Handler{"/healthz": health}})
	c := client(t)

	resp := get(t, c, srv, "/healthz", http.StatusOK)
	if b, _ := io.ReadAll(resp.Body); string(b) != "ok\n" {
		t.Errorf("/healthz: %q", b)
	}
	get(t, c, srv, "/other.ts", http.StatusNotFound)
	get(t, c, srv, "/stream.tsx", http.StatusNotFound)
	post, err := c.Post(url(srv, "/stream.ts"), "text/plain", strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	post.Body.Close()
	if post.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST: %s, want 405", post.Status)
	}
	head, err := c.Head(url(srv, "/stream.ts"))
	if err != nil {
		t.Fatal(err)
	}
	head.Body.Close()
	if head.StatusCode != http.StatusOK || head.Header.Get("Content-Type") != "video/mp2t" {
		t.Errorf("HEAD: %s, %q", head.Status, head.Header.Get("Content-Type"))
	}

	first := get(t, c, srv, "/stream.ts", http.StatusOK)
	waitClients(t, srv, 1)
	get(t, c, srv, "/stream.ts", http.StatusServiceUnavailable)
	get(t, c, srv, "/healthz", http.StatusOK) // the limit is on streams only
	first.Body.Close()
	waitClients(t, srv, 0)
	get(t, c, srv, "/stream.ts", http.StatusOK)

	if s := srv.Stats(); s.Served != 2 || s.Refused != 1 {
		t.Errorf("stats %+v, want 2 served (HEAD is not), 1 refused", s)
	}
	if n := logs.count("refused"); n != 1 {
		t.Errorf("%d log lines about a refusal, want 1: %q", n, logs.lines)
	}
}

// Close ends every response within a bound, even with a stalled client, and a client that
// reads gets the whole stream and a clean end; then Write and Flush fail, and nothing listens.
func TestClose(t *testing.T) {
	f := ts.Framing188
	srv := listen(t, relay.Options{ClientBuffer: 64 << 20})
	resp := get(t, client(t), srv, "/stream.ts", http.StatusOK)
	stalled(t, srv)
	waitClients(t, srv, 2)
	var stream []byte
	for i := 0; i < 20000; i += 1000 {
		p := units(i, 1000, f)
		srv.Write(p)
		stream = append(stream, p...)
	}
	got := make(chan error, 1)
	go func() {
		b, err := io.ReadAll(resp.Body)
		if err == nil && !bytes.Equal(b, stream) {
			err = fmt.Errorf("got %d bytes, want the %d written", len(b), len(stream))
		}
		got <- err
	}()
	t0 := time.Now()
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(t0); d > 5*time.Second {
		t.Errorf("Close took %v", d)
	}
	select {
	case err := <-got:
		if err != nil {
			t.Errorf("the reading client: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the reading client's response did not end")
	}
	if _, err := srv.Write(units(0, 1, f)); !errors.Is(err, relay.ErrClosed) {
		t.Errorf("Write after Close: %v, want ErrClosed", err)
	}
	if err := srv.Flush(); !errors.Is(err, relay.ErrClosed) {
		t.Errorf("Flush after Close: %v, want ErrClosed", err)
	}
	if err := srv.Close(); err != nil {
		t.Errorf("a second Close: %v", err)
	}
	if s := srv.Stats(); s.Clients != 0 {
		t.Errorf("%d clients after Close", s.Clients)
	}
	if c, err := net.DialTimeout("tcp", srv.Addr().String(), time.Second); err == nil {
		c.Close()
		t.Error("the server still accepts connections after Close")
	}
}

// Listen refuses what it cannot serve, with a message that says what to give instead.
func TestListenErrors(t *testing.T) {
	ok := http.NotFoundHandler()
	for _, c := range []struct {
		name, addr, path string
		opts             relay.Options
		want             string
	}{
		{"path without slash", "127.0.0.1:0", "stream.ts", relay.Options{}, "starts with /"},
		{"path with a wildcard", "127.0.0.1:0", "/{name}", relay.Options{}, "starts with /"},
		{"negative buffer", "127.0.0.1:0", "/s.ts", relay.Options{ClientBuffer: -1}, "negative"},
		{"handler on the stream's path", "127.0.0.1:0", "/s.ts", relay.Options{Handlers: map[string]http.Handler{"GET /s.ts": ok}}, "cannot serve"},
		{"nil handler", "127.0.0.1:0", "/s.ts", relay.Options{Handlers: map[string]http.Handler{"/metrics": nil}}, "no handler"},
		{"bad port", "127.0.0.1:99999", "/s.ts", relay.Options{}, "cannot listen"},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv, err := relay.Listen(c.addr, c.path, c.opts)
			if err == nil {
				srv.Close()
				t.Fatal("no error")
			}
			if !strings.HasPrefix(err.Error(), "relay: ") || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q, want one that says %q", err, c.want)
			}
		})
	}
}

// A Write that no client takes allocates nothing, and one that a waiting client looks at for
// its PAT and does not find one allocates nothing either.
func TestWriteAllocations(t *testing.T) {
	srv := listen(t, relay.Options{})
	noPAT := units(1, patEvery-1, ts.Framing188)
	if n := testing.AllocsPerRun(100, func() { srv.Write(noPAT) }); n != 0 {
		t.Errorf("no clients: %v allocations a Write", n)
	}
	get(t, client(t), srv, "/stream.ts", http.StatusOK)
	waitClients(t, srv, 1)
	if n := testing.AllocsPerRun(100, func() { srv.Write(noPAT) }); n != 0 {
		t.Errorf("a client waiting for a PAT: %v allocations a Write", n)
	}
}

// BenchmarkWrite writes units of work of 1024 packets to no client and to three that read
// them. The server never waits for a client, so the benchmark does: it keeps the clients,
// together, within half a client's buffer of the writer, so that none is dropped, and ns/op is
// the cost of serving them, delivery on loopback included.
func BenchmarkWrite(b *testing.B) {
	for _, n := range []int{0, 3} {
		b.Run(fmt.Sprintf("clients=%d", n), func(b *testing.B) {
			const buffer = 16 << 20
			srv := listen(b, relay.Options{ClientBuffer: buffer})
			c := client(b)
			for range n {
				resp := get(b, c, srv, "/stream.ts", http.StatusOK)
				go io.Copy(io.Discard, resp.Body)
			}
			waitClients(b, srv, int64(n))
			p := units(0, 1024, ts.Framing188) // it starts with a PAT: the clients join at once
			var written int64
			b.SetBytes(int64(len(p)))
			b.ReportAllocs()
			for b.Loop() {
				srv.Write(p)
				written += int64(len(p))
				for end := time.Now().Add(10 * time.Second); srv.Stats().BytesOut < int64(n)*written-buffer/2; {
					if time.Now().After(end) {
						b.Fatal("the clients stopped reading")
					}
					time.Sleep(10 * time.Microsecond)
				}
			}
			if d := srv.Stats().Dropped; d != 0 {
				b.Fatalf("%d clients dropped", d)
			}
		})
	}
}
