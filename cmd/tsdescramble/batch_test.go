package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tsdescramble/tsdescramble/internal/batch"
)

// sample returns the path of a file of samples/.
func sample(t testing.TB, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", "..", "samples", name))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// manifestLine writes one job of a manifest.
func manifestLine(t testing.TB, job map[string]any) string {
	t.Helper()
	b, err := json.Marshal(job)
	if err != nil {
		t.Fatal(err)
	}
	return string(b) + "\n"
}

// fixtureJobs is a manifest of the whole-stream samples writing into dir: every key file
// format, a BISS stream and a scrambling run. want gives each output's expected bytes where
// the samples hold them (nil where only agreement between runs is checked).
func fixtureJobs(t testing.TB, dir string) (manifest string, outs []string, want [][]byte) {
	t.Helper()
	clear := readFile(t, sample(t, "demo-clear.ts"))
	jobs := []map[string]any{
		{"in": sample(t, "demo-scrambled.ts"), "cw-file": sample(t, "demo-keys.txt")},
		{"in": sample(t, "demo-scrambled.ts"), "cw-file": sample(t, "demo-pairs.txt"), "batch": 7, "group": "64"},
		{"in": sample(t, "demo-scrambled.ts"), "cw-file": sample(t, "demo-keys.cwl"), "quiet": true},
		{"in": sample(t, "demo-biss.ts"), "biss": "112233445566"},
		{"command": "scramble", "in": sample(t, "demo-clear.ts"), "cw-file": sample(t, "demo-keys.txt"), "cp-packets": 800},
	}
	want = [][]byte{clear, clear, clear, clear[:188000], nil}
	var b strings.Builder
	for i, j := range jobs {
		out := filepath.Join(dir, fmt.Sprintf("out%d.ts", i))
		j["out"] = out
		outs = append(outs, out)
		b.WriteString(manifestLine(t, j))
	}
	return b.String(), outs, want
}

func TestBatchParallelAndIndexedAgree(t *testing.T) {
	dirAll, dirOne := t.TempDir(), t.TempDir()
	mAll, outsAll, want := fixtureJobs(t, dirAll)
	mOne, outsOne, _ := fixtureJobs(t, dirOne)
	pathAll := writeFile(t, t.TempDir(), "all.jsonl", []byte(mAll))
	pathOne := writeFile(t, t.TempDir(), "one.jsonl", []byte(mOne))

	r := run(t, nil, "batch", "-manifest", pathAll, "-jobs", "2", "-stats-dir", filepath.Join(dirAll, "stats"))
	if r.code != 0 {
		t.Fatalf("batch -jobs 2: %s", describe(r))
	}
	if !strings.Contains(r.stderr, "batch of 5 jobs: 5 succeeded, 0 skipped") {
		t.Errorf("batch -jobs 2: no summary line: %s", describe(r))
	}
	for i := range outsOne {
		var r result
		if i == 2 {
			// The index a Kubernetes Indexed Job gives its pod.
			t.Setenv(indexEnv, strconv.Itoa(i))
			r = run(t, nil, "batch", "-manifest", pathOne, "-stats-dir", filepath.Join(dirOne, "stats"))
			os.Unsetenv(indexEnv)
		} else {
			r = run(t, nil, "batch", "-manifest", pathOne, "-index", strconv.Itoa(i), "-stats-dir", filepath.Join(dirOne, "stats"))
		}
		if r.code != 0 {
			t.Fatalf("batch -index %d: %s", i, describe(r))
		}
		for j := range outsOne {
			_, err := os.Stat(outsOne[j])
			if exists := err == nil; exists != (j <= i) {
				t.Fatalf("after job %d, output %d exists: %v", i, j, exists)
			}
		}
	}
	for i := range outsAll {
		all, one := readFile(t, outsAll[i]), readFile(t, outsOne[i])
		sameBytes(t, fmt.Sprintf("job %d: -jobs 2 and -index %d", i, i), all, one, 188)
		if want[i] != nil {
			sameBytes(t, fmt.Sprintf("job %d", i), all, want[i], 188)
		}
		var st struct {
			ExitStatus *int  `json:"exit_status"`
			BytesOut   int64 `json:"bytes_out"`
		}
		if err := json.Unmarshal(readFile(t, filepath.Join(dirAll, "stats", strconv.Itoa(i)+".json")), &st); err != nil {
			t.Fatal(err)
		}
		if st.ExitStatus == nil || *st.ExitStatus != 0 || st.BytesOut != int64(len(all)) {
			t.Errorf("job %d: statistics say exit %v, %d bytes out; want 0 and %d", i, st.ExitStatus, st.BytesOut, len(all))
		}
	}
	// The scrambled output descrambles to the clear sample.
	out := filepath.Join(t.TempDir(), "back.ts")
	if r := run(t, nil, "-in", outsAll[4], "-out", out, "-cw-file", sample(t, "demo-keys.txt")); r.code != 0 {
		t.Fatalf("descrambling the batch's scrambled output: %s", describe(r))
	}
	sameBytes(t, "scrambled by the batch, descrambled", readFile(t, out), want[0], 188)
}

func TestBatchSkipsFinishedJobs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	in := writeFile(t, dir, "in.ts", readFile(t, sample(t, "demo-scrambled.ts")))
	out := filepath.Join(dir, "out.ts")
	stats := filepath.Join(dir, "stats")
	m := writeFile(t, dir, "m.jsonl", []byte(manifestLine(t, map[string]any{"in": in, "out": out, "cw-file": sample(t, "demo-keys.txt")})))
	batch := func() result {
		t.Helper()
		r := run(t, nil, "batch", "-manifest", m, "-stats-dir", stats)
		if r.code != 0 {
			t.Fatalf("batch: %s", describe(r))
		}
		return r
	}
	old := time.Now().Add(-time.Hour).Truncate(time.Second)
	age := func() {
		t.Helper()
		if err := os.Chtimes(out, old, old); err != nil {
			t.Fatal(err)
		}
	}
	rewritten := func(t *testing.T, want bool) {
		t.Helper()
		fi, err := os.Stat(out)
		if err != nil {
			t.Fatal(err)
		}
		if got := !fi.ModTime().Equal(old); got != want {
			t.Fatalf("output rewritten: %v, want %v", got, want)
		}
		sameBytes(t, "output", readFile(t, out), readFile(t, sample(t, "demo-clear.ts")), 188)
	}

	batch()
	age()
	r := batch()
	if !strings.Contains(r.stderr, "job 0: skipped") || !strings.Contains(r.stderr, "1 skipped") {
		t.Fatalf("a finished job was not skipped: %s", describe(r))
	}
	rewritten(t, false)

	t.Run("statistics of a failed run", func(t *testing.T) {
		path := filepath.Join(stats, "0.json")
		b := readFile(t, path)
		if err := os.WriteFile(path, bytes.Replace(b, []byte(`"exit_status": 0`), []byte(`"exit_status": 3`), 1), 0o644); err != nil {
			t.Fatal(err)
		}
		batch()
		rewritten(t, true)
		age()
	})
	t.Run("no statistics", func(t *testing.T) {
		os.Remove(filepath.Join(stats, "0.json"))
		batch()
		rewritten(t, true)
		age()
	})
	t.Run("output of another size", func(t *testing.T) {
		if err := os.Truncate(out, 188*10); err != nil {
			t.Fatal(err)
		}
		age()
		batch()
		rewritten(t, true)
		age()
	})
	t.Run("input of another size", func(t *testing.T) {
		b := readFile(t, in)
		writeFile(t, dir, "in.ts", append(b, b...))
		batch()
		fi, _ := os.Stat(out)
		if fi.Size() != int64(2*len(b)) {
			t.Fatalf("output of %d bytes after the input grew to %d", fi.Size(), 2*len(b))
		}
	})
}

