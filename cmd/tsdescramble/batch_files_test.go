package main

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tsdescramble/tsdescramble/internal/runfiles"
)

// sums returns the SHA-256 of each file, "" for one that cannot be read.
func sums(paths []string) map[string]string {
	m := map[string]string{}
	for _, p := range paths {
		if b, err := os.ReadFile(p); err == nil {
			m[p] = fmt.Sprintf("%x", sha256.Sum256(b))
		} else {
			m[p] = ""
		}
	}
	return m
}

// A manifest whose jobs would write over a file a job reads, or write one file twice, is
// refused before anything is removed or created: exit 2, a line naming the lines and keys, and
// every input and key file as it was. The inputs are copies: on a batch that runs such jobs
// they are destroyed.
func TestBatchRefusesCollidingFiles(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		// jobs returns the manifest's jobs over the files of dir: a.ts and b.ts (scrambled
		// inputs), keys.txt (their keys), c.ts (a clear input).
		jobs func(dir string) []map[string]any
		args []string // of the batch, with dir for %s
		want []string // in the message
	}{
		{"stats naming the job's own input", func(d string) []map[string]any {
			return []map[string]any{{"in": d + "/a.ts", "out": d + "/o0.ts", "cw-file": d + "/keys.txt", "stats": d + "/a.ts"}}
		}, nil, []string{`line 1: "stats"`, `"in"`, "same file", "statistics would replace the input"}},
		{"stats naming the job's own key file", func(d string) []map[string]any {
			return []map[string]any{{"in": d + "/a.ts", "out": d + "/o0.ts", "cw-file": d + "/keys.txt", "stats": d + "/keys.txt"}}
		}, nil, []string{`line 1: "stats"`, `"cw-file"`, "statistics would replace the key file"}},
		{"job 1's stats naming job 0's input", func(d string) []map[string]any {
			return []map[string]any{
				{"in": d + "/a.ts", "out": d + "/o0.ts", "cw-file": d + "/keys.txt"},
				{"in": d + "/b.ts", "out": d + "/o1.ts", "cw-file": d + "/keys.txt", "stats": d + "/a.ts"},
			}
		}, nil, []string{`line 2 "stats"`, `line 1 "in"`, "job 1's statistics would replace job 0's input"}},
		{"two jobs with one output", func(d string) []map[string]any {
			return []map[string]any{
				{"in": d + "/a.ts", "out": d + "/o0.ts", "cw-file": d + "/keys.txt"},
				{"in": d + "/b.ts", "out": d + "/o0.ts", "cw-file": d + "/keys.txt"},
			}
		}, nil, []string{`line 2 "out"`, `line 1 "out"`, "job 1's output would replace job 0's output"}},
		{"a job's output that is another job's input", func(d string) []map[string]any {
			return []map[string]any{
				{"in": d + "/a.ts", "out": d + "/o0.ts", "cw-file": d + "/keys.txt"},
				{"in": d + "/b.ts", "out": d + "/a.ts", "cw-file": d + "/keys.txt"},
			}
		}, nil, []string{`line 2 "out"`, `line 1 "in"`, "job 1's output would replace job 0's input"}},
		{"an output through a link to another job's input", func(d string) []map[string]any {
			if err := os.Symlink(d+"/b.ts", d+"/link.ts"); err != nil {
				t.Skip("no symbolic links here:", err)
			}
			return []map[string]any{
				{"in": d + "/a.ts", "out": d + "/link.ts", "cw-file": d + "/keys.txt"},
				{"in": d + "/b.ts", "out": d + "/o1.ts", "cw-file": d + "/keys.txt"},
			}
		}, nil, []string{`line 2 "in"`, `line 1 "out"`, "job 0's output would replace job 1's input"}},
		{"the .partial of an output that is another job's input", func(d string) []map[string]any {
			if err := os.Rename(d+"/c.ts", d+"/o0.ts.partial"); err != nil {
				t.Fatal(err)
			}
			return []map[string]any{
				{"in": d + "/a.ts", "out": d + "/o0.ts", "cw-file": d + "/keys.txt"},
				{"command": "scramble", "in": d + "/o0.ts.partial", "out": d + "/o1.ts", "cw-file": d + "/keys.txt"},
			}
		}, nil, []string{`line 2 "in"`, `line 1 "out" (its .partial)`, "job 0's output's .partial"}},
		{"-stats-dir naming a job's input", func(d string) []map[string]any {
			if err := os.Mkdir(d+"/st", 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(d+"/b.ts", d+"/st/0.json"); err != nil {
				t.Fatal(err)
			}
			return []map[string]any{
				{"in": d + "/a.ts", "out": d + "/o0.ts", "cw-file": d + "/keys.txt"},
				{"in": d + "/st/0.json", "out": d + "/o1.ts", "cw-file": d + "/keys.txt"},
			}
		}, []string{"-stats-dir", "%s/st"}, []string{`line 1 -stats-dir`, `line 2 "in"`, "job 0's statistics would replace job 1's input"}},
		{"a CW log naming the job's own input", func(d string) []map[string]any {
			return []map[string]any{{"command": "scramble", "in": d + "/c.ts", "out": d + "/o0.ts", "cp-duration": "1s", "cw-log": d + "/c.ts"}}
		}, nil, []string{`line 1: "cw-log"`, `"in"`, "CW log would replace the input"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			scrambled := readFile(t, sample(t, "demo-scrambled.ts"))
			files := []string{
				writeFile(t, dir, "a.ts", scrambled),
				writeFile(t, dir, "b.ts", scrambled[:188*2000]),
				writeFile(t, dir, "keys.txt", readFile(t, sample(t, "demo-keys.txt"))),
				writeFile(t, dir, "c.ts", readFile(t, sample(t, "demo-clear.ts"))),
			}
			jobs := c.jobs(dir)
			var m strings.Builder
			for _, j := range jobs {
				m.WriteString(manifestLine(t, j))
			}
			manifest := writeFile(t, dir, "m.jsonl", []byte(m.String()))
			var present []string // every file of the jobs that exists now
			for _, j := range jobs {
				for _, k := range []string{"in", "cw-file"} {
					if p, ok := j[k].(string); ok && !slices.Contains(present, p) {
						present = append(present, p)
					}
				}
			}
			for _, p := range files {
				if _, err := os.Stat(p); err == nil && !slices.Contains(present, p) {
					present = append(present, p)
				}
			}
			before := sums(present)
			args := []string{"batch", "-manifest", manifest, "-jobs", "1"}
			for _, a := range c.args {
				args = append(args, strings.ReplaceAll(a, "%s", dir))
			}
			r := run(t, nil, args...)
			after := sums(present)
			for _, p := range present {
				if before[p] != after[p] {
					t.Errorf("%s changed: sha256 %.12s before, %.12s after", filepath.Base(p), before[p], after[p])
				}
			}
			if r.code != exitUsage {
				t.Errorf("exit %d, want %d", r.code, exitUsage)
			}
			for _, w := range c.want {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("stderr does not say %q", w)
				}
			}
			for _, name := range []string{"o0.ts", "o1.ts", "st/1.json"} {
				if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
					t.Errorf("%s was written by a manifest that was refused", name)
				}
			}
			if t.Failed() {
				t.Logf("manifest:\n%s%s", m.String(), describe(r))
			}
		})
	}
}

