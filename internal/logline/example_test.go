package logline_test

import (
	"fmt"
	"os"

	"github.com/tsdescramble/tsdescramble/internal/logline"
)

// levels is a log that keeps each line's level, as a JSON log does.
type levels struct{}

func (levels) Write(p []byte) (int, error) { return fmt.Printf("info: %s", p) }

func (levels) WriteLevel(level string, line []byte) { fmt.Printf("%s: %s\n", level, line) }

func ExampleWrite() {
	logline.Write(levels{}, logline.Warn, "tsdescramble: -out: relay: client 127.0.0.1:5000 dropped")
	fmt.Fprintln(levels{}, "tsdescramble: 100 packets in")
	// A writer without levels gets the line as text.
	logline.Write(os.Stdout, logline.Error, "tsdescramble: cannot open the input")
	// Output:
	// warn: tsdescramble: -out: relay: client 127.0.0.1:5000 dropped
	// info: tsdescramble: 100 packets in
	// tsdescramble: cannot open the input
}
