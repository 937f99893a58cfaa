package web

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// stream fetches a URL that is not a playlist: a file (a response with a Content-Length), read
// to its end and resumed where a connection cut it, or a live stream, connected again whenever
// it ends, fails or stalls.
type stream struct {
	r      *Reader
	u      *url.URL
	resp   *http.Response     // the response Open got, read first
	cancel context.CancelFunc // ends resp's connection
}

// file is what resuming a file needs to know of it: its length, how much of it came, and what
// tells the same file from a changed one.
type file struct {
	size     int64  // the first response's Content-Length
	got      int64  // bytes of it passed on
	etag     string // the first response's ETag, or ""
	modified string // its Last-Modified, or ""
	noRanges bool   // it said Accept-Ranges: none
}

func newFile(resp *http.Response) *file {
	return &file{
		size:     resp.ContentLength,
		etag:     resp.Header.Get("ETag"),
		modified: resp.Header.Get("Last-Modified"),
		noRanges: strings.EqualFold(strings.TrimSpace(resp.Header.Get("Accept-Ranges")), "none"),
	}
}

// ifRange is the validator a resume sends in If-Range, so that a server whose file changed
// answers with the whole new file (which is refused) rather than splice its tail onto the old
// head: the ETag if it is strong (RFC 9110 13.1.5 allows no weak one), else Last-Modified.
func (f *file) ifRange() string {
	if f.etag != "" && !strings.HasPrefix(f.etag, "W/") {
		return f.etag
	}
	return f.modified
}

// changed reports whether a later response shows another file than the first one did.
func (f *file) changed(resp *http.Response) bool {
	etag, modified := resp.Header.Get("ETag"), resp.Header.Get("Last-Modified")
	return f.etag != "" && etag != "" && etag != f.etag ||
		f.modified != "" && modified != "" && modified != f.modified
}

// cutError ends a file that a connection cut short and that cannot be resumed.
type cutError struct {
	url       string // redacted
	at, size  int64
	cause     string // what cut it
	cannotWhy string // why it cannot be resumed
}

func (e *cutError) Error() string {
	return fmt.Sprintf("%s: the file was cut short at byte %d of %d (%s), and the server cannot resume it: %s", e.url, e.at, e.size, e.cause, e.cannotWhy)
}

// run reads the stream to its end. It alone decides, each time a response ends, whether the
// input ends there, fails, resumes a file where it was cut, or connects to a live stream again.
func (s *stream) run(ctx context.Context) error {
	resp, cancel := s.resp, s.cancel
	var f *file
	if resp.ContentLength >= 0 {
		f = newFile(resp)
	}
	var dropped time.Time // when the input last lost its connection; zero while it flows
	var failures int      // connections in a row that brought no byte
	for {
		w := s.r.watch(cancel)
		resp.Body = &watchedBody{ReadCloser: resp.Body, w: w}
		var body io.Reader = resp.Body
		if f != nil {
			// Whatever a resumed response says of its length, no byte past the file's is passed.
			body = io.LimitReader(body, f.size-f.got)
		}
		n, err := s.r.copyBody(ctx, body)
		w.stop()
		resp.Body.Close()
		cancel()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		lost := time.Now()
		cause, end := s.after(f, n, err, w)
		if end != nil {
			return end
		}
		if w.fired.Load() {
			lost = w.armed // the last byte came before the wait that stalled
		}
		if n > 0 || dropped.IsZero() {
			// Bytes came since the last drop (or this is the first): a new outage starts. A
			// connection that brought nothing continues the one before.
			dropped, failures = lost, 0
		}
		for {
			// The outage is counted from the drop; the wait before each try grows while the
			// server keeps failing.
			if err := sleep(ctx, backoff(failures)); err != nil {
				return err
			}
			failures++
			if time.Since(dropped) >= s.r.giveUp {
				return s.gaveUp(f, dropped, cause)
			}
			resp, cancel, err = s.connect(ctx, f, cause)
			if err == nil {
				break
			}
			var cut *cutError
			if ctx.Err() != nil {
				return ctx.Err()
			} else if errors.As(err, &cut) {
				return err
			}
			cause = err.Error()
		}
		// The new connection counts, and its gap ends, with its first byte: a server that
		// answers and sends nothing has not come back.
		resumed := f != nil
		resp.Body = &firstByte{ReadCloser: resp.Body, at: func() {
			gap := time.Since(dropped)
			s.r.count(func(st *Stats) {
				if resumed {
					st.Resumes++
				} else {
					st.Reconnects++
				}
				st.GapTime += gap
			})
		}}
	}
}

