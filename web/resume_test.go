package web

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tsdescramble/tsdescramble/internal/testsupport/httpcut"
)

// request is what a test server saw of one request.
type request struct {
	rng, ifRange string
}

// fileServer serves want at /f.ts with net/http's own Range and If-Range handling, the ETag
// etag, and each response's body cut after cuts[i] bytes (the last of cuts for the responses
// after them; 0 or less: not cut). It records the requests.
type fileServer struct {
	*httptest.Server
	mu   sync.Mutex
	seen []request
}

func newFileServer(t *testing.T, want []byte, etag string, cuts ...int) *fileServer {
	fs := &fileServer{}
	fs.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		fs.mu.Lock()
		i := len(fs.seen)
		fs.seen = append(fs.seen, request{req.Header.Get("Range"), req.Header.Get("If-Range")})
		fs.mu.Unlock()
		httpcut.Serve(w, req, want, etag, cuts[min(i, len(cuts)-1)])
	}))
	t.Cleanup(fs.Close)
	return fs
}

func (fs *fileServer) requests() []request {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return append([]request(nil), fs.seen...)
}

// A file whose connection drops, again and again, at places that cut packets, is resumed
// from the byte where each drop left it, with its ETag in If-Range; what comes is the file,
// byte for byte, and each resume is counted.
func TestResume(t *testing.T) {
	want := packets(3000, 11) // 564,000 bytes
	fs := newFileServer(t, want, `"v1"`, 100_001, 150_007, 0)
	r := open(t, fs.URL+"/f.ts")
	got, err := readAll(r, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("read %d bytes, not the %d served", len(got), len(want))
	}
	reqs := fs.requests()
	wantReqs := []request{{"", ""}, {"bytes=100001-", `"v1"`}, {"bytes=250008-", `"v1"`}}
	if fmt.Sprint(reqs) != fmt.Sprint(wantReqs) {
		t.Errorf("requests %v, want %v", reqs, wantReqs)
	}
	st := r.Stats()
	if st.Resumes != 2 || st.Reconnects != 0 || st.Stalls != 0 || st.Bytes != int64(len(want)) || st.GapTime <= 0 {
		t.Errorf("stats %+v, want 2 resumes with a gap, %d bytes", st, len(want))
	}
}

