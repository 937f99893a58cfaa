// Package relay serves a transport stream over HTTP to any number of clients at once. A
// [Server] is the io.Writer a run writes its output to; each client that GETs the stream's
// path receives it as one never-ending HTTP/1.1 response (video/mp2t, chunked), which is how
// VLC, ffmpeg, curl and set-top boxes read a stream over HTTP.
//
// A client joins at a packet boundary, at the next PAT (PID 0 with payload_unit_start_indicator
// set, ISO/IEC 13818-1, 2.4.4.3), so that a player reads the PAT, then the PMT the multiplex
// carries after it, before any elementary stream. The framing of the units written (188, 192 or
// 204 bytes) is found from their sync bytes, and only while a client waits to join: otherwise a
// Write looks at no packet.
//
// The writer never waits for a client. Each client has a queue of its own, bounded by
// [Options.ClientBuffer], and a goroutine that writes the queue to its connection; a client that
// falls that far behind (a slow link, a paused player) is dropped, its connection closed, and
// counted, and the others and the writer go on as before. A Write copies its bytes once, for all
// clients together, and not at all when no client is connected.
//
// The server speaks plain HTTP/1.1 on the address it is given, with no authentication: put it
// on a trusted network or behind a reverse proxy that adds TLS and access control.
package relay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"maps"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tsdescramble/tsdescramble/ts"
)

// DefaultClientBuffer is the ClientBuffer of Options that leave it 0: about 10 s of a 3 Mbit/s
// service, 1 s of a 30 Mbit/s multiplex.
const DefaultClientBuffer = 4 << 20

// closeGrace is how long Close lets clients take what is queued for them, so that a client
// that keeps up sees the stream to its last byte and a clean end of the response; a client
// still behind after it has its connection closed.
const closeGrace = time.Second

// ErrClosed is what Write and Flush return after Close.
var ErrClosed = errors.New("relay: server closed")

// Options are the settings of a Server. The zero value serves any number of clients, each up to
// DefaultClientBuffer behind, and logs nothing.
type Options struct {
	// ClientBuffer is how many bytes of the stream a client may fall behind the writer, queued
	// in the server beyond what the kernel's socket buffers hold, before it is dropped. A
	// client with nothing queued takes any one Write, whatever its size, so that a write larger
	// than the buffer does not drop every client. 0 means DefaultClientBuffer.
	ClientBuffer int
	// MaxClients bounds the clients served at once; one more is answered 503 Service
	// Unavailable. 0 means no limit.
	MaxClients int
	// Log, when set, receives one line per event an operator may want to know of: a client
	// dropped, a client refused, an error of the HTTP server itself. It is called from
	// several goroutines, the writer's among them (for a drop), and should return quickly.
	Log func(string)
	// Handlers are served on the same listener beside the stream, by http.ServeMux pattern
	// ("/metrics", "/healthz"), so that one port is enough to watch a relay.
	Handlers map[string]http.Handler
}

// Stats counts what a Server did.
type Stats struct {
	Clients  int64 `json:"clients"`   // clients connected now, whether joined or waiting for a PAT
	Served   int64 `json:"served"`    // clients accepted since Listen
	Dropped  int64 `json:"dropped"`   // clients dropped for falling more than ClientBuffer behind
	Refused  int64 `json:"refused"`   // clients answered 503 because MaxClients were connected
	BytesOut int64 `json:"bytes_out"` // stream bytes written to clients' connections, summed over clients
}

// Server serves the stream written to it to the clients of one path. Write, Flush and Close
// may be called from one goroutine or several; Stats and Addr from any goroutine at any time.
type Server struct {
	ln        net.Listener
	srv       *http.Server
	limit     int
	max       int
	logf      func(string)
	serveDone chan struct{}
	handlers  sync.WaitGroup // stream responses under way

	mu      sync.Mutex
	closed  bool
	clients []*client
	waiting int        // clients not yet joined
	framing ts.Framing // the framing the last join found, tried first at the next

	nclients, served, dropped, refused, bytesOut atomic.Int64
}

var _ io.WriteCloser = (*Server)(nil)

// client is one response under way. Its fields other than conn, remote and wake are guarded by
// the Server's mu.
type client struct {
	conn    net.Conn
	remote  string
	joined  bool
	queue   [][]byte // chunks of the stream waiting for the connection, in order
	spare   [][]byte // the slice the last batch was written from, reused for the queue
	queued  int      // bytes taken for the client and not yet written to its connection
	ended   bool     // end is closed
	dropped bool
	wake    chan struct{} // capacity 1: the queue has gained a chunk
	end     chan struct{} // closed when the client is to stop: dropped, or the server closing
}

// connKey is the key of the request context's value that holds the connection, which a drop
// closes: the client's goroutine may be blocked writing to it and cannot return by itself.
type connKey struct{}

