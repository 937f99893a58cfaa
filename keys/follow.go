package keys

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// maxFollowLine bounds a line of a followed key file: a line longer than this is no key line.
const maxFollowLine = 4096

// Follow reads the key file at path, an OSCam .cwl log or a file of EVEN ODD pairs, as another
// program appends to it (like tail -f), and sets each control word it reads in live, slot 0, by
// its parity; a pair sets both. It reads what the file holds, then polls it every interval for
// more, until ctx is done; it returns ctx's error, or the error that stopped it (the file cannot
// be opened, or its first key line is a CW list's, which has no parity to follow). A line is read
// once it ends with a newline; a file that becomes shorter (truncated or replaced) is read again
// from its start. Of the lines one poll reads, the last of each parity is set: a period waiting
// for its key never takes an older one that a longer read passes on the way. A bad line is
// reported to bad, when set, as a *LineError, and skipped. Follow is NewFollower(...).Run.
func Follow(ctx context.Context, path string, size int, live *Live, interval time.Duration, bad func(error)) error {
	return NewFollower(path, size, live, bad).Run(ctx, interval)
}

// A Follower reads a key file as it grows, as Follow does, and can be asked to read it again
// from its start (Reread): for a log edited in place, or replaced by a file no shorter, which
// reading on from where it was would not see.
type Follower struct {
	f      follower
	wake   chan struct{}
	mu     sync.Mutex
	reread []func(keyLines int, err error) // Reread's callers, waiting for the next poll
}

// NewFollower returns a Follower of the key file at path that sets the CWs it reads in live;
// bad, when set, receives each bad line as a *LineError.
func NewFollower(path string, size int, live *Live, bad func(error)) *Follower {
	fl := &Follower{f: follower{path: path, size: size, live: live, bad: bad}, wake: make(chan struct{}, 1)}
	fl.f.pathFormat()
	return fl
}

// Run reads the file and polls it every interval for more until ctx is done, as Follow does.
func (fl *Follower) Run(ctx context.Context, interval time.Duration) error {
	if interval <= 0 {
		interval = 200 * time.Millisecond
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		fl.mu.Lock()
		done := fl.reread
		fl.reread = nil
		fl.mu.Unlock()
		if done != nil {
			fl.f.restart()
		}
		err := fl.f.poll()
		for _, d := range done {
			d(fl.f.keyLines, err)
		}
		if err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		case <-fl.wake:
		}
	}
}

// Poll reads what the file holds now, as Run's first read would, and sets its keys. A caller
// calls it before Run when the keys already written must be set before its input starts:
// Run's first read happens when its goroutine is first scheduled, by which time a program
// appending to the file may have written the next period's key, and of the lines one read
// passes, only the last of each parity is set. Poll and Run must not run at the same time.
func (fl *Follower) Poll() error { return fl.f.poll() }

// Reread makes a running Follower read the file again from its start, at once. Each parity's
// last CW in the file is set again (the periods begun keep their keys; a key slot holds a CW
// set again as it held it), and those new to the file join. Run calls done,
// when set, after that read, with the number of lines that gave keys and the error that
// stopped it, if one did. A Reread before Run takes effect when Run starts; one after Run
// has returned never does.
func (fl *Follower) Reread(done func(keyLines int, err error)) {
	if done == nil {
		done = func(int, error) {}
	}
	fl.mu.Lock()
	fl.reread = append(fl.reread, done)
	fl.mu.Unlock()
	select {
	case fl.wake <- struct{}{}:
	default:
	}
}

type follower struct {
	path     string
	size     int
	live     *Live
	bad      func(error)
	format   Format
	offset   int64
	line     int
	buf      []byte    // the start of a line whose end has not been written yet
	long     bool      // the current line is longer than maxFollowLine: skipped to its end
	pending  [2][]byte // the last CW of each parity a poll read, set at its end
	keyLines int       // lines that gave keys since the file was read from its start
}

