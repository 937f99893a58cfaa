//go:build unix

package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestBatchThroughput compares a batch over many small files with one job over a file of the
// same bytes (TSD_LONG=1), in the shape the batch mode is for: 200 recordings of about 2 MB
// (two copies of the sample, 1.7 MB: a file must hold whole copies, for the sample's key list
// ends where it began). The start of each job (its flags, the key file, the look at the PMT,
// the output's temporary file, the pipeline's goroutines and buffers) must not dominate. The
// runs alternate, round after round, and the log gives the best and the median of each, in CPU
// time and in wall time.
func TestBatchThroughput(t *testing.T) {
	needLong(t, "descrambles 2 x 350 MB five times")
	const files, copies, rounds = 200, 2, 5
	demo := readFile(t, sample(t, "demo-scrambled.ts"))
	keys := sample(t, "demo-keys.txt")
	dir := t.TempDir()
	small := bytes.Repeat(demo, copies) // the sample's key list ends where it began
	var ins []string
	for i := range files {
		ins = append(ins, writeFile(t, dir, fmt.Sprintf("in%d.ts", i), small))
	}
	// Written a file at a time: a test that holds 350 MB raises the peak memory of the test
	// process, which the children it starts later inherit as their own (TestBenchMemory).
	big := filepath.Join(dir, "big.ts")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	for range files {
		if _, err := f.Write(small); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	// Each run writes into a directory of its own, new, as a batch over an archive does: the
	// outputs of the run before are removed first, and a file system (ext4) creates files in a
	// directory that has just lost hundreds of them at a far higher cost (about 0.4 ms of
	// kernel CPU per file on this test's machine), which is the test's own doing, not the
	// batch's. And a batch writes new files: replacing the outputs of the run before would add
	// the cost of freeing them.
	// TSD_BATCH_OUT names another directory for the outputs (a tmpfs, /dev/shm), to tell the
	// batch's own cost from the file system's.
	outRoot := dir
	if d := os.Getenv("TSD_BATCH_OUT"); d != "" {
		var err error
		if outRoot, err = os.MkdirTemp(d, "batch-throughput-"); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(outRoot) })
	}
	var runsSoFar int
	var lastOut string
	manifest := func(inputs []string) string {
		if err := os.RemoveAll(lastOut); err != nil {
			t.Fatal(err)
		}
		runsSoFar++
		out := filepath.Join(outRoot, fmt.Sprintf("out%d", runsSoFar))
		if err := os.Mkdir(out, 0o755); err != nil {
			t.Fatal(err)
		}
		lastOut = out
		var m strings.Builder
		for i, in := range inputs {
			m.WriteString(manifestLine(t, map[string]any{"in": in, "out": filepath.Join(out, fmt.Sprintf("out%d.ts", i)), "cw-file": keys, "quiet": true}))
		}
		return writeFile(t, out, "jobs.jsonl", []byte(m.String()))
	}
	// Each batch runs as a process of its own: its CPU time is then its own, which the other
	// work of a shared machine disturbs less than the wall time; and the memory it takes does
	// not raise the peak of the test process, which the children it starts later inherit as
	// their own (TestBenchMemory, TestMemoryBoundedThroughPipe).
	bin := buildBinary(t, t.TempDir())
	type timing struct{ cpu, wall []time.Duration }
	runs := []struct {
		name   string
		inputs []string
		args   []string
	}{
		{"one file", []string{big}, nil},
		{"many files, -jobs 1", ins, []string{"-jobs", "1"}},
		{"many files, default -jobs", ins, nil},
		{"many files, -jobs 2", ins, []string{"-jobs", "2"}},
	}
	took := map[string]*timing{}
	for range rounds {
		for _, r := range runs {
			args := append([]string{"batch", "-manifest", manifest(r.inputs)}, r.args...)
			cmd := exec.Command(bin, args...)
			start := time.Now()
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("%v: %v\n%s", args, err, out)
			}
			wall := time.Since(start)
			ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
			tm := took[r.name]
			if tm == nil {
				tm = new(timing)
				took[r.name] = tm
			}
			tm.cpu = append(tm.cpu, time.Duration(ru.Utime.Nano()+ru.Stime.Nano()))
			tm.wall = append(tm.wall, wall)
		}
	}
	best := func(d []time.Duration) time.Duration { return slices.Min(d) }
	median := func(d []time.Duration) time.Duration {
		s := slices.Clone(d)
		slices.Sort(s)
		return s[len(s)/2]
	}
	mb := float64(len(small)*files) / 1e6
	ref := took["one file"]
	t.Logf("%d files of %.1f MB against one file of %.0f MB, %d rounds, outputs in %s; efficiency = the one file's time / the batch's", files, float64(len(small))/1e6, mb, rounds, outRoot)
	for _, r := range runs {
		tm := took[r.name]
		t.Logf("%-26s CPU best %v median %v (efficiency %.2fx, %.2fx); wall best %v median %v (%.2fx, %.2fx; %.0f MB/s at best)", r.name+":",
			best(tm.cpu).Round(time.Millisecond), median(tm.cpu).Round(time.Millisecond),
			best(ref.cpu).Seconds()/best(tm.cpu).Seconds(), median(ref.cpu).Seconds()/median(tm.cpu).Seconds(),
			best(tm.wall).Round(time.Millisecond), median(tm.wall).Round(time.Millisecond),
			best(ref.wall).Seconds()/best(tm.wall).Seconds(), median(ref.wall).Seconds()/median(tm.wall).Seconds(),
			mb/best(tm.wall).Seconds())
	}
	// The target is 0.9x, which the other work of a shared machine moves more than any per-job
	// cost does, the wall time above all; what is checked is a floor of the CPU time at best,
	// which a per-job cost out of proportion (a wait, a copy of the input, the work of the
	// look-ahead done twice, an app of urfave/cli per job) would break.
	if e := best(ref.cpu).Seconds() / best(took["many files, -jobs 1"].cpu).Seconds(); e < 0.45 {
		t.Errorf("a batch of small files runs at %.2fx the CPU efficiency of one file (want 0.45x or more)", e)
	}
}
