// Package httpcut cuts an HTTP response short, as a server that died or a link that broke with
// the response half sent: the tests of the HTTP input's resume (web) and of the command's
// HTTP input share it.
package httpcut

import (
	"bytes"
	"net/http"
	"time"
)

// Writer passes at most Limit bytes of a response body on to ResponseWriter, flushes them,
// then drops the connection (the handler panics with http.ErrAbortHandler, which net/http
// takes as "close the connection, say nothing").
type Writer struct {
	http.ResponseWriter
	Limit int
}

func (w *Writer) Write(p []byte) (int, error) {
	if len(p) <= w.Limit {
		w.Limit -= len(p)
		return w.ResponseWriter.Write(p)
	}
	w.ResponseWriter.Write(p[:w.Limit])
	w.ResponseWriter.(http.Flusher).Flush()
	panic(http.ErrAbortHandler)
}

// Serve answers req with data as a file: net/http's own Range and If-Range handling, the
// strong ETag etag (none when empty), and the body cut after limit bytes (not cut when limit
// is 0 or less).
func Serve(w http.ResponseWriter, req *http.Request, data []byte, etag string, limit int) {
	if etag != "" {
		w.Header().Set("ETag", etag)
	}
	if limit > 0 {
		w = &Writer{ResponseWriter: w, Limit: limit}
	}
	http.ServeContent(w, req, "", time.Time{}, bytes.NewReader(data))
}
