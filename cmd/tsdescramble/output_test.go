package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tsdescramble/tsdescramble/pipeline"
)

// TestFilesAndStdio checks every combination of file and standard input and output.
func TestFilesAndStdio(t *testing.T) {
	t.Parallel()
	s := periodStream(t, []period{{tscEven, cwA, 30}, {tscOdd, cwB, 30}})
	in, want := frame(s.in, 192), frame(s.want, 192)

	tests := []struct {
		name      string
		args      []string // IN and OUT stand for the input and output file
		stdin     bool     // the stream is on stdin
		stdinFile bool     // stdin is the input file itself (an *os.File)
		toFile    bool     // the output is in OUT, not on stdout
		existing  []byte   // OUT exists beforehand with this content
	}{
		{name: "-in -out", args: []string{"-in", "IN", "-out", "OUT"}, toFile: true},
		{name: "-i -o", args: []string{"-i", "IN", "-o", "OUT"}, toFile: true},
		{name: "--in= --out=", args: []string{"--in=IN", "--out=OUT"}, toFile: true},
		{name: "-in, stdout", args: []string{"-in", "IN"}},
		{name: "-in, -out -", args: []string{"-in", "IN", "-out", "-"}},
		{name: "stdin, -out", args: []string{"-out", "OUT"}, stdin: true, toFile: true},
		{name: "-in -, -o", args: []string{"-in", "-", "-o", "OUT"}, stdin: true, toFile: true},
		{name: "stdin, stdout", stdin: true},
		{name: "-in - -out -", args: []string{"-in", "-", "-out", "-"}, stdin: true},
		{name: "stdin is a file", stdinFile: true},
		{name: "stdin is a file, -out", args: []string{"-out", "OUT"}, stdinFile: true, toFile: true},
		{name: "-out replaces a longer file", args: []string{"-in", "IN", "-out", "OUT"}, toFile: true,
			existing: bytes.Repeat([]byte("old content "), 100000)},
		{name: "-out replaces a shorter file", args: []string{"-in", "IN", "-out", "OUT"}, toFile: true,
			existing: []byte("old")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			inPath := writeFile(t, dir, "in.ts", in)
			outPath := filepath.Join(dir, "out.ts")
			if tc.existing != nil {
				writeFile(t, dir, "out.ts", tc.existing)
			}
			args := []string{"-q", "-cw-even", cwA, "-cw-odd", cwB}
			for _, a := range tc.args {
				a = strings.ReplaceAll(a, "IN", inPath)
				args = append(args, strings.ReplaceAll(a, "OUT", outPath))
			}
			env := Env{IsTerminal: func(*os.File) bool { return false }}
			var stdout, stderr bytes.Buffer
			env.Stdout, env.Stderr = &stdout, &stderr
			switch {
			case tc.stdin:
				env.Stdin = bytes.NewReader(in)
			case tc.stdinFile:
				f, err := os.Open(inPath)
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				env.Stdin = f
			default:
				env.Stdin = strings.NewReader("stdin must not be read")
			}
			if code := runEnv(t, env, args...); code != 0 || stderr.Len() != 0 {
				t.Fatalf("exit %d, want 0 and no message; stderr:\n%s", code, stderr.String())
			}
			if tc.toFile {
				if stdout.Len() != 0 {
					t.Errorf("stdout holds %d bytes with -out", stdout.Len())
				}
				sameBytes(t, "output file", readFile(t, outPath), want, 192)
				if fi, err := os.Stat(outPath); err != nil || fi.Mode().Perm()&0o600 != 0o600 {
					t.Errorf("output file mode: %v, %v", fi.Mode(), err)
				}
			} else {
				sameBytes(t, "stdout", stdout.Bytes(), want, 192)
				if _, err := os.Stat(outPath); err == nil && tc.existing == nil {
					t.Errorf("an output file was created without -out")
				}
			}
			sameBytes(t, "input file", readFile(t, inPath), in, 192)
			for _, n := range dirNames(t, dir) {
				if n != "in.ts" && n != "out.ts" {
					t.Errorf("the run left %s in the directory", n)
				}
			}
		})
	}
}

