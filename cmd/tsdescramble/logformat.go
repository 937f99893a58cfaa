package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"regexp"
	"sync"
	"time"

	"github.com/tsdescramble/tsdescramble/internal/logline"
)

// -log-format json writes each line the command would write to stderr as one JSON object, for
// log collectors: {"time": RFC 3339, "level": "info", "warn" or "error", "msg": the line without
// the program's name}, and "job": N for a batch's job. The lines themselves are the same as in text.

// withLogFormat runs f with the stderr -log-format asks for; with json, the message of the
// error that ends the run is written as an "error" line too.
func withLogFormat(format string, env Env, f func(Env) error) error {
	switch format {
	case "text":
		return f(env)
	case "json":
	default:
		return usageErr("-log-format: want text or json")
	}
	jl := &jsonLines{w: env.Stderr}
	env.Stderr = jl
	err := f(env)
	var ee *exitError
	if errors.As(err, &ee) && ee.msg != "" {
		jl.line("error", []byte("tsdescramble: "+ee.msg))
		err = &exitError{code: ee.code}
	} else if err != nil && !errors.As(err, &ee) {
		jl.line("error", []byte("tsdescramble: "+err.Error()))
		err = &exitError{code: exitFail}
	}
	jl.flush()
	return err
}

// jsonLines turns the lines written to it into JSON objects, one a line.
type jsonLines struct {
	w   io.Writer
	mu  sync.Mutex
	buf []byte
}

var reJobPrefix = regexp.MustCompile(`^job (\d+): `)

func (j *jsonLines) Write(p []byte) (int, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.buf = append(j.buf, p...)
	for {
		i := bytes.IndexByte(j.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		j.lineLocked("info", j.buf[:i])
		j.buf = j.buf[i+1:]
	}
}

func (j *jsonLines) line(level string, text []byte) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.lineLocked(level, text)
}

func (j *jsonLines) lineLocked(level string, text []byte) {
	text, _ = bytes.CutPrefix(text, []byte("tsdescramble: "))
	rec := struct {
		Time  string `json:"time"`
		Level string `json:"level"`
		Job   *int   `json:"job,omitempty"`
		Msg   string `json:"msg"`
	}{Time: time.Now().UTC().Format(time.RFC3339Nano), Level: level}
	if m := reJobPrefix.FindSubmatch(text); m != nil {
		n := 0
		for _, d := range m[1] {
			n = n*10 + int(d-'0')
		}
		rec.Job = &n
		text = text[len(m[0]):]
	}
	// The summary's detail lines are indented for a terminal; a log collector gets the words.
	rec.Msg = string(bytes.TrimLeft(bytes.TrimRight(text, "\r"), " "))
	b, _ := json.Marshal(rec)
	j.w.Write(append(b, '\n'))
}

// flush writes a last line that had no newline.
func (j *jsonLines) flush() {
	j.mu.Lock()
	defer j.mu.Unlock()
	if len(j.buf) > 0 {
		j.lineLocked("info", j.buf)
		j.buf = nil
	}
}

// WriteLevel writes one line at level: what logline.Write gives it, from the run or through a
// batch job's prefix.
func (j *jsonLines) WriteLevel(level string, line []byte) { j.line(level, line) }

// logWarn writes one line of the run that says something went wrong, which the run goes on
// from: with -log-format json, at level "warn" rather than "info".
func logWarn(w io.Writer, msg string) { logline.Write(w, logline.Warn, "tsdescramble: "+msg) }

// logError writes one error line: with -log-format json, at level "error" rather than "info".
func logError(w io.Writer, msg string) { logline.Write(w, logline.Error, "tsdescramble: "+msg) }
