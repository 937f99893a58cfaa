// Package proc runs the processes a test starts (peer tools, the command's own binary) for a
// bounded time, and stops each by its pid when the test ends, whatever the test did.
package proc

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"
)

// Proc is a process a test started.
type Proc struct {
	Cmd  *exec.Cmd
	out  buffer
	done chan error
}

// Start runs name with args for at most limit (then it is killed), its standard output and
// error gathered for Output. The test's cleanup kills it by its pid if it still runs, and
// reports a process that does not stop.
func Start(t testing.TB, limit time.Duration, name string, args ...string) *Proc {
	t.Helper()
	return StartInput(t, limit, nil, name, args...)
}

// StartInput is Start with the process's standard input read from in (nil: none), for a peer
// that reads its stream there.
func StartInput(t testing.TB, limit time.Duration, in io.Reader, name string, args ...string) *Proc {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	p := &Proc{Cmd: exec.CommandContext(ctx, name, args...), done: make(chan error, 1)}
	p.Cmd.Stdin = in
	p.Cmd.Stdout, p.Cmd.Stderr = &p.out, &p.out
	p.Cmd.WaitDelay = time.Second
	if err := p.Cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	go func() { p.done <- p.Cmd.Wait(); cancel() }()
	t.Cleanup(func() {
		p.Cmd.Process.Kill()
		select {
		case err := <-p.done:
			p.done <- err
		case <-time.After(5 * time.Second):
			t.Errorf("%s (pid %d) did not stop", name, p.Cmd.Process.Pid)
		}
	})
	return p
}

// Exited reports whether the process has ended.
func (p *Proc) Exited() bool {
	select {
	case err := <-p.done:
		p.done <- err
		return true
	default:
		return false
	}
}

// Ended waits up to limit for the process to end and reports whether it did; a process still
// running is left running.
func (p *Proc) Ended(limit time.Duration) bool {
	select {
	case err := <-p.done:
		p.done <- err
		return true
	case <-time.After(limit):
		return false
	}
}

// Output returns what the process wrote so far, on standard output and error together.
func (p *Proc) Output() string { return p.out.String() }

// Wait waits up to limit for the process to end by itself and returns its exit status; the
// test fails if it does not end in time or could not run.
func (p *Proc) Wait(t testing.TB, limit time.Duration) int {
	t.Helper()
	select {
	case err := <-p.done:
		p.done <- err // for the cleanup
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		if err != nil {
			t.Fatalf("%s: %v\n%s", p.Cmd.Path, err, p.Output())
		}
		return 0
	case <-time.After(limit):
		t.Fatalf("%s did not finish in %v\n%s", p.Cmd.Path, limit, p.Output())
		return -1
	}
}

// WaitOK is Wait for a process that must succeed: the test fails unless it exits 0.
func (p *Proc) WaitOK(t testing.TB, limit time.Duration) {
	t.Helper()
	if code := p.Wait(t, limit); code != 0 {
		t.Fatalf("%s: exit %d\n%s", p.Cmd.Path, code, p.Output())
	}
}

// Signal sends sig, as an operator would to end the process, and waits for it to end.
func (p *Proc) Signal(t testing.TB, sig os.Signal) {
	t.Helper()
	p.Cmd.Process.Signal(sig)
	select {
	case err := <-p.done:
		p.done <- err
	case <-time.After(5 * time.Second):
		t.Fatalf("%s did not stop on %v", p.Cmd.Path, sig)
	}
}

// buffer is a bytes.Buffer safe to read while the process writes to it.
type buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
