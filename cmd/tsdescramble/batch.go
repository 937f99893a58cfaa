package main

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
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/tsdescramble/tsdescramble/internal/clihelp"
	"github.com/tsdescramble/tsdescramble/pipeline"
)

// batch runs a manifest of jobs, one descrambling or scrambling run each, as a scheduler hands
// them out: every job on this machine (-jobs at a time), or the one job of an Indexed Job's pod
// (-index, or JOB_COMPLETION_INDEX). A job runs in this process through the command line's own
// action, with the manifest's values parsed as its flags (batchjob.go); a job whose output and
// statistics say it is done is skipped, so that a retried pod does not redo finished work.

// indexEnv is the variable Kubernetes sets in each pod of an Indexed Job.
const indexEnv = "JOB_COMPLETION_INDEX"

func batchCommand(env Env) *cli.Command {
	b := &batchFlags{}
	return &cli.Command{
		Name:      "batch",
		Usage:     "run the jobs of a manifest: all, or the one a scheduler's index names",
		UsageText: "tsdescramble batch [flags]   (-manifest FILE [-index N] [-jobs J] [-stats-dir DIR])",
		Description: `Runs the jobs a manifest lists, one JSON object per line whose keys are the flags of the
command without the dash and whose values are theirs ("command": "scramble" for the scrambler):
   {"in": "rec1.ts", "out": "clear/rec1.ts", "cw-file": "rec1.cwl"}
   {"command": "scramble", "in": "c.ts", "out": "s.ts", "cw-file": "k.txt", "cp-packets": 5000}
Job N is the Nth object, from 0; paths are relative to the working directory. -index N (or the
JOB_COMPLETION_INDEX variable a Kubernetes Indexed Job sets) runs job N only; otherwise every
job runs, -jobs at a time, each with its share of the workers (without -jobs: one job per 4
CPUs, or one per CPU with one worker each when most inputs are under 128 MiB). With -stats-dir
each job's statistics go to DIR/N.json, and a job whose output exists and whose statistics say
it succeeded on the same input is skipped. A manifest in which a job's output or statistics
would replace a job's input, key file, output or statistics is refused before any job runs. The
exit status is the job's with -index; for a whole manifest it is 0 when every job succeeded or
was skipped, else 1 when a job failed in a way a retry may mend (I/O), else 2 (a job's usage
error), else 3 (keys that do not fit).
Examples:
   tsdescramble batch -manifest jobs.jsonl -stats-dir stats
   JOB_COMPLETION_INDEX=4 tsdescramble batch -manifest /data/jobs.jsonl -stats-dir /data/stats`,
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "manifest", Destination: &b.manifest, TakesFile: true, Category: catIO, Usage: "the jobs: a JSON Lines `FILE`, one object of flags per job"},
			&cli.IntFlag{Name: "index", Destination: &b.index, Category: catIO, Usage: "run job `N` only (from 0; absent: $" + indexEnv + " if set, else every job)"},
			&cli.IntFlag{Name: "jobs", Value: defaultJobs(), Destination: &b.jobs, DefaultText: "one per 4 CPUs; one per CPU when most inputs are under " + strconv.Itoa(smallInput>>20) + " MiB", Category: catTuning, Usage: "`J` jobs at a time, each with its share of the workers"},
			&cli.StringFlag{Name: "stats-dir", Destination: &b.statsDir, TakesFile: true, Category: catReporting, Usage: "write each job's statistics to `DIR`/N.json, and skip the jobs they say are done"},
			&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Destination: &b.quiet, Category: catReporting, Usage: "print nothing but errors (and give each job -quiet)"},
			&cli.StringFlag{Name: "log-format", Value: "text", Destination: &b.logFormat, Category: catReporting, Usage: "messages on stderr as `FORMAT`: text, or json (one object a line, with the job's number)"},
		}, profileFlags(&b.profile.profile)...),
		Action: func(c *cli.Context) error {
			b.indexSet, b.jobsSet = c.IsSet("index"), c.IsSet("jobs")
			b.args = c.Args().Slice()
			b.cmdline, _ = c.App.Metadata[argsKey].([]string)
			return withLogFormat(b.logFormat, env, func(env Env) error {
				// Profiles of the whole batch, all its jobs: where a job's start-up goes.
				return profiled(&b.profile, func() error { return runBatch(b, env, localFiles{}) })
			})
		},
	}
}

