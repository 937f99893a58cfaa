package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"syscall"
	"testing"
)

// An input with no transport stream leaves no output file behind, not even a partial one.
func TestNoSyncLeavesNoFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r := run(t, noSyncInput(5000, true), "-q", "-cw", cwA, "-out", filepath.Join(dir, "out.ts"))
	if r.code != 1 {
		t.Fatalf("%s", describe(r))
	}
	if names := dirNames(t, dir); len(names) != 0 {
		t.Fatalf("left %v", names)
	}
}

// failAfter accepts n bytes, then fails every write with err.
type failAfter struct {
	n   int
	err error
}

func (w *failAfter) Write(p []byte) (int, error) {
	if len(p) > w.n {
		m := w.n
		w.n = 0
		return m, w.err
	}
	w.n -= len(p)
	return len(p), nil
}

// A reader that closes stdout early ends the run quietly; the same on an -out path is an error.
func TestBrokenPipe(t *testing.T) {
	t.Parallel()
	s := periodStream(t, []period{{tsc: 2, cw: cwA, n: 2000}})
	var stderr bytes.Buffer
	code := runEnv(t, Env{Stdin: bytes.NewReader(s.input()), Stdout: &failAfter{n: 1000, err: syscall.EPIPE}, Stderr: &stderr}, "-q", "-cw", cwA)
	if code != 0 || stderr.Len() != 0 {
		t.Fatalf("stdout closed early: exit %d, stderr %q", code, stderr.String())
	}
}

// The summary counts the packets written, not those read, when writing fails.
func TestSummaryCountsWrittenPackets(t *testing.T) {
	t.Parallel()
	s := periodStream(t, []period{{tsc: 2, cw: cwA, n: 13}})
	var stderr bytes.Buffer
	code := runEnv(t, Env{Stdin: bytes.NewReader(s.input()), Stdout: &failAfter{n: 5 * 188, err: os.ErrClosed}, Stderr: &stderr}, "-batch", "1", "-workers", "1", "-cw", cwA)
	// The reader stops soon after the failure, so the packets read depend on timing; the
	// packets written do not.
	if code != 1 || !regexp.MustCompile(`\d+ packets in, 5 out`).MatchString(stderr.String()) {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr.String())
	}
}
