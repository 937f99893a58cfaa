package signals

import (
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// The first stop signal cancels the run; a second one calls quit, with that signal. (The
// binary tests see the whole of it; this one runs under the race detector.)
func TestSignalsInProcess(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGHUP, syscall.SIGTERM} {
		if signal.Ignored(sig) {
			t.Skipf("%v is ignored in this process", sig)
		}
	}
	quit := make(chan string, 1)
	var stopped atomic.Bool
	ctx, s := Interruptible(func() { stopped.Store(true) }, func(sig os.Signal, msg string) { quit <- msg }, nil)
	defer s.Stop()
	syscall.Kill(os.Getpid(), syscall.SIGHUP)
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("SIGHUP did not cancel the run")
	}
	if s.Caught() != syscall.SIGHUP {
		t.Errorf("caught %v, want SIGHUP", s.Caught())
	}
	syscall.Kill(os.Getpid(), syscall.SIGTERM)
	select {
	case msg := <-quit:
		if msg != "stopped at once by a second signal, SIGTERM" || !stopped.Load() {
			t.Errorf("quit with %q (onSignal called: %v)", msg, stopped.Load())
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a second signal did not end the run")
	}
}
