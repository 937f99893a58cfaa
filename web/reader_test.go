package web

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tsdescramble/tsdescramble/live"
	"github.com/tsdescramble/tsdescramble/ts"
)

// packets returns n TS packets whose bytes after the sync byte count up from seed, so that a
// byte out of place shows.
func packets(n int, seed byte) []byte {
	b := make([]byte, n*188)
	for i := range b {
		b[i] = seed + byte(i*7+i/188)
	}
	for i := 0; i < len(b); i += 188 {
		b[i] = 0x47
	}
	return b
}

// readAll reads r to its end or its first error, within limit; it may run in any goroutine.
func readAll(r io.Reader, limit time.Duration) ([]byte, error) {
	type result struct {
		b   []byte
		err error
	}
	done := make(chan result, 1)
	go func() {
		var out bytes.Buffer
		buf := make([]byte, 32<<10)
		for {
			n, err := r.Read(buf)
			out.Write(buf[:n])
			if err != nil {
				if err == io.EOF {
					err = nil
				}
				done <- result{out.Bytes(), err}
				return
			}
		}
	}()
	select {
	case res := <-done:
		return res.b, res.err
	case <-time.After(limit):
		return nil, fmt.Errorf("read did not end in %v", limit)
	}
}

// readN reads exactly n bytes from r within limit.
func readN(t *testing.T, r io.Reader, n int, limit time.Duration) []byte {
	t.Helper()
	done := make(chan error, 1)
	out := make([]byte, n)
	go func() {
		_, err := io.ReadFull(r, out)
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("reading %d bytes: %v", n, err)
		}
	case <-time.After(limit):
		t.Fatalf("%d bytes did not come in %v", n, limit)
	}
	return out
}

func open(t *testing.T, u string, opts ...Options) *Reader {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	r, err := Open(ctx, u, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func TestIsURL(t *testing.T) {
	for s, want := range map[string]bool{
		"http://h/x.ts": true, "HTTPS://h/x.m3u8": true, "Http://h": true,
		"udp://@:5000": false, "x.ts": false, "http:/x": false, "-": false, "https:": false,
	} {
		if got := IsURL(s); got != want {
			t.Errorf("IsURL(%q) = %v, want %v", s, got, want)
		}
	}
}

// A file served with a Content-Length is read whole, byte for byte, and then ends.
func TestFile(t *testing.T) {
	want := packets(2000, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		http.ServeContent(w, req, "f.ts", time.Time{}, bytes.NewReader(want))
	}))
	t.Cleanup(srv.Close)
	r := open(t, srv.URL+"/f.ts")
	got, err := readAll(r, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("read %d bytes, want the %d served", len(got), len(want))
	}
	if st := r.Stats(); st.Bytes != int64(len(want)) || st.Reconnects != 0 {
		t.Errorf("stats %+v, want %d bytes and no reconnection", st, len(want))
	}
}

// A chunked stream passes its bytes on as they come: Read returns the first chunk while the
// server still holds the rest back.
func TestChunkedLive(t *testing.T) {
	first, second := packets(7, 2), packets(100, 3)
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		w.Write(first)
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-req.Context().Done():
			return
		}
		w.Write(second)
		w.(http.Flusher).Flush()
		<-req.Context().Done()
	}))
	t.Cleanup(srv.Close)
	r := open(t, srv.URL+"/live")
	if got := readN(t, r, len(first), 5*time.Second); !bytes.Equal(got, first) {
		t.Fatal("first chunk differs")
	}
	close(release)
	if got := readN(t, r, len(second), 5*time.Second); !bytes.Equal(got, second) {
		t.Fatal("second chunk differs")
	}
}

// A live stream whose connection drops is connected again: the bytes of the new response
// follow those of the old, and the reconnection and its gap are counted.
func TestReconnect(t *testing.T) {
	parts := [][]byte{packets(300, 4), packets(300, 5)}
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		i := int(requests.Add(1)) - 1
		if i >= len(parts) {
			http.Error(w, "done", http.StatusServiceUnavailable)
			return
		}
		w.Write(parts[i])
		w.(http.Flusher).Flush()
		if i == 0 {
			panic(http.ErrAbortHandler) // the connection drops mid-stream, chunked body unfinished
		}
		<-req.Context().Done()
	}))
	t.Cleanup(srv.Close)
	srv.Config.ErrorLog = nil
	r := open(t, srv.URL+"/live")
	want := append(append([]byte(nil), parts[0]...), parts[1]...)
	if got := readN(t, r, len(want), 5*time.Second); !bytes.Equal(got, want) {
		t.Fatal("bytes after the reconnection differ")
	}
	st := r.Stats()
	if st.Reconnects != 1 || st.GapTime <= 0 || st.Bytes != int64(len(want)) {
		t.Errorf("stats %+v, want 1 reconnection with a gap and %d bytes", st, len(want))
	}
}

