package relay_test

import (
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"slices"

	"github.com/tsdescramble/tsdescramble/relay"
	"github.com/tsdescramble/tsdescramble/ts"
)

// Serve a stream over HTTP: a client that connects while the stream goes on gets it from the
// next PAT. The sample starts with an SDT; the client's first packet is the PAT after it.
func Example() {
	srv, err := relay.Listen("127.0.0.1:0", "/stream.ts", relay.Options{}) // port 0: any free port
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	resp, err := http.Get("http://" + srv.Addr().String() + "/stream.ts")
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()
	fmt.Println(resp.Header.Get("Content-Type"))

	sample, err := os.ReadFile("../samples/demo-clear.ts")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("the sample starts with PID %#x\n", ts.PID(sample))
	for p := range slices.Chunk(sample[:500*ts.PacketSize], 100*ts.PacketSize) { // whole packets, as a run writes them
		if _, err := srv.Write(p); err != nil {
			log.Fatal(err)
		}
	}
	first := make([]byte, ts.PacketSize)
	if _, err := io.ReadFull(resp.Body, first); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("the client starts with PID %#x, unit start %v\n", ts.PID(first), ts.PUSI(first))
	// Output:
	// video/mp2t
	// the sample starts with PID 0x11
	// the client starts with PID 0x0, unit start true
}
