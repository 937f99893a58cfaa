//go:build linux

package main

import (
	"bytes"
	"fmt"
	"github.com/tsdescramble/tsdescramble/internal/synth"
	"io"
	"os/exec"
	"syscall"
	"testing"

	"github.com/tsdescramble/tsdescramble/csa"
)

// TestMemoryBoundedThroughPipe streams 3 GB through the command's stdin and stdout and checks
// that the peak resident memory stays under 64 MiB: memory is bounded by the work in flight,
// whatever the input size.
func TestMemoryBoundedThroughPipe(t *testing.T) {
	if testing.Short() {
		t.Skip("streams 3 GB: skipped under -short")
	}
	bin := buildBinary(t, t.TempDir())
	cw := []byte{0x11, 0x22, 0x33, 0x66, 0x44, 0x55, 0x66, 0xff}
	key, _ := csa.NewKey(cw)
	block := synth.SyntheticStream(5000, 1000, key) // 940 kB
	clear := descrambled(t, block, cw)
	const total = 3 << 30
	reps := total / len(block)

	cmd := exec.Command(bin, "-q", "-cw", fmt.Sprintf("%x", cw))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		for range reps {
			if _, err := stdin.Write(block); err != nil {
				break
			}
		}
		stdin.Close()
	}()
	// Read everything back and check a sample of the output as it goes.
	buf := make([]byte, len(block))
	var n int64
	for i := 0; ; i++ {
		_, err := io.ReadFull(stdout, buf)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("after %d bytes: %v", n, err)
		}
		if i%500 == 0 && !bytes.Equal(buf, clear) {
			t.Fatalf("block %d of the output is not the descrambled block", i)
		}
		n += int64(len(buf))
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("%v: %s", err, stderr.String())
	}
	if n != int64(reps*len(block)) {
		t.Fatalf("%d bytes out, want %d", n, reps*len(block))
	}
	rss := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss // KiB on Linux
	t.Logf("%.1f GB through the pipe, peak RSS %d KiB", float64(n)/1e9, rss)
	if rss > 64<<10 {
		t.Fatalf("peak RSS %d KiB, want under 64 MiB", rss)
	}
}