// A live stream whose server stays down is given up after GiveUpAfter, with the cause.
func TestGiveUp(t *testing.T) {
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if requests.Add(1) > 1 {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		w.Write(packets(10, 6)) // no Content-Length once flushed: a live stream that ends
		w.(http.Flusher).Flush()
	}))
	t.Cleanup(srv.Close)
	r := open(t, srv.URL+"/live", Options{GiveUpAfter: 500 * time.Millisecond})
	began := time.Now()
	got, err := readAll(r, 5*time.Second)
	if len(got) != 1880 || err == nil || !strings.Contains(err.Error(), "503") || !strings.Contains(err.Error(), "gave up") {
		t.Fatalf("read %d bytes, error %v; want 1880 bytes, then giving up on the 503s", len(got), err)
	}
	if d := time.Since(began); d > 3*time.Second {
		t.Errorf("gave up after %v, want about 0.5 s", d)
	}
}

// A redirect is followed.
func TestRedirect(t *testing.T) {
	want := packets(50, 7)
	mux := http.NewServeMux()
	mux.HandleFunc("/old.ts", func(w http.ResponseWriter, req *http.Request) {
		http.Redirect(w, req, "/new.ts", http.StatusFound)
	})
	mux.HandleFunc("/loop.ts", func(w http.ResponseWriter, req *http.Request) {
		http.Redirect(w, req, "/loop.ts", http.StatusFound)
	})
	mux.HandleFunc("/new.ts", func(w http.ResponseWriter, req *http.Request) {
		w.Header().Set("Content-Length", fmt.Sprint(len(want)))
		w.Write(want)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	r := open(t, srv.URL+"/old.ts")
	got, err := readAll(r, 5*time.Second)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("read %d bytes (%v), want the %d at the redirect's end", len(got), err, len(want))
	}
	_, err = Open(context.Background(), srv.URL+"/loop.ts")
	if err == nil || !strings.Contains(err.Error(), "10 redirects") {
		t.Errorf("redirect loop: %v, want an error after 10 redirects", err)
	}
}

// A status other than 2xx fails Open with an error that names it.
func TestNotFound(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(srv.Close)
	_, err := Open(context.Background(), srv.URL+"/missing.ts")
	var se *StatusError
	if !errors.As(err, &se) || se.Code != 404 || !strings.Contains(err.Error(), "404 Not Found") || !strings.Contains(err.Error(), "/missing.ts") {
		t.Fatalf("got %v, want a 404 naming the URL", err)
	}
	for _, bad := range []string{"ftp://h/x", "http://", "http:///x.ts", "http://h/%zz"} {
		if _, err := Open(context.Background(), bad); err == nil {
			t.Errorf("Open(%q) took it", bad)
		}
	}
}

// quiet serves a few packets and then nothing, holding the connection open.
func quiet(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		w.Write(packets(1, 8))
		w.(http.Flusher).Flush()
		<-req.Context().Done()
	}))
	t.Cleanup(srv.Close)
	return srv
}

// The idle timeout ends a Read that waits for it with an error that is live.ErrIdle and names
// the URL and the timeout; the Reader stays usable.
func TestIdleTimeout(t *testing.T) {
	r := open(t, quiet(t).URL+"/live")
	readN(t, r, 188, 5*time.Second)
	r.SetIdleTimeout(150 * time.Millisecond)
	for range 2 {
		began := time.Now()
		_, err := r.Read(make([]byte, 188))
		if !errors.Is(err, live.ErrIdle) || !strings.Contains(err.Error(), r.String()) || !strings.Contains(err.Error(), "150ms") {
			t.Fatalf("got %v, want an idle error naming %s and 150ms", err, r)
		}
		if d := time.Since(began); d < 100*time.Millisecond || d > 2*time.Second {
			t.Errorf("idle error after %v, want about 150 ms", d)
		}
	}
}