// batchFlags are the batch's own flags.
type batchFlags struct {
	manifest, statsDir, logFormat string
	index, jobs                   int
	indexSet, jobsSet, quiet      bool
	profile                       config // its profile files only
	args, cmdline                 []string
}

// defaultJobs is one job per 4 CPUs, at least one: the cipher workers of a job use the others.
// It is the flag's value for help; a batch without -jobs takes its number from batchJobs.
func defaultJobs() int { return max(1, runtime.NumCPU()/4) }

// smallInput is the input size under which a job runs best with one cipher worker beside
// other jobs rather than with several workers alone. On 2 CPUs, many files of 1.7 to 139 MB
// all went faster as one job per CPU with one worker each than one job at a time with two
// workers; with three files of 139 MB, where the last runs alone on one worker, the two were
// even. Above it, that last job alone and the memory of one run per CPU (up to
// pipeline.MaxMemory each) weigh more than the start and end of a job.
const smallInput = 128 << 20

// batchJobs returns how many jobs a batch without -jobs runs at a time, given the sizes of
// their inputs (-1 for an input that is not a regular file) and the CPUs of the process. A job
// over a large input keeps several workers busy, so the batch runs one job per 4 CPUs, each with
// its share of the workers, and the jobs' own goroutines (reading, writing) use the rest. A job
// over a small input cannot: its run is short, and its start, its end and the cipher batches
// cut short at the end of its file are a large part of it, during which its other workers
// wait. When most inputs (the median) are small, the batch runs one job per CPU, each with one
// worker, so that every CPU is busy with a job of its own. An input that is not a regular file
// (a pipe, a device) counts as large: its size is unknown.
func batchJobs(sizes []int64, cpus int) int {
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
	if s[len(s)/2] < smallInput {
		return cpus
	}
	return max(1, cpus/4)
}

// jobFiles is what the batch itself asks of the storage its jobs' files are on, to tell a job
// that is done from one to run. A job's stream is read and written by the command's own input
// and output, as on the command line.
type jobFiles interface {
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

// localFiles are local paths, a mounted volume in a container.
type localFiles struct{}

func (localFiles) Size(path string) (int64, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return 0, err
	}
	if !fi.Mode().IsRegular() {
		return 0, fmt.Errorf("%s is not a regular file", path)
	}
	return fi.Size(), nil
}

func (localFiles) Stat(path string) (fs.FileInfo, error)      { return os.Stat(path) }
func (localFiles) ReadDir(path string) ([]fs.DirEntry, error) { return os.ReadDir(path) }
func (localFiles) ReadFile(path string) ([]byte, error)       { return os.ReadFile(path) }
func (localFiles) MkdirAll(path string) error                 { return os.MkdirAll(path, 0o755) }
func (localFiles) CheckWritable(dir string) error {
	// A file is made and removed: only that shows every reason (permissions, a read-only
	// volume, a full one) as the job would meet it.
	f, err := os.CreateTemp(dir, ".tsdescramble-check-*")
	if err != nil {
		return err
	}
	f.Close()
	return os.Remove(f.Name())
}