// Listen listens on addr, HOST:PORT (":PORT" listens on every interface, "127.0.0.1:PORT" on
// loopback only; port 0 picks a free port, see Addr), and serves the stream to the clients of
// GET path. Paths of opts.Handlers are served beside it; any other path is 404 Not Found.
func Listen(addr, path string, opts Options) (*Server, error) {
	if !strings.HasPrefix(path, "/") || strings.ContainsAny(path, "{} \t") {
		return nil, fmt.Errorf("relay: stream path %q: give a plain path that starts with /, such as /stream.ts (no braces or spaces)", path)
	}
	if opts.ClientBuffer < 0 || opts.MaxClients < 0 {
		return nil, fmt.Errorf("relay: ClientBuffer %d and MaxClients %d must not be negative", opts.ClientBuffer, opts.MaxClients)
	}
	s := &Server{limit: opts.ClientBuffer, max: opts.MaxClients, logf: opts.Log, serveDone: make(chan struct{})}
	if s.limit == 0 {
		s.limit = DefaultClientBuffer
	}
	mux := http.NewServeMux()
	pattern := "GET " + path // GET takes HEAD as well; other methods get 405
	if strings.HasSuffix(path, "/") {
		pattern += "{$}" // the path itself, not the tree under it
	}
	if err := handle(mux, pattern, http.HandlerFunc(s.serveStream)); err != nil {
		return nil, err
	}
	for _, p := range slices.Sorted(maps.Keys(opts.Handlers)) {
		if err := handle(mux, p, opts.Handlers[p]); err != nil {
			return nil, err
		}
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("relay: cannot listen on %s: %v; give HOST:PORT with a free port, or :PORT for every interface", addr, err)
	}
	s.ln = ln
	s.srv = &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second, // a client that never sends its request holds no goroutine for ever
		IdleTimeout:       time.Minute,
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			return context.WithValue(ctx, connKey{}, c)
		},
	}
	if s.logf != nil {
		s.srv.ErrorLog = log.New(logWriter(s.logf), "relay: ", 0)
	}
	go func() {
		defer close(s.serveDone)
		s.srv.Serve(ln) // ends with http.ErrServerClosed, from Close
	}()
	return s, nil
}

// handle registers h for pattern, turning the panic of a malformed or conflicting pattern into
// an error: the patterns come from the caller's options.
func handle(mux *http.ServeMux, pattern string, h http.Handler) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("relay: cannot serve %q: %v", pattern, r)
		}
	}()
	if h == nil {
		return fmt.Errorf("relay: cannot serve %q: no handler", pattern)
	}
	mux.Handle(pattern, h)
	return nil
}

// logWriter passes the lines of a log.Logger to Options.Log.
type logWriter func(string)

func (f logWriter) Write(p []byte) (int, error) {
	f(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

func (s *Server) log(format string, args ...any) {
	if s.logf != nil {
		s.logf("relay: " + fmt.Sprintf(format, args...))
	}
}

// Addr returns the address the server listens on, with the port chosen for port 0.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Stats returns the counts so far.
func (s *Server) Stats() Stats {
	return Stats{
		Clients:  s.nclients.Load(),
		Served:   s.served.Load(),
		Dropped:  s.dropped.Load(),
		Refused:  s.refused.Load(),
		BytesOut: s.bytesOut.Load(),
	}
}

// Write passes p, whole packet units of one framing, to every client, and to a client waiting
// to join from the first unit of p that starts a PAT on. It never waits for a client: it
// queues p for each, dropping a client whose queue would pass ClientBuffer, and returns. It
// fails only after Close. p is not kept.
func (s *Server) Write(p []byte) (int, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return 0, ErrClosed
	}
	join := -1
	if s.waiting > 0 {
		join = s.joinAt(p)
	}
	if len(p) == 0 || len(s.clients)-s.waiting == 0 && join < 0 {
		s.mu.Unlock()
		return len(p), nil
	}
	// The one copy: p is the caller's again when Write returns, and the clients take the bytes
	// at their own pace; they share them, read-only.
	b := append([]byte(nil), p...)
	var drop []*client
	for i := 0; i < len(s.clients); {
		c := s.clients[i]
		chunk := b
		if !c.joined {
			if join < 0 {
				i++
				continue
			}
			chunk = b[join:]
			c.joined = true
			s.waiting--
		}
		if c.queued > 0 && c.queued+len(chunk) > s.limit {
			s.clients[i] = s.clients[len(s.clients)-1]
			s.clients[len(s.clients)-1] = nil
			s.clients = s.clients[:len(s.clients)-1]
			c.dropped, c.ended = true, true
			c.queue, c.queued = nil, 0
			close(c.end)
			drop = append(drop, c)
			continue
		}
		c.queue = append(c.queue, chunk)
		c.queued += len(chunk)
		select {
		case c.wake <- struct{}{}:
		default: // already woken
		}
		i++
	}
	s.nclients.Store(int64(len(s.clients)))
	s.mu.Unlock()
	for _, c := range drop {
		s.dropped.Add(1)
		abort(c.conn)
		s.log("client %s dropped: more than %d bytes behind the stream", c.remote, s.limit)
	}
	return len(p), nil
}

// Flush returns at once: each client's goroutine writes what is queued for it, and flushes the
// response, as soon as its connection takes the bytes, so nothing waits in the Server for a
// flush. It fails only after Close.
func (s *Server) Flush() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	return nil
}