// An idle timeout set while a Read waits (the way ts.Source's read-ahead reads) ends that
// wait.
func TestIdleTimeoutWhileWaiting(t *testing.T) {
	r := open(t, quiet(t).URL+"/live")
	readN(t, r, 188, 5*time.Second)
	done := make(chan error, 1)
	go func() {
		_, err := r.Read(make([]byte, 188))
		done <- err
	}()
	time.Sleep(100 * time.Millisecond) // the Read waits, with no timeout
	r.SetIdleTimeout(100 * time.Millisecond)
	select {
	case err := <-done:
		if !errors.Is(err, live.ErrIdle) {
			t.Fatalf("got %v, want an idle error", err)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("the idle timeout did not reach the waiting Read")
	}
}

// Close wakes a waiting Read, which returns io.EOF.
func TestCloseWakesRead(t *testing.T) {
	r := open(t, quiet(t).URL+"/live")
	readN(t, r, 188, 5*time.Second)
	done := make(chan error, 1)
	go func() {
		_, err := r.Read(make([]byte, 188))
		done <- err
	}()
	time.Sleep(50 * time.Millisecond)
	r.Close()
	select {
	case err := <-done:
		if err != io.EOF {
			t.Fatalf("got %v, want io.EOF", err)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("Close did not wake the Read")
	}
	if _, err := r.Read(make([]byte, 1)); err != io.EOF {
		t.Errorf("Read after Close: %v, want io.EOF", err)
	}
	r.Close() // twice is fine
}

// Credentials in the URL are sent as basic authentication and appear in no message: not in
// String, not in any error, whatever fails.
func TestCredentialsRedacted(t *testing.T) {
	const user, pass = "alice", "s3cr3t-pw"
	var authOK atomic.Bool
	mux := http.NewServeMux()
	mux.HandleFunc("/live", func(w http.ResponseWriter, req *http.Request) {
		if u, p, ok := req.BasicAuth(); ok && u == user && p == pass {
			authOK.Store(true)
		}
		w.Write(packets(1, 9))
		w.(http.Flusher).Flush()
		<-req.Context().Done()
	})
	mux.HandleFunc("/list.m3u8", func(w http.ResponseWriter, req *http.Request) {
		io.WriteString(w, "#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXTINF:1,\ngone.ts\n#EXT-X-ENDLIST\n")
	})
	mux.HandleFunc("/key.m3u8", func(w http.ResponseWriter, req *http.Request) {
		io.WriteString(w, "#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXT-X-KEY:METHOD=AES-128,URI=\"k\"\n#EXTINF:1,\ns.ts\n#EXT-X-ENDLIST\n")
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	base := strings.Replace(srv.URL, "http://", "http://"+user+":"+pass+"@", 1)

	var msgs []string
	r := open(t, base+"/live")
	msgs = append(msgs, r.String())
	readN(t, r, 188, 5*time.Second)
	if !authOK.Load() {
		t.Error("the server did not get the credentials")
	}
	r.SetIdleTimeout(50 * time.Millisecond)
	if _, err := r.Read(make([]byte, 188)); err != nil {
		msgs = append(msgs, err.Error())
	}
	for _, path := range []string{"/missing.ts", "/key.m3u8", "/live?variant=1"} {
		if _, err := Open(context.Background(), base+path); err != nil {
			msgs = append(msgs, err.Error())
		}
	}
	dead := strings.Replace(base, srv.Listener.Addr().String(), "127.0.0.1:1", 1) // nothing listens on port 1
	if _, err := Open(context.Background(), dead+"/x.ts"); err != nil {
		msgs = append(msgs, err.Error())
	}
	if _, err := Open(context.Background(), "http://"+user+":"+pass+"@h/%zz"); err != nil {
		msgs = append(msgs, err.Error())
	}
	lr := open(t, base+"/list.m3u8")
	if _, err := readAll(lr, 5*time.Second); err != nil {
		msgs = append(msgs, err.Error())
	}
	if len(msgs) != 8 {
		t.Fatalf("got %d messages, want 8 (String and seven errors): %q", len(msgs), msgs)
	}
	for _, m := range msgs {
		t.Log(m)
		if strings.Contains(m, pass) {
			t.Errorf("message shows the password: %s", m)
		}
	}
}

// ReadBlock hands the chunks over in their own buffers, a Read between them included: the
// bytes are Read's, in order, and the buffers given back are used for the chunks after.
func TestReadBlock(t *testing.T) {
	var _ ts.BlockReader = (*Reader)(nil)
	want := packets(3000, 2)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		http.ServeContent(w, req, "f.ts", time.Time{}, bytes.NewReader(want))
	}))
	t.Cleanup(srv.Close)
	r := open(t, srv.URL+"/f.ts")
	var got []byte
	small := make([]byte, 100)
	buf := make([]byte, 0, 1000) // smaller than a chunk: the Reader makes its own
	for i := 0; ; i++ {
		if i%3 == 0 {
			n, err := r.Read(small) // leaves the rest of a chunk for ReadBlock
			got = append(got, small[:n]...)
			if err == io.EOF {
				break
			} else if err != nil {
				t.Fatal(err)
			}
			continue
		}
		b, err := r.ReadBlock(buf)
		got = append(got, b...)
		if err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		buf = b[:0] // handed back next time
		if i > 10000 {
			t.Fatal("no end")
		}
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("read %d bytes, want the %d served", len(got), len(want))
	}
}