func (localFiles) Remove(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// job is one line of a manifest, read into the config of its run.
type job struct {
	index int
	line  int // of the manifest, from 1, for messages
	cfg   *config
	// statsDir says that the statistics' path was given by the batch's -stats-dir, not the
	// job's line.
	statsDir bool
}

// jobSpec is what a manifest line may say to a command: its flags by each of their names,
// worked out once per manifest. probe and bench write no stream and have nothing to skip or
// retry. The flags write into tmpl: a line is read into it, from the defaults, and copied out
// (building the flags anew for each line cost more than the rest of the line's reading).
type jobSpec struct {
	flags    []cli.Flag
	index    map[string]int // flags' positions by each of their names
	tmpl     *config
	defaults config
}

func jobSpecs() map[string]*jobSpec {
	specs := map[string]*jobSpec{}
	for name, mode := range map[string]pipeline.Mode{"descramble": pipeline.Descramble, "scramble": pipeline.Scramble} {
		sp := &jobSpec{tmpl: &config{mode: mode}, index: map[string]int{}}
		sp.flags = flagsOf(mode, sp.tmpl)
		setDefaults(sp.flags)
		sp.defaults = *sp.tmpl
		for i, f := range sp.flags {
			for _, n := range f.Names() {
				sp.index[n] = i
			}
		}
		specs[name] = sp
	}
	return specs
}

// readManifest parses every line of a manifest, so that one bad line fails each index alike,
// before any job runs. Values are never quoted in messages: manifests hold control words.
func readManifest(path string, data []byte) ([]*job, error) {
	specs := jobSpecs()
	var jobs []*job
	for n, text := range strings.Split(string(data), "\n") {
		if strings.TrimSpace(text) == "" {
			continue
		}
		cfg, err := decodeJob(text, specs)
		if err != nil {
			return nil, usageErr("%s line %d: %v", path, n+1, err)
		}
		jobs = append(jobs, &job{index: len(jobs), line: n + 1, cfg: cfg})
	}
	if len(jobs) == 0 {
		return nil, usageErr("%s lists no job: write one JSON object of flags per line", path)
	}
	return jobs, nil
}

// keyName is how a message names a manifest's key: not at all when it could be a control word.
func keyName(k string) string {
	if looksLikeKey(k) || !clihelp.IsFlagName(k) {
		return "a key"
	}
	return fmt.Sprintf("key %q", k)
}

// jsonPair is a key of a manifest line and its value.
type jsonPair struct {
	key string
	val any
}

// readPairs reads one manifest line: one JSON object, its keys in order, each once.
func readPairs(text string) ([]jsonPair, error) {
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, errors.New("not a JSON object: write one object of flags per line")
	}
	var pairs []jsonPair
	seen := map[string]bool{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, errors.New("not valid JSON")
		}
		k := t.(string)
		var v any
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("%s: not valid JSON", keyName(k))
		}
		if seen[k] {
			return nil, fmt.Errorf("%s is given twice", keyName(k))
		}
		seen[k] = true
		pairs = append(pairs, jsonPair{k, v})
	}
	if _, err := dec.Token(); err != nil {
		return nil, errors.New("not valid JSON")
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("more than one JSON object: write one per line")
	}
	return pairs, nil
}

// decodeJob reads one manifest line, an object whose keys are flag names and values theirs,
// into the config of its run: each value goes through the flag of its name into the field the
// command line writes, so that the manifest and the command line have one parser.
func decodeJob(text string, specs map[string]*jobSpec) (*config, error) {
	pairs, err := readPairs(text)
	if err != nil {
		return nil, err
	}
	name := "descramble"
	for _, p := range pairs {
		if p.key == "command" {
			s, ok := p.val.(string)
			if _, known := specs[s]; !ok || !known {
				return nil, errors.New(`"command": want "descramble" or "scramble"`)
			}
			name = s
		}
	}
	sp := specs[name]
	*sp.tmpl = sp.defaults
	c, flags := sp.tmpl, sp.flags
	c.given = map[string]bool{}
	for _, p := range pairs {
		if p.key == "command" {
			continue
		}
		i, ok := sp.index[p.key]
		if !ok {
			return nil, unknownKey(p.key, name, sp)
		}
		primary := flags[i].Names()[0]
		switch primary {
		case "metrics":
			return nil, fmt.Errorf("%s: jobs that run side by side cannot listen on one address; -metrics is for a single run", keyName(p.key))
		case "cpuprofile", "memprofile":
			return nil, fmt.Errorf("%s: a profile is of the whole process, and jobs run side by side in it", keyName(p.key))
		case "log-format":
			return nil, fmt.Errorf("%s: the jobs' messages are the batch's: give -log-format to the batch", keyName(p.key))
		}
		if c.given[primary] {
			return nil, fmt.Errorf("%s and another name of -%s are both given: give it once", keyName(p.key), primary)
		}
		c.given[primary] = true
		if err := setFlag(flags[i], p.val); err != nil {
			return nil, fmt.Errorf("%s: %v", keyName(p.key), err)
		}
	}
	for need, v := range map[string]string{"in": c.in, "out": c.out} {
		switch {
		case !c.given[need]:
			return nil, fmt.Errorf("no %q: every job names its %sput file", need, need)
		case v == "-":
			return nil, fmt.Errorf("%q: a job reads and writes files, not stdin or stdout", need)
		}
	}
	job := *c
	return &job, nil
}

