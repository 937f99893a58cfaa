//go:build unix

package main

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// A signal stops a run whose input pipe is open but idle (a live feed that stalls), after
// writing every packet read so far.
func TestSignalWithIdleInput(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the command")
	}
	bin := buildBinary(t, t.TempDir())
	block, _ := faultBlock(t)
	const n = 2000 // more than one -batch of 1024, less than two
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		cmd := exec.Command(bin, "-q", "-cw", fmt.Sprintf("%x", faultCW))
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		var out syncBuffer
		cmd.Stdin, cmd.Stdout = r, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		r.Close()
		w.Write(block[:n*188]) // and keep the pipe open
		time.Sleep(500 * time.Millisecond)
		t.Logf("%v: %d packets out before the signal", sig, out.Len()/188)
		cmd.Process.Signal(sig)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			code, _ := waitStatus(t, err)
			if code != 128+int(sig) || out.Len() != n*188 {
				t.Errorf("%v: exit %d, %d packets out; want %d and %d packets", sig, code, out.Len()/188, 128+int(sig), n)
			}
		case <-time.After(3 * time.Second):
			t.Errorf("%v: still running 3 s after the signal, %d of %d packets written", sig, out.Len()/188, n)
			w.Close() // the input ends: now the run stops
			code, _ := waitStatus(t, <-done)
			t.Logf("%v: after the input was closed: exit %d, %d packets out", sig, code, out.Len()/188)
		}
		w.Close()
	}
}

// A write error ends a run at once even when its input pipe is open but idle.
func TestWriteErrorWithIdleInput(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the command")
	}
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full here")
	}
	bin := buildBinary(t, t.TempDir())
	block, _ := faultBlock(t)
	cmd := exec.Command(bin, "-q", "-batch", "16", "-cw", fmt.Sprintf("%x", faultCW), "-out", "/dev/full")
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	var stderr syncBuffer
	cmd.Stdin, cmd.Stderr = r, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r.Close()
	w.Write(block[:100*188]) // and keep the pipe open
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if code, _ := waitStatus(t, err); code != 1 {
			t.Fatalf("exit %d, want 1", code)
		}
	case <-time.After(5 * time.Second):
		w.Close()
		<-done
		t.Fatal("still running 5 s after the write error, waiting for the idle input")
	}
}
