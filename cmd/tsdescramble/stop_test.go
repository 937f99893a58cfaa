//go:build unix

package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/tsdescramble/tsdescramble/internal/runfiles"
	"github.com/tsdescramble/tsdescramble/internal/signals"
)

// running is a started command: exited is closed once it has ended, with err what cmd.Wait
// returned. If it is still running when the test ends, the test kills it, by its pid.
type running struct {
	cmd    *exec.Cmd
	exited chan struct{}
	err    error
}

func startProcess(t *testing.T, cmd *exec.Cmd) *running {
	t.Helper()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &running{cmd: cmd, exited: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			cmd.Process.Kill()
			<-p.exited
		}
	})
	return p
}

// startBlocked starts the command reading inPath and writing to a pipe that nobody reads, and
// waits until its writes block.
func startBlocked(t *testing.T, bin, inPath string) (*running, *syncBuffer) {
	t.Helper()
	cmd := exec.Command(bin, "-q", "-cw", fmt.Sprintf("%x", faultCW), "-in", inPath)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() }) // after the process is stopped: cleanups run last first
	var stderr syncBuffer
	cmd.Stdout, cmd.Stderr = w, &stderr
	p := startProcess(t, cmd)
	w.Close()
	// Read a little, so that the run is under way, then nothing: the pipe fills, and so does
	// everything the command may hold in flight.
	if _, err := io.ReadFull(r, make([]byte, 1000)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	return p, &stderr
}

// A stop signal starts a clean stop, which cannot end while the writer is blocked on a reader
// that does not read; a second signal ends the run at once, with the status of that signal and
// one line on stderr.
func TestSecondSignal(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs the command")
	}
	bin := buildBinary(t, t.TempDir())
	block, _ := faultBlock(t)
	inPath := writeFile(t, t.TempDir(), "in.ts", bytes.Repeat(block, 8))
	for _, tc := range [][2]syscall.Signal{{syscall.SIGINT, syscall.SIGINT}, {syscall.SIGTERM, syscall.SIGTERM}, {syscall.SIGHUP, syscall.SIGINT}} {
		t.Run(signals.Name(tc[0])+" then "+signals.Name(tc[1]), func(t *testing.T) {
			t.Parallel()
			p, stderr := startBlocked(t, bin, inPath)
			p.cmd.Process.Signal(tc[0])
			select {
			case <-p.exited:
				code, _ := waitStatus(t, p.err)
				t.Fatalf("exit %d after the first signal, with its writes blocked; stderr:\n%s", code, stderr.b.String())
			case <-time.After(500 * time.Millisecond):
			}
			p.cmd.Process.Signal(tc[1])
			sent := time.Now()
			select {
			case <-p.exited:
				code, _ := waitStatus(t, p.err)
				t.Logf("exit %d %v after the second signal; stderr: %s", code, time.Since(sent).Round(time.Millisecond), stderr.b.String())
				if code != 128+int(tc[1]) {
					t.Errorf("exit %d, want %d", code, 128+int(tc[1]))
				}
				oneLine(t, stderr.b.String())
				if want := "tsdescramble: stopped at once by a second signal, " + signals.Name(tc[1]) + "\n"; stderr.b.String() != want {
					t.Errorf("stderr %q, want %q", stderr.b.String(), want)
				}
			case <-time.After(time.Second):
				t.Fatalf("still running a second after the second signal")
			}
		})
	}
}

// A clean stop that takes over 2 s (the reader of the output does not read) ends the run at once.
func TestStopTakesTooLong(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs the command")
	}
	bin := buildBinary(t, t.TempDir())
	block, _ := faultBlock(t)
	inPath := writeFile(t, t.TempDir(), "in.ts", bytes.Repeat(block, 8))
	p, stderr := startBlocked(t, bin, inPath)
	p.cmd.Process.Signal(syscall.SIGTERM)
	sent := time.Now()
	select {
	case <-p.exited:
		took := time.Since(sent)
		code, _ := waitStatus(t, p.err)
		t.Logf("exit %d %v after the signal; stderr: %s", code, took.Round(time.Millisecond), stderr.b.String())
		if code != 143 || took < signals.StopGrace-100*time.Millisecond {
			t.Errorf("exit %d after %v, want 143 after %v", code, took, signals.StopGrace)
		}
		if want := "tsdescramble: stopped by SIGTERM, at once: the packets in flight were not written within 2s\n"; stderr.b.String() != want {
			t.Errorf("stderr %q, want %q", stderr.b.String(), want)
		}
	case <-time.After(signals.StopGrace + 2*time.Second):
		t.Fatalf("still running %v after the signal", signals.StopGrace+2*time.Second)
	}
}