func TestBatchFailingJobBesidePassingOnes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	jobs := []map[string]any{
		{"in": sample(t, "demo-scrambled.ts"), "cw-file": sample(t, "demo-keys.txt")},
		{"in": sample(t, "demo-scrambled.ts"), "cw": cwC}, // no key fits: exit 3
		{"in": sample(t, "demo-biss.ts"), "biss": "112233445566"},
	}
	var m strings.Builder
	for i, j := range jobs {
		j["out"] = filepath.Join(dir, fmt.Sprintf("out%d.ts", i))
		m.WriteString(manifestLine(t, j))
	}
	path := writeFile(t, dir, "m.jsonl", []byte(m.String()))
	stats := filepath.Join(dir, "stats")

	r := run(t, nil, "batch", "-manifest", path, "-jobs", "2", "-stats-dir", stats)
	if r.code != exitNoFit {
		t.Fatalf("exit %d, want %d: %s", r.code, exitNoFit, describe(r))
	}
	if !strings.Contains(r.stderr, "2 succeeded, 0 skipped (done before), 1 failed: job 1 (exit 3)") {
		t.Errorf("summary does not name the failed job: %s", describe(r))
	}
	if strings.Contains(r.stderr, cwC) {
		t.Errorf("a control word was printed: %s", describe(r))
	}
	clear := readFile(t, sample(t, "demo-clear.ts"))
	sameBytes(t, "job 0", readFile(t, filepath.Join(dir, "out0.ts")), clear, 188)
	sameBytes(t, "job 2", readFile(t, filepath.Join(dir, "out2.ts")), clear[:188000], 188)
	if b := readFile(t, filepath.Join(stats, "1.json")); !bytes.Contains(b, []byte(`"exit_status": 3`)) {
		t.Errorf("job 1's statistics do not say exit 3")
	}
	for i, want := range []int{0, exitNoFit, 0} {
		if r := run(t, nil, "batch", "-manifest", path, "-index", strconv.Itoa(i), "-stats-dir", stats); r.code != want {
			t.Errorf("-index %d: exit %d, want %d: %s", i, r.code, want, describe(r))
		}
	}

	// A job whose input is not there (exit 4) is its line's mistake, which a retry does not
	// mend; it ranks above keys that do not fit.
	m.WriteString(manifestLine(t, map[string]any{"in": filepath.Join(dir, "missing.ts"), "out": filepath.Join(dir, "out3.ts"), "cw": cwA}))
	writeFile(t, dir, "m.jsonl", []byte(m.String()))
	r = run(t, nil, "batch", "-manifest", path, "-stats-dir", stats)
	if r.code != exitJob || !strings.Contains(r.stderr, "job 3 (exit 4)") || !strings.Contains(r.stderr, "2 skipped") {
		t.Errorf("exit %d, want 4 with job 3 failed and two skipped: %s", r.code, describe(r))
	}
	// One whose input holds no transport stream (exit 1) is a failure of the run: the batch
	// says 1, which a scheduler retries.
	junk := writeFile(t, dir, "junk.ts", bytes.Repeat([]byte("not a stream "), 1000))
	m.WriteString(manifestLine(t, map[string]any{"in": junk, "out": filepath.Join(dir, "out4.ts"), "cw": cwA}))
	writeFile(t, dir, "m.jsonl", []byte(m.String()))
	r = run(t, nil, "batch", "-manifest", path, "-stats-dir", stats)
	if r.code != exitFail || !strings.Contains(r.stderr, "job 3 (exit 4), job 4 (exit 1)") || !strings.Contains(r.stderr, "2 skipped") {
		t.Errorf("exit %d, want 1 with jobs 3 and 4 failed and two skipped: %s", r.code, describe(r))
	}
}

