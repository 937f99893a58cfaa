package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tsdescramble/tsdescramble/internal/runfiles"
	"github.com/tsdescramble/tsdescramble/live"
)

// writeError names the output that failed.
type writeError struct {
	name string
	err  error
}

func (e *writeError) Error() string { return fmt.Sprintf("cannot write %s: %v", e.name, e.err) }
func (e *writeError) Unwrap() error { return e.err }

// errAborted is what a write gets once the run was ended at once and its output put aside.
var errAborted = errors.New("the run was stopped")

// namedWriter names the output in its errors (not the temporary file behind it), counts the
// bytes of the writes that completed, and tells o.onFail, once, that writing failed.
type namedWriter struct {
	name string
	w    io.Writer
	o    *output
}

func (n namedWriter) Write(p []byte) (int, error) {
	if n.o.tmp != "" {
		// A write to the temporary file holds the lock, so that abort never cuts the file
		// while a write is extending it.
		n.o.mu.Lock()
		defer n.o.mu.Unlock()
		if n.o.closed.Load() {
			return 0, &writeError{name: n.name, err: errAborted}
		}
	}
	m, err := n.w.Write(p)
	if err == nil {
		n.o.written.Add(int64(m))
	} else {
		err = n.failed(err)
	}
	return m, err
}

// Flush flushes the writer behind, if it buffers: a network output sends its partial datagram.
func (n namedWriter) Flush() error {
	f, ok := n.w.(interface{ Flush() error })
	if !ok {
		return nil
	}
	if err := f.Flush(); err != nil {
		return n.failed(err)
	}
	return nil
}

// failed names the output in a write error and tells o.onFail, once.
func (n namedWriter) failed(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	err = &writeError{name: n.name, err: err}
	if f := n.o.onFail; f != nil {
		n.o.onFail = nil
		f()
	}
	return err
}

// output is where the packets go. A regular file is written under a temporary name beside it and
// renamed when the run succeeds, so a failed run never leaves a file that looks complete; what was
// written is kept as NAME.partial instead, cut to whole packets.
type output struct {
	w       io.Writer
	onFail  func() // called when a write fails
	f       *os.File
	tmp     string     // temporary name, "" when writing in place
	final   string     // the file the temporary one replaces: -out, or the file its links lead to
	partial string     // set when a failed run's output was kept
	stdout  bool       // the packets go to the command's stdout: -out -, or a path that names it
	net     *netOutput // a network output (live.go)

	mu      sync.Mutex   // held by writes to the temporary file, by close and by abort
	closed  atomic.Bool  // the temporary file was put in place, kept or removed: no more writes
	written atomic.Int64 // bytes of the writes that completed
}

// openOutput opens the output -out names; pace says whether a network output is paced by the
// PCR.
func openOutput(path string, env Env, pace bool) (*output, error) {
	if live.IsAddress(path) {
		return openLiveOutput(path, pace)
	}
	if path == "-" {
		return stdoutOutput("stdout", env), nil
	}
	if fi, err := os.Stat(path); err == nil && !fi.Mode().IsRegular() {
		if fi.IsDir() {
			return nil, failErr("cannot write the output: %s is a directory", path)
		}
		if isStdout(fi, env) {
			// -out /dev/stdout, /dev/fd/1: the same as -out -, down to a reader that goes away.
			return stdoutOutput(path, env), nil
		}
		// A device or a named pipe: write to it directly.
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return nil, failErr("cannot open the output: %v", runfiles.UnwrapPath(err))
		}
		o := &output{f: f}
		o.w = namedWriter{path, f, o}
		return o, nil
	} else if err == nil && isStdout(fi, env) {
		// stdout redirected to this very file (-out /dev/stdout > FILE): write where the shell
		// opened it, in place, rather than replace the file under it.
		return stdoutOutput(path, env), nil
	}
	// A link is followed: the file it leads to is written, and the link stays a link.
	final := runfiles.FollowLinks(path)
	dir, base := filepath.Split(final)
	if dir == "" {
		dir = "."
	}
	f, err := runfiles.CreateTemp(dir, "."+base+".", ".tmp")
	if err != nil {
		// The message is about the file the user named: the temporary name is ours.
		parent := filepath.Dir(final)
		if _, serr := os.Stat(parent); errors.Is(serr, fs.ErrNotExist) {
			return nil, failErr("cannot write %s: the directory %s does not exist: create it first or name a file in another", path, parent)
		}
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, failErr("cannot create %s: %v", path, err)
	}
	o := &output{f: f, tmp: f.Name(), final: final}
	o.w = namedWriter{path, f, o}
	return o, nil
}

func stdoutOutput(name string, env Env) *output {
	o := &output{stdout: true}
	o.w = namedWriter{name, env.Stdout, o}
	return o
}

// isStdout reports whether fi is the file the command's stdout writes to.
func isStdout(fi os.FileInfo, env Env) bool {
	f, ok := env.Stdout.(*os.File)
	if !ok {
		return false
	}
	sfi, err := f.Stat()
	return err == nil && os.SameFile(fi, sfi)
}

// close finishes the output: on success it puts the file in place, with the mode of the file it
// replaces, if any; after a failure it keeps the first keep bytes (whole packets) as
// NAME.partial, or removes the temporary file when there are none.
func (o *output) close(ok bool, keep int64) error {
	if o.net != nil {
		return o.net.close()
	}
	if o.f == nil {
		return nil
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed.Swap(true) {
		return errAborted
	}
	if o.tmp == "" {
		return o.f.Close()
	}
	var err error
	if !ok {
		// A write cut short (a full disk) may have left part of a packet after the whole ones.
		err = o.f.Truncate(keep)
	}
	if cerr := o.f.Close(); err == nil {
		err = cerr
	}
	if ok && err == nil {
		if fi, serr := os.Stat(o.final); serr == nil {
			err = os.Chmod(o.tmp, fi.Mode().Perm())
		}
		if err == nil {
			err = os.Rename(o.tmp, o.final)
		}
		if err == nil {
			return nil
		}
	}
	o.keep(keep)
	return err
}

// keep renames the temporary file NAME.partial, or removes it when it holds no packet.
func (o *output) keep(n int64) {
	if n == 0 {
		os.Remove(o.tmp)
		return
	}
	o.partial = o.final + ".partial"
	if os.Rename(o.tmp, o.partial) != nil {
		os.Remove(o.tmp)
		o.partial = ""
	}
}

// abort puts the output aside at once, for a run that must end without waiting for the packets
// in flight: the temporary file, cut after the last write that completed (whole packets), is
// kept as NAME.partial, and later writes fail. It returns the name it was kept under, or "". A
// write to the file still under way after a second (a disk that hangs) is not waited for: the
// file is then kept as it is.
func (o *output) abort() string {
	if o.tmp == "" {
		return ""
	}
	locked, release := make(chan struct{}), make(chan struct{})
	go func() {
		o.mu.Lock()
		close(locked)
		<-release
		o.mu.Unlock()
	}()
	defer close(release)
	select {
	case <-locked:
		if !o.closed.Swap(true) {
			n := o.written.Load()
			o.f.Truncate(n)
			o.f.Close()
			o.keep(n)
		}
	case <-time.After(time.Second):
		if !o.closed.Swap(true) {
			o.keep(1)
		}
	}
	return o.partial
}