// A server that ignores the range request and sends the whole file again cannot resume it:
// the input ends with an error that says where the file was cut, after exactly the bytes that
// came before the cut, none twice. So does a file that changed (If-Range did not match), one
// whose server says Accept-Ranges: none (not asked again), and one whose server refuses the
// range.
func TestResumeRefused(t *testing.T) {
	want := packets(1000, 12) // 188,000 bytes
	const at = 50_003
	for _, c := range []struct {
		name     string
		handler  func(w http.ResponseWriter, req *http.Request, i int)
		requests int
		why      string
	}{
		{"ignores-range", func(w http.ResponseWriter, req *http.Request, i int) {
			w.Header().Set("Content-Length", fmt.Sprint(len(want)))
			(&httpcut.Writer{ResponseWriter: w, Limit: at}).Write(want)
		}, 2, "it answered the range request with the whole file (200 OK)"},
		{"changed", func(w http.ResponseWriter, req *http.Request, i int) {
			w.Header().Set("ETag", fmt.Sprintf(`"v%d"`, i))
			w = &httpcut.Writer{ResponseWriter: w, Limit: at}
			http.ServeContent(w, req, "f.ts", time.Time{}, bytes.NewReader(want))
		}, 2, "the file changed on the server"},
		{"accept-ranges-none", func(w http.ResponseWriter, req *http.Request, i int) {
			w.Header().Set("Accept-Ranges", "none")
			w.Header().Set("Content-Length", fmt.Sprint(len(want)))
			(&httpcut.Writer{ResponseWriter: w, Limit: at}).Write(want)
		}, 1, "it takes no range requests (Accept-Ranges: none)"},
		{"not-satisfiable", func(w http.ResponseWriter, req *http.Request, i int) {
			if i > 0 {
				http.Error(w, "no", http.StatusRequestedRangeNotSatisfiable)
				return
			}
			http.ServeContent(&httpcut.Writer{ResponseWriter: w, Limit: at}, req, "f.ts", time.Time{}, bytes.NewReader(want))
		}, 2, "it answered the range request 416 Requested Range Not Satisfiable"},
		{"wrong-range", func(w http.ResponseWriter, req *http.Request, i int) {
			if i > 0 {
				w.Header().Set("Content-Range", fmt.Sprintf("bytes 0-%d/%d", len(want)-1, len(want)))
				w.Header().Set("Content-Length", fmt.Sprint(len(want)))
				w.WriteHeader(http.StatusPartialContent)
				w.Write(want)
				return
			}
			http.ServeContent(&httpcut.Writer{ResponseWriter: w, Limit: at}, req, "f.ts", time.Time{}, bytes.NewReader(want))
		}, 2, `its Content-Range "bytes 0-187999/188000" is not bytes 50003-…/188000`},
	} {
		t.Run("server="+c.name, func(t *testing.T) {
			var n atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
				c.handler(w, req, int(n.Add(1))-1)
			}))
			t.Cleanup(srv.Close)
			r := open(t, srv.URL+"/f.ts")
			began := time.Now()
			got, err := readAll(r, 10*time.Second)
			if !bytes.Equal(got, want[:at]) {
				t.Errorf("read %d bytes, want the %d before the cut", len(got), at)
			}
			prefix := fmt.Sprintf("%s/f.ts: the file was cut short at byte %d of %d (connection lost), and the server cannot resume it: ", srv.URL, at, len(want))
			if err == nil || !strings.HasPrefix(err.Error(), prefix) || !strings.Contains(err.Error(), c.why) || strings.Contains(err.Error(), "\n") {
				t.Errorf("error %v\nwant %s…%s", err, prefix, c.why)
			}
			if got := int(n.Load()); got != c.requests {
				t.Errorf("%d requests, want %d", got, c.requests)
			}
			if d := time.Since(began); d > 3*time.Second {
				t.Errorf("the error took %v", d)
			}
			if st := r.Stats(); st.Resumes != 0 {
				t.Errorf("stats %+v, want no resume", st)
			}
		})
	}
}

// A resume that the server fails for a while (503, connection refused) is tried again with the
// backoff of a reconnection, and goes on when the server is back.
func TestResumeRetries(t *testing.T) {
	want := packets(1000, 13)
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		switch n.Add(1) {
		case 1:
			http.ServeContent(&httpcut.Writer{ResponseWriter: w, Limit: 70_000}, req, "f.ts", time.Time{}, bytes.NewReader(want))
		case 2, 3:
			http.Error(w, "restarting", http.StatusServiceUnavailable)
		default:
			http.ServeContent(w, req, "f.ts", time.Time{}, bytes.NewReader(want))
		}
	}))
	t.Cleanup(srv.Close)
	r := open(t, srv.URL+"/f.ts")
	got, err := readAll(r, 10*time.Second)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("read %d bytes (%v), want the %d served", len(got), err, len(want))
	}
	if st := r.Stats(); st.Resumes != 1 || st.GapTime < 300*time.Millisecond {
		t.Errorf("stats %+v, want one resume after the backoff of two failures (100 + 200 ms at least)", st)
	}
}

// A file whose server stops sending and holds the connection open is dropped after the stall
// timeout and resumed.
func TestResumeStalled(t *testing.T) {
	want := packets(1000, 14)
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if n.Add(1) == 1 {
			w.Header().Set("Content-Length", fmt.Sprint(len(want)))
			w.Write(want[:30_000])
			w.(http.Flusher).Flush()
			<-req.Context().Done()
			return
		}
		http.ServeContent(w, req, "f.ts", time.Time{}, bytes.NewReader(want))
	}))
	t.Cleanup(srv.Close)
	r := open(t, srv.URL+"/f.ts", Options{StallTimeout: 200 * time.Millisecond})
	got, err := readAll(r, 5*time.Second)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("read %d bytes (%v), want the %d served", len(got), err, len(want))
	}
	if st := r.Stats(); st.Stalls != 1 || st.Resumes != 1 || st.Reconnects != 0 {
		t.Errorf("stats %+v, want 1 stall and 1 resume", st)
	}
}

