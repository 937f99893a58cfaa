//go:build linux

package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tsdescramble/tsdescramble/internal/synth"

	"github.com/tsdescramble/tsdescramble/csa"
)

// TestMemoryBoundedThroughPipe streams 3 GB through the command's stdin and stdout and checks
// that the peak resident memory stays under 64 MiB: memory is bounded by the work in flight,
// whatever the input size.
func TestMemoryBoundedThroughPipe(t *testing.T) {
	needLong(t, "streams 3 GB")
	bin := buildBinary(t, t.TempDir())
	cw := []byte{0x11, 0x22, 0x33, 0x66, 0x44, 0x55, 0x66, 0xff}
	key, _ := csa.NewKey(cw)
	block := synth.SyntheticStream(5000, 1000, key) // 940 kB
	clear := descrambled(t, block, cw)
	const total = 3 << 30
	reps := total / len(block)

	cmd := exec.Command(bin, "-q", "-cw", fmt.Sprintf("%x", cw))
	stdin, stdout, stderr := startPiped(t, cmd)
	peak := watchPeakRSS(cmd.Process.Pid)
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
	rss := peak()
	t.Logf("%.1f GB through the pipe, peak RSS %d KiB", float64(n)/1e9, rss)
	if rss > 64<<10 {
		t.Fatalf("peak RSS %d KiB, want under 64 MiB", rss)
	}
}

// With -workers and -batch far beyond what memory allows, and a reader that stops reading, the
// command cuts them down with a note, and its memory stays bounded: it would otherwise read
// the whole input (-workers 1024 -batch 65536 allow 54 GB in flight).
func TestMemoryBoundedWithLargeFlags(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("streams 150 MB through the command")
	}
	bin := buildBinary(t, t.TempDir())
	block, clear := faultBlock(t)
	const reps = 160 // 150 MB
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-workers", "1024", "-batch", "65536", "-cw", fmt.Sprintf("%x", faultCW))
	stdin, stdout, stderr := startPiped(t, cmd)
	peak := watchPeakRSS(cmd.Process.Pid)
	go feed(stdin, block, reps, nil)
	// Read nothing for a second, while the command fills what it may hold, then everything.
	time.Sleep(time.Second)
	got := &repeatedPrefix{want: clear, bad: -1}
	if _, err := io.Copy(got, stdout); err != nil {
		t.Fatal(err)
	}
	code, _ := waitStatus(t, cmd.Wait())
	rss := peak()
	t.Logf("exit %d, %d MB out, peak RSS %d KiB; stderr:\n%s", code, got.n/1e6, rss, stderr.String())
	if code != 0 || got.n != int64(reps*len(block)) || got.bad >= 0 {
		t.Fatalf("exit %d, %d bytes out (want %d), first difference at %d", code, got.n, reps*len(block), got.bad)
	}
	if !regexp.MustCompile(`(?m)^tsdescramble: -workers 1024 -batch 65536 would take more than 64 MiB of memory: running with -workers \d+ -batch \d+$`).MatchString(stderr.String()) {
		t.Errorf("no note on stderr that -workers and -batch were cut down")
	}
	// 64 MiB of units of work, and the runtime's own beside them.
	if rss > 96<<10 {
		t.Fatalf("peak RSS %d KiB, want under 96 MiB", rss)
	}
}

// bench -packets 2000000 holds a block of 50000 packets, not the 376 MB stream.
func TestBenchMemory(t *testing.T) {
	needLong(t, "runs the bench over 2 million packets")
	key, _ := csa.NewKey(faultCW)
	if block, size := benchStream(10_000_000, key); len(block) != benchBlock*188 || size != 10_000_000*188 {
		t.Fatalf("10^7 packets: a block of %d bytes, a stream of %d", len(block), size)
	}
	bin := buildBinary(t, t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "bench", "-packets", "2000000", "-rounds", "1")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	peak := watchPeakRSS(cmd.Process.Pid)
	err := cmd.Wait()
	if err != nil || !strings.Contains(out.String(), "fastest:") {
		t.Fatalf("%v:\n%s", err, out.String())
	}
	rss := peak()
	t.Logf("peak RSS %d KiB:\n%s", rss, out.String())
	if rss > 96<<10 {
		t.Fatalf("peak RSS %d KiB, want under 96 MiB", rss)
	}
}

// startPiped starts cmd with pipes to its stdin and from its stdout, and its stderr gathered.
// watchPeakRSS follows the peak resident memory (VmHWM, KiB) of a running process in /proc
// until it ends; the function it returns waits for that and gives the last peak read (call it
// after Wait). The rusage of the ended process cannot serve: Linux carries the peak of the
// forking process's memory across exec, so a child of a large test process would report the
// test's memory as its own.
func watchPeakRSS(pid int) (peak func() int64) {
	var last atomic.Int64
	done := make(chan struct{})
	hwm := regexp.MustCompile(`(?m)^VmHWM:\s+(\d+) kB$`)
	go func() {
		defer close(done)
		for {
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
			m := hwm.FindSubmatch(b)
			if err != nil || m == nil { // ended: reaped, or a zombie without memory
				return
			}
			kb, _ := strconv.ParseInt(string(m[1]), 10, 64)
			last.Store(kb)
			time.Sleep(10 * time.Millisecond)
		}
	}()
	return func() int64 {
		<-done
		return last.Load()
	}
}