// SIGQUIT ends a run at once. A file output is kept as NAME.partial, cut to the whole packets
// written, and named; no temporary file is left.
func TestQuitKeepsPartial(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs the command")
	}
	bin := buildBinary(t, t.TempDir())
	block, clear := faultBlock(t)
	dir := t.TempDir()
	outPath := filepath.Join(dir, "out.ts")
	cmd := exec.Command(bin, "-q", "-cw", fmt.Sprintf("%x", faultCW), "-workers", "2", "-out", outPath)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr syncBuffer
	cmd.Stderr = &stderr
	p := startProcess(t, cmd)
	var fed atomic.Int64
	go feed(stdin, block, 400, &fed)
	for deadline := time.Now().Add(time.Minute); fed.Load() < 20 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGQUIT)
	var code int
	select {
	case <-p.exited:
		code, _ = waitStatus(t, p.err)
	case <-time.After(5 * time.Second):
		t.Fatal("still running 5 s after SIGQUIT")
	}
	t.Logf("exit %d; stderr: %s", code, stderr.b.String())
	if code != 131 {
		t.Errorf("exit %d, want 131", code)
	}
	if want := "tsdescramble: stopped at once by SIGQUIT; the packets written so far are in " + outPath + ".partial\n"; stderr.b.String() != want {
		t.Errorf("stderr %q, want %q", stderr.b.String(), want)
	}
	if names := dirNames(t, dir); len(names) != 1 || names[0] != "out.ts.partial" {
		t.Fatalf("the run left %v, want out.ts.partial alone", names)
	}
	got := &repeatedPrefix{want: clear, bad: -1}
	got.Write(readFile(t, outPath+".partial"))
	if got.n == 0 || got.n%188 != 0 || got.bad >= 0 {
		t.Errorf("%d bytes kept (%d packets and %d bytes), first difference at byte %d: want whole packets of the output",
			got.n, got.n/188, got.n%188, got.bad)
	}
}

// -out /dev/stdout is -out -: a reader that goes away ends the run quietly by SIGPIPE (status
// 141 in a shell), and stdout redirected to a file is written in place, not replaced.
func TestOutDevStdout(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs the command")
	}
	if _, err := os.Stat("/dev/stdout"); err != nil {
		t.Skip("no /dev/stdout:", err)
	}
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	bin := buildBinary(t, t.TempDir())
	block, clear := faultBlock(t)
	dir := t.TempDir()
	inPath := writeFile(t, dir, "in.ts", bytes.Repeat(block, 8))
	cw := fmt.Sprintf("%x", faultCW)
	for _, out := range []string{"-", "/dev/stdout"} {
		cmd := exec.Command("bash", "-c", `"$0" -cw "$1" -in "$2" -out "$3" 2>"$4" | head -c 1000 >/dev/null; echo "${PIPESTATUS[0]}"`,
			bin, cw, inPath, out, filepath.Join(dir, "stderr"))
		got, err := cmd.Output()
		if err != nil || strings.TrimSpace(string(got)) != "141" {
			t.Errorf("-out %s | head: the shell reports %q (%v), want 141", out, got, err)
		}
		if msg := readFile(t, filepath.Join(dir, "stderr")); len(msg) != 0 {
			t.Errorf("-out %s | head: stderr %q, want nothing", out, msg)
		}
	}
	// stdout a file, named through /dev/stdout and through a link to /proc/self/fd/1.
	link := filepath.Join(dir, "stdout-link")
	if err := os.Symlink("/proc/self/fd/1", link); err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{"/dev/stdout", link} {
		outFile := filepath.Join(t.TempDir(), "redirected.ts")
		f, err := os.Create(outFile)
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, "-q", "-cw", cw, "-in", writeFile(t, t.TempDir(), "in.ts", block), "-out", out)
		var stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = f, &stderr
		err = cmd.Run()
		f.Close()
		if code, _ := waitStatus(t, err); code != 0 || stderr.Len() != 0 {
			t.Fatalf("-out %s > FILE: exit %d; stderr:\n%s", out, code, stderr.String())
		}
		sameBytes(t, "-out "+out+" > FILE", readFile(t, outFile), clear, 188)
		if names := dirNames(t, filepath.Dir(outFile)); len(names) != 1 {
			t.Errorf("-out %s > FILE left %v", out, names)
		}
	}
	if fi, err := os.Lstat("/dev/stdout"); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("/dev/stdout is no longer a link: %v, %v", fi, err)
	}
}

