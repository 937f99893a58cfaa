package main

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/tsdescramble/tsdescramble/internal/runfiles"
	"github.com/tsdescramble/tsdescramble/live"
	"github.com/tsdescramble/tsdescramble/srt"
	"github.com/tsdescramble/tsdescramble/web"
)

// fileFlag is a flag whose value names a file the run reads or writes.
type fileFlag struct {
	name string // without the leading dash
	// what the run writes there, for the advice of a message ("output", "statistics"); empty
	// for a file the run only reads.
	what string
	// stdio: "-" means stdin or stdout, not a file. For the other flags "-" is a file name.
	stdio bool
	// late: written only after the whole run, so whether it can be written is checked
	// before the run starts rather than found out at the end.
	late bool
	get  func(*config) string // the flag's value
	// readOnly, when set, says when the run only reads a file it writes in other runs: then
	// it is an input (see of).
	readOnly func(*config) bool
}

// of returns the flag as the run of c uses it: an input when it only reads the file.
func (f fileFlag) of(c *config) fileFlag {
	if f.readOnly != nil && f.readOnly(c) {
		f.what = ""
	}
	return f
}

func (f fileFlag) output() bool { return f.what != "" }

// describe says what the file is to its run, for messages.
func (f fileFlag) describe() string {
	switch {
	case f.what != "":
		return f.what
	case f.name == "in":
		return "input"
	case f.name == "rescramble-cw-file":
		return "key file of the rescrambling"
	case f.name == "ecm-cache":
		return "ECM cache"
	}
	return "key file"
}

// fileFlags are the flags of the descrambler and the scrambler that name files: inputs first,
// then outputs. A new output flag is one more line here; a flag that a command lacks, or that
// is not given, reads as "" and is skipped.
var fileFlags = []fileFlag{
	{name: "in", stdio: true, get: func(c *config) string { return c.in }},
	{name: "cw-file", get: func(c *config) string { return c.keys.file }},
	{name: "rescramble-cw-file", get: func(c *config) string { return c.rekeys.file }},
	{name: "out", what: "output", stdio: true, get: func(c *config) string { return c.out }},
	// Written from the start of a SimulCrypt run, in place (O_TRUNC): named after an input, it
	// would empty it.
	{name: "cw-log", what: "CW log", get: func(c *config) string { return c.cwLog }},
	// Appended to while a key server answers, in place; read without one.
	{name: "ecm-cache", what: "ECM cache", get: func(c *config) string { return c.ecmCache }, readOnly: func(c *config) bool { return !c.keyServerGiven() }},
	{name: "stats", what: "statistics", late: true, get: func(c *config) string { return c.stats }},
	{name: "cpuprofile", what: "CPU profile", get: func(c *config) string { return c.profile.cpu }},
	{name: "memprofile", what: "heap profile", late: true, get: func(c *config) string { return c.profile.mem }},
}

// checkPaths refuses, before anything is read, file flags that would make a run destroy what
// it reads or write two things to one file: no output may name an input or another output. It
// also checks that an output written only after the run can be written at all, so that a
// mistyped directory does not cost the whole run. The errors are usage errors, one line naming
// both flags, the path and what to do.
func checkPaths(c *config) error {
	type given struct {
		flag fileFlag
		path string
	}
	var files []given
	addrs := map[string]*live.Address{}
	srts := map[string]*srt.Address{}
	for _, f := range fileFlags {
		f = f.of(c)
		p := f.get(c)
		if p == "" || f.stdio && p == "-" {
			continue
		}
		if f.stdio && web.IsURL(p) {
			continue // a URL (http.go): no file to compare
		}
		if f.stdio && srt.IsURL(p) {
			a, err := checkSRT(f.name, p) // srt.go
			if err != nil {
				return err
			}
			srts[f.name] = a
			continue
		}
		if f.stdio && live.IsAddress(p) {
			// A network address (live.go): no file to compare.
			a, err := checkAddress(f.name, p)
			if err != nil {
				return err
			}
			addrs[f.name] = a
			continue
		}
		files = append(files, given{f, p})
	}
	if in, out := addrs["in"], addrs["out"]; in != nil && out != nil && sendsToItself(in, out) {
		return usageErr("-in %s and -out %s: the run would receive what it sends; send to another port", c.in, c.out)
	}
	if in, out := srts["in"], srts["out"]; in != nil && out != nil {
		if why := srtLoops(in, out); why != "" {
			return usageErr("-in %s and -out %s: %s", in, out, why)
		}
	}
	for j, b := range files {
		for _, a := range files[:j] {
			if !a.flag.output() && !b.flag.output() || !runfiles.SameFile(a.path, b.path) {
				continue
			}
			what := b.flag.what
			if what == "" {
				what = a.flag.what
			}
			if filepath.Clean(a.path) == filepath.Clean(b.path) {
				return usageErr("-%s and -%s name the same file %s: write the %s elsewhere", a.flag.name, b.flag.name, b.path, what)
			}
			return usageErr("-%s %s and -%s %s name the same file: write the %s elsewhere", a.flag.name, a.path, b.flag.name, b.path, what)
		}
	}
	for _, g := range files {
		if g.flag.late {
			if err := checkWritable(g.flag.name, g.path); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkWritable checks that the file path of output flag name can be written: an existing
// file must be a writable file, a new one must be creatable in an existing directory. A new
// file is created and removed again, so that every reason it could not be (permissions, a
// read-only file system, a name too long) shows now.
func checkWritable(name, path string) error {
	fi, err := os.Stat(path)
	switch {
	case err == nil && fi.IsDir():
		return usageErr("-%s %s is a directory: name a file in it", name, path)
	case err == nil && fi.Mode().IsRegular():
		// Opened without O_TRUNC, so nothing in it changes.
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return usageErr("-%s: cannot write %v: name a file that can be written", name, runfiles.UnwrapPath(err))
		}
		f.Close()
		return nil
	case err == nil:
		// A device or a named pipe: opening a pipe would wait for a reader, so the write
		// at the end will tell.
		return nil
	case !errors.Is(err, fs.ErrNotExist):
		return usageErr("-%s: cannot write %v: name a file that can be written", name, runfiles.UnwrapPath(err))
	}
	dir := filepath.Dir(path)
	switch di, err := os.Stat(dir); {
	case errors.Is(err, fs.ErrNotExist):
		return usageErr("-%s %s: the directory %s does not exist: create it first or name a file in another", name, path, dir)
	case err != nil:
		return usageErr("-%s %s: cannot reach the directory: %v", name, path, runfiles.UnwrapPath(err))
	case !di.IsDir():
		return usageErr("-%s %s: %s is not a directory: name a file in a directory", name, path, dir)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return nil // created by someone else since the Stat above: it exists now
	}
	if err != nil {
		return usageErr("-%s: cannot create %v: name a file that can be written", name, runfiles.UnwrapPath(err))
	}
	f.Close()
	os.Remove(path)
	return nil
}
