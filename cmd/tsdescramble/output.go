package main

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/tsdescramble/tsdescramble/internal/runfiles"
	"github.com/tsdescramble/tsdescramble/live"
	"github.com/tsdescramble/tsdescramble/split"
	"github.com/tsdescramble/tsdescramble/srt"
	"github.com/tsdescramble/tsdescramble/web"
)

// writeError names the output that failed.
type writeError struct {
	name string
	err  error
}

func (e *writeError) Error() string { return fmt.Sprintf("cannot write %s: %v", e.name, e.err) }
func (e *writeError) Unwrap() error { return e.err }

// namedWriter names the output in its errors (not the temporary file behind it), and tells
// o.onFail, once, that writing failed.
type namedWriter struct {
	name string
	w    io.Writer
	o    *output
}

func (n namedWriter) Write(p []byte) (int, error) {
	m, err := n.w.Write(p)
	switch {
	case errors.Is(err, runfiles.ErrAborted):
		err = &writeError{name: n.name, err: err}
	case err != nil:
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
	w      io.Writer
	onFail func()         // called when a write fails
	f      *os.File       // a device or a named pipe, written in place
	temp   *runfiles.Temp // a file written under a temporary name
	stdout bool           // the packets go to the command's stdout: -out -, or a path that names it
	net    *netOutput     // a network output (live.go)
	// With -out-service: each service's output, and the splitter that feeds them (services.go).
	services []serviceOut
	splitter *split.Splitter
	// servicesMu, when set, guards services, which a reload changes while a quit may read them.
	servicesMu *sync.Mutex
	// earlier is the bytes the runs of a service that a reload replaced wrote to this output,
	// which the new run writes on to: kept with the rest when the run fails.
	earlier atomic.Int64
}

// serviceList returns the services of the output now.
func (o *output) serviceList() []serviceOut {
	if o.servicesMu == nil {
		return o.services
	}
	o.servicesMu.Lock()
	defer o.servicesMu.Unlock()
	return slices.Clone(o.services)
}

// openOutput opens the output -out names; pace says whether a network output is paced by the
// PCR, and handlers are served beside the stream of an HTTP output (-metrics out).
func openOutput(path string, env Env, pace bool, handlers map[string]http.Handler) (*output, error) {
	if live.IsAddress(path) {
		return openLiveOutput(path, pace)
	}
	if web.IsURL(path) {
		return openRelayOutput(path, env, pace, handlers)
	}
	if srt.IsURL(path) {
		return openSRTOutput(path, env, pace)
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
	t, err := runfiles.CreateOutput(path)
	if err != nil {
		return nil, failErr("%v", err)
	}
	o := &output{temp: t}
	o.w = namedWriter{path, t, o}
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

// close finishes the output: a network output sends what waits; a file written under a
// temporary name is put in place on success, or keeps its first keep bytes (whole packets) as
// NAME.partial after a failure (runfiles.Temp).
func (o *output) close(ok bool, keep int64) error {
	switch {
	case o.splitter != nil:
		return o.closeServices(ok)
	case o.net != nil:
		return o.net.close()
	case o.temp != nil:
		return o.temp.Close(ok, keep)
	case o.f != nil:
		return o.f.Close()
	}
	return nil
}

// abort puts a file output aside at once, for a run that must end without waiting for the
// packets in flight (runfiles.Temp.Abort), and returns the name it was kept under, or "".
func (o *output) abort() string {
	if o.splitter != nil {
		var kept []string
		for _, s := range o.serviceList() {
			if k := s.out.abort(); k != "" {
				kept = append(kept, k)
			}
		}
		return strings.Join(kept, ", ")
	}
	if o.temp == nil {
		return ""
	}
	return o.temp.Abort()
}

// partial is the name a failed run's output was kept under, or "".
func (o *output) partial() string {
	if o.splitter != nil {
		var kept []string
		for _, s := range o.serviceList() {
			if k := s.out.partial(); k != "" {
				kept = append(kept, k)
			}
		}
		return strings.Join(kept, ", ")
	}
	if o.temp == nil {
		return ""
	}
	return o.temp.Partial()
}