// A new output file gets the mode any new file of the user gets (0666 less the umask), and an
// existing one keeps its mode.
func TestOutputMode(t *testing.T) {
	s := periodStream(t, []period{{tscEven, cwA, 10}})
	for _, mask := range []int{0o022, 0o027, 0o077, 0} {
		dir := t.TempDir()
		outPath := filepath.Join(dir, "out.ts")
		old := syscall.Umask(mask)
		r := run(t, s.input(), "-q", "-cw", cwA, "-out", outPath)
		syscall.Umask(old)
		if r.code != 0 {
			t.Fatalf("umask %03o: %s", mask, describe(r))
		}
		if fi, err := os.Stat(outPath); err != nil || fi.Mode().Perm() != os.FileMode(0o666&^mask) {
			t.Errorf("umask %03o: mode %v (%v), want %v", mask, fi.Mode(), err, os.FileMode(0o666&^mask))
		}
	}
	for _, mode := range []os.FileMode{0o600, 0o640, 0o664, 0o755} {
		dir := t.TempDir()
		outPath := writeFile(t, dir, "out.ts", []byte("old"))
		if err := os.Chmod(outPath, mode); err != nil {
			t.Fatal(err)
		}
		if r := run(t, s.input(), "-q", "-cw", cwA, "-out", outPath); r.code != 0 {
			t.Fatalf("%v: %s", mode, describe(r))
		}
		if fi, err := os.Stat(outPath); err != nil || fi.Mode().Perm() != mode || fi.Size() != int64(len(s.input())) {
			t.Errorf("existing file of mode %v: now %v, %d bytes (%v)", mode, fi.Mode(), fi.Size(), err)
		}
	}
}

// -out naming a link writes the file it leads to, through a chain of links, relative or
// absolute, whether the file exists or not; the links stay links.
func TestOutputThroughLinks(t *testing.T) {
	t.Parallel()
	s := periodStream(t, []period{{tscEven, cwA, 10}})
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "real"), 0o755); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(dir, "real", "out.ts")
	link1, link2 := filepath.Join(dir, "out.ts"), filepath.Join(dir, "again.ts")
	if err := os.Symlink(filepath.Join("real", "out.ts"), link1); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(link1, link2); err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{link1, link2, link1} { // a link to no file yet, then to one
		os.Remove(target)
		if r := run(t, s.input(), "-q", "-cw", cwA, "-out", out); r.code != 0 {
			t.Fatalf("-out %s: %s", out, describe(r))
		}
		sameBytes(t, "-out "+out, readFile(t, target), s.output(), 188)
		for _, l := range []string{link1, link2} {
			if fi, err := os.Lstat(l); err != nil || fi.Mode()&os.ModeSymlink == 0 {
				t.Errorf("-out %s: %s is no longer a link", out, l)
			}
		}
		if names := dirNames(t, filepath.Join(dir, "real")); len(names) != 1 {
			t.Errorf("-out %s left %v beside the file", out, names)
		}
		if names := dirNames(t, dir); len(names) != 3 {
			t.Errorf("-out %s left %v beside the links", out, names)
		}
	}
	// A failed run keeps its partial output beside the file, and says where.
	junk := noSyncInput(200_000, false)
	copy(junk[1000:], s.input()[:3*188])
	r := run(t, junk, "-q", "-cw", cwA, "-out", link1)
	if r.code != 1 || !strings.HasSuffix(r.stderr, "; the packets found are in "+target+".partial\n") {
		t.Errorf("want exit 1 and a message naming %s.partial; %s", target, describe(r))
	}
	if _, err := os.Stat(target + ".partial"); err != nil {
		t.Error(err)
	}
	if !regexp.MustCompile(`not a transport stream`).MatchString(r.stderr) {
		t.Errorf("the message does not say why: %q", r.stderr)
	}
}

// abort, while packets are being written, keeps the file as NAME.partial, cut after the last
// write that completed, and leaves no temporary file; writes after it fail.
func TestOutputAbort(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "out.ts")
	o, err := openOutput(path, Env{Stdout: io.Discard}, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	unit := bytes.Repeat([]byte{0x47}, 188*10)
	wrote, started := make(chan error, 1), make(chan bool)
	go func() {
		for i := range 100_000 { // 188 MB at most, whatever abort does
			if i == 10 {
				close(started)
			}
			if _, err := o.w.Write(unit); err != nil {
				wrote <- err
				return
			}
		}
		wrote <- nil
	}()
	<-started
	partial := o.abort()
	if err := <-wrote; !errors.Is(err, runfiles.ErrAborted) {
		t.Errorf("a write after abort: %v", err)
	}
	if partial != path+".partial" {
		t.Fatalf("kept as %q", partial)
	}
	if names := dirNames(t, dir); len(names) != 1 || names[0] != "out.ts.partial" {
		t.Errorf("left %v", names)
	}
	if fi, err := os.Stat(partial); err != nil || fi.Size() == 0 || fi.Size()%int64(len(unit)) != 0 {
		t.Errorf("%s: %v, %v: want whole writes", partial, fi.Size(), err)
	}
	if err := o.close(false, 0); err == nil {
		t.Error("close after abort succeeded")
	}
}