// TestOutputDevice checks that an output that is not a regular file is written directly.
func TestOutputDevice(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat(os.DevNull); err != nil {
		t.Skip(err)
	}
	s := periodStream(t, []period{{tscEven, cwA, 10}})
	r := run(t, s.input(), "-q", "-cw", cwA, "-out", os.DevNull)
	if r.code != 0 || r.stdout != "" || r.stderr != "" {
		t.Fatalf("want exit 0, no output and no message; %s", describe(r))
	}
}

// TestMessages checks what each of -q, -v and -show-keys prints on stderr, and that control
// words are printed only with -v -show-keys. (-q with -v, and -show-keys without -v, are
// refused: TestContradictions.)
func TestMessages(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	keyFile := writeFile(t, dir, "keys.txt", []byte(cwA+"\n"+cwB+"\n"+cwC+"\n"))
	raw := mustCW(t, cwRaw)
	redHex := fmt.Sprintf("%x", reduced(raw))
	s := periodStream(t, []period{{tscEven, cwA, 10}, {tscOdd, cwB, 10}, {tscEven, cwC, 10}})
	sFixed := periodStream(t, []period{{tscEven, cwA, 10}, {tscOdd, cwB, 10}, {tscEven, cwA, 10}})
	sRed := periodStream(t, []period{{tscEven, redHex, 10}, {tscOdd, redHex, 10}})
	sOne := periodStream(t, []period{{tscEven, cwA, 10}, {tscOdd, cwA, 10}})

	tests := []struct {
		name    string
		args    []string
		stream  *stream
		cws     []string // the control words of the run
		summary bool     // a summary is printed
		shown   bool     // the control words are printed
		empty   bool     // stderr is empty
	}{
		{"-q", []string{"-q", "-cw-file", keyFile}, s, []string{cwA, cwB, cwC}, false, false, true},
		{"default", []string{"-cw-file", keyFile}, s, []string{cwA, cwB, cwC}, true, false, false},
		{"-v -cw", []string{"-v", "-cw", cwA}, sOne, []string{cwA}, true, false, false},
		{"-v -cw-even -cw-odd", []string{"-v", "-cw-even", cwA, "-cw-odd", cwB}, sFixed, []string{cwA, cwB}, true, false, false},
		{"-v -cw-file", []string{"-v", "-cw-file", keyFile}, s, []string{cwA, cwB, cwC}, true, false, false},
		{"-v -reduce-entropy", []string{"-v", "-reduce-entropy", "-cw", cwRaw}, sRed, []string{cwRaw, redHex}, true, false, false},
		{"-v -show-keys -cw-file", []string{"-v", "-show-keys", "-cw-file", keyFile}, s, []string{cwA, cwB, cwC}, true, true, false},
		{"-v -show-keys -cw-even -cw-odd", []string{"-v", "-show-keys", "-cw-even", cwA, "-cw-odd", cwB}, sFixed, []string{cwA, cwB}, true, true, false},
		{"-v -show-keys -cw", []string{"-v", "-show-keys", "-cw", strings.ToUpper(cwA)}, sOne, []string{cwA}, true, true, false},
		{"-verbose -show-keys", []string{"-verbose", "-show-keys", "-cw-file", keyFile}, s, []string{cwA, cwB, cwC}, true, true, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := run(t, tc.stream.input(), tc.args...)
			if r.code != 0 {
				t.Fatalf("%s", describe(r))
			}
			sameBytes(t, "output", []byte(r.stdout), tc.stream.output(), 188)
			if tc.empty && r.stderr != "" {
				t.Errorf("stderr holds %q, want nothing", r.stderr)
			}
			hasSummary := strings.Contains(r.stderr, fmt.Sprintf("tsdescramble: %d packets in", len(tc.stream.in)))
			if hasSummary != tc.summary {
				t.Errorf("summary printed: %v, want %v; stderr:\n%s", hasSummary, tc.summary, r.stderr)
			}
			for _, cw := range tc.cws {
				shown := strings.Contains(r.stderr, strings.ToLower(cw)) || strings.Contains(r.stderr, strings.ToUpper(cw))
				if shown != tc.shown {
					t.Errorf("control word %s printed: %v, want %v; stderr:\n%s", cw, shown, tc.shown, r.stderr)
				}
			}
		})
	}
}

