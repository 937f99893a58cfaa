package web

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tsdescramble/tsdescramble/internal/chunkq"
	"github.com/tsdescramble/tsdescramble/live"
)

const (
	// chunkSize is the most one read from the network passes on. A read returns what the
	// connection holds, so a slow stream passes its bytes on as they come.
	chunkSize = 64 << 10
	// chunks is how many chunks may wait for Read: the read-ahead stays at 512 KiB, and a
	// reader busy for a moment does not stall the connection.
	chunks = 8

	// firstBackoff and maxBackoff bound the wait before a reconnection or a retry; the wait
	// doubles from one to the other while the server keeps failing.
	firstBackoff = 100 * time.Millisecond
	maxBackoff   = 5 * time.Second
	// defaultGiveUp is how long a live input may fail in a row before Read returns the error:
	// long enough for a server to restart, short enough that a run does not hang on a
	// server that is gone.
	defaultGiveUp = 30 * time.Second
	// defaultStall is the stall timeout of Options that leave it 0: a live stream sends its
	// PAT several times a second, so a connection silent this long, and open, has stalled,
	// while a server that pauses to fill its own buffers is back well within it.
	defaultStall = 5 * time.Second
	// headerTimeout bounds the wait for a response's header. A stream's body may take any
	// time (a quiet stream, a slow segment); a server that accepts and never answers is a
	// failure to retry.
	headerTimeout = 15 * time.Second
)

// Options says how a Reader fetches; the zero value is the default.
type Options struct {
	// Client makes the requests. Nil: a client of the package's own, which follows up to 10
	// redirects, bounds the wait for a response's header, and does not ask for compressed
	// bodies (TS does not compress, and a decompressed body loses its Content-Length).
	Client *http.Client
	// GiveUpAfter is how long a live input (a stream without Content-Length, a live
	// playlist) may fail in a row, connection refused, errors and playlists that do not load,
	// before Read returns the error. Zero: 30 seconds.
	GiveUpAfter time.Duration
	// StallTimeout is how long a connection may stay open and bring no byte before it is
	// dropped as stalled and the input connects again: a live stream reconnects, a file
	// resumes where it stopped, an HLS segment is asked for again from there. An input that
	// has paused longer, and come back, gets three times its longest pause so far, up to a
	// minute: a server that sends in bursts is not taken for a stalled one. The time counts
	// only while the Reader waits on the network, not while its reader downstream is busy.
	// Zero: 5 seconds; negative: never.
	StallTimeout time.Duration
}

// Stats counts what a Reader received.
type Stats struct {
	Bytes int64 `json:"bytes"` // TS bytes received (passed on to Read, or waiting for it)

	// Reconnects counts the times a live stream that ended, failed or stalled was connected
	// again and sent bytes. Resumes counts the times a file cut short (its connection lost or
	// stalled before its Content-Length) was asked for again from the byte where it stopped,
	// with a range request, and sent bytes. GapTime is the time without data both took, from
	// the last byte before the drop to the first byte after it.
	Reconnects int64         `json:"reconnects"`
	Resumes    int64         `json:"resumes"`
	GapTime    time.Duration `json:"gap_time_ns"`
	// Stalls counts the connections dropped because they stayed open and brought no byte for
	// the stall timeout (Options.StallTimeout); a reconnection, a resume or, for an HLS
	// segment, a retry from where it stopped follows each.
	Stalls int64 `json:"stalls"`

	Segments        int64 `json:"segments"`         // HLS segments read whole
	SegmentsMissed  int64 `json:"segments_missed"`  // HLS segments never read: gone from a live playlist before their turn, or failing to download
	PlaylistReloads int64 `json:"playlist_reloads"` // loads of a live media playlist after the first
}

// IdleError is the error Read returns when no byte has come for the idle timeout
// (SetIdleTimeout). errors.Is(err, live.ErrIdle) holds for it, as for a network input's. The
// Reader stays usable: a later Read waits again.
type IdleError struct {
	URL  string        // the input, redacted
	Idle time.Duration // the timeout that passed
}

func (e *IdleError) Error() string {
	return fmt.Sprintf("no data from %s for %v; check that the server is still sending", e.URL, e.Idle)
}

// Unwrap makes errors.Is(err, live.ErrIdle) true.
func (e *IdleError) Unwrap() error { return live.ErrIdle }

// Timeout reports true, as a net.Error timeout does.
func (e *IdleError) Timeout() bool { return true }

