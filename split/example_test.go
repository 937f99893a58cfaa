package split_test

import (
	"bytes"
	"fmt"
	"io"
	"os"

	"github.com/tsdescramble/tsdescramble/split"
)

// A multiplex cut into one stream per service: here the bundled sample's service 1, into a
// buffer; a file, a pipe or a network writer takes its place the same way.
func Example() {
	stream, err := os.ReadFile("../samples/demo-clear.ts")
	if err != nil {
		fmt.Println(err)
		return
	}
	var one bytes.Buffer
	s := split.New(map[uint16]io.Writer{1: &one})
	if _, err := s.Write(stream); err != nil {
		fmt.Println(err)
		return
	}
	st := s.Stats()[1]
	fmt.Printf("service 1: %d packets, %d PATs of its own\n", st.Packets, st.PATs)
	// Output:
	// service 1: 4610 packets, 180 PATs of its own
}

// A split that changes while the stream runs: service 1 goes to a second writer halfway, from
// the next PAT on, and the first writer has every packet until then. Between two writes no
// packet is half routed, so a change made there ends one stream at a packet boundary.
func ExampleSplitter_Restart() {
	stream, err := os.ReadFile("../samples/demo-clear.ts")
	if err != nil {
		fmt.Println(err)
		return
	}
	var first, second bytes.Buffer
	s := split.New(map[uint16]io.Writer{1: &first})
	half := len(stream) / 188 / 2 * 188
	s.Write(stream[:half])
	before := s.Restart(1, &second)
	s.Write(stream[half:])
	after := s.Stats()[1]
	fmt.Printf("first writer: %d packets, %d PATs\n", before.Packets, before.PATs)
	fmt.Printf("second writer: %d packets, %d PATs, from a PAT on: %v\n", after.Packets, after.PATs, second.Bytes()[1]&0x1f == 0 && second.Bytes()[2] == 0)
	whole := split.New(map[uint16]io.Writer{1: io.Discard})
	whole.Write(stream)
	fmt.Printf("left out between the change and the next PAT: %d packets\n", whole.Stats()[1].Packets-before.Packets-after.Packets)
	// Output:
	// first writer: 2304 packets, 91 PATs
	// second writer: 2283 packets, 89 PATs, from a PAT on: true
	// left out between the change and the next PAT: 23 packets
}