func TestBatchManifestErrors(t *testing.T) {
	dir := t.TempDir()
	in := sample(t, "demo-biss.ts")
	job := func(extra string) string {
		return fmt.Sprintf(`{"in": %q, "out": %q, "biss": "112233445566"%s}`, in, filepath.Join(dir, "o.ts"), extra)
	}
	for _, c := range []struct {
		manifest string
		args     []string
		want     string
	}{
		{job(`, "bogus": 1`), nil, `line 1: unknown key "bogus"`},
		{job(`, "servce": 1`), nil, `unknown key "servce": did you mean "service"?`},
		{job("") + "\n\n" + job(`, "workers": "four"`), nil, `line 3: key "workers": want a whole number`},
		{job(`, "quiet": 1`), nil, `key "quiet": a switch`},
		{job(`, "in": "x"`), nil, `key "in" is given twice`},
		{job(`, "i": "x"`), nil, `key "i" and another name of -in`},
		{`{"in": "a.ts", "cw": "1122334455667788"}`, nil, `no "out"`},
		{`{"in": "-", "out": "b.ts"}`, nil, `"in": a job reads and writes files`},
		{job(`, "command": "probe"`), nil, `"command": want "descramble" or "scramble"`},
		{job(`, "cp-packets": 5`), nil, `unknown key "cp-packets"`}, // a flag of scramble only
		{`["in"]`, nil, "not a JSON object"},
		{job("") + job(""), nil, "more than one JSON object"},
		{"\n\n", nil, "lists no job"},
		{job(""), []string{"-index", "-1"}, "job -1: want a job number from 0"},
		{job(`, "stats": "s.json"`), []string{"-stats-dir", dir}, `"stats" and -stats-dir`},
		{job(`, "1122334455667788": 1`), nil, "unknown a key"},
		{job(`, "metrics": ":9400"`), nil, `key "metrics": jobs that run side by side`},
		{job(`, "log-format": "json"`), nil, `give -log-format to the batch`},
		{job(`, "config": "mux.yaml"`), nil, `key "config": a job is one stream with one key source`},
		{job(`, "keys": "1=biss:112233445566"`), nil, `key "keys": a job is one stream`},
	} {
		path := writeFile(t, dir, "m.jsonl", []byte(c.manifest))
		r := run(t, nil, append([]string{"batch", "-manifest", path}, c.args...)...)
		if r.code != exitUsage || !strings.Contains(r.stderr, c.want) {
			t.Errorf("manifest %s %v: want exit 2 and %q: %s", c.manifest, c.args, c.want, describe(r))
		}
		if strings.Contains(r.stderr, "112233445566") {
			t.Errorf("manifest %s: a key was printed: %s", c.manifest, describe(r))
		}
		if _, err := os.Stat(filepath.Join(dir, "o.ts")); err == nil {
			t.Fatalf("manifest %s: a job ran despite the error", c.manifest)
		}
	}
	path := writeFile(t, dir, "m.jsonl", []byte(job("")))
	t.Setenv(indexEnv, "x")
	if r := run(t, nil, "batch", "-manifest", path); r.code != exitUsage || !strings.Contains(r.stderr, "$"+indexEnv) {
		t.Errorf("bad %s: %s", indexEnv, describe(r))
	}
	if r := run(t, nil, "batch"); r.code != exitUsage || !strings.Contains(r.stderr, "-manifest FILE") {
		t.Errorf("no manifest: %s", describe(r))
	}
	// A job's own bad key is that job's exit 4, not the manifest's 2 (TestBatchBadLine).
	os.Unsetenv(indexEnv)
	path = writeFile(t, dir, "m.jsonl", []byte(fmt.Sprintf(`{"in": %q, "out": %q, "cw": "11223344"}`, in, filepath.Join(dir, "o.ts"))))
	if r := run(t, nil, "batch", "-manifest", path); r.code != exitJob || !strings.Contains(r.stderr, "job 0: "+path+" line 1: -cw:") {
		t.Errorf("a bad key: %s", describe(r))
	}
}

