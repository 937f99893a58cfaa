package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tsdescramble/tsdescramble/live"
)

// The files of a batch's jobs are checked together, before any job runs and before anything is
// created or removed: each job's run checks its own flags (checkPaths), but only as it starts,
// after the batch has removed the statistics of an earlier attempt, and it cannot see the
// other jobs. A job that wrote over what another reads, or two jobs that wrote one file,
// would lose a recording or a result, in an order that varies from run to run.

// jobFile is one file a job names: its input, a key file, its output and so on.
type jobFile struct {
	job  *job
	flag fileFlag
	path string
	// partial: the NAME.partial a stopped run keeps beside its output (output.go), which
	// replaces any file of that name.
	partial bool
}

// writes says whether the job's run writes the file (or may, for a .partial).
func (f jobFile) writes() bool { return f.flag.output() }

// label names the file as a message shows it: the manifest's key (or -stats-dir) and the path.
func (f jobFile) label() string {
	key := fmt.Sprintf("%q", f.flag.name)
	switch {
	case f.partial:
		key = fmt.Sprintf("%q (its .partial)", f.flag.name)
	case f.flag.name == "stats" && f.job.statsDir:
		key = "-stats-dir"
	}
	if looksLikeKey(f.path) {
		return key // a control word put where a path goes is never shown
	}
	return key + " " + f.path
}

// what says what the file is to its job.
func (f jobFile) what() string {
	switch {
	case f.partial:
		return "output's .partial (kept when a run is stopped)"
	case f.flag.what != "":
		return f.flag.what
	case f.flag.name == "in":
		return "input"
	case f.flag.name == "rescramble-cw-file":
		return "key file of the rescrambling"
	}
	return "key file"
}

// advice says what to change in the manifest so that the job writes a file of its own.
func (f jobFile) advice() string {
	switch {
	case f.flag.name == "stats" && f.job.statsDir:
		return "give -stats-dir a directory that holds none of the jobs' files"
	case f.flag.name == "stats":
		return fmt.Sprintf("write job %d's statistics elsewhere", f.job.index)
	case f.flag.name == "cw-log":
		return fmt.Sprintf("write job %d's CW log elsewhere", f.job.index)
	}
	return fmt.Sprintf("name another output for job %d", f.job.index)
}

// jobFileSet is every file of a batch's jobs but the .partial of their outputs, by identity
// (fileKeys).
type jobFileSet struct {
	fk   *fileKeys
	keys map[string]bool
}

// has reports whether path is one of the jobs' files.
func (s *jobFileSet) has(path string) bool {
	key, ok := s.fk.key(path)
	return ok && s.keys[key]
}

// maxFileProblems bounds the lines of a refused manifest: a manifest of thousands of jobs
// written to one output would otherwise print thousands.
const maxFileProblems = 20

// checkJobFiles refuses a manifest in which a job would write a file that a job (itself or
// another) reads or writes: an output, its .partial, the statistics or a CW log naming an
// input, a key file, or another of these. Files are compared by identity (fileKeys): a link,
// a hard link or another spelling of a path is the same file. Each problem is a line on
// stderr naming both jobs' lines and keys; the last is the error returned, a usage error. It
// returns the jobs' files otherwise.
func checkJobFiles(manifest string, jobs []*job, stderr io.Writer) (*jobFileSet, error) {
	fk := &fileKeys{}
	groups := map[string][]jobFile{}
	var order []string // of the keys, as first met, so that the messages keep the manifest's order
	add := func(f jobFile) {
		key, ok := fk.key(f.path)
		if !ok {
			return
		}
		if _, seen := groups[key]; !seen {
			order = append(order, key)
		}
		groups[key] = append(groups[key], f)
	}
	for _, j := range jobs {
		for _, ff := range fileFlags {
			p := ff.get(j.cfg) // -stats: the job's own, or the one -stats-dir gives it
			if p == "" || ff.stdio && (p == "-" || live.IsAddress(p)) {
				continue
			}
			add(jobFile{job: j, flag: ff, path: p})
			if ff.name == "out" && keptAsPartial(p) {
				add(jobFile{job: j, flag: ff, path: followLinks(p) + ".partial", partial: true})
			}
		}
	}
	set := &jobFileSet{fk: fk, keys: map[string]bool{}}
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
		fmt.Fprintln(stderr, "tsdescramble: "+p)
	}
	return nil, usageErr("%s", problems[len(problems)-1])
}

