// Package batch runs the jobs of a manifest, one descrambling or scrambling run each, as a
// scheduler hands them out: every job on this machine, parallel at a time, or the one job of an
// Indexed Job's pod. A job whose output and statistics say it is done is skipped, so that a
// retried pod does not redo finished work; the files of all jobs are checked together before
// any runs (CheckFiles), and what earlier runs left beside an output is removed once it is in
// place. The command reads the manifest into its jobs and runs each.
package batch

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tsdescramble/tsdescramble/internal/logline"
	"github.com/tsdescramble/tsdescramble/internal/runfiles"
	"github.com/tsdescramble/tsdescramble/internal/signals"
	"github.com/tsdescramble/tsdescramble/internal/units"
)

// The exit statuses of the command's contract that a batch ranks.
const (
	exitOK    = 0
	exitFail  = 1
	exitUsage = 2
	exitNoFit = 3
	exitJob   = 4
)

// Job is one job of a manifest: where its files are, and how to run it.
type Job struct {
	Index          int // from 0, in the manifest's order
	Line           int // of the manifest, from 1, for messages
	In, Out, Stats string
	// StatsDir says that Stats was given by the batch's -stats-dir, not the job's line.
	StatsDir bool
	// Files are every file the job names, inputs first, Stats among them.
	Files []File
	// Hide reports whether a path must not be shown (a control word put where a path goes).
	Hide func(path string) bool
	// Check, if not nil, checks the job's own values (the files it reads, its keys) before any
	// job of the batch runs, says on stderr what is wrong and returns the job's exit status:
	// 0 lets the job run.
	Check func(stderr io.Writer) int
	// Run runs the job with its messages on stderr and returns its exit status.
	Run func(stderr io.Writer) int
}

func (j *Job) hide(path string) bool { return j.Hide != nil && j.Hide(path) }

// outputFile reports whether the job's output is a file (not stdout, not a network address).
func (j *Job) outputFile() bool {
	for _, f := range j.Files {
		if f.Output {
			return true
		}
	}
	return false
}

// File is a file a job names, as its flag does.
type File struct {
	Flag   string // the flag, without its dash: the manifest's key
	Path   string
	What   string // what it is to the job: "input", "key file", "output", "statistics" ...
	Writes bool   // the job writes it
	Output bool   // the job's output, which a stopped run keeps as NAME.partial beside it
}

// Run runs jobs, parallel at a time, each with its messages prefixed by its number on stderr,
// and returns the batch's exit status and the line that says how it went (one says that only
// one job of the manifest runs, whose status is the batch's). own are the jobs' files
// (CheckFiles).
func Run(jobs []*Job, parallel int, one, quiet bool, files Files, own *FileSet, stderr io.Writer) (int, string) {
	b := &batchRun{stderr: stderr, files: files, quiet: quiet, status: make([]int, len(jobs)), skipped: make([]bool, len(jobs)),
		refused: make([]bool, len(jobs)), leftovers: findLeftovers(jobs, files, own)}
	b.checkAll(jobs, one)
	b.runAll(jobs, parallel)
	return b.result(jobs, one)
}

// DefaultJobs is one job per 4 CPUs, at least one: the cipher workers of a job use the others.
// It is the -jobs flag's value for help; a batch without -jobs takes its number from Jobs.
func DefaultJobs() int { return max(1, runtime.NumCPU()/4) }

// SmallInput is the input size under which a job runs best with one cipher worker beside
// other jobs rather than with several workers alone. On 2 CPUs, many files of 1.7 to 139 MB
// all went faster as one job per CPU with one worker each than one job at a time with two
// workers; with three files of 139 MB, where the last runs alone on one worker, the two were
// even. Above it, that last job alone and the memory of one run per CPU (up to
// pipeline.MaxMemory each) weigh more than the start and end of a job.
const SmallInput = 128 << 20