func TestBatchJobsFromSizes(t *testing.T) {
	t.Parallel()
	const MiB = 1 << 20
	many := func(n int, size int64) []int64 {
		s := make([]int64, n)
		for i := range s {
			s[i] = size
		}
		return s
	}
	for _, c := range []struct {
		name  string
		sizes []int64
		cpus  int
		want  int
	}{
		{"no job", nil, 8, 2},
		{"large files, 8 CPUs", many(10, 200*MiB), 8, 2},
		{"large files, 2 CPUs", many(10, 200*MiB), 2, 1},
		{"small files, 8 CPUs", many(200, 2*MiB), 8, 8},
		{"small files, 2 CPUs", many(200, 2*MiB), 2, 2},
		{"small files, 1 CPU", many(200, 2*MiB), 1, 1},
		{"one just under the bound", []int64{batch.SmallInput - 1}, 4, 4},
		{"one at the bound", []int64{batch.SmallInput}, 4, 1},
		{"pipes count as large", many(5, -1), 8, 2},
		{"most small, some large", append(many(3, 1*MiB), 400*MiB, -1), 8, 8},
		{"most large, some small", append(many(2, 1*MiB), 400*MiB, -1, 300*MiB), 8, 2},
		{"zero CPUs reported", many(4, 1*MiB), 0, 1},
	} {
		if got := batch.Jobs(c.sizes, c.cpus); got != c.want {
			t.Errorf("%s: batch.Jobs(%d CPUs) = %d, want %d", c.name, c.cpus, got, c.want)
		}
	}
}