// A live stream that stops sending and holds its connection open is dropped after the stall
// timeout and connected again; the bytes of the new connection follow, and the stall and the
// reconnection are counted, its gap from the last byte before the stall.
func TestStall(t *testing.T) {
	first, second := packets(50, 15), packets(400, 16)
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b := second
		if n.Add(1) == 1 {
			b = first
		}
		w.Write(b)
		w.(http.Flusher).Flush()
		<-req.Context().Done() // then nothing, the connection open
	}))
	t.Cleanup(srv.Close)
	const stall = 300 * time.Millisecond
	r := open(t, srv.URL+"/live", Options{StallTimeout: stall})
	readN(t, r, len(first), 5*time.Second)
	began := time.Now()
	if got := readN(t, r, len(second), 5*time.Second); !bytes.Equal(got, second) {
		t.Fatal("the bytes of the second connection differ")
	}
	if d := time.Since(began); d < stall*2/3 || d > 3*time.Second {
		t.Errorf("the second connection's bytes came after %v, want about %v", d, stall)
	}
	st := r.Stats()
	if st.Stalls != 1 || st.Reconnects != 1 || st.Resumes != 0 || st.GapTime < stall || st.Bytes != int64(len(first)+len(second)) {
		t.Errorf("stats %+v, want 1 stall, 1 reconnection after a gap of %v at least", st, stall)
	}
	if n.Load() != 2 {
		t.Errorf("%d requests, want 2", n.Load())
	}
}

// Only a wait on the network counts toward a stall: a reader downstream that takes no bytes
// for several stall timeouts, while the server has sent more than the read-ahead holds, does
// not make the connection look stalled.
func TestStallNotWhileBusy(t *testing.T) {
	want := packets(10_000, 17) // 1.9 MB: more than the read-ahead and the socket buffers
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		w.Write(want) // chunked, no Content-Length: a live stream
		w.(http.Flusher).Flush()
		<-req.Context().Done()
	}))
	t.Cleanup(srv.Close)
	r := open(t, srv.URL+"/live", Options{StallTimeout: 100 * time.Millisecond})
	readN(t, r, 188, 5*time.Second)
	time.Sleep(500 * time.Millisecond) // busy
	if got := readN(t, r, len(want)-188, 5*time.Second); !bytes.Equal(got, want[188:]) {
		t.Fatal("the bytes differ")
	}
	if st := r.Stats(); st.Stalls != 0 || st.Reconnects != 0 {
		t.Errorf("stats %+v, want no stall", st)
	}
}

// A server whose stream pauses longer than the stall timeout, after shorter pauses that always
// ended, is given three times the longest of those: its longer pauses are not stalls.
func TestStallLearnsPauses(t *testing.T) {
	pauses := []time.Duration{180, 180, 180, 180, 420, 420}
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		n.Add(1)
		for i, p := range pauses {
			w.Write(packets(7, byte(i)))
			w.(http.Flusher).Flush()
			select {
			case <-time.After(p * time.Millisecond): // a burst, then a pause
			case <-req.Context().Done():
				return
			}
		}
		w.Write(packets(7, 99))
		w.(http.Flusher).Flush()
		<-req.Context().Done()
	}))
	t.Cleanup(srv.Close)
	r := open(t, srv.URL+"/live", Options{StallTimeout: 300 * time.Millisecond})
	readN(t, r, (len(pauses)+1)*7*188, 10*time.Second)
	if st := r.Stats(); st.Stalls != 0 || n.Load() != 1 {
		t.Errorf("stats %+v after %d requests: pauses of 420 ms after pauses of 180 ms were taken for stalls", st, n.Load())
	}
}