// Jobs returns how many jobs a batch without -jobs runs at a time, given the sizes of
// their inputs (-1 for an input that is not a regular file) and the CPUs of the process. A job
// over a large input keeps several workers busy, so the batch runs one job per 4 CPUs, each with
// its share of the workers, and the jobs' own goroutines (reading, writing) use the rest. A job
// over a small input cannot: its run is short, and its start, its end and the cipher batches
// cut short at the end of its file are a large part of it, during which its other workers
// wait. When most inputs (the median) are small, the batch runs one job per CPU, each with one
// worker, so that every CPU is busy with a job of its own. An input that is not a regular file
// (a pipe, a device) counts as large: its size is unknown.
func Jobs(sizes []int64, cpus int) int {
	cpus = max(1, cpus)
	if len(sizes) == 0 {
		return max(1, cpus/4)
	}
	s := slices.Clone(sizes)
	for i, n := range s {
		if n < 0 {
			s[i] = math.MaxInt64
		}
	}
	slices.Sort(s)
	if s[len(s)/2] < SmallInput {
		return cpus
	}
	return max(1, cpus/4)
}

// Files is what the batch itself asks of the storage its jobs' files are on, to tell a job
// that is done from one to run. A job's stream is read and written by the command's own input
// and output, as on the command line.
type Files interface {
	// Size returns the size of the regular file at path.
	Size(path string) (int64, error)
	Stat(path string) (fs.FileInfo, error)
	ReadDir(path string) ([]fs.DirEntry, error)
	ReadFile(path string) ([]byte, error)
	Remove(path string) error
	MkdirAll(path string) error
	// CheckWritable reports why no file can be created in the directory dir, if none can.
	CheckWritable(dir string) error
}

// Local are local paths, a mounted volume in a container.
type Local struct{}

func (Local) Size(path string) (int64, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return 0, err
	}
	if !fi.Mode().IsRegular() {
		return 0, fmt.Errorf("%s is not a regular file", path)
	}
	return fi.Size(), nil
}

func (Local) Stat(path string) (fs.FileInfo, error)      { return os.Stat(path) }
func (Local) ReadDir(path string) ([]fs.DirEntry, error) { return os.ReadDir(path) }
func (Local) ReadFile(path string) ([]byte, error)       { return os.ReadFile(path) }
func (Local) MkdirAll(path string) error                 { return os.MkdirAll(path, 0o755) }
func (Local) CheckWritable(dir string) error {
	// A file is made and removed: only that shows every reason (permissions, a read-only
	// volume, a full one) as the job would meet it.
	f, err := os.CreateTemp(dir, ".tsdescramble-check-*")
	if err != nil {
		return err
	}
	f.Close()
	return os.Remove(f.Name())
}

