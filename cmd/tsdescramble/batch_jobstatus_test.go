package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// jobOutcome is what a job's statistics say of how it ended.
type jobOutcome struct {
	ExitStatus *int   `json:"exit_status"`
	Error      string `json:"error"`
	BytesOut   int64  `json:"bytes_out"`
}

// readOutcome reads the statistics a batch wrote for job i under dir, failing the test when
// there are none.
func readOutcome(t *testing.T, dir string, i int) jobOutcome {
	t.Helper()
	var o jobOutcome
	b, err := os.ReadFile(filepath.Join(dir, strconv.Itoa(i)+".json"))
	if err != nil {
		t.Fatalf("job %d left no statistics: %v", i, err)
	}
	if err := json.Unmarshal(b, &o); err != nil {
		t.Fatalf("job %d's statistics: %v", i, err)
	}
	if o.ExitStatus == nil {
		t.Fatalf("job %d's statistics have no exit_status", i)
	}
	return o
}

// badLineManifest writes a manifest of good jobs and jobs whose own values are wrong, with
// blank lines between them (which are no job), and returns it with each job's line, the
// status it must end with and what its message must say.
func badLineManifest(t *testing.T, dir string) (path string, lines, want []int, says []string) {
	t.Helper()
	badKeys := writeFile(t, dir, "bad-keys.txt", []byte("11223366445566ff\nnot a key\n"))
	jobs := []struct {
		job  map[string]any
		want int
		says string
	}{
		{map[string]any{"in": sample(t, "demo-scrambled.ts"), "cw-file": sample(t, "demo-keys.txt")}, 0, ""},
		{map[string]any{"in": sample(t, "demo-scrambled.ts"), "cw-file": filepath.Join(dir, "missing-keys.txt")}, exitJob, "cannot read the CW file: " + filepath.Join(dir, "missing-keys.txt")},
		{map[string]any{"in": sample(t, "demo-biss.ts"), "biss": "112233445566"}, 0, ""},
		{map[string]any{"in": sample(t, "demo-scrambled.ts"), "cw": "11223344556677zz"}, exitJob, "-cw: want 16 hex digits"},
		{map[string]any{"in": filepath.Join(dir, "missing.ts"), "cw-file": sample(t, "demo-keys.txt")}, exitJob, "cannot open the input: " + filepath.Join(dir, "missing.ts")},
		{map[string]any{"in": sample(t, "demo-scrambled.ts"), "cw-file": badKeys}, exitJob, "bad-keys.txt:2: want one control word"},
		// 32 digits fit a system the input's PMT could name (an AES one), so only the run,
		// having found CSA2, refuses the key; it is still the job's mistake alone.
		{map[string]any{"in": sample(t, "demo-scrambled.ts"), "cw": strings.Repeat("11223366445566ff", 2)}, exitJob, "-cw: want 16 hex digits"},
	}
	var m strings.Builder
	line := 1
	for i, j := range jobs {
		if i%2 == 1 {
			m.WriteString("\n  \n") // blank lines: no job
			line += 2
		}
		j.job["out"] = filepath.Join(dir, fmt.Sprintf("out%d.ts", i))
		m.WriteString(manifestLine(t, j.job))
		lines = append(lines, line)
		want = append(want, j.want)
		says = append(says, j.says)
		line++
	}
	return writeFile(t, dir, "jobs.jsonl", []byte(m.String())), lines, want, says
}