// unknownKey is the error of a manifest key that names no flag of the job's command.
func unknownKey(key, command string, sp *jobSpec) error {
	help := "tsdescramble -h"
	if command != "descramble" {
		help = "tsdescramble " + command + " -h"
	}
	if s := clihelp.SimilarFlag(key, sp.flags); s != "" && !looksLikeKey(key) {
		return fmt.Errorf("unknown %s: did you mean %q? (the keys are the flags %s lists)", keyName(key), s, help)
	}
	return fmt.Errorf("unknown %s (the keys are the flags %s lists, without the dash)", keyName(key), help)
}

// setFlag writes a JSON value through flag f: a switch takes true or false, a number flag a
// whole number, a duration its text ("10s"), any other a string (or a number, as it stands).
func setFlag(f cli.Flag, v any) error {
	text, isText := v.(string)
	if n, ok := v.(json.Number); ok {
		text, isText = string(n), true
	}
	var err error
	switch f := f.(type) {
	case *cli.BoolFlag:
		b, ok := v.(bool)
		if !ok {
			return errors.New("a switch: want true or false")
		}
		*f.Destination = b
	case *cli.IntFlag:
		n, ok := v.(json.Number)
		if *f.Destination, err = strconv.Atoi(string(n)); !ok || err != nil {
			return errors.New("want a whole number")
		}
	case *cli.Int64Flag:
		if *f.Destination, err = strconv.ParseInt(text, 0, 64); !isText || err != nil {
			return errors.New("want a whole number")
		}
	case *cli.DurationFlag:
		if *f.Destination, err = time.ParseDuration(text); !isText || err != nil {
			return errors.New("want a duration (10s, 1m30s)")
		}
	case *cli.StringFlag:
		if !isText {
			return errors.New("want a string")
		}
		*f.Destination = text
	}
	return nil
}

// jobIndex returns the one job to run, or -1 for all of them.
func jobIndex(b *batchFlags, n int) (int, error) {
	var i int
	switch {
	case b.indexSet:
		i = b.index
	case os.Getenv(indexEnv) != "":
		var err error
		if i, err = strconv.Atoi(strings.TrimSpace(os.Getenv(indexEnv))); err != nil {
			return 0, usageErr("$%s: want a job number from 0 to %d", indexEnv, n-1)
		}
	default:
		return -1, nil
	}
	if i < 0 || i >= n {
		return 0, usageErr("job %d: the manifest lists jobs 0 to %d", i, n-1)
	}
	return i, nil
}

func runBatch(b *batchFlags, env Env, files jobFiles) error {
	jobs, index, parallel, own, err := loadJobs(b, env, files)
	if err != nil {
		return err
	}
	if index >= 0 {
		jobs, parallel = jobs[index:index+1], 1
	}
	parallel = min(parallel, len(jobs))
	// Each job gets its share of the cipher workers, unless its line says how many.
	share := max(1, runtime.GOMAXPROCS(0)/parallel)
	for _, j := range jobs {
		if !j.cfg.isSet("workers") {
			j.cfg.workers = share
		}
		if b.quiet && !j.cfg.isSet("quiet") && !j.cfg.isSet("verbose") {
			j.cfg.quiet = true
		}
	}
	defer tuneGC(parallel)()
	r := &batchRun{env: env, files: files, quiet: b.quiet, status: make([]int, len(jobs)), skipped: make([]bool, len(jobs)),
		leftovers: findLeftovers(jobs, files, own)}
	r.runAll(jobs, parallel)
	return r.result(jobs, index >= 0)
}

