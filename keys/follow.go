package keys

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
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
// from its start. A bad line is reported to bad, when set, as a *LineError, and skipped.
func Follow(ctx context.Context, path string, size int, live *Live, interval time.Duration, bad func(error)) error {
	if interval <= 0 {
		interval = 200 * time.Millisecond
	}
	f := &follower{path: path, size: size, live: live, bad: bad}
	if strings.HasSuffix(strings.ToLower(path), ".cwl") {
		f.format = FormatCWL
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if err := f.poll(); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

type follower struct {
	path   string
	size   int
	live   *Live
	bad    func(error)
	format Format
	offset int64
	line   int
	buf    []byte // the start of a line whose end has not been written yet
	long   bool   // the current line is longer than maxFollowLine: skipped to its end
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
		f.offset, f.line, f.buf, f.long = 0, 0, f.buf[:0], false // truncated or replaced
	}
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
		f.live.Set(0, odd, cw)
	case FormatPairs:
		b, err := ParseCW(t, 2*f.size)
		if err != nil {
			f.report(fmt.Errorf("want an even and an odd control word of %d hex digits each; %s", 2*f.size, describeHex(t)))
			return nil
		}
		f.live.Set(0, false, b[:f.size])
		f.live.Set(0, true, b[f.size:])
	}
	return nil
}

func (f *follower) report(err error) {
	if f.bad != nil {
		f.bad(&LineError{File: f.path, Line: f.line, Err: err})
	}
}