// pathFormat takes a .cwl file for an OSCam log before its first line says so.
func (f *follower) pathFormat() {
	f.format = 0
	if strings.HasSuffix(strings.ToLower(f.path), ".cwl") {
		f.format = FormatCWL
	}
}

// restart makes the next poll read the file from its start, as a file it has not seen: it may
// have been replaced by one of another format.
func (f *follower) restart() {
	f.offset, f.line, f.buf, f.long, f.keyLines = 0, 0, f.buf[:0], false, 0
	f.pathFormat()
}

// poll reads what was appended since the last poll.
func (f *follower) poll() error {
	file, err := os.Open(f.path)
	if err != nil {
		return err
	}
	defer file.Close()
	fi, err := file.Stat()
	if err != nil {
		return err
	}
	if fi.Size() < f.offset {
		f.restart() // truncated or replaced
	}
	defer f.apply()
	if _, err := file.Seek(f.offset, io.SeekStart); err != nil {
		return err
	}
	chunk := make([]byte, 32<<10)
	for {
		n, err := file.Read(chunk)
		f.offset += int64(n)
		data := chunk[:n]
		for len(data) > 0 {
			i := bytes.IndexByte(data, '\n')
			if i < 0 {
				f.append(data)
				break
			}
			f.append(data[:i])
			data = data[i+1:]
			if err := f.endLine(); err != nil {
				return err
			}
		}
		if err == io.EOF || n == 0 {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// apply sets the last CW of each parity the poll read.
func (f *follower) apply() {
	for parity, cw := range f.pending {
		if cw != nil {
			f.live.Set(0, parity == 1, cw)
		}
	}
	f.pending = [2][]byte{}
}

func (f *follower) append(b []byte) {
	if f.long || len(f.buf)+len(b) > maxFollowLine {
		f.long, f.buf = true, f.buf[:0]
		return
	}
	f.buf = append(f.buf, b...)
}

// endLine reads the line in f.buf.
func (f *follower) endLine() error {
	f.line++
	text, long := string(f.buf), f.long
	f.buf, f.long = f.buf[:0], false
	if long {
		f.report(fmt.Errorf("a line of more than %d bytes", maxFollowLine))
		return nil
	}
	if f.line == 1 {
		text = strings.TrimPrefix(text, "\uFEFF")
	}
	t := strings.TrimSpace(text)
	if t == "" {
		return nil
	}
	if t[0] == '#' || t[0] == ';' || t[0] == '*' {
		if f.format == 0 && strings.Contains(strings.ToLower(t), "control word log") {
			f.format = FormatCWL
		}
		return nil
	}
	if i := strings.IndexByte(t, '#'); i >= 0 {
		t = strings.TrimSpace(t[:i])
	}
	if f.format == 0 {
		switch f.format = detect(t, f.size); f.format {
		case FormatList:
			return &LineError{File: f.path, Line: f.line, Err: fmt.Errorf(
				"a list of control words has no parities to follow: follow an OSCam .cwl log or EVEN ODD pairs")}
		case 0:
			f.report(fmt.Errorf("want an OSCam .cwl line (0 or 1, then %d hex bytes) or an even and an odd CW (%d hex digits); %s",
				f.size, 4*f.size, describeHex(t)))
			return nil
		}
	}
	switch f.format {
	case FormatCWL:
		odd, cw, err := parseCWLLine(t, f.size)
		if err != nil {
			f.report(fmt.Errorf("want a parity digit 0 or 1 then %d hex bytes; %v", f.size, err))
			return nil
		}
		f.pending[parityIndex(odd)] = cw
	case FormatPairs:
		b, err := ParseCW(t, 2*f.size)
		if err != nil {
			f.report(fmt.Errorf("want an even and an odd control word of %d hex digits each; %s", 2*f.size, describeHex(t)))
			return nil
		}
		f.pending[0], f.pending[1] = b[:f.size], b[f.size:]
	}
	f.keyLines++
	return nil
}

func (f *follower) report(err error) {
	if f.bad != nil {
		f.bad(&LineError{File: f.path, Line: f.line, Err: err})
	}
}