// after decides what follows the end of a response that passed n bytes on and ended with err:
// the input's end or an error that ends it (end), or another connection, with what cut this
// one (cause).
func (s *stream) after(f *file, n int64, err error, w *stallWatch) (cause string, end error) {
	if f != nil {
		f.got += n
		if err == io.EOF && f.got == f.size {
			return "", io.EOF
		}
	}
	switch {
	case w.fired.Load():
		s.r.count(func(st *Stats) { st.Stalls++ })
		cause = fmt.Sprintf("no byte for %v with the connection open", w.limit)
	case err == io.EOF && f == nil:
		cause = "the server ended the stream"
	case err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF):
		cause = "connection lost"
	default:
		cause = bareError(err).Error()
	}
	if f != nil && f.noRanges {
		return "", s.cut(f, cause, "it takes no range requests (Accept-Ranges: none)")
	}
	return cause, nil
}

// connect opens the next connection: for a file, a request for the rest of it, from the byte
// where it was cut, which must be answered with that rest (206) of the same file; an answer
// that can never do (the whole file, a changed one, a client error) is a *cutError. cause is
// what cut the connection before.
func (s *stream) connect(ctx context.Context, f *file, cause string) (*http.Response, context.CancelFunc, error) {
	cctx, cancel := context.WithCancel(ctx)
	var prepare func(*http.Request)
	if f != nil {
		prepare = func(req *http.Request) {
			req.Header.Set("Range", "bytes="+strconv.FormatInt(f.got, 10)+"-")
			if v := f.ifRange(); v != "" {
				req.Header.Set("If-Range", v)
			}
		}
	}
	resp, err := s.r.get(cctx, s.u, prepare)
	if err != nil {
		cancel()
		var se *StatusError
		if f != nil && errors.As(err, &se) && se.Code >= 400 && se.Code < 500 && se.Code != http.StatusRequestTimeout && se.Code != http.StatusTooManyRequests {
			return nil, nil, s.cut(f, cause, "it answered the range request "+se.Status)
		}
		return nil, nil, err
	}
	if f == nil {
		return resp, cancel, nil
	}
	why := ""
	switch {
	case f.changed(resp):
		why = "the file changed on the server (its ETag or Last-Modified is not the same)"
	case resp.StatusCode != http.StatusPartialContent:
		why = "it answered the range request with the whole file (" + resp.Status + ")"
	default:
		why = f.checkRange(resp.Header.Get("Content-Range"))
	}
	if why != "" {
		resp.Body.Close()
		cancel()
		return nil, nil, s.cut(f, cause, why)
	}
	return resp, cancel, nil
}

func (s *stream) cut(f *file, cause, why string) error {
	return &cutError{url: s.u.Redacted(), at: f.got, size: f.size, cause: cause, cannotWhy: why}
}

// checkRange checks the Content-Range of a 206 answer to a resume: it must start at the byte
// asked for, and be of a file of the length the first response gave. It says what is wrong,
// or "".
func (f *file) checkRange(cr string) string {
	bad := "its Content-Range " + strconv.Quote(cr) + " is not bytes " + strconv.FormatInt(f.got, 10) + "-…/" + strconv.FormatInt(f.size, 10)
	unit, spec, ok := strings.Cut(strings.TrimSpace(cr), " ")
	if !ok || !strings.EqualFold(unit, "bytes") {
		return bad
	}
	span, total, ok := strings.Cut(spec, "/")
	if !ok {
		return bad
	}
	first, last, ok := strings.Cut(span, "-")
	if !ok {
		return bad
	}
	a, err1 := strconv.ParseInt(first, 10, 64)
	b, err2 := strconv.ParseInt(last, 10, 64)
	if err1 != nil || err2 != nil || a != f.got || b < a || b >= f.size {
		return bad
	}
	if total != "*" {
		if n, err := strconv.ParseInt(total, 10, 64); err != nil || n != f.size {
			return bad
		}
	}
	return ""
}

