package pipeline_test

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/tsdescramble/tsdescramble/keys"
	"github.com/tsdescramble/tsdescramble/pipeline"
	"github.com/tsdescramble/tsdescramble/ts"
)

// chanWriter passes the size of each write on.
type chanWriter chan int

func (c chanWriter) Write(p []byte) (int, error) { c <- len(p); return len(p), nil }

// Descramble a live input: with a latency bound, the packets come out within it, in a unit of
// work far from full, while the input is still open.
func ExampleRun_latency() {
	cw := []byte{0x11, 0x22, 0x33, 0x66, 0x44, 0x55, 0x66, 0xff}
	scrambled := scrambledStream(cw, 10, 10)
	r, w := io.Pipe()
	out := make(chanWriter, 16)
	done := make(chan pipeline.Stats)
	go func() {
		st, _ := pipeline.Run(context.Background(), ts.NewSource(r), out, pipeline.Options{
			Keys: keys.NewFixed(cw, cw), Latency: 20 * time.Millisecond,
		})
		done <- st
	}()
	w.Write(scrambled) // 10 packets, then nothing for a while
	n := 0
	for n < len(scrambled) {
		n += <-out
	}
	fmt.Println(n/188, "packets out, the input still open")
	w.Close()
	st := <-done
	fmt.Println(st.Packets, "packets,", st.Descrambled, "descrambled")
	// Output:
	// 10 packets out, the input still open
	// 10 packets, 10 descrambled
}
