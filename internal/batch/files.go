package batch

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"time"

	"github.com/tsdescramble/tsdescramble/internal/logline"
	"github.com/tsdescramble/tsdescramble/internal/runfiles"
)

// The files of a batch's jobs are checked together, before any job runs and before anything is
// created or removed: each job's run checks its own flags (checkPaths), but only as it starts,
// after the batch has removed the statistics of an earlier attempt, and it cannot see the
// other jobs. A job that wrote over what another reads, or two jobs that wrote one file,
// would lose a recording or a result, in an order that varies from run to run.

// jobFile is one file a job names: its input, a key file, its output and so on.
type jobFile struct {
	job  *Job
	flag File
	path string
	// partial: the NAME.partial a stopped run keeps beside its output , which
	// replaces any file of that name.
	partial bool
}

// writes says whether the job's run writes the file (or may, for a .partial).
func (f jobFile) writes() bool { return f.flag.Writes }

// label names the file as a message shows it: the manifest's key (or -stats-dir) and the path.
func (f jobFile) label() string {
	key := fmt.Sprintf("%q", f.flag.Flag)
	switch {
	case f.partial:
		key = fmt.Sprintf("%q (its .partial)", f.flag.Flag)
	case f.flag.Flag == "stats" && f.job.StatsDir:
		key = "-stats-dir"
	}
	if f.job.hide(f.path) {
		return key // a control word put where a path goes is never shown
	}
	return key + " " + f.path
}

// what says what the file is to its job.
func (f jobFile) what() string {
	switch {
	case f.partial:
		return "output's .partial (kept when a run is stopped)"
	}
	return f.flag.What
}

// advice says what to change in the manifest so that the job writes a file of its own.
func (f jobFile) advice() string {
	switch {
	case f.flag.Flag == "stats" && f.job.StatsDir:
		return "give -stats-dir a directory that holds none of the jobs' files"
	case f.flag.Flag == "stats":
		return fmt.Sprintf("write job %d's statistics elsewhere", f.job.Index)
	case f.flag.Flag == "cw-log":
		return fmt.Sprintf("write job %d's CW log elsewhere", f.job.Index)
	}
	return fmt.Sprintf("name another output for job %d", f.job.Index)
}

// FileSet is every file of a batch's jobs but the .partial of their outputs, by identity
// (fileKeys).
type FileSet struct {
	fk   *runfiles.Keys
	keys map[string]bool
}

// Has reports whether path is one of the jobs' files.
func (s *FileSet) Has(path string) bool {
	key, ok := s.fk.Key(path)
	return ok && s.keys[key]
}

// maxFileProblems bounds the lines of a refused manifest: a manifest of thousands of jobs
// written to one output would otherwise print thousands.
const maxFileProblems = 20

// CheckFiles refuses a manifest in which a job would write a file that a job (itself or
// another) reads or writes: an output, its .partial, the statistics or a CW log naming an
// input, a key file, or another of these. Files are compared by identity (fileKeys): a link,
// a hard link or another spelling of a path is the same file. Each problem is a line on
// stderr naming both jobs' lines and keys; the last is the error returned (a usage error). It
// returns the jobs' files otherwise.
func CheckFiles(manifest string, jobs []*Job, stderr io.Writer) (*FileSet, error) {
	fk := &runfiles.Keys{}
	groups := map[string][]jobFile{}
	var order []string // of the keys, as first met, so that the messages keep the manifest's order
	add := func(f jobFile) {
		key, ok := fk.Key(f.path)
		if !ok {
			return
		}
		if _, seen := groups[key]; !seen {
			order = append(order, key)
		}
		groups[key] = append(groups[key], f)
	}
	for _, j := range jobs {
		for _, ff := range j.Files {
			p := ff.Path
			add(jobFile{job: j, flag: ff, path: p})
			if ff.Output && runfiles.KeptAsPartial(p) {
				add(jobFile{job: j, flag: ff, path: runfiles.FollowLinks(p) + ".partial", partial: true})
			}
		}
	}
	set := &FileSet{fk: fk, keys: map[string]bool{}}
	var problems []string
	for _, key := range order {
		g := groups[key]
		// A .partial is no file of the jobs to keep: it is what removeLeftovers removes.
		if slices.ContainsFunc(g, func(f jobFile) bool { return !f.partial }) {
			set.keys[key] = true
		}
		// Each file that shares the identity of the first is a problem unless both are read:
		// jobs that read one key file or one input are common.
		for _, f := range g[1:] {
			if !f.writes() && !g[0].writes() || f.partial && g[0].partial {
				// Two .partial files are one only for outputs that are one, said already.
				continue
			}
			w, o := f, g[0]
			if !f.writes() {
				w, o = g[0], f
			}
			problems = append(problems, fileProblem(manifest, w, o))
		}
	}
	if len(problems) == 0 {
		return set, nil
	}
	if n := len(problems); n > maxFileProblems {
		problems = append(problems[:maxFileProblems-1], fmt.Sprintf("%s: and %d more files that jobs share in this way", manifest, n-maxFileProblems+1))
	}
	for _, p := range problems[:len(problems)-1] {
		logline.Write(stderr, logline.Error, "tsdescramble: "+p)
	}
	return nil, errors.New(problems[len(problems)-1])
}