func (Local) Remove(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// quitWhenNoJobDoes ends the batch at once on a quit signal (SIGQUIT) until finished is closed,
// unless a job ends the process first. A job that has begun its run ends itself at once, its
// output put aside (internal/signals), as the command does; the batch waits for that, up to
// signals.StopGrace, and ends itself when no job was listening (one opening its input, or between
// two jobs). Listening for the quit signals for the whole batch spares each job the cost of
// turning the signal's handling on and off (about 70 us a job, the runtime's signal thread woken
// twice each time), and gives a quit between two jobs the command's exit status rather than Go's
// dump of the goroutines.
func quitWhenNoJobDoes(stderr io.Writer, finished <-chan struct{}) {
	var sigs []os.Signal
	for _, sig := range signals.QuitSignals {
		if !signal.Ignored(sig) {
			sigs = append(sigs, sig)
		}
	}
	if len(sigs) == 0 {
		return
	}
	quit := make(chan os.Signal, 1)
	signal.Notify(quit, sigs...)
	go func() {
		defer signal.Stop(quit)
		select {
		case s := <-quit:
			if signals.Handlers.Load() > 0 {
				select {
				case <-time.After(signals.StopGrace):
				case <-finished:
				}
			}
			logline.Write(stderr, logline.Error, "tsdescramble: batch stopped at once by "+signals.Name(s))
			os.Exit(signals.Status(s))
		case <-finished:
		}
	}()
}

// batchGCPercent is the garbage collector's target for a batch. Each job allocates its
// buffers anew (a few MB) and drops them at its end, so with the default target of 100 and a
// small live heap the collector runs after nearly every job, and returns memory that the next
// job faults in again. At 800 it runs every few jobs, which saves about a sixth of the CPU time
// of a batch of 2 MB files; the memory limit below keeps the heap bounded all the same.
const batchGCPercent = 800

// TuneGC sets the collector's target for a batch of parallel jobs, unless GOGC or GOMEMLIMIT
// say otherwise, and returns what restores it. The soft memory limit is what the jobs may
// hold at once (perJob each) plus 64 MiB for the rest: the collector runs when the
// garbage of the jobs before fills that room, not after each one.
func TuneGC(parallel int, perJob int64) (restore func()) {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	limit := int64(parallel)*perJob + 64<<20
	oldPercent := debug.SetGCPercent(batchGCPercent)
	oldLimit := debug.SetMemoryLimit(limit)
	return func() {
		debug.SetGCPercent(oldPercent)
		debug.SetMemoryLimit(oldLimit)
	}
}

// batchRun is the state of a batch's jobs.
type batchRun struct {
	stderr  io.Writer
	files   Files
	quiet   bool
	mu      sync.Mutex // serializes the lines of the jobs' messages
	status  []int      // by position in the batch's job list
	skipped []bool
	refused []bool                    // by their Check: not run
	stopped atomic.Pointer[os.Signal] // the signal that stopped the batch before every job ran
	// leftovers are the files earlier runs left beside each job's output, by job number:
	// removed once the job's output is in place (files.go).
	leftovers map[int][]leftover
}

// prefixed returns the writer of a job's messages: each line with the job's number.
func (b *batchRun) prefixed(j *Job) *linePrefixer {
	return &linePrefixer{w: b.stderr, mu: &b.mu, prefix: fmt.Sprintf("job %d: ", j.Index)}
}

// checkAll finds the jobs done before, and checks the values of the others (Job.Check), in
// the manifest's order, before any job runs. A value wrong for one job (a key file or an input
// that is not there, a bad CW) fails that job alone, with exit 4, as it fails that index alone
// in an Indexed Job; the others run. A batch of a whole archive on one machine names every such
// job at its start, not one at a time over hours, and does not hold back the recordings whose
// lines are right: once the lines are mended, the same batch with -stats-dir runs only those.
func (b *batchRun) checkAll(jobs []*Job, one bool) {
	refused := 0
	for i, j := range jobs {
		if b.done(j) {
			b.skipped[i] = true
			continue
		}
		if j.Check == nil {
			continue
		}
		stderr := b.prefixed(j)
		if b.status[i] = j.Check(stderr); b.status[i] != exitOK {
			b.refused[i] = true
			refused++
		}
		stderr.flush()
	}
	if refused > 0 && !one && !b.quiet {
		logline.Write(b.stderr, logline.Warn, fmt.Sprintf("tsdescramble: %d of %d jobs cannot run as their lines stand (exit %d, said above); the others run", refused, len(jobs), exitJob))
	}
}

// run runs one job (or skips it) and records its exit status.
func (b *batchRun) run(i int, j *Job) {
	stderr := b.prefixed(j)
	defer stderr.flush()
	if b.refused[i] {
		return
	}
	if b.skipped[i] {
		if !b.quiet {
			fmt.Fprintf(stderr, "tsdescramble: skipped: %s exists and %s says it was written from %s\n", j.Out, j.Stats, j.In)
		}
		b.removeLeftovers(j, stderr)
		return
	}
	if j.Stats != "" {
		// Statistics of an earlier attempt must not vouch for this one, should it fail
		// before it writes its own. No job reads this file, nor writes it but this one: the
		// manifest was refused otherwise (checkJobFiles).
		if err := b.files.Remove(j.Stats); err != nil {
			logline.Write(stderr, logline.Error, fmt.Sprintf("tsdescramble: cannot remove the statistics of an earlier run: %v", runfiles.UnwrapPath(err)))
			b.status[i] = exitFail
			return
		}
	}
	b.status[i] = j.Run(stderr)
	if b.status[i] == exitOK {
		b.removeLeftovers(j, stderr)
	}
}

// removeLeftovers removes what earlier runs of a job left beside its output, now in place, and
// says so; a file that cannot be removed is a note, not a failure of the job.
func (b *batchRun) removeLeftovers(j *Job, stderr io.Writer) {
	ls := b.leftovers[j.Index]
	if len(ls) == 0 {
		return
	}
	removed, err := removeLeftovers(ls, b.files)
	if len(removed) > 0 && !b.quiet {
		fmt.Fprintf(stderr, "tsdescramble: removed what an earlier run left beside %s: %s\n", j.Out, strings.Join(removed, ", "))
	}
	if err != nil {
		logline.Write(stderr, logline.Warn, fmt.Sprintf("tsdescramble: cannot remove what an earlier run left beside %s: %v", j.Out, runfiles.UnwrapPath(err)))
	}
}

// done reports whether a job finished before: its statistics say that the run exited 0 having
// read this very input, as it is now, and put this output in place, of the size it has now.
// Sizes alone took a stale or foreign file for done: an input rewritten with another recording
// of the same size, another job's statistics (a manifest whose lines moved, a -stats-dir
// used before), or an output of another job. The statistics name the files by absolute path
// and give the input's modification time as the run began (runfiles.Records); statistics
// without them, from an older version, are not taken for done: the job runs once more.
func (b *batchRun) done(j *Job) bool {
	in, out, stats := j.In, j.Out, j.Stats
	if stats == "" {
		return false
	}
	data, err := b.files.ReadFile(stats)
	if err != nil {
		return false
	}
	var st struct {
		ExitStatus *int             `json:"exit_status"`
		BytesIn    int64            `json:"bytes_in"`
		BytesOut   int64            `json:"bytes_out"`
		Files      runfiles.Records `json:"files"`
	}
	if json.Unmarshal(data, &st) != nil || st.ExitStatus == nil || *st.ExitStatus != exitOK {
		return false
	}
	fin, fout := st.Files.In, st.Files.Out
	if fin == nil || fout == nil || fin.Path != runfiles.AbsPath(in) || fout.Path != runfiles.AbsPath(out) {
		return false
	}
	ofi, err := b.files.Stat(out)
	if err != nil || !ofi.Mode().IsRegular() || ofi.Size() != fout.Size || fout.Size != st.BytesOut {
		return false
	}
	ifi, err := b.files.Stat(in)
	return err == nil && ifi.Mode().IsRegular() && ifi.Size() == fin.Size && fin.Size == st.BytesIn && ifi.ModTime().Equal(fin.ModTime)
}

// result says how the batch went: its exit status (see the command's description) and the line
// that says so, for the command to print (on success, unless quiet).
func (b *batchRun) result(jobs []*Job, one bool) (int, string) {
	if s := b.stopped.Load(); s != nil {
		return signals.Status(*s), fmt.Sprintf("batch stopped by %s: jobs not started were left for a later run", signals.Name(*s))
	}
	if one {
		return b.status[0], ""
	}
	var ok, skipped int
	var failed []string
	code := exitOK
	// 1 first: a retry of the batch may mend it, and skips what is done; then the statuses
	// that only a change to the manifest, its files or the keys mends.
	rank := map[int]int{exitFail: 4, exitUsage: 3, exitJob: 2, exitNoFit: 1}
	for i, j := range jobs {
		switch s := b.status[i]; {
		case b.skipped[i]:
			skipped++
		case s == exitOK:
			ok++
		default:
			failed = append(failed, fmt.Sprintf("job %d (exit %d)", j.Index, s))
			if s > 128 {
				code = s // stopped by a signal
			} else if code <= 128 && rank[s] > rank[code] {
				code = s
			}
		}
	}
	msg := fmt.Sprintf("batch of %s: %d succeeded, %d skipped (done before), %d failed", units.Count(int64(len(jobs)), "job"), ok, skipped, len(failed))
	if len(failed) > 0 {
		if len(failed) > 10 {
			failed = append(failed[:10], fmt.Sprintf("and %d more", len(failed)-10))
		}
		msg += ": " + strings.Join(failed, ", ")
	}
	return code, msg
}

// linePrefixer writes whole lines to w, each with the job's prefix after the program's name,
// under a lock shared by the jobs, so that their messages do not mix within a line.
type linePrefixer struct {
	w      io.Writer
	mu     *sync.Mutex
	prefix string
	buf    []byte
}

func (l *linePrefixer) Write(p []byte) (int, error) {
	l.buf = append(l.buf, p...)
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		l.emit(l.buf[:i+1])
		l.buf = l.buf[i+1:]
	}
}