// Close ends the first connection of a stream that sends nothing, whatever its context: no
// goroutine waits on it after.
func TestCloseEndsFirstConnection(t *testing.T) {
	ended, testEnd := make(chan struct{}), make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		w.Write(packets(1, 18))
		w.(http.Flusher).Flush()
		select {
		case <-req.Context().Done():
			close(ended)
		case <-testEnd: // the test failed: srv.Close must not wait for ever
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(testEnd) }) // runs before srv.Close
	r, err := Open(context.Background(), srv.URL+"/live", Options{StallTimeout: -1})
	if err != nil {
		t.Fatal(err)
	}
	readN(t, r, 188, 5*time.Second)
	r.Close()
	select {
	case <-ended:
	case <-time.After(3 * time.Second):
		t.Fatal("the server's connection stays open after Close")
	}
}

// cutProxy forwards TCP connections to target, passing at most cuts[i] bytes of the answer on
// connection i (the last of cuts for those after; 0 or less: all), then closing both ends.
func cutProxy(t *testing.T, target string, cuts ...int) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var open []net.Conn
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range open {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < 100; i++ {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.DialTimeout("tcp", target, 5*time.Second)
			if err != nil {
				c.Close()
				continue
			}
			mu.Lock()
			open = append(open, c, up)
			mu.Unlock()
			limit := int64(cuts[min(i, len(cuts)-1)])
			wg.Add(2)
			go func() {
				defer wg.Done()
				io.Copy(up, c)
			}()
			go func() {
				defer wg.Done()
				var src io.Reader = up
				if limit > 0 {
					src = io.LimitReader(up, limit)
				}
				io.Copy(c, src)
				c.Close()
				up.Close()
			}()
		}
	}()
	return ln.Addr().String()
}

// A resumed response longer than the rest of the file (its Content-Range right, its body not)
// passes no byte past the file's length.
func TestResumeNoBytePastTheEnd(t *testing.T) {
	want := packets(500, 19)
	const at = 40_000
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if n.Add(1) == 1 {
			http.ServeContent(&httpcut.Writer{ResponseWriter: w, Limit: at}, req, "f.ts", time.Time{}, bytes.NewReader(want))
			return
		}
		rest := append(append([]byte(nil), want[at:]...), packets(10, 20)...)
		w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", at, len(want)-1, len(want)))
		w.Header().Set("Content-Length", fmt.Sprint(len(rest)))
		w.WriteHeader(http.StatusPartialContent)
		w.Write(rest)
	}))
	t.Cleanup(srv.Close)
	r := open(t, srv.URL+"/f.ts")
	got, err := readAll(r, 5*time.Second)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("read %d bytes (%v), want the file's %d", len(got), err, len(want))
	}
}

// An HLS segment whose server stops sending with the connection open is dropped after the
// stall timeout and asked for again from the byte where it stopped; the stall is counted.
func TestStallSegment(t *testing.T) {
	segs := [][]byte{packets(300, 21), packets(300, 22)}
	var tries atomic.Int32
	mux := http.NewServeMux()
	mux.HandleFunc("/vod.m3u8", func(w http.ResponseWriter, req *http.Request) {
		io.WriteString(w, mediaPlaylistText(0, 1, true))
	})
	for i, b := range segs {
		mux.HandleFunc(fmt.Sprintf("/seg%d.ts", i), func(w http.ResponseWriter, req *http.Request) {
			if i == 1 && tries.Add(1) == 1 {
				w.Header().Set("Content-Length", fmt.Sprint(len(b)))
				w.Write(b[:20_000])
				w.(http.Flusher).Flush()
				<-req.Context().Done()
				return
			}
			http.ServeContent(w, req, "s.ts", time.Time{}, bytes.NewReader(b))
		})
	}
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	r := open(t, srv.URL+"/vod.m3u8", Options{StallTimeout: 200 * time.Millisecond})
	got, err := readAll(r, 5*time.Second)
	if want := bytes.Join(segs, nil); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("read %d bytes (%v), want the %d of both segments", len(got), err, len(want))
	}
	if st := r.Stats(); st.Stalls != 1 || st.Segments != 2 || st.SegmentsMissed != 0 {
		t.Errorf("stats %+v, want 2 segments and 1 stall", st)
	}
}