// TestNoKeyInFailureMessages checks that failing runs with -v do not print the control word.
func TestNoKeyInFailureMessages(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, args := range [][]string{
		{"-v", "-cw", cwA, "-in", filepath.Join(dir, "missing.ts")},
		{"-v", "-cw", cwA, "-workers", "0"},
		{"-v", "-cw", cwA, "-cw-odd", cwB},
		{"-v", "-cw-even", cwA, "-cw-odd", cwB[:15]},
	} {
		r := run(t, noSyncInput(1000, true), args...)
		if r.code == 0 {
			t.Errorf("%v: exit 0", args)
		}
		for _, cw := range []string{cwA, cwB, cwB[:15]} {
			if strings.Contains(r.stderr, cw) {
				t.Errorf("%v: stderr shows the control word %s:\n%s", args, cw, r.stderr)
			}
		}
	}
}

// TestProgressBar checks that no progress bar is drawn on a stderr that is not a terminal,
// and that one is drawn on a terminal (so the first check can fail).
func TestProgressBar(t *testing.T) {
	t.Parallel()
	s := periodStream(t, []period{{tscEven, cwA, 300}, {tscOdd, cwB, 300}})
	dir := t.TempDir()
	inPath := writeFile(t, dir, "in.ts", s.input())
	for _, tc := range []struct {
		name     string
		terminal bool
		args     []string
	}{
		{"not a terminal, stdin", false, nil},
		{"not a terminal, -in", false, []string{"-in", inPath}},
		{"terminal, stdin", true, nil}, // shows that a bar would be seen
		{"terminal, -q", true, []string{"-q", "-in", inPath}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errFile, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
			if err != nil {
				t.Fatal(err)
			}
			defer errFile.Close()
			var asked []*os.File
			var mu sync.Mutex
			var stdout bytes.Buffer
			env := Env{
				Stdin:  bytes.NewReader(s.input()),
				Stdout: &stdout,
				Stderr: errFile,
				IsTerminal: func(f *os.File) bool {
					mu.Lock()
					defer mu.Unlock()
					asked = append(asked, f)
					return tc.terminal
				},
			}
			args := append([]string{"-cw-even", cwA, "-cw-odd", cwB, "-batch", "16"}, tc.args...)
			if code := runEnv(t, env, args...); code != 0 {
				t.Fatalf("exit %d", code)
			}
			sameBytes(t, "output", stdout.Bytes(), s.output(), 188)
			stderr := string(readFile(t, errFile.Name()))
			quiet := len(tc.args) > 0 && tc.args[0] == "-q"
			if quiet {
				if stderr != "" {
					t.Errorf("stderr holds %q with -q", stderr)
				}
				return
			}
			if len(asked) == 0 {
				t.Errorf("IsTerminal was not asked about stderr")
			}
			for _, f := range asked {
				if f != errFile {
					t.Errorf("IsTerminal was asked about %s, not stderr", f.Name())
				}
			}
			if !tc.terminal {
				// The same run with stderr in memory, where no bar can be drawn, gives the
				// summary to compare with; only the figures of time and speed differ.
				r := run(t, s.input(), args...)
				timing := regexp.MustCompile(`\d+\.\d+`)
				got, want := timing.ReplaceAllString(stderr, "#"), timing.ReplaceAllString(r.stderr, "#")
				if got != want || strings.ContainsAny(stderr, "\r\x1b") {
					t.Errorf("stderr holds more than the summary:\n%q\nwant:\n%q", stderr, r.stderr)
				}
				if !strings.HasPrefix(stderr, fmt.Sprintf("tsdescramble: %d packets in", len(s.in))) {
					t.Errorf("stderr does not start with the summary:\n%q", stderr)
				}
				return
			}
			if !strings.Contains(stderr, "\r") || !strings.Contains(stderr, "descrambling") {
				t.Errorf("no progress bar on a terminal:\n%q", stderr)
			}

			if !strings.Contains(stderr, "tsdescramble: ") {
				t.Errorf("no summary after the progress bar:\n%q", stderr)
			}
		})
	}
}