func (l *linePrefixer) emit(line []byte) {
	out := l.prefixed(line)
	l.mu.Lock()
	l.w.Write(out)
	l.mu.Unlock()
}

// prefixed returns line with the job's prefix after the program's name.
func (l *linePrefixer) prefixed(line []byte) []byte {
	const name = "tsdescramble: "
	if rest, ok := bytes.CutPrefix(line, []byte(name)); ok {
		return append([]byte(name+l.prefix), rest...)
	}
	return append([]byte(l.prefix), line...)
}

// WriteLevel writes one line of the job at level, with the job's prefix, and passes the level
// on to the batch's stderr (logline).
func (l *linePrefixer) WriteLevel(level string, line []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	logline.Write(l.w, level, string(l.prefixed(line)))
}

// flush writes a last line that had no newline.
func (l *linePrefixer) flush() {
	if len(l.buf) > 0 {
		l.emit(append(l.buf, '\n'))
		l.buf = nil
	}
}

// runAll runs the jobs, parallel at a time, until all ran or a signal stops the batch.
func (b *batchRun) runAll(jobs []*Job, parallel int) {
	stderr := b.stderr
	// A stop signal stops the handing out of jobs. A job that has begun its run stops as the
	// command does, by its own handler (internal/signals); one still opening its input or reading
	// its keys has none yet, and could wait on a stalled input for ever: the batch ends
	// itself once the jobs have had their signals.StopGrace, or at a second signal.
	stop := make(chan os.Signal, 2)
	signal.Notify(stop, signals.StopSignals...)
	defer signal.Stop(stop)
	stopping, finished := make(chan struct{}), make(chan struct{})
	defer close(finished)
	quitWhenNoJobDoes(stderr, finished)
	go func() {
		select {
		case s := <-stop:
			b.stopped.Store(&s)
			close(stopping)
			select {
			case <-stop:
			case <-time.After(signals.StopGrace + time.Second):
			case <-finished:
				return
			}
			logline.Write(stderr, logline.Error, fmt.Sprintf("tsdescramble: batch stopped at once by %s: a job had not stopped", signals.Name(s)))
			os.Exit(signals.Status(s))
		case <-finished:
		}
	}()
	next := make(chan int)
	go func() {
		defer close(next)
		for i := range jobs {
			select {
			case next <- i:
			case <-stopping:
				return
			}
		}
	}()
	var wg sync.WaitGroup
	for range parallel {
		wg.Go(func() {
			for i := range next {
				b.run(i, jobs[i])
			}
		})
	}
	wg.Wait()
}