// The default -jobs runs a batch of small inputs one job per CPU, each with one worker, side by
// side: each job waits at its start until as many have started as there are CPUs, which only
// jobs that run at once can do. An explicit -jobs is kept, with the workers shared among its jobs.
func TestBatchDefaultJobsRunSmallInputsSideBySide(t *testing.T) {
	const cpus, files = 4, 8
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(cpus))
	dir := t.TempDir()
	var m strings.Builder
	for i := range files {
		m.WriteString(manifestLine(t, map[string]any{"in": sample(t, "demo-scrambled.ts"), "out": filepath.Join(dir, fmt.Sprintf("out%d.ts", i)), "cw-file": sample(t, "demo-keys.txt"), "quiet": true}))
	}
	path := writeFile(t, dir, "jobs.jsonl", []byte(m.String()))
	for _, c := range []struct {
		args     []string
		together int // jobs running at once
		workers  string
	}{
		{nil, cpus, "-workers=1"},
		{[]string{"-jobs", "1"}, 1, "-workers=4"},
		{[]string{"-jobs", "2"}, 2, "-workers=2"},
	} {
		var mu sync.Mutex
		var started, running, most int
		all, giveUp := make(chan struct{}), make(chan struct{})
		timer := time.AfterFunc(10*time.Second, func() { close(giveUp) })
		var workers []string
		batchJobStarts = func(index int, jc *config) {
			mu.Lock()
			started++
			running++
			most = max(most, running)
			workers = append(workers, fmt.Sprintf("-workers=%d", jc.workers))
			if started == c.together {
				close(all)
			}
			mu.Unlock()
			select {
			case <-all:
			case <-giveUp: // jobs that never run at once: the check below says so
			}
			// Counted as finished once its start is through: a job waits for the others to
			// start, not to finish.
			mu.Lock()
			running--
			mu.Unlock()
		}
		r := run(t, nil, append([]string{"batch", "-manifest", path}, c.args...)...)
		batchJobStarts = nil
		timer.Stop()
		if r.code != 0 {
			t.Fatalf("batch %v: %s", c.args, describe(r))
		}
		if most != c.together {
			t.Errorf("batch %v: %d jobs ran at once, want %d", c.args, most, c.together)
		}
		if len(workers) != files || slices.ContainsFunc(workers, func(w string) bool { return w != c.workers }) {
			t.Errorf("batch %v: jobs ran with %v, want %s each", c.args, workers, c.workers)
		}
		for i := range files {
			sameBytes(t, fmt.Sprintf("batch %v job %d", c.args, i), readFile(t, filepath.Join(dir, fmt.Sprintf("out%d.ts", i))), readFile(t, sample(t, "demo-clear.ts")), 188)
		}
	}
}