// A job's run removes what an earlier run of it left beside its output: the temporary file of a
// run that was killed and the .partial of one that was stopped, and only those: files of
// similar names stay, and so does a file named as a leftover that a job reads. A job skipped
// as done removes them too.
func TestBatchRerunRemovesLeftovers(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	biss := readFile(t, sample(t, "demo-biss.ts"))
	in := writeFile(t, dir, "in.ts", biss)
	out := filepath.Join(dir, "out.ts")
	read := writeFile(t, dir, ".out.ts.42.tmp", biss) // named as a leftover, and job 1's input
	manifest := writeFile(t, dir, "m.jsonl", []byte(
		manifestLine(t, map[string]any{"in": in, "out": out, "biss": "112233445566"})+
			manifestLine(t, map[string]any{"in": read, "out": filepath.Join(dir, "second.ts"), "biss": "112233445566"})))
	// As output.go names them: "." NAME "." a random uint32 ".tmp", and NAME ".partial"; one
	// made by the output's own createTemp.
	f, err := runfiles.CreateTemp(dir, ".out.ts.", ".tmp")
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	leftovers := []string{filepath.Base(f.Name()), ".out.ts.3141592653.tmp", ".out.ts.7.tmp", "out.ts.partial"}
	kept := []string{
		".out.ts.3141592653.tmp.bak", ".out.ts.12a.tmp", ".out.ts..tmp", ".out.ts.tmp", "out.ts.3.tmp",
		".out.ts.99999999999.tmp", ".other.ts.5.tmp", "out.ts.partial.old", "xout.ts.partial", ".in.ts.5.tmp",
	}
	create := func(names []string) {
		t.Helper()
		old := time.Now().Add(-time.Hour)
		for _, n := range names {
			writeFile(t, dir, n, bytes.Repeat([]byte{0x47}, 188*3))
			if err := os.Chtimes(filepath.Join(dir, n), old, old); err != nil {
				t.Fatal(err)
			}
		}
	}
	check := func(r result) {
		t.Helper()
		if r.code != 0 {
			t.Fatalf("batch: %s", describe(r))
		}
		for _, n := range leftovers {
			if _, err := os.Lstat(filepath.Join(dir, n)); err == nil {
				t.Errorf("%s is left: %s", n, describe(r))
			}
		}
		for _, n := range kept {
			if _, err := os.Lstat(filepath.Join(dir, n)); err != nil {
				t.Errorf("%s was removed: %v", n, err)
			}
		}
		sameBytes(t, "output", readFile(t, out), readFile(t, sample(t, "demo-clear.ts"))[:188000], 188)
		sameBytes(t, "job 1's input", readFile(t, read), biss, 188)
	}
	create(append(slices.Clone(leftovers), kept...))
	stats := filepath.Join(dir, "stats")
	check(run(t, nil, "batch", "-manifest", manifest, "-stats-dir", stats))

	create(leftovers)
	r := run(t, nil, "batch", "-manifest", manifest, "-stats-dir", stats)
	if !strings.Contains(r.stderr, "job 0: skipped") {
		t.Errorf("the finished job was not skipped: %s", describe(r))
	}
	check(r)

	// Without -stats-dir, every run runs the job.
	create(leftovers)
	check(run(t, nil, "batch", "-manifest", manifest))
}

