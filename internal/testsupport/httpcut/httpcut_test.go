package httpcut

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
)

// A client of a response cut after Limit bytes gets those bytes, then an error: the body
// ends before its Content-Length.
func TestWriterCuts(t *testing.T) {
	body := bytes.Repeat([]byte("0123456789"), 100)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		(&Writer{ResponseWriter: w, Limit: 300}).Write(body)
	}))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	if err == nil || !bytes.Equal(got, body[:300]) {
		t.Fatalf("got %d bytes and %v, want the first 300 and an error", len(got), err)
	}
}