// Close stops the listener and ends every response: a client gets what was queued for it and
// a clean end of the response if it takes it within a second, and has its connection closed
// otherwise. It returns when no response is under way. Writes after Close fail with ErrClosed;
// a second Close does nothing.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	for _, c := range s.clients {
		c.ended = true
		close(c.end)
	}
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), closeGrace)
	defer cancel()
	if err := s.srv.Shutdown(ctx); err != nil {
		// The clients that did not take their queue in time.
		s.mu.Lock()
		for _, c := range s.clients {
			abort(c.conn)
		}
		s.mu.Unlock()
		s.srv.Close()
	}
	s.handlers.Wait()
	<-s.serveDone
	return nil
}

// abort closes a client's connection and discards what the kernel still holds for it (a TCP
// reset): the client's goroutine may be blocked writing to the connection, and closing it is
// what frees the goroutine; a client this far behind would only get stale bytes, which would
// take their share of the socket buffers for as long as it does not read them.
func abort(conn net.Conn) {
	if conn == nil {
		return
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	conn.Close()
}

// serveStream is the response to one client: it registers the client, then writes its queue to
// the connection until the client goes, is dropped, or the server closes.
func (s *Server) serveStream(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Type", "video/mp2t")
	h.Set("Cache-Control", "no-store") // a live stream: a cache would replay the past
	if r.Method == http.MethodHead {
		return
	}
	c := &client{remote: r.RemoteAddr, wake: make(chan struct{}, 1), end: make(chan struct{})}
	c.conn, _ = r.Context().Value(connKey{}).(net.Conn)
	if why := s.add(c); why != "" {
		h.Del("Content-Type")
		http.Error(w, why, http.StatusServiceUnavailable)
		return
	}
	defer s.remove(c)
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	// The headers go out now, so that the client's request returns while it waits for a PAT.
	if rc.Flush() != nil {
		return
	}
	for {
		select {
		case <-c.wake:
		case <-c.end:
		case <-r.Context().Done(): // the client went away
			return
		}
		q, last := s.take(c)
		for i, b := range q {
			n, err := w.Write(b)
			s.wrote(c, len(b), n)
			q[i] = nil
			if err != nil {
				return
			}
		}
		if len(q) > 0 && rc.Flush() != nil {
			return
		}
		s.mu.Lock()
		c.spare = q[:0]
		s.mu.Unlock()
		if last {
			return
		}
	}
}

// add registers a client that waits to join, or says why it cannot.
func (s *Server) add(c *client) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return "the stream has ended"
	}
	if s.max > 0 && len(s.clients) >= s.max {
		s.refused.Add(1)
		s.log("client %s refused: %d clients are connected (MaxClients)", c.remote, s.max)
		return fmt.Sprintf("the relay serves at most %d clients at once", s.max)
	}
	// Counted under mu after closed is checked, so that Close's Wait sees every response.
	s.handlers.Add(1)
	s.clients = append(s.clients, c)
	s.waiting++
	s.served.Add(1)
	s.nclients.Store(int64(len(s.clients)))
	return ""
}

// remove unregisters a client whose response has ended, unless a drop or Close did it.
func (s *Server) remove(c *client) {
	s.mu.Lock()
	if i := slices.Index(s.clients, c); i >= 0 {
		s.clients = slices.Delete(s.clients, i, i+1)
		if !c.joined {
			s.waiting--
		}
		s.nclients.Store(int64(len(s.clients)))
	}
	c.queue, c.spare = nil, nil
	s.mu.Unlock()
	s.handlers.Done()
}

// take hands the client's goroutine the chunks queued for it, and whether they are the last:
// the server is closing, so no more will come.
func (s *Server) take(c *client) (q [][]byte, last bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c.dropped {
		return nil, true
	}
	q, c.queue, c.spare = c.queue, c.spare, nil
	return q, c.ended
}

// wrote accounts for a chunk of size bytes, n of which reached the connection.
func (s *Server) wrote(c *client, size, n int) {
	s.bytesOut.Add(int64(n))
	s.mu.Lock()
	if !c.dropped {
		c.queued -= size
	}
	s.mu.Unlock()
}
