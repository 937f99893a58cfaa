package web_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/tsdescramble/tsdescramble/web"
)

// Read a transport stream served over HTTP as a file (with a Content-Length), to its end.
// A live stream or an HLS playlist is opened and read the same way.
func ExampleOpen() {
	stream := bytes.Repeat(append([]byte{0x47}, make([]byte, 187)...), 3) // three packets
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		http.ServeContent(w, req, "demo.ts", time.Time{}, bytes.NewReader(stream))
	}))
	defer srv.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := web.Open(ctx, srv.URL+"/demo.ts") // the input ends when ctx does
	if err != nil {
		log.Fatal(err)
	}
	defer r.Close()
	r.SetIdleTimeout(5 * time.Second) // errors.Is(err, live.ErrIdle) after 5 s without a byte
	n, err := io.Copy(io.Discard, r)
	if err != nil {
		log.Fatal(err)
	}
	s := r.Stats()
	fmt.Printf("%d bytes, %d packets; %d reconnections\n", n, n/188, s.Reconnects)
	// Output: 564 bytes, 3 packets; 0 reconnections
}