// loadJobs reads and checks the manifest and the batch's flags: the jobs, the one to run (or
// -1), how many run at a time, and the jobs' files.
func loadJobs(b *batchFlags, env Env, files jobFiles) (jobs []*job, index, parallel int, own *jobFileSet, err error) {
	if len(b.args) > 0 {
		return nil, 0, 0, nil, strayArgument(b.args, b.cmdline)
	}
	path := b.manifest
	if path == "" {
		return nil, 0, 0, nil, usageErr("batch needs -manifest FILE: one JSON object of flags per job, per line")
	}
	data, err := files.ReadFile(path)
	if err != nil {
		return nil, 0, 0, nil, usageErr("cannot read the manifest: %v", unwrapPath(err))
	}
	if jobs, err = readManifest(path, data); err != nil {
		return nil, 0, 0, nil, err
	}
	parallel = b.jobs
	if parallel < 1 || parallel > 1024 {
		return nil, 0, 0, nil, usageErr("-jobs: want a number from 1 to 1024")
	}
	if index, err = jobIndex(b, len(jobs)); err != nil {
		return nil, 0, 0, nil, err
	}
	if index < 0 && !b.jobsSet {
		sizes := make([]int64, len(jobs))
		for i, j := range jobs {
			if sizes[i], err = files.Size(j.cfg.in); err != nil {
				sizes[i] = -1 // missing, or not a regular file: the job says which
			}
		}
		parallel = min(batchJobs(sizes, runtime.GOMAXPROCS(0)), 1024)
	}
	if b.statsDir != "" {
		for _, j := range jobs {
			if j.cfg.stats != "" {
				return nil, 0, 0, nil, usageErr("%s line %d: \"stats\" and -stats-dir both name where the statistics go: give one", path, j.line)
			}
			j.cfg.stats, j.statsDir = filepath.Join(b.statsDir, strconv.Itoa(j.index)+".json"), true
			j.cfg.given["stats"] = true
		}
	}
	// Every job's files, before anything is created or removed, even with -index: the pods of
	// an Indexed Job run side by side, and each refuses the manifest alike.
	if own, err = checkJobFiles(path, jobs, env.Stderr); err != nil {
		return nil, 0, 0, nil, err
	}
	return jobs, index, parallel, own, makeStatsDir(b.statsDir, files)
}

// makeStatsDir makes -stats-dir and checks that it takes files.
func makeStatsDir(dir string, files jobFiles) error {
	if dir == "" {
		return nil
	}
	if err := files.MkdirAll(dir); err != nil {
		return usageErr("-stats-dir %s: cannot create it: %v: give a directory the batch can write", dir, pathReason(err))
	}
	// A directory that exists but takes no file (a read-only volume) is the same mistake as one
	// that cannot be made, and as a -stats FILE that cannot be written: a usage error before
	// any job runs, not each job failing to replace its statistics.
	if err := files.CheckWritable(dir); err != nil {
		return usageErr("-stats-dir %s: cannot write in it: %v: give a directory the batch can write", dir, pathReason(err))
	}
	return nil
}

