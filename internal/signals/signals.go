// Package signals stops a run cleanly on the first stop signal and at once on a second, a quit
// signal, or a stop that takes too long, with the exit status a shell gives a process killed by
// the signal.
package signals

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

// StopSignals stop a run cleanly: the packets read so far are processed and written, and a
// file output is kept as NAME.partial. SIGHUP is the terminal closing under the run.
var StopSignals = []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP}

// QuitSignals end a run at once, as a second stop signal does: SIGQUIT (Ctrl-\) asks for an end
// now. Go's own answer to it, a dump of the goroutines and exit, would leave the temporary file.
var QuitSignals = []os.Signal{syscall.SIGQUIT}

// StopGrace is how long a clean stop may take before the run ends at once: a writer blocked on
// a reader that does not read (a paused player, a stalled network sink) would keep it alive.
const StopGrace = 2 * time.Second

// Signals turns the first stop signal into the cancellation of a run and remembers which came;
// a second signal, a quit signal, or a stop that takes longer than StopGrace calls quit, which
// ends the process, with the signal and a message that says how the run was stopped.
type Signals struct {
	c      chan os.Signal
	cancel context.CancelFunc
	ran    chan struct{} // closed when the run is over: the stop took no longer than it did
	done   chan struct{} // closed by stop
	quit   func(sig os.Signal, msg string)

	mu  sync.Mutex
	got os.Signal
}

// Handlers counts the runs of this process whose handler (Interruptible) is listening for
// the quit signals: a batch that catches one leaves it to them while there are any.
var Handlers atomic.Int32

// Interruptible returns a context cancelled by the first stop signal; onSignal runs then too.
// Signals the command was started with ignored (nohup, a background job of a script) stay
// ignored. When hangup is not nil, SIGHUP calls it instead of stopping the run (a live run
// rereads its key file).
func Interruptible(onSignal func(), quit func(sig os.Signal, msg string), hangup func()) (context.Context, *Signals) {
	ctx, cancel := context.WithCancel(context.Background())
	s := &Signals{c: make(chan os.Signal, 4), cancel: cancel, ran: make(chan struct{}), done: make(chan struct{}), quit: quit}
	for _, sig := range append(slices.Clone(StopSignals), QuitSignals...) {
		if !signal.Ignored(sig) {
			signal.Notify(s.c, sig)
		}
	}
	Handlers.Add(1)
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
				first := s.Caught() == nil
				if first {
					s.mu.Lock()
					s.got = sig
					s.mu.Unlock()
				}
				switch {
				case slices.Contains(QuitSignals, sig):
					s.quit(sig, "stopped at once by "+Name(sig))
					return
				case !first:
					s.quit(sig, "stopped at once by a second signal, "+Name(sig))
					return
				}
				cancel()
				onSignal()
				if ran != nil {
					grace = time.After(StopGrace)
				}
			case <-grace:
				s.quit(s.Caught(), "stopped by "+Name(s.Caught())+", at once: the packets in flight were not written within "+StopGrace.String())
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

// Caught returns the first stop signal, or nil.
func (s *Signals) Caught() os.Signal {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.got
}

// Finished says that the run is over: a stop that began has ended in time.
func (s *Signals) Finished() { close(s.ran) }

// Stop stops listening for the signals.
func (s *Signals) Stop() {
	signal.Stop(s.c)
	Handlers.Add(-1)
	close(s.done)
	s.cancel()
}

// Name returns "SIGINT", "SIGTERM" and so on.
func Name(sig os.Signal) string {
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

// Status is the exit status of a command ended by sig, as a shell reports one killed by it.
func Status(sig os.Signal) int {
	if s, ok := sig.(syscall.Signal); ok {
		return 128 + int(s)
	}
	return 128 + int(syscall.SIGTERM)
}
