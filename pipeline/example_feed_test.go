package pipeline_test

import (
	"bytes"
	"context"
	"fmt"

	"github.com/tsdescramble/tsdescramble/pipeline"
	"github.com/tsdescramble/tsdescramble/ts"
)

// Crypto periods given as the run goes: the first at packet 1, the next at packet 3, each with
// its own control word. (A stage that decides them on a clock calls Start as it hands the packets
// to the run; here they are all known before.)
func ExamplePeriodFeed() {
	var in []byte
	for i := range 4 {
		p := make([]byte, 188)
		p[0], p[1], p[2], p[3] = 0x47, 0x01, 0x00, 0x10|byte(i)
		in = append(in, p...)
	}
	feed := new(pipeline.PeriodFeed)
	feed.Start(1, []byte{0x11, 0x22, 0x33, 0x66, 0x44, 0x55, 0x66, 0xFF})
	feed.Start(3, []byte{0x01, 0x02, 0x03, 0x06, 0x09, 0x08, 0x07, 0x18})
	var out bytes.Buffer
	_, err := pipeline.Run(context.Background(), ts.NewSource(bytes.NewReader(in)), &out, pipeline.Options{
		Mode: pipeline.Scramble, PIDs: []uint16{0x100}, Out: &pipeline.Output{Feed: feed}})
	for i := 0; i < out.Len(); i += 188 {
		fmt.Print(ts.TSC(out.Bytes()[i:]), " ")
	}
	fmt.Println(err)
	// Output: even even odd odd <nil>
}
