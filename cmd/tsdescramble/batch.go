package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/tsdescramble/tsdescramble/internal/batch"
	"github.com/tsdescramble/tsdescramble/internal/clihelp"
	"github.com/tsdescramble/tsdescramble/internal/report"
	"github.com/tsdescramble/tsdescramble/internal/runfiles"
	"github.com/tsdescramble/tsdescramble/pipeline"
	"github.com/tsdescramble/tsdescramble/scrambling"
)

// batch runs a manifest of jobs (internal/batch), one descrambling or scrambling run each:
// every job on this machine (-jobs at a time), or the one job of an Indexed Job's pod (-index,
// or JOB_COMPLETION_INDEX). A job runs in this process through the command's own process, with
// the manifest's values read into its config (decodeJob).

// indexEnv is the variable Kubernetes sets in each pod of an Indexed Job.
const indexEnv = "JOB_COMPLETION_INDEX"

func batchCommand(env Env) *cli.Command {
	b := &batchFlags{}
	return &cli.Command{
		Name:      "batch",
		Usage:     "run the jobs of a manifest: all, or the one a scheduler's index names",
		UsageText: "tsdescramble batch [flags]   (-manifest FILE [-index N] [-jobs J] [-stats-dir DIR]; -count -manifest FILE)",
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
would replace a job's input, key file, output or statistics is refused before any job runs, as
is one with a line that is not an object of known flags: exit 2, for every index. A value wrong
for one job (a key file or an input that is not there, a bad CW) fails that job alone with
exit 4, and so does an index past the manifest's end; their statistics say why. Without -index
the values of every job are checked before the first runs, each job refused named on a line of
its own, and the others run. The exit status is the job's with -index; for a whole manifest it
is 0 when every job succeeded or was skipped, else 1 when a job failed in a way a retry may
mend (I/O), else 4 (a job's values), else 3 (keys that do not fit). -count prints the number
of jobs (blank lines are none), the completions of an Indexed Job, and runs none.
Examples:
   tsdescramble batch -manifest jobs.jsonl -stats-dir stats
   JOB_COMPLETION_INDEX=4 tsdescramble batch -manifest /data/jobs.jsonl -stats-dir /data/stats
   tsdescramble batch -count -manifest jobs.jsonl`,
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "manifest", Destination: &b.manifest, TakesFile: true, Category: catIO, Usage: "the jobs: a JSON Lines `FILE`, one object of flags per job"},
			&cli.IntFlag{Name: "index", Destination: &b.index, Category: catIO, Usage: "run job `N` only (from 0; absent: $" + indexEnv + " if set, else every job)"},
			&cli.BoolFlag{Name: "count", Destination: &b.count, Category: catIO, Usage: "print the number of jobs the manifest lists and run none: an Indexed Job's completions"},
			&cli.IntFlag{Name: "jobs", Value: batch.DefaultJobs(), Destination: &b.jobs, DefaultText: "one per 4 CPUs; one per CPU when most inputs are under " + strconv.Itoa(batch.SmallInput>>20) + " MiB", Category: catTuning, Usage: "`J` jobs at a time, each with its share of the workers"},
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
				return profiled(&b.profile, func() error { return runBatch(b, env, batch.Local{}) })
			})
		},
	}
}

// batchFlags are the batch's own flags.
type batchFlags struct {
	manifest, statsDir, logFormat string
	index, jobs                   int
	indexSet, jobsSet, quiet      bool
	count                         bool
	profile                       config // its profile files only
	args, cmdline                 []string
}

// job is one line of a manifest, read into the config of its run.
type job struct {
	*batch.Job // its number and line, then, once the batch's flags are read, the rest
	cfg        *config
}

// jobSpec is what a manifest line may say to a command: its flags by each of their names,
// worked out once per manifest. probe and bench write no stream and have nothing to skip or
// retry. The flags write into tmpl: a line is read into it, from the defaults, and copied out
// (building the flags anew for each line cost more than the rest of the line's reading).
type jobSpec struct {
	flags    []cli.Flag
	index    map[string]int // flags' positions by each of their names
	primary  []string       // flags' first names
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
			sp.primary = append(sp.primary, f.Names()[0])
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
		jobs = append(jobs, &job{Job: &batch.Job{Index: len(jobs), Line: n + 1}, cfg: cfg})
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
		primary := sp.primary[i]
		switch primary {
		case "metrics":
			return nil, fmt.Errorf("%s: jobs that run side by side cannot listen on one address; -metrics is for a single run", keyName(p.key))
		case "cpuprofile", "memprofile":
			return nil, fmt.Errorf("%s: a profile is of the whole process, and jobs run side by side in it", keyName(p.key))
		case "log-format":
			return nil, fmt.Errorf("%s: the jobs' messages are the batch's: give -log-format to the batch", keyName(p.key))
		case "keys", "config":
			return nil, fmt.Errorf("%s: a job is one stream with one key source: run a whole multiplex with tsdescramble -config FILE", keyName(p.key))
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

// jobIndex returns the one job to run, or -1 for all of them. An index past the manifest's
// end is returned as it is: it fails alone (pastEnd).
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
	if i < 0 {
		return 0, usageErr("job %d: want a job number from 0 (the manifest lists jobs 0 to %d)", i, n-1)
	}
	return i, nil
}

// pastEnd is the exit of the pod of an index past the manifest's end: that index fails alone,
// with a job's exit status and statistics that say why, and the indexes the manifest lists run.
// The manifest is the same for every pod; a Job with more completions than the manifest has
// jobs (completions counted with wc -l, over blank lines) is wrong only in those indexes.
func pastEnd(b *batchFlags, i, n int, own *batch.FileSet, stderr io.Writer) error {
	msg := fmt.Sprintf("job %d: the manifest lists jobs 0 to %d: give the Job %d completions (tsdescramble batch -count -manifest FILE)", i, n-1, n)
	if b.statsDir != "" {
		path := filepath.Join(b.statsDir, strconv.Itoa(i)+".json")
		if own.Has(path) {
			// A file a job names is never written but by that job.
			return &exitError{code: exitJob, msg: msg}
		}
		if err := report.WriteOutcome(path, exitJob, msg, nil); err != nil {
			logWarn(stderr, fmt.Sprintf("cannot write the statistics: %v", runfiles.UnwrapPath(err)))
		}
	}
	return &exitError{code: exitJob, msg: msg}
}

// countJobs prints the number of jobs of the manifest, as a batch counts them.
func countJobs(b *batchFlags, env Env, files batch.Files) error {
	if b.indexSet {
		return usageErr("-count runs no job: give it without -index")
	}
	jobs, err := manifestJobs(b, files)
	if err != nil {
		return err
	}
	fmt.Fprintln(env.Stdout, len(jobs))
	return nil
}

func runBatch(b *batchFlags, env Env, files batch.Files) error {
	if b.count {
		return countJobs(b, env, files)
	}
	jobs, index, parallel, own, err := loadJobs(b, env, files)
	if err != nil {
		return err
	}
	if index >= len(jobs) {
		return pastEnd(b, index, len(jobs), own, env.Stderr)
	}
	if index >= 0 {
		jobs, parallel = jobs[index:index+1], 1
	}
	parallel = min(parallel, len(jobs))
	// Each job gets its share of the cipher workers, unless its line says how many.
	share := max(1, runtime.GOMAXPROCS(0)/parallel)
	run := make([]*batch.Job, len(jobs))
	for i, j := range jobs {
		if !j.cfg.isSet("workers") {
			j.cfg.workers = share
		}
		if b.quiet && !j.cfg.isSet("quiet") && !j.cfg.isSet("verbose") {
			j.cfg.quiet = true
		}
		run[i] = j.Job
	}
	defer batch.TuneGC(parallel, pipeline.MaxMemory)()
	code, msg := batch.Run(run, parallel, index >= 0, b.quiet, files, own, env.Stderr)
	if code == exitOK {
		if !b.quiet && msg != "" {
			fmt.Fprintln(env.Stderr, "tsdescramble: "+msg)
		}
		return nil
	}
	return &exitError{code: code, msg: msg}
}

// loadJobs reads and checks the manifest and the batch's flags: the jobs, the one to run (or
// -1), how many run at a time, and the jobs' files.
func loadJobs(b *batchFlags, env Env, files batch.Files) (jobs []*job, index, parallel int, own *batch.FileSet, err error) {
	if jobs, err = manifestJobs(b, files); err != nil {
		return nil, 0, 0, nil, err
	}
	path := b.manifest
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
		parallel = min(batch.Jobs(sizes, runtime.GOMAXPROCS(0)), 1024)
	}
	run := make([]*batch.Job, len(jobs))
	for i, j := range jobs {
		if b.statsDir != "" {
			if j.cfg.stats != "" {
				return nil, 0, 0, nil, usageErr("%s line %d: \"stats\" and -stats-dir both name where the statistics go: give one", path, j.Line)
			}
			j.cfg.stats = filepath.Join(b.statsDir, strconv.Itoa(j.Index)+".json")
			j.cfg.given["stats"] = true
		}
		j.Job = newBatchJob(j.Index, j.Line, j.cfg, b.statsDir != "", fmt.Sprintf("%s line %d", path, j.Line))
		run[i] = j.Job
	}
	// Every job's files, before anything is created or removed, even with -index: the pods of
	// an Indexed Job run side by side, and each refuses the manifest alike.
	if own, err = batch.CheckFiles(path, run, env.Stderr); err != nil {
		return nil, 0, 0, nil, usageErr("%v", err)
	}
	return jobs, index, parallel, own, makeStatsDir(b.statsDir, files)
}

// manifestJobs reads the manifest -manifest names into its jobs.
func manifestJobs(b *batchFlags, files batch.Files) ([]*job, error) {
	if len(b.args) > 0 {
		return nil, strayArgument(b.args, b.cmdline)
	}
	path := b.manifest
	if path == "" {
		return nil, usageErr("batch needs -manifest FILE: one JSON object of flags per job, per line")
	}
	data, err := files.ReadFile(path)
	if err != nil {
		return nil, usageErr("cannot read the manifest: %v", runfiles.UnwrapPath(err))
	}
	return readManifest(path, data)
}

// batchJobStarts, when not nil, is called as each job of a batch begins its run, with its
// number and its config: tests see through it how the jobs were spread.
var batchJobStarts func(index int, c *config)

// newBatchJob is what the batch needs of a job: its files, how to check its values (checkJob)
// and how to run it (process, in this process, with the job's config). where names its line in
// the messages of the check, which a user reads to mend the manifest.
func newBatchJob(index, line int, c *config, statsDir bool, where string) *batch.Job {
	j := &batch.Job{Index: index, Line: line, In: c.in, Out: c.out, Stats: c.stats, StatsDir: statsDir, Hide: looksLikeKey}
	for _, ff := range fileFlags {
		ff = ff.of(c)
		p := ff.get(c)
		if p == "" || ff.stdio && (p == "-" || isNetwork(p)) {
			continue
		}
		j.Files = append(j.Files, batch.File{Flag: ff.name, Path: p, What: ff.describe(), Writes: ff.output(), Output: ff.name == "out"})
	}
	j.Check = func(stderr io.Writer) int {
		if err := checkJob(c); err != nil {
			return jobFailed(c, fmt.Errorf("%s: %s", where, errorMessage(err)), stderr)
		}
		return exitOK
	}
	j.Run = func(stderr io.Writer) int {
		if batchJobStarts != nil {
			batchJobStarts(index, c)
		}
		env := Env{Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: stderr}
		err := process(c, env)
		if errorCode(err) == exitUsage {
			// The manifest and the batch's flags were checked before any job ran: what the run
			// refuses is its line's values (a key of the wrong size for the system its PMT names).
			return jobFailed(c, err, stderr)
		}
		code := errorStatus(err, env)
		if code != exitOK && c.stats != "" {
			if _, serr := os.Lstat(c.stats); errors.Is(serr, fs.ErrNotExist) {
				// Failed before its statistics (an input that could not be read): the batch
				// removed those of an earlier run, and these say how this one ended.
				writeOutcome(c, code, errorMessage(err), stderr)
			}
		}
		return code
	}
	return j
}

// jobFailed ends a job whose own values are wrong: its message, its statistics, exit 4.
func jobFailed(c *config, err error, stderr io.Writer) int {
	msg := errorMessage(err)
	logError(stderr, msg)
	writeOutcome(c, exitJob, msg, stderr)
	return exitJob
}

// writeOutcome writes the statistics of a job that ended before its run, if it has any.
func writeOutcome(c *config, code int, msg string, stderr io.Writer) {
	if c.stats == "" {
		return
	}
	files := &runfiles.Records{In: runfiles.RecordOf(c.in, true)}
	if err := report.WriteOutcome(c.stats, code, msg, files); err != nil {
		logWarn(stderr, fmt.Sprintf("cannot write the statistics: %v", runfiles.UnwrapPath(err)))
	}
}

// errorMessage is the message of the error a run ended with, as errorStatus prints it.
func errorMessage(err error) string {
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.msg
	}
	return err.Error()
}

// checkJob finds what is wrong with a job's own values before any job of the batch runs: what
// validate refuses, keys that cannot be read, a file the job reads that is not there. It reads
// no stream. Without -cipher, the PMT of a descrambling run's input names the system, and with
// it the size of a key: the key passes if a system takes it, and the run checks it against the
// system it finds. What the check cannot tell (an I/O error) is left to the run, whose exit 1 a
// retry may mend.
func checkJob(c *config) error {
	cc := *c // validate keeps in the config what it reads: the run reads it afresh
	env := Env{Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: io.Discard}
	if err := validate(&cc, env); err != nil {
		return err
	}
	if err := checkJobKeys(&cc); err != nil {
		return err
	}
	return checkJobInputs(&cc)
}

// checkJobKeys reads a job's keys as its run would (openKeys), where they come from its flags.
func checkJobKeys(c *config) error {
	switch {
	case c.ksURL != nil || c.follow || c.ecmXor != "" || c.ecmCache != "":
		// Keys that come while the stream runs, or from its ECMs (an ECM cache's answers
		// too): nothing to read before; the run says what is wrong, as this job's.
	case c.mode == pipeline.Scramble && c.scsWanted() && !c.anyKeyFlag():
		// Random CWs, logged as they are made.
	default:
		sys, err := lookupSystem("cipher", c.cipher, c.lanes)
		if err != nil {
			return err
		}
		if _, err = readKeys(&c.keys, "", sys); err != nil {
			if c.mode != pipeline.Descramble || c.isSet("cipher") || !anySystemReads(c) {
				return err
			}
		}
	}
	if c.outSys != nil {
		_, err := readKeys(&c.rekeys, "rescramble-", c.outSys)
		return err
	}
	return nil
}

// anySystemReads reports whether a system other than -cipher's takes the keys of c's flags.
func anySystemReads(c *config) bool {
	for _, name := range scrambling.Names() {
		if name == c.cipher {
			continue
		}
		if sys, err := lookupSystem("cipher", name, c.lanes); err == nil {
			if _, err := readKeys(&c.keys, "", sys); err == nil {
				return true
			}
		}
	}
	return false
}

// checkJobInputs refuses a job whose input, or another file it reads, is not there or may not
// be read. Only a regular file is opened: opening a named pipe would wait for its writer.
func checkJobInputs(c *config) error {
	for _, f := range fileFlags {
		p := f.get(c)
		if f.output() || p == "" || f.stdio && (p == "-" || isNetwork(p)) {
			continue
		}
		fi, err := os.Stat(p)
		if err == nil && fi.IsDir() {
			return usageErr("-%s %s is a directory: name the %s", f.name, p, f.describe())
		}
		if err == nil && fi.Mode().IsRegular() {
			var fh *os.File
			if fh, err = os.Open(p); err == nil {
				fh.Close()
			}
		}
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) {
			if looksLikeKey(p) {
				// A control word given where the file's name belongs: not shown.
				return usageErr("-%s names no file that can be read", f.name)
			}
			return usageErr("cannot open the %s: %v", f.describe(), runfiles.UnwrapPath(err))
		}
	}
	return nil
}

// makeStatsDir makes -stats-dir and checks that it takes files.
func makeStatsDir(dir string, files batch.Files) error {
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