// TestProgressBarShowsBytes checks what the bar says: the bytes done of the total for a file
// (the bytes done for a pipe), the speed, and the time.
func TestProgressBarShowsBytes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		size int64
		want string
	}{
		{64e6, `descrambling +25% .*\(16/64 MB, [0-9.]+ [kMGT]?B/s\) \[[0-9a-z]+:[0-9a-z]+\]`},
		{-1, `descrambling \(16 MB, [0-9.]+ [kMGT]?B/s\) \[[0-9a-z]+\]`},
	} {
		errFile, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
		if err != nil {
			t.Fatal(err)
		}
		env := Env{Stderr: errFile, IsTerminal: func(*os.File) bool { return true }}
		p := newProgress(env, tc.size, false, pipeline.Descramble)
		time.Sleep(150 * time.Millisecond) // past the bar's redraw throttle
		p.set(16e6)
		errFile.Close()
		if got := string(readFile(t, errFile.Name())); !regexp.MustCompile(tc.want).MatchString(got) {
			t.Errorf("size %d: the bar says %q, want it to match %s", tc.size, got, tc.want)
		}
	}
}

var errDiskFull = errors.New("disk full")

// failingWriter accepts limit bytes and then fails.
type failingWriter struct {
	mu      sync.Mutex
	limit   int
	written bytes.Buffer
	calls   int
}

func (w *failingWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.calls++
	room := w.limit - w.written.Len()
	if len(p) <= room {
		return w.written.Write(p)
	}
	w.written.Write(p[:max(room, 0)])
	return max(room, 0), errDiskFull
}

// endless repeats data forever.
type endless struct {
	data []byte
	off  int
}

func (e *endless) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		m := copy(p[n:], e.data[e.off:])
		n += m
		e.off = (e.off + m) % len(e.data)
	}
	return n, nil
}

// TestWriteError checks that a failing output ends the run with exit 1 and a message,
// promptly, even when the input never ends, and that what was written is a prefix of the
// right output.
func TestWriteError(t *testing.T) {
	t.Parallel()
	s := periodStream(t, []period{{tscEven, cwA, 40}, {tscOdd, cwB, 40}})
	// A long input, mostly clear packets so that it costs little.
	var long stream
	for i := 0; i < 20; i++ {
		long.in = append(long.in, s.in...)
		long.want = append(long.want, s.want...)
		for j := 0; j < 500; j++ {
			long.addClear(clearPacket(0x300, j, -1, true))
		}
	}
	in, want := long.input(), long.output()

	for _, tc := range []struct {
		limit   int
		args    []string
		endless bool
	}{
		{0, nil, false},
		{100, nil, false},
		{188 * 5, []string{"-workers", "1"}, false},
		{188*5 + 17, []string{"-workers", "1", "-batch", "1"}, false},
		{188 * 5000, []string{"-workers", "4", "-batch", "7"}, false},
		{len(in) - 1, []string{"-workers", "2"}, false},
		{1 << 20, []string{"-workers", "2", "-batch", "1"}, true},
		{1 << 20, []string{"-workers", "8"}, true},
		{0, []string{"-q"}, true},
	} {
		t.Run(fmt.Sprintf("%d %v endless=%v", tc.limit, tc.args, tc.endless), func(t *testing.T) {
			w := &failingWriter{limit: tc.limit}
			var stderr bytes.Buffer
			var stdin io.Reader = bytes.NewReader(in)
			if tc.endless {
				stdin = &endless{data: in}
			}
			env := Env{Stdin: stdin, Stdout: w, Stderr: &stderr, IsTerminal: func(*os.File) bool { return false }}
			code := runWithin(t, 20*time.Second, env, append([]string{"-cw-even", cwA, "-cw-odd", cwB}, tc.args...)...)
			if code != 1 {
				t.Errorf("exit %d, want 1; stderr:\n%s", code, stderr.String())
			}
			lines := strings.Split(strings.TrimSuffix(stderr.String(), "\n"), "\n")
			last := lines[len(lines)-1]
			if !strings.HasPrefix(last, "tsdescramble: ") || !strings.Contains(last, "stdout") || !strings.Contains(last, errDiskFull.Error()) {
				t.Errorf("the last line of stderr does not name the failed output and the error: %q", last)
			}
			if len(tc.args) > 0 && tc.args[0] == "-q" {
				oneLine(t, stderr.String())
			}
			w.mu.Lock()
			got := w.written.Bytes()
			w.mu.Unlock()
			if len(got) != min(tc.limit, len(want)) {
				t.Errorf("%d bytes written before the error, want %d", len(got), tc.limit)
			}
			if !bytes.Equal(got, want[:len(got)]) {
				t.Errorf("the bytes written before the error are not the start of the right output")
			}
		})
	}
}