// A rerun takes a job for done only when its statistics were written by a run of that job over
// the input as it is now: an output of the right size written from another input, or from the
// same input before it changed, is written again.
func TestBatchRerunNotFooledByAnotherInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	biss := readFile(t, sample(t, "demo-biss.ts"))
	clear := readFile(t, sample(t, "demo-clear.ts"))[:len(biss)]
	// rotated moves the first n packets of b to its end: another stream of the same size,
	// whose descrambled form is the clear one rotated alike (BISS has one key).
	rotated := func(b []byte, n int) []byte { return append(slices.Clone(b[188*n:]), b[:188*n]...) }
	a := writeFile(t, dir, "a.ts", biss)
	b := writeFile(t, dir, "b.ts", rotated(biss, 300))
	aTime := time.Now().Add(-2 * time.Hour).Truncate(time.Second)
	for _, p := range []string{a, b} {
		// The same size and the same time: only the path tells them apart.
		if err := os.Chtimes(p, aTime, aTime); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(dir, "out.ts")
	stats := filepath.Join(dir, "stats")
	manifest := func(in string) string {
		return writeFile(t, dir, "m.jsonl", []byte(manifestLine(t, map[string]any{"in": in, "out": out, "biss": "112233445566"})))
	}
	batch := func(t *testing.T, in string, skipped bool, want []byte) {
		t.Helper()
		r := run(t, nil, "batch", "-manifest", manifest(in), "-stats-dir", stats)
		if r.code != 0 {
			t.Fatalf("batch: %s", describe(r))
		}
		if got := strings.Contains(r.stderr, "job 0: skipped"); got != skipped {
			t.Fatalf("skipped %v, want %v: %s", got, skipped, describe(r))
		}
		sameBytes(t, "output", readFile(t, out), want, 188)
	}
	batch(t, a, false, clear)
	batch(t, a, true, clear)

	t.Run("the manifest names another input of the same size", func(t *testing.T) {
		batch(t, b, false, rotated(clear, 300))
		batch(t, b, true, rotated(clear, 300))
	})
	t.Run("the input changed, its size kept", func(t *testing.T) {
		writeFile(t, dir, "b.ts", rotated(biss, 100))
		later := aTime.Add(time.Minute)
		if err := os.Chtimes(b, later, later); err != nil {
			t.Fatal(err)
		}
		batch(t, b, false, rotated(clear, 100))
	})
}
