//go:build unix

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tsdescramble/tsdescramble/internal/signals"
)

// A batch stopped by SIGTERM ends with 143, whatever its jobs were doing: one that had begun
// its run stops as the command does; one still opening an input that never comes (a FIFO
// without a writer) holds no output yet, and the batch ends itself after the grace the jobs
// have. SIGQUIT ends it with 131 at once, as it ends the command: no job was listening for it.
// The jobs not started are left for a later run, and the finished one is kept.
func TestBatchStoppedBySignal(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the command")
	}
	bin := buildBinary(t, t.TempDir())
	for _, c := range []struct {
		sig    syscall.Signal
		code   int
		within time.Duration
	}{
		{syscall.SIGTERM, 143, signals.StopGrace + 3*time.Second},
		{syscall.SIGQUIT, 131, 3 * time.Second},
	} {
		t.Run(signals.Name(c.sig), func(t *testing.T) {
			t.Parallel()
			batchStoppedBy(t, bin, c.sig, c.code, c.within)
		})
	}
}

func batchStoppedBy(t *testing.T, bin string, sig syscall.Signal, wantCode int, within time.Duration) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "feed.ts")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	var m strings.Builder
	m.WriteString(manifestLine(t, map[string]any{"in": sample(t, "demo-biss.ts"), "out": filepath.Join(dir, "0.ts"), "biss": "112233445566"}))
	m.WriteString(manifestLine(t, map[string]any{"in": fifo, "out": filepath.Join(dir, "1.ts"), "biss": "112233445566"}))
	m.WriteString(manifestLine(t, map[string]any{"in": sample(t, "demo-biss.ts"), "out": filepath.Join(dir, "2.ts"), "biss": "112233445566"}))
	path := writeFile(t, dir, "m.jsonl", []byte(m.String()))

	cmd := exec.Command(bin, "batch", "-manifest", path, "-jobs", "1", "-stats-dir", filepath.Join(dir, "stats"))
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var waitErr error
	exited := make(chan struct{})
	go func() { waitErr = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
	})
	// Job 0 finishes; job 1 waits to open the FIFO.
	for range 200 {
		if _, err := os.Stat(filepath.Join(dir, "stats", "0.json")); err == nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond)
	start := time.Now()
	cmd.Process.Signal(sig)
	name := signals.Name(sig)
	select {
	case <-exited:
		code, killedBy := waitStatus(t, waitErr)
		took := time.Since(start)
		if code != wantCode || killedBy != 0 || took > within {
			t.Errorf("exit %d (signal %v) %v after %s; want %d within %v", code, killedBy, took.Round(time.Millisecond), name, wantCode, within)
		}
	case <-time.After(signals.StopGrace + 10*time.Second):
		t.Fatalf("still running %v after %s: %s", signals.StopGrace+10*time.Second, name, stderr.b.String())
	}
	if !strings.Contains(stderr.b.String(), "batch stopped at once by "+name) {
		t.Errorf("stderr does not say how the batch stopped:\n%s", stderr.b.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "0.ts")); err != nil {
		t.Errorf("the finished job's output: %v", err)
	}
	for _, name := range []string{"1.ts", "2.ts"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			t.Errorf("%s written by a job that did not run", name)
		}
	}
	if ents, _ := filepath.Glob(filepath.Join(dir, ".*.tmp")); len(ents) > 0 {
		t.Errorf("temporary files left: %v", ents)
	}
}
