package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// writeError names the output that failed.
type writeError struct {
	name string
	err  error
}

func (e *writeError) Error() string { return fmt.Sprintf("cannot write %s: %v", e.name, e.err) }
func (e *writeError) Unwrap() error { return e.err }

// namedWriter names the output in its errors (not the temporary file behind it) and tells
// onFail, once, that writing failed.
type namedWriter struct {
	name   string
	w      io.Writer
	onFail *func()
}

func (n namedWriter) Write(p []byte) (int, error) {
	m, err := n.w.Write(p)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		err = &writeError{name: n.name, err: err}
		if f := *n.onFail; f != nil {
			*n.onFail = nil
			f()
		}
	}
	return m, err
}

// output is where the packets go. A regular file is written under a temporary name beside it and
// renamed when the run succeeds, so a failed run never leaves a file that looks complete; what was
// written is kept as NAME.partial instead.
type output struct {
	w       io.Writer
	onFail  func() // called when a write fails
	f       *os.File
	tmp     string // temporary name, "" when writing in place
	final   string
	partial string // set when a failed run's output was kept
}

func openOutput(path string, env Env) (*output, error) {
	if path == "-" {
		o := &output{}
		o.w = namedWriter{"stdout", env.Stdout, &o.onFail}
		return o, nil
	}
	if fi, err := os.Stat(path); err == nil && !fi.Mode().IsRegular() {
		if fi.IsDir() {
			return nil, failErr("cannot write the output: %s is a directory", path)
		}
		// A device or a named pipe: write to it directly.
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return nil, failErr("cannot open the output: %v", unwrapPath(err))
		}
		o := &output{f: f}
		o.w = namedWriter{path, f, &o.onFail}
		return o, nil
	}
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, "."+base+".*.tmp")
	if err != nil {
		return nil, failErr("cannot create the output in %s: %v", dir, unwrapPath(err))
	}
	o := &output{f: f, tmp: f.Name(), final: path}
	o.w = namedWriter{path, f, &o.onFail}
	return o, nil
}

// close finishes the output: on success it puts the file in place; after a failure it keeps
// what was written as NAME.partial, or removes the temporary file when nothing was.
func (o *output) close(ok, wrote bool) error {
	if o.f == nil {
		return nil
	}
	err := o.f.Close()
	if o.tmp == "" {
		return err
	}
	if ok && err == nil {
		if err = os.Chmod(o.tmp, 0o644); err == nil {
			err = os.Rename(o.tmp, o.final)
		}
		if err == nil {
			return nil
		}
	}
	if !wrote {
		os.Remove(o.tmp)
		return err
	}
	o.partial = o.final + ".partial"
	if os.Rename(o.tmp, o.partial) != nil {
		os.Remove(o.tmp)
		o.partial = ""
	}
	return err
}
