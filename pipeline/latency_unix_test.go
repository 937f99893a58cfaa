//go:build unix

package pipeline

import (
	"context"
	"io"
	"syscall"
	"testing"
	"time"

	"github.com/tsdescramble/tsdescramble/keys"
	"github.com/tsdescramble/tsdescramble/ts"
)

// A pipe at the default bound holds a crypto period that the stream has not decided, and then
// sends nothing: the run must wait for the input, not wake at the held packets' deadline again
// and again (which spins a CPU, and cut ever-smaller units when bytes trickle in). The process's
// CPU time over a quiet spell shows which.
func TestLatencyHeldPeriodWaitsQuietly(t *testing.T) {
	cws := [][]byte{{1, 2, 3, 6, 4, 5, 6, 15}, {9, 8, 7, 24, 6, 5, 4, 15}}
	in := evenPackets(t, cws[1], 40)
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		_, err := Run(context.Background(), ts.NewSource(pr), io.Discard, Options{Keys: keys.NewList(cws), Batch: 4, Latency: 5 * time.Millisecond})
		done <- err
	}()
	pw.Write(in)
	time.Sleep(20 * time.Millisecond) // past the bound: the packets are held, undecided
	const quiet = 300 * time.Millisecond
	before := cpuTime(t)
	time.Sleep(quiet)
	used := cpuTime(t) - before
	pw.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if used > quiet/3 {
		t.Errorf("the run used %v of CPU in %v while its input was quiet", used, quiet)
	}
}

// cpuTime is the user and system CPU time of the test process so far.
func cpuTime(t *testing.T) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