// TestBatchBadLineFailsItsIndexAlone: a value wrong for one job (a key file or an input that is
// not there, a bad CW, a bad line in a key file) fails that index alone with exit 4 and
// statistics that say why, and the other indexes succeed, as the pods of an Indexed Job run
// them; an index past the manifest's end fails alone in the same way.
func TestBatchBadLineFailsItsIndexAlone(t *testing.T) {
	dir := t.TempDir()
	path, lines, want, says := badLineManifest(t, dir)
	stats := filepath.Join(dir, "stats")
	clear := readFile(t, sample(t, "demo-clear.ts"))
	for i := range want {
		var r result
		if i == 1 {
			t.Setenv(indexEnv, strconv.Itoa(i)) // as a pod reads it
			r = run(t, nil, "batch", "-manifest", path, "-stats-dir", stats)
			os.Unsetenv(indexEnv)
		} else {
			r = run(t, nil, "batch", "-manifest", path, "-index", strconv.Itoa(i), "-stats-dir", stats)
		}
		if r.code != want[i] {
			t.Errorf("-index %d: exit %d, want %d: %s", i, r.code, want[i], describe(r))
			continue
		}
		o := readOutcome(t, stats, i)
		if *o.ExitStatus != want[i] {
			t.Errorf("-index %d: statistics say exit %d, want %d", i, *o.ExitStatus, want[i])
		}
		out := filepath.Join(dir, fmt.Sprintf("out%d.ts", i))
		if want[i] == 0 {
			if i == 0 {
				sameBytes(t, "job 0", readFile(t, out), clear, 188)
			}
			continue
		}
		if !strings.Contains(r.stderr, "job "+strconv.Itoa(i)+": ") || !strings.Contains(r.stderr, says[i]) {
			t.Errorf("-index %d: the message does not say %q: %s", i, says[i], describe(r))
		}
		if !strings.Contains(o.Error, says[i]) {
			t.Errorf("-index %d: the statistics' error %q does not say %q", i, o.Error, says[i])
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("-index %d: a refused job wrote its output", i)
		}
	}
	if !strings.Contains(readOutcome(t, stats, 1).Error, fmt.Sprintf("line %d:", lines[1])) {
		t.Errorf("job 1's error does not name its line %d of the manifest", lines[1])
	}

	// Past the end: that index alone, with a status file.
	past := len(want)
	r := run(t, nil, "batch", "-manifest", path, "-index", strconv.Itoa(past), "-stats-dir", stats)
	if r.code != exitJob || !strings.Contains(r.stderr, fmt.Sprintf("lists jobs 0 to %d", past-1)) {
		t.Errorf("-index %d, past the end: %s", past, describe(r))
	}
	if o := readOutcome(t, stats, past); *o.ExitStatus != exitJob || !strings.Contains(o.Error, "completions") {
		t.Errorf("-index %d: statistics say exit %d, %q", past, *o.ExitStatus, o.Error)
	}
}

// TestBatchBadLinesNamedBeforeTheFirstJob: a batch of the whole manifest names every job whose
// values are wrong, one line each, before the first job runs, then runs the others, and exits 4.
func TestBatchBadLinesNamedBeforeTheFirstJob(t *testing.T) {
	dir := t.TempDir()
	path, lines, want, says := badLineManifest(t, dir)
	stats := filepath.Join(dir, "stats")
	var mu sync.Mutex
	var ran []int
	batchJobStarts = func(index int, _ *config) {
		mu.Lock()
		ran = append(ran, index)
		mu.Unlock()
	}
	defer func() { batchJobStarts = nil }()
	r := run(t, nil, "batch", "-manifest", path, "-jobs", "2", "-stats-dir", stats)
	if r.code != exitJob {
		t.Fatalf("exit %d, want %d: %s", r.code, exitJob, describe(r))
	}
	slices.Sort(ran)
	var good []int
	for i, w := range want {
		if w == 0 {
			good = append(good, i)
		}
	}
	// The key of 32 digits passes the check and is refused by its run.
	if wantRan := append(slices.Clone(good), len(want)-1); !slices.Equal(ran, wantRan) {
		t.Errorf("jobs %v ran, want %v", ran, wantRan)
	}
	// Every refused line, before the first job's summary (job 0 is not quiet).
	first := strings.Index(r.stderr, "job 0: ")
	var failed []string
	for i, w := range want {
		if w == 0 {
			continue
		}
		failed = append(failed, fmt.Sprintf("job %d (exit 4)", i))
		named := fmt.Sprintf("job %d: %s line %d: ", i, path, lines[i])
		at := strings.Index(r.stderr, named)
		switch {
		case i == len(want)-1:
			// Refused by its run: named as it ran.
			if !strings.Contains(r.stderr, fmt.Sprintf("job %d: %s", i, says[i])) {
				t.Errorf("job %d is not named: %s", i, describe(r))
			}
		case at < 0 || !strings.Contains(r.stderr[at:], says[i]):
			t.Errorf("job %d is not named with its line and %q: %s", i, says[i], describe(r))
		case first < 0 || at > first:
			t.Errorf("job %d is named after the first job ran: %s", i, describe(r))
		}
		if o := readOutcome(t, stats, i); *o.ExitStatus != exitJob || !strings.Contains(o.Error, says[i]) {
			t.Errorf("job %d: statistics say exit %d, %q", i, *o.ExitStatus, o.Error)
		}
	}
	if !strings.Contains(r.stderr, fmt.Sprintf("%d succeeded, 0 skipped (done before), %d failed: %s", len(good), len(failed), strings.Join(failed, ", "))) {
		t.Errorf("the summary does not name the failed jobs: %s", describe(r))
	}
	sameBytes(t, "job 0", readFile(t, filepath.Join(dir, "out0.ts")), readFile(t, sample(t, "demo-clear.ts")), 188)
	if strings.Contains(r.stderr, "11223344556677") {
		t.Errorf("a control word was printed: %s", describe(r))
	}
}