// gaveUp is the error of an input whose server did not come back within GiveUpAfter.
func (s *stream) gaveUp(f *file, dropped time.Time, cause string) error {
	out := time.Since(dropped).Round(time.Millisecond)
	if f != nil {
		return fmt.Errorf("%s: the file was cut short at byte %d of %d and could not be resumed for %v (%s); gave up", s.u.Redacted(), f.got, f.size, out, cause)
	}
	return fmt.Errorf("%s: no data for %v after the stream stopped (%s); gave up", s.u.Redacted(), out, cause)
}

// maxStall bounds the stall timeout however long the pauses a stream has made.
const maxStall = time.Minute

// watch returns the stall watch of a connection, which cancel closes.
func (r *Reader) watch(cancel context.CancelFunc) *stallWatch {
	w := &stallWatch{r: r, cancel: cancel}
	if r.stall > 0 {
		w.timer = time.AfterFunc(time.Hour, w.fire)
		w.timer.Stop()
	}
	return w
}

// stallWatch drops a connection that stays open and brings no byte for its limit: it cancels
// the request, which closes the connection and ends the Read that waits on it. Only the time
// spent in the body's Read counts: while the reader downstream is busy, nothing is read, and
// nothing is missing.
type stallWatch struct {
	r      *Reader
	cancel context.CancelFunc
	limit  time.Duration // of the Read under way
	timer  *time.Timer   // nil: no watch
	armed  time.Time     // when the Read under way began
	fired  atomic.Bool   // the connection was dropped as stalled

	// from is when the pause that the Read under way ends began: when the Read before it
	// returned, so that the time the fetcher took between the two (a busy machine) counts
	// as the server's pause and the stall timeout is not learnt too short, unless the
	// fetcher waited for a buffer in between (the reader downstream was busy, not the
	// server); then, when the Read began.
	from     time.Time
	returned time.Time // when the last Read returned; zero before the first
}

func (w *stallWatch) fire() {
	w.fired.Store(true) // before the cancel, so that the Read it ends sees why
	w.cancel()
}

// wait starts the watch over a Read.
func (w *stallWatch) wait() {
	if w.timer != nil {
		w.limit = max(w.r.stall, min(3*w.r.longest, maxStall))
		w.armed = time.Now()
		w.from = w.returned
		if w.from.IsZero() || w.r.waitedForBuffer {
			w.from = w.armed
		}
		w.r.waitedForBuffer = false
		w.timer.Reset(w.limit)
	}
}

// came ends the watch over a Read that returned n bytes.
func (w *stallWatch) came(n int) {
	if w.timer == nil {
		return
	}
	w.timer.Stop()
	w.returned = time.Now()
	if d := w.returned.Sub(w.from); n > 0 && d > w.r.longest {
		w.r.longest = d
	}
}

func (w *stallWatch) stop() {
	if w.timer != nil {
		w.timer.Stop()
	}
}

// watchedBody is a response body read under a stall watch.
type watchedBody struct {
	io.ReadCloser
	w *stallWatch
}

func (b *watchedBody) Read(p []byte) (int, error) {
	b.w.wait()
	n, err := b.ReadCloser.Read(p)
	b.w.came(n)
	return n, err
}

// firstByte calls at when the first byte is read from the body it wraps.
type firstByte struct {
	io.ReadCloser
	at   func()
	seen bool
}

func (f *firstByte) Read(p []byte) (int, error) {
	n, err := f.ReadCloser.Read(p)
	if n > 0 && !f.seen {
		f.seen = true
		f.at()
	}
	return n, err
}