// fileProblem is the line that says that writer w would write the file o names.
func fileProblem(manifest string, w, o jobFile) string {
	if w.job == o.job {
		return fmt.Sprintf("%s line %d: %s and %s name the same file: the %s would replace the %s; %s",
			manifest, w.job.Line, w.label(), o.label(), w.what(), o.what(), w.advice())
	}
	return fmt.Sprintf("%s: line %d %s and line %d %s name the same file: job %d's %s would replace job %d's %s; %s",
		manifest, w.job.Line, w.label(), o.job.Line, o.label(), w.job.Index, w.what(), o.job.Index, o.what(), w.advice())
}

// leftover is a file that an earlier run of a job left beside its output: the temporary file
// of a run that was killed (openOutput names it "." NAME "." a random number ".tmp"), or
// NAME.partial, the packets of a run that was stopped or failed. A later run of the job that
// puts its output in place, or finds it done, removes them: they hold nothing the output does
// not, and a killed run's temporary file can be as large as the recording.
type leftover struct {
	path string
	size int64
	mod  time.Time
}

// findLeftovers lists the leftovers beside the outputs of jobs, by one look at each output's
// directory, before any job runs: a file written while the batch runs (another process
// writing the same output) is none. Only names that are exactly ours for a job's output are
// taken, and never a file that one of the jobs names (own).
func findLeftovers(jobs []*Job, files Files, own *FileSet) map[int][]leftover {
	byDir := map[string]map[string]*Job{} // directory, then output name
	for _, j := range jobs {
		if !j.outputFile() || !runfiles.KeptAsPartial(j.Out) {
			continue
		}
		dir, base := filepath.Split(runfiles.FollowLinks(j.Out))
		if dir == "" {
			dir = "."
		}
		if byDir[dir] == nil {
			byDir[dir] = map[string]*Job{}
		}
		byDir[dir][base] = j
	}
	found := map[int][]leftover{}
	for dir, bases := range byDir {
		ents, err := files.ReadDir(dir)
		if err != nil {
			continue // the job says what is wrong with its output's directory
		}
		for _, e := range ents {
			if !e.Type().IsRegular() {
				continue // a link, a directory: not a file a run made
			}
			j := bases[runfiles.LeftoverOf(e.Name())]
			if j == nil {
				continue
			}
			path := filepath.Join(dir, e.Name())
			fi, err := e.Info()
			if err != nil || own.Has(path) {
				continue
			}
			found[j.Index] = append(found[j.Index], leftover{path, fi.Size(), fi.ModTime()})
		}
	}
	return found
}

// removeLeftovers removes the leftovers of a job whose output is in place, each only if it is
// as it was when the batch began: one written since is another run's, still going. It returns
// the names removed.
func removeLeftovers(ls []leftover, files Files) (removed []string, err error) {
	for _, l := range ls {
		fi, serr := files.Stat(l.path)
		if serr != nil || !fi.Mode().IsRegular() || fi.Size() != l.size || !fi.ModTime().Equal(l.mod) {
			continue
		}
		if rerr := files.Remove(l.path); rerr != nil {
			err = rerr
			continue
		}
		removed = append(removed, filepath.Base(l.path))
	}
	return removed, err
}