// Reader reads a transport stream from an http:// or https:// URL (see the package doc). A
// goroutine of its own fetches, and hands what comes to Read. Read must be called from one
// goroutine at a time; Stats, SetIdleTimeout, String and Close may be called from any.
type Reader struct {
	name   string // the URL redacted, for String and messages
	client *http.Client
	giveUp time.Duration
	stall  time.Duration // <= 0: no stall timeout
	// longest is the longest a Read of the network waited for bytes that did come: a server
	// that sends in bursts is given that much and more before it counts as stalled. The
	// fetcher's goroutine alone uses it, and waitedForBuffer, set when the fetcher waited for
	// Read to give a buffer back since the stall watch last looked.
	longest         time.Duration
	waitedForBuffer bool
	cancel          context.CancelFunc

	// q hands what the fetcher reads to Read, in chunks of chunkSize, chunks of them at most.
	q *chunkq.Queue

	mu sync.Mutex // guards st
	st Stats
}

// Redacted returns s, a URL as given, with its password hidden, for a message: as
// url.URL.Redacted does, and for a URL too broken to parse, with everything before the host
// hidden, since it may still hold a password.
func Redacted(s string) string {
	if u, err := url.Parse(s); err == nil {
		return u.Redacted()
	}
	if i, j := strings.Index(s, "//"), strings.LastIndexByte(s, '@'); i >= 0 && j > i {
		return s[:i+2] + "xxxxx" + s[j:]
	}
	return s
}

// IsURL reports whether s is written as an http:// or https:// URL rather than a file path or
// a udp:// or rtp:// address, so that a command can tell them apart before opening.
func IsURL(s string) bool {
	l := strings.ToLower(s)
	return strings.HasPrefix(l, "http://") || strings.HasPrefix(l, "https://")
}

// Open connects to rawURL and returns a Reader of the stream it serves. It fails at once, with
// an error naming the URL redacted, when the URL is not http:// or https://, the server cannot
// be reached or answers other than 2xx, or a playlist cannot be read (a bad one, a variant
// out of range, encrypted or fMP4 segments). A query parameter variant=N picks a master
// playlist's variant; it is taken out of the URL before fetching. The Reader ends (Read
// returns io.EOF after what already came) when ctx is done or Close is called.
func Open(ctx context.Context, rawURL string, opts ...Options) (*Reader, error) {
	var o Options
	if len(opts) > 0 {
		o = opts[0]
	}
	u, err := url.Parse(rawURL)
	if err != nil || !IsURL(rawURL) || u.Host == "" {
		return nil, fmt.Errorf("%s: not an http:// or https:// URL with a host", Redacted(rawURL))
	}
	name := u.Redacted() // as given: the variant asked for tells two inputs of one master apart
	variant, hasVariant, err := takeVariant(u)
	if err != nil {
		return nil, err
	}
	r := &Reader{
		name:   name,
		client: o.Client,
		giveUp: o.GiveUpAfter,
		stall:  o.StallTimeout,
	}
	r.q = chunkq.New(chunks, chunkSize, func(idle time.Duration) error { return &IdleError{URL: r.name, Idle: idle} })
	if r.client == nil {
		r.client = defaultClient
	}
	if r.giveUp <= 0 {
		r.giveUp = defaultGiveUp
	}
	if r.stall == 0 {
		r.stall = defaultStall
	}
	// The first response is read under the Reader's own context, and its connection under a
	// context of its own: Close ends the one, a stall the other.
	rctx, cancel := context.WithCancel(ctx)
	cctx, ccancel := context.WithCancel(rctx)
	fail := func(err error) (*Reader, error) {
		ccancel()
		cancel()
		return nil, err
	}
	resp, err := r.get(cctx, u, nil)
	if err != nil {
		return fail(err)
	}
	var run func(context.Context) error
	if isPlaylist(u, resp) {
		h, err := r.openHLS(rctx, u, resp, variant, hasVariant)
		ccancel() // the playlist is read
		if err != nil {
			return fail(err)
		}
		run = h.run
	} else {
		if hasVariant {
			resp.Body.Close()
			return fail(fmt.Errorf("%s: variant= picks a variant of an HLS master playlist, and this is not a playlist", r.name))
		}
		s := &stream{r: r, u: u, resp: resp, cancel: ccancel}
		run = s.run
	}
	r.cancel = cancel
	r.q.Arrived()
	go r.fetch(rctx, run)
	return r, nil
}

// defaultClient is http.DefaultTransport with a bound on the wait for a header and no
// compression asked for; the client follows redirects as net/http does (10 at most).
var defaultClient = func() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.ResponseHeaderTimeout = headerTimeout
	t.DisableCompression = true
	return &http.Client{Transport: t}
}()

