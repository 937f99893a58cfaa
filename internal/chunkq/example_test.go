package chunkq_test

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/tsdescramble/tsdescramble/internal/chunkq"
)

// A goroutine receives and passes chunks on; the reader reads them in order, then the end.
func Example() {
	q := chunkq.New(2, 4, func(idle time.Duration) error { return fmt.Errorf("nothing for %v", idle) })
	go func() {
		for _, s := range []string{"ab", "cd", "ef"} {
			b, _, err := q.Buffer(context.Background())
			if err != nil {
				return
			}
			q.Pass(context.Background(), append(b[:0], s...))
		}
		q.Finish(io.EOF)
	}()
	got, err := io.ReadAll(q)
	fmt.Println(string(got), err)
	// Output: abcdef <nil>
}
