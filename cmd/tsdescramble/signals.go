package main

import (
	"context"
	"os"
	"os/signal"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// stopSignals stop a run cleanly: the packets read so far are processed and written, and a
// file output is kept as NAME.partial. SIGHUP is the terminal closing under the run.
var stopSignals = []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP}

// quitSignals end a run at once, as a second stop signal does: SIGQUIT (Ctrl-\) asks for an end
// now. Go's own answer to it, a dump of the goroutines and exit, would leave the temporary file.
var quitSignals = []os.Signal{syscall.SIGQUIT}

// stopGrace is how long a clean stop may take before the run ends at once: a writer blocked on
// a reader that does not read (a paused player, a stalled network sink) would keep it alive.
const stopGrace = 2 * time.Second

// signals turns the first stop signal into the cancellation of a run and remembers which came;
// a second signal, a quit signal, or a stop that takes longer than stopGrace calls quit, which
// ends the process, with the signal and a message that says how the run was stopped.
type signals struct {
	c      chan os.Signal
	cancel context.CancelFunc
	ran    chan struct{} // closed when the run is over: the stop took no longer than it did
	done   chan struct{} // closed by stop
	quit   func(sig os.Signal, msg string)

	mu  sync.Mutex
	got os.Signal
}

// quitHandlers counts the runs of this process whose handler (interruptible) is listening for
// the quit signals: a batch (batch.go) that catches one leaves it to them while there are any.
var quitHandlers atomic.Int32

// interruptible returns a context cancelled by the first stop signal; onSignal runs then too.
// Signals the command was started with ignored (nohup, a background job of a script) stay
// ignored. When hangup is not nil, SIGHUP calls it instead of stopping the run (a live run
// rereads its key file).
func interruptible(onSignal func(), quit func(sig os.Signal, msg string), hangup func()) (context.Context, *signals) {
	ctx, cancel := context.WithCancel(context.Background())
	s := &signals{c: make(chan os.Signal, 4), cancel: cancel, ran: make(chan struct{}), done: make(chan struct{}), quit: quit}
	for _, sig := range append(slices.Clone(stopSignals), quitSignals...) {
		if !signal.Ignored(sig) {
			signal.Notify(s.c, sig)
		}
	}
	quitHandlers.Add(1)
	go func() {
		var grace <-chan time.Time
		ran := s.ran
		for {
			select {
			case sig := <-s.c:
				if sig == syscall.SIGHUP && hangup != nil {
					hangup()
					continue
				}
				first := s.caught() == nil
				if first {
					s.mu.Lock()
					s.got = sig
					s.mu.Unlock()
				}
				switch {
				case slices.Contains(quitSignals, sig):
					s.quit(sig, "stopped at once by "+signalName(sig))
					return
				case !first:
					s.quit(sig, "stopped at once by a second signal, "+signalName(sig))
					return
				}
				cancel()
				onSignal()
				if ran != nil {
					grace = time.After(stopGrace)
				}
			case <-grace:
				s.quit(s.caught(), "stopped by "+signalName(s.caught())+", at once: the packets in flight were not written within "+stopGrace.String())
				return
			case <-ran:
				ran, grace = nil, nil
			case <-s.done:
				return
			}
		}
	}()
	return ctx, s
}

// caught returns the first stop signal, or nil.
func (s *signals) caught() os.Signal {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.got
}

// finished says that the run is over: a stop that began has ended in time.
func (s *signals) finished() { close(s.ran) }

func (s *signals) stop() {
	signal.Stop(s.c)
	quitHandlers.Add(-1)
	close(s.done)
	s.cancel()
}

// signalName returns "SIGINT", "SIGTERM" and so on.
func signalName(sig os.Signal) string {
	switch sig {
	case os.Interrupt:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGHUP:
		return "SIGHUP"
	case syscall.SIGQUIT:
		return "SIGQUIT"
	}
	return sig.String()
}

// signalStatus is the exit status of a command ended by sig, as a shell reports one killed by it.
func signalStatus(sig os.Signal) int {
	if s, ok := sig.(syscall.Signal); ok {
		return 128 + int(s)
	}
	return 128 + int(syscall.SIGTERM)
}
