package web

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"
)

// stream fetches a URL that is not a playlist: a file (a response with a Content-Length), read
// once, or a live stream, connected again whenever it ends or fails.
type stream struct {
	r    *Reader
	u    *url.URL
	resp *http.Response // the response Open got, read first
}

func (s *stream) run(ctx context.Context) error {
	resp := s.resp
	var dropped time.Time // when the live stream last ended or failed; zero while it flows
	var failures int      // reconnections in a row that brought no byte
	for {
		n, err := s.r.copyBody(ctx, resp.Body)
		resp.Body.Close()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if resp.ContentLength >= 0 {
			// A file: read whole, it is the end of the input. A file cut short is an error
			// rather than a reconnection: a new response would start the file over.
			if err == io.EOF && n == resp.ContentLength {
				return io.EOF
			}
			if err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF) {
				return fmt.Errorf("%s: connection lost after %d of %d bytes", s.u.Redacted(), n, resp.ContentLength)
			}
			return fmt.Errorf("%s: %w", s.u.Redacted(), bareError(err))
		}
		cause := "the server ended the stream"
		if err != io.EOF {
			cause = bareError(err).Error()
		}
		if n > 0 || dropped.IsZero() {
			// Bytes came since the last drop (or this is the first drop): a new outage
			// starts. A connection that brought nothing continues the one before.
			dropped, failures = time.Now(), 0
		}
		for {
			// The outage is counted from the drop; the wait before each try grows while the
			// server keeps failing.
			if err := sleep(ctx, backoff(failures)); err != nil {
				return err
			}
			failures++
			if time.Since(dropped) >= s.r.giveUp {
				return fmt.Errorf("%s: no data for %v after the stream stopped (%s); gave up", s.u.Redacted(), time.Since(dropped).Round(time.Millisecond), cause)
			}
			resp, err = s.r.get(ctx, s.u, nil)
			if err == nil {
				break
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
			cause = err.Error()
		}
		// The reconnection counts, and its gap ends, with its first byte: a server that
		// answers and sends nothing has not come back.
		body := &firstByte{r: resp.Body, at: func() {
			gap := time.Since(dropped)
			s.r.count(func(st *Stats) {
				st.Reconnects++
				st.GapTime += gap
			})
		}}
		resp.Body = body
	}
}

// firstByte calls at when the first byte is read from r.
type firstByte struct {
	r    io.ReadCloser
	at   func()
	seen bool
}

func (f *firstByte) Read(p []byte) (int, error) {
	n, err := f.r.Read(p)
	if n > 0 && !f.seen {
		f.seen = true
		f.at()
	}
	return n, err
}

func (f *firstByte) Close() error { return f.r.Close() }