// runAll runs the jobs, parallel at a time, until all ran or a signal stops the batch.
func (b *batchRun) runAll(jobs []*job, parallel int) {
	env := b.env
	// A stop signal stops the handing out of jobs. A job that has begun its run stops as the
	// command does, by its own handler (signals.go); one still opening its input or reading
	// its keys has none yet, and could wait on a stalled input for ever: the batch ends
	// itself once the jobs have had their stopGrace, or at a second signal.
	stop := make(chan os.Signal, 2)
	signal.Notify(stop, stopSignals...)
	defer signal.Stop(stop)
	stopping, finished := make(chan struct{}), make(chan struct{})
	defer close(finished)
	quitWhenNoJobDoes(env, finished)
	go func() {
		select {
		case s := <-stop:
			b.stopped.Store(&s)
			close(stopping)
			select {
			case <-stop:
			case <-time.After(stopGrace + time.Second):
			case <-finished:
				return
			}
			fmt.Fprintf(env.Stderr, "tsdescramble: batch stopped at once by %s: a job had not stopped\n", signalName(s))
			os.Exit(signalStatus(s))
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

// quitWhenNoJobDoes ends the batch at once on a quit signal (SIGQUIT) until finished is
// closed, unless a job ends the process first. A job that has begun its run ends itself at
// once, its output put aside (signals.go), as the command does; the batch waits for that, up to
// stopGrace, and ends itself when no job was listening (one opening its input, or between two
// jobs). Listening for the quit signals for the whole batch spares each job the cost of
// turning the signal's handling on and off (about 70 us a job, the runtime's signal thread
// woken twice each time), and gives a quit between two jobs the command's exit status
// rather than Go's dump of the goroutines.
func quitWhenNoJobDoes(env Env, finished <-chan struct{}) {
	var sigs []os.Signal
	for _, sig := range quitSignals {
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
			if quitHandlers.Load() > 0 {
				select {
				case <-time.After(stopGrace):
				case <-finished:
				}
			}
			fmt.Fprintf(env.Stderr, "tsdescramble: batch stopped at once by %s\n", signalName(s))
			os.Exit(signalStatus(s))
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

// tuneGC sets the collector's target for a batch of parallel jobs, unless GOGC or GOMEMLIMIT
// say otherwise, and returns what restores it. The soft memory limit is what the jobs may
// hold at once (pipeline.MaxMemory each) plus 64 MiB for the rest: the collector runs when the
// garbage of the jobs before fills that room, not after each one.
func tuneGC(parallel int) (restore func()) {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	limit := int64(parallel)*pipeline.MaxMemory + 64<<20
	oldPercent := debug.SetGCPercent(batchGCPercent)
	oldLimit := debug.SetMemoryLimit(limit)
	return func() {
		debug.SetGCPercent(oldPercent)
		debug.SetMemoryLimit(oldLimit)
	}
}

// batchRun is the state of a batch's jobs.
type batchRun struct {
	env     Env
	files   jobFiles
	quiet   bool
	mu      sync.Mutex // serializes the lines of the jobs' messages
	status  []int      // by position in the batch's job list
	skipped []bool
	stopped atomic.Pointer[os.Signal] // the signal that stopped the batch before every job ran
	// leftovers are the files earlier runs left beside each job's output, by job number:
	// removed once the job's output is in place (batchfiles.go).
	leftovers map[int][]leftover
}

// batchJobStarts, when not nil, is called as each job of a batch begins, with its number and
// its config: tests see through it how the jobs were spread.
var batchJobStarts func(index int, c *config)

// run runs one job (or skips it) and records its exit status.
func (b *batchRun) run(i int, j *job) {
	if batchJobStarts != nil {
		batchJobStarts(j.index, j.cfg)
	}
	stderr := &linePrefixer{w: b.env.Stderr, mu: &b.mu, prefix: fmt.Sprintf("job %d: ", j.index)}
	defer stderr.flush()
	if b.done(j) {
		b.skipped[i] = true
		if !b.quiet {
			fmt.Fprintf(stderr, "tsdescramble: skipped: %s exists and %s says it was written from %s\n", j.cfg.out, j.cfg.stats, j.cfg.in)
		}
		b.removeLeftovers(j, stderr)
		return
	}
	if j.cfg.stats != "" {
		// Statistics of an earlier attempt must not vouch for this one, should it fail
		// before it writes its own. No job reads this file, nor writes it but this one: the
		// manifest was refused otherwise (checkJobFiles).
		if err := b.files.Remove(j.cfg.stats); err != nil {
			fmt.Fprintf(stderr, "tsdescramble: cannot remove the statistics of an earlier run: %v\n", unwrapPath(err))
			b.status[i] = exitFail
			return
		}
	}
	b.status[i] = errorStatus(process(j.cfg, Env{Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: stderr}), Env{Stderr: stderr})
	if b.status[i] == exitOK {
		b.removeLeftovers(j, stderr)
	}
}

// removeLeftovers removes what earlier runs of a job left beside its output, now in place, and
// says so; a file that cannot be removed is a note, not a failure of the job.
func (b *batchRun) removeLeftovers(j *job, stderr io.Writer) {
	ls := b.leftovers[j.index]
	if len(ls) == 0 {
		return
	}
	removed, err := removeLeftovers(ls, b.files)
	if len(removed) > 0 && !b.quiet {
		fmt.Fprintf(stderr, "tsdescramble: removed what an earlier run left beside %s: %s\n", j.cfg.out, strings.Join(removed, ", "))
	}
	if err != nil {
		fmt.Fprintf(stderr, "tsdescramble: cannot remove what an earlier run left beside %s: %v\n", j.cfg.out, unwrapPath(err))
	}
}

// done reports whether a job finished before: its statistics say that the run exited 0 having
// read this very input, as it is now, and put this output in place, of the size it has now.
// Sizes alone took a stale or foreign file for done: an input rewritten with another recording
// of the same size, another job's statistics (a manifest whose lines moved, a -stats-dir
// used before), or an output of another job. The statistics name the files by absolute path
// and give the input's modification time as the run began (report.go, runFiles); statistics
// without them, from an older version, are not taken for done: the job runs once more.
func (b *batchRun) done(j *job) bool {
	in, out, stats := j.cfg.in, j.cfg.out, j.cfg.stats
	if stats == "" {
		return false
	}
	data, err := b.files.ReadFile(stats)
	if err != nil {
		return false
	}
	var st struct {
		ExitStatus *int     `json:"exit_status"`
		BytesIn    int64    `json:"bytes_in"`
		BytesOut   int64    `json:"bytes_out"`
		Files      runFiles `json:"files"`
	}
	if json.Unmarshal(data, &st) != nil || st.ExitStatus == nil || *st.ExitStatus != exitOK {
		return false
	}
	fin, fout := st.Files.In, st.Files.Out
	if fin == nil || fout == nil || fin.Path != absPath(in) || fout.Path != absPath(out) {
		return false
	}
	ofi, err := b.files.Stat(out)
	if err != nil || !ofi.Mode().IsRegular() || ofi.Size() != fout.Size || fout.Size != st.BytesOut {
		return false
	}
	ifi, err := b.files.Stat(in)
	return err == nil && ifi.Mode().IsRegular() && ifi.Size() == fin.Size && fin.Size == st.BytesIn && ifi.ModTime().Equal(fin.ModTime)
}

// result says how the batch went and returns its exit status (see the command's description).
func (b *batchRun) result(jobs []*job, one bool) error {
	if s := b.stopped.Load(); s != nil {
		return &exitError{code: signalStatus(*s), msg: fmt.Sprintf("batch stopped by %s: jobs not started were left for a later run", signalName(*s))}
	}
	if one {
		return &exitError{code: b.status[0]}
	}
	var ok, skipped int
	var failed []string
	code := exitOK
	rank := map[int]int{exitFail: 3, exitUsage: 2, exitNoFit: 1}
	for i, j := range jobs {
		switch s := b.status[i]; {
		case b.skipped[i]:
			skipped++
		case s == exitOK:
			ok++
		default:
			failed = append(failed, fmt.Sprintf("job %d (exit %d)", j.index, s))
			if s > 128 {
				code = s // stopped by a signal
			} else if code <= 128 && rank[s] > rank[code] {
				code = s
			}
		}
	}
	msg := fmt.Sprintf("batch of %d jobs: %d succeeded, %d skipped (done before), %d failed", len(jobs), ok, skipped, len(failed))
	if len(failed) > 0 {
		if len(failed) > 10 {
			failed = append(failed[:10], fmt.Sprintf("and %d more", len(failed)-10))
		}
		msg += ": " + strings.Join(failed, ", ")
	}
	if code == exitOK {
		if !b.quiet {
			fmt.Fprintln(b.env.Stderr, "tsdescramble: "+msg)
		}
		return nil
	}
	return &exitError{code: code, msg: msg}
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
	const name = "tsdescramble: "
	var out []byte
	if rest, ok := bytes.CutPrefix(line, []byte(name)); ok {
		out = append([]byte(name+l.prefix), rest...)
	} else {
		out = append([]byte(l.prefix), line...)
	}
	l.mu.Lock()
	l.w.Write(out)
	l.mu.Unlock()
}

// flush writes a last line that had no newline.
func (l *linePrefixer) flush() {
	if len(l.buf) > 0 {
		l.emit(append(l.buf, '\n'))
		l.buf = nil
	}
}
