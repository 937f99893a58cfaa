// Package logline writes a run's stderr lines with their level ("info", "warn" or "error"), so
// that a log in JSON (-log-format json) can tell what went wrong from what went on, however
// many writers the line passes through on its way (a batch job's prefix, then the JSON log).
// The level is said by the caller, where the line is written: never guessed from its words.
package logline

import "io"

// The levels of a line.
const (
	Info  = "info"  // what the run does: the summary, notes
	Warn  = "warn"  // something went wrong, and the run goes on
	Error = "error" // something failed: the run, or a job, ends with it
)

// Leveled is implemented by a writer of lines that keeps each line's level: the JSON log, and
// a writer that passes lines on to one (a batch's job prefix), which passes the level on.
type Leveled interface {
	// WriteLevel writes one line, without its newline, at level.
	WriteLevel(level string, line []byte)
}

// Write writes line (without its newline) to w at level: through WriteLevel when w keeps
// levels, else as a line of text.
func Write(w io.Writer, level, line string) {
	if l, ok := w.(Leveled); ok {
		l.WriteLevel(level, []byte(line))
		return
	}
	io.WriteString(w, line+"\n")
}