// fileProblem is the line that says that writer w would write the file o names.
func fileProblem(manifest string, w, o jobFile) string {
	if w.job == o.job {
		return fmt.Sprintf("%s line %d: %s and %s name the same file: the %s would replace the %s; %s",
			manifest, w.job.line, w.label(), o.label(), w.what(), o.what(), w.advice())
	}
	return fmt.Sprintf("%s: line %d %s and line %d %s name the same file: job %d's %s would replace job %d's %s; %s",
		manifest, w.job.line, w.label(), o.job.line, o.label(), w.job.index, w.what(), o.job.index, o.what(), w.advice())
}

// keptAsPartial reports whether an output path is written under a temporary name beside it,
// kept as NAME.partial when its run stops, as openOutput does for a regular file or a name
// that does not exist yet; a device or a named pipe is written directly.
func keptAsPartial(path string) bool {
	fi, err := os.Stat(path)
	return err != nil || fi.Mode().IsRegular()
}

// fileKeys gives each path a string that is the same for two paths when they name one file,
// or would once it is created: the device and inode of a file that exists (fileID), else the
// cleaned absolute path of the file its links lead to, with the links of its directory
// resolved. A device has none: it is never the same as anything (writing /dev/null twice
// replaces nothing). The directories resolved are kept: the outputs of thousands of jobs are
// in a few, and resolving the links of a path looks at each of its parts; so are the paths
// looked at, as many jobs read one key file.
type fileKeys struct {
	dirs  map[string]string
	paths map[string]string // "" for a device
}

func (k *fileKeys) key(path string) (string, bool) {
	if key, ok := k.paths[path]; ok {
		return key, key != ""
	}
	key, _ := k.lookUp(path)
	if k.paths == nil {
		k.paths = map[string]string{}
	}
	k.paths[path] = key
	return key, key != ""
}

func (k *fileKeys) lookUp(path string) (string, bool) {
	fi, err := os.Stat(path)
	if err == nil {
		if isDevice(fi) {
			return "", false
		}
		if id, ok := fileID(fi); ok {
			return "id:" + id, true
		}
		if r, err := filepath.EvalSymlinks(absPath(path)); err == nil {
			return "path:" + r, true
		}
	}
	p := absPath(followLinks(path))
	dir := filepath.Dir(p)
	r, ok := k.dirs[dir]
	if !ok {
		r = dir
		if d, err := filepath.EvalSymlinks(dir); err == nil {
			r = d
		}
		if k.dirs == nil {
			k.dirs = map[string]string{}
		}
		k.dirs[dir] = r
	}
	return "path:" + filepath.Join(r, filepath.Base(p)), true
}

// isFileFlag reports whether the flag of that name names a file (fileFlags).
func isFileFlag(name string) bool {
	return slices.ContainsFunc(fileFlags, func(f fileFlag) bool { return f.name == name })
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
func findLeftovers(jobs []*job, files jobFiles, own *jobFileSet) map[int][]leftover {
	byDir := map[string]map[string]*job{} // directory, then output name
	for _, j := range jobs {
		if out := j.cfg.out; out == "-" || live.IsAddress(out) || !keptAsPartial(out) {
			continue
		}
		dir, base := filepath.Split(followLinks(j.cfg.out))
		if dir == "" {
			dir = "."
		}
		if byDir[dir] == nil {
			byDir[dir] = map[string]*job{}
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
			j := bases[leftoverOf(e.Name())]
			if j == nil {
				continue
			}
			path := filepath.Join(dir, e.Name())
			fi, err := e.Info()
			if err != nil || own.has(path) {
				continue
			}
			found[j.index] = append(found[j.index], leftover{path, fi.Size(), fi.ModTime()})
		}
	}
	return found
}

// leftoverOf returns the name of the output whose temporary file (".NAME.N.tmp", N a number
// as createTemp writes it) or .partial (NAME.partial) name is, or "".
func leftoverOf(name string) string {
	if base, ok := strings.CutSuffix(name, ".partial"); ok {
		return base
	}
	rest, ok := strings.CutPrefix(name, ".")
	if !ok {
		return ""
	}
	if rest, ok = strings.CutSuffix(rest, ".tmp"); !ok {
		return ""
	}
	i := strings.LastIndexByte(rest, '.')
	if i <= 0 {
		return ""
	}
	n, err := strconv.ParseUint(rest[i+1:], 10, 32)
	if err != nil || strconv.FormatUint(n, 10) != rest[i+1:] {
		return ""
	}
	return rest[:i]
}

// removeLeftovers removes the leftovers of a job whose output is in place, each only if it is
// as it was when the batch began: one written since is another run's, still going. It returns
// the names removed.
func removeLeftovers(ls []leftover, files jobFiles) (removed []string, err error) {
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