// TestWriteErrorToFile checks that a run whose file output fails is reported, with exit 1.
func TestWriteErrorToFile(t *testing.T) {
	t.Parallel()
	const full = "/dev/full"
	if _, err := os.Stat(full); err != nil {
		t.Skip("no /dev/full:", err)
	}
	s := periodStream(t, []period{{tscEven, cwA, 10}})
	r := run(t, s.input(), "-q", "-cw", cwA, "-out", full)
	if r.code != 1 || r.stdout != "" {
		t.Fatalf("want exit 1 and no output; %s", describe(r))
	}
	oneLine(t, r.stderr)
	if !strings.Contains(r.stderr, full) {
		t.Errorf("message does not name the output: %q", r.stderr)
	}
}

var errDevice = errors.New("device gone")

// failingReader returns an error after its data.
type failingReader struct{ r io.Reader }

func (f failingReader) Read(p []byte) (int, error) {
	n, err := f.r.Read(p)
	if err == io.EOF {
		err = errDevice
	}
	return n, err
}

// TestReadError checks that an input that fails ends the run with exit 1 and a message, after
// the packets read before the error have been written.
func TestReadError(t *testing.T) {
	t.Parallel()
	s := periodStream(t, []period{{tscEven, cwA, 30}, {tscOdd, cwB, 30}})
	for _, args := range [][]string{
		{"-q"},
		{"-q", "-workers", "1", "-batch", "1"},
		{"-q", "-workers", "3", "-batch", "7"},
	} {
		var stdout, stderr bytes.Buffer
		env := Env{
			Stdin:      failingReader{bytes.NewReader(s.input())},
			Stdout:     &stdout,
			Stderr:     &stderr,
			IsTerminal: func(*os.File) bool { return false },
		}
		code := runEnv(t, env, append(args, "-cw-even", cwA, "-cw-odd", cwB)...)
		if code != 1 {
			t.Errorf("%v: exit %d, want 1; stderr:\n%s", args, code, stderr.String())
		}
		oneLine(t, stderr.String())
		if !strings.Contains(stderr.String(), errDevice.Error()) {
			t.Errorf("%v: message does not give the error: %q", args, stderr.String())
		}
		sameBytes(t, "output", stdout.Bytes(), s.output(), 188)
	}
}

// The bar's first frame gives a speed over the time since the run began (the first sample, of
// no byte), never the bytes of that frame over next to no time: 16 MB read 150 ms after the
// start show at most 16 MB / 150 ms.
func TestProgressBarFirstSpeed(t *testing.T) {
	t.Parallel()
	errFile, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	env := Env{Stderr: errFile, IsTerminal: func(*os.File) bool { return true }}
	p := newProgress(env, 64e6, false, pipeline.Descramble)
	// The bar's clock started before start, and the frame is drawn after elapsed: the speed it
	// shows is at most 16 MB over elapsed, whatever the machine's load adds around the calls.
	start := time.Now()
	time.Sleep(150 * time.Millisecond) // past the bar's redraw throttle
	elapsed := time.Since(start)
	p.set(16e6)
	errFile.Close()
	got := string(readFile(t, errFile.Name()))
	m := regexp.MustCompile(`\(16/64 MB, ([0-9.]+) ([kMGT]?)B/s\)`).FindStringSubmatch(got)
	if m == nil {
		t.Fatalf("the bar says %q", got)
	}
	v, _ := strconv.ParseFloat(m[1], 64)
	v *= map[string]float64{"": 1, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}[m[2]]
	if bound := 16e6 / elapsed.Seconds() * 1.05; v > bound {
		// The library rounds the figure it shows: 5% of room.
		t.Errorf("first frame %q: %.0f B/s, more than 16 MB over %v", got, v, elapsed)
	}
}
