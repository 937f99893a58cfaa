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