// TestBatchCountIsTheJobsRun: -count prints the number of jobs a batch runs (blank lines are
// none), which is the completions of an Indexed Job: its last index runs, the next is past the
// end.
func TestBatchCountIsTheJobsRun(t *testing.T) {
	dir := t.TempDir()
	var m strings.Builder
	m.WriteString("\n")
	for i := range 4 {
		m.WriteString(manifestLine(t, map[string]any{"in": sample(t, "demo-scrambled.ts"), "out": filepath.Join(dir, fmt.Sprintf("out%d.ts", i)), "cw-file": sample(t, "demo-keys.txt"), "quiet": true}))
		m.WriteString(" \t\n\n")
	}
	path := writeFile(t, dir, "jobs.jsonl", []byte(m.String()))
	r := run(t, nil, "batch", "-count", "-manifest", path)
	if r.code != 0 {
		t.Fatalf("-count: %s", describe(r))
	}
	count, err := strconv.Atoi(strings.TrimSpace(r.stdout))
	if err != nil {
		t.Fatalf("-count printed %q, not a number", r.stdout)
	}
	if lines := strings.Count(m.String(), "\n"); count == lines {
		t.Fatalf("-count says %d, the lines of the manifest", count)
	}

	var mu sync.Mutex
	ran := map[int]bool{}
	batchJobStarts = func(index int, _ *config) {
		mu.Lock()
		ran[index] = true
		mu.Unlock()
	}
	defer func() { batchJobStarts = nil }()
	if r := run(t, nil, "batch", "-manifest", path); r.code != 0 {
		t.Fatalf("batch: %s", describe(r))
	}
	if len(ran) != count {
		t.Errorf("-count says %d, the batch ran %d jobs", count, len(ran))
	}
	if r := run(t, nil, "batch", "-manifest", path, "-index", strconv.Itoa(count-1)); r.code != 0 {
		t.Errorf("-index %d, the last of -count: %s", count-1, describe(r))
	}
	if r := run(t, nil, "batch", "-manifest", path, "-index", strconv.Itoa(count)); r.code != exitJob {
		t.Errorf("-index %d, one past -count: %s", count, describe(r))
	}

	// A manifest that is wrong for every pod has no count; -count runs no job.
	bad := writeFile(t, dir, "bad.jsonl", []byte(m.String()+"{\"in\": \n"))
	if r := run(t, nil, "batch", "-count", "-manifest", bad); r.code != exitUsage || r.stdout != "" || !strings.Contains(r.stderr, "line 14") {
		t.Errorf("-count of a bad manifest: %s", describe(r))
	}
	if r := run(t, nil, "batch", "-count", "-manifest", path, "-index", "0"); r.code != exitUsage {
		t.Errorf("-count -index: %s", describe(r))
	}
}