// takeVariant takes the query parameter variant=N out of u and returns N. It edits the raw
// query rather than re-encoding it, so that the other parameters (a CDN's signed token) reach
// the server byte for byte as given.
func takeVariant(u *url.URL) (n int, ok bool, err error) {
	if u.RawQuery == "" {
		return 0, false, nil
	}
	var kept []string
	for _, kv := range strings.Split(u.RawQuery, "&") {
		k, v, _ := strings.Cut(kv, "=")
		if k != "variant" {
			kept = append(kept, kv)
			continue
		}
		n, err = strconv.Atoi(v)
		if err != nil || n < 0 {
			return 0, false, fmt.Errorf("%s: variant=%s: want the 0-based index of a variant in the master playlist", u.Redacted(), v)
		}
		ok = true
	}
	u.RawQuery = strings.Join(kept, "&")
	u.ForceQuery = false
	return n, ok, nil
}

// isPlaylist reports whether a response is an HLS playlist: by the path of the URL asked for
// or answered, or by the Content-Type.
func isPlaylist(u *url.URL, resp *http.Response) bool {
	if strings.HasSuffix(strings.ToLower(u.Path), ".m3u8") || strings.HasSuffix(strings.ToLower(resp.Request.URL.Path), ".m3u8") {
		return true
	}
	mt, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if err != nil {
		return false
	}
	switch strings.ToLower(mt) {
	case "application/vnd.apple.mpegurl", "application/x-mpegurl", "audio/mpegurl":
		return true
	}
	return false
}

// get requests u and returns a 2xx response; any other status is an error naming it. prepare,
// when not nil, adds to the request (a Range header). Errors name the URL redacted.
func (r *Reader) get(ctx context.Context, u *url.URL, prepare func(*http.Request)) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", u.Redacted(), err)
	}
	if prepare != nil {
		prepare(req)
	}
	resp, err := r.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", u.Redacted(), bareError(err))
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		resp.Body.Close()
		return nil, &StatusError{URL: u.Redacted(), Status: resp.Status, Code: resp.StatusCode}
	}
	return resp, nil
}

// StatusError is the error for a response whose status is not 2xx.
type StatusError struct {
	URL    string // redacted
	Status string // as the server gave it, "404 Not Found"
	Code   int
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("%s: server answered %s", e.URL, e.Status)
}

// bareError drops the *url.Error net/http wraps its errors in: it repeats the method and the
// URL (with the user name), which the caller names once, redacted.
func bareError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) && ue.Err != nil {
		err = ue.Err
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Err != nil {
		return fmt.Errorf("%s: %w", op.Op, op.Err)
	}
	return err
}

// fetch runs the fetcher of the input and records why it ended: io.EOF when the input ended,
// or when ctx did (Close, or the caller's context).
func (r *Reader) fetch(ctx context.Context, run func(context.Context) error) {
	err := run(ctx)
	if ctx.Err() != nil || err == nil {
		err = io.EOF
	}
	r.q.Finish(err)
}

// copyBody passes body's bytes to Read as they come, until it ends, and returns how many it
// passed; the error is body's (io.EOF at its end).
func (r *Reader) copyBody(ctx context.Context, body io.Reader) (int64, error) {
	var n int64
	for {
		b, waited, err := r.q.Buffer(ctx)
		r.waitedForBuffer = r.waitedForBuffer || waited
		if err != nil {
			return n, err
		}
		m, err := body.Read(b)
		if m > 0 {
			n += int64(m)
			r.mu.Lock()
			r.st.Bytes += int64(m)
			r.mu.Unlock()
			if perr := r.q.Pass(ctx, b[:m]); perr != nil {
				return n, perr
			}
		} else {
			r.q.Unused(b)
		}
		if err != nil {
			return n, err
		}
	}
}

// count updates the Stats under their lock.
func (r *Reader) count(f func(*Stats)) {
	r.mu.Lock()
	f(&r.st)
	r.mu.Unlock()
}

// Read reads TS bytes. It returns what has come as soon as something has, waiting otherwise
// until bytes come, the idle timeout passes (an *IdleError), or the input ends: io.EOF at
// the end of a file or a VOD playlist and after Close, or the error that ended it.
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
	return r.st
}

// String returns the URL, its password redacted.
func (r *Reader) String() string { return r.name }

// Close stops the Reader: the connection is closed, and Read returns the bytes that already
// came, then io.EOF. It is safe from any goroutine, and more than once.
func (r *Reader) Close() error {
	r.q.Close()
	r.cancel()
	return nil
}

// sleep waits d, or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// backoff returns the wait before retry number i (0 for the first): firstBackoff, doubling, at
// most maxBackoff.
func backoff(i int) time.Duration {
	d := firstBackoff
	for ; i > 0 && d < maxBackoff; i-- {
		d *= 2
	}
	return min(d, maxBackoff)
}
