package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tsdescramble/tsdescramble/ts"

	"github.com/tsdescramble/tsdescramble/csa"
)

// TestBinary builds the command and runs it as a separate process, with its standard input
// and output connected to files and to OS pipes, as a shell would.
func TestBinary(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	dir := t.TempDir()
	bin := buildBinary(t, dir)

	s := periodStream(t, []period{{tscEven, cwA, 40}, {tscOdd, cwB, 40}, {tscEven, cwC, 40}, {tscOdd, cwA, 40}})
	in, want := frame(s.in, 192), frame(s.want, 192)
	inPath := writeFile(t, dir, "scrambled.ts", in)
	keyFile := writeFile(t, dir, "keys.txt", []byte("# three keys\n"+cwA+"\n"+cwB+"\n"+cwC+"\n"))

	// command returns a command of the binary that ends within a minute.
	command := func(t *testing.T, args ...string) (*exec.Cmd, *bytes.Buffer) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		t.Cleanup(cancel)
		cmd := exec.CommandContext(ctx, bin, args...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		return cmd, &stderr
	}
	exitCode := func(t *testing.T, err error) int {
		t.Helper()
		var ee *exec.ExitError
		switch {
		case err == nil:
			return 0
		case errors.As(err, &ee):
			return ee.ExitCode()
		}
		t.Fatalf("running the binary: %v", err)
		return -1
	}

	t.Run("stdin and stdout redirected from and to files", func(t *testing.T) {
		cmd, stderr := command(t, "-cw-file", keyFile)
		inFile, err := os.Open(inPath)
		if err != nil {
			t.Fatal(err)
		}
		defer inFile.Close()
		outPath := filepath.Join(t.TempDir(), "clear.ts")
		outFile, err := os.Create(outPath)
		if err != nil {
			t.Fatal(err)
		}
		defer outFile.Close()
		cmd.Stdin, cmd.Stdout = inFile, outFile
		if code := exitCode(t, cmd.Run()); code != 0 {
			t.Fatalf("exit %d; stderr:\n%s", code, stderr)
		}
		sameBytes(t, "output", readFile(t, outPath), want, 192)
		if !strings.HasPrefix(stderr.String(), "tsdescramble: ") || !strings.Contains(stderr.String(), "packets in") {
			t.Errorf("no summary on stderr:\n%s", stderr)
		}
	})

	t.Run("stdin from a pipe, stdout to a file", func(t *testing.T) {
		cmd, stderr := command(t, "-q", "-cw-file", keyFile, "-workers", "2", "-batch", "7")
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		outPath := filepath.Join(t.TempDir(), "clear.ts")
		outFile, err := os.Create(outPath)
		if err != nil {
			t.Fatal(err)
		}
		defer outFile.Close()
		cmd.Stdin, cmd.Stdout = r, outFile
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		r.Close()
		// Write in odd-sized pieces, as a slow producer would.
		for rest := in; len(rest) > 0; {
			n := min(len(rest), 1000)
			if _, err := w.Write(rest[:n]); err != nil {
				t.Fatal(err)
			}
			rest = rest[n:]
		}
		w.Close()
		if code := exitCode(t, cmd.Wait()); code != 0 || stderr.Len() != 0 {
			t.Fatalf("exit %d, want 0 and no message; stderr:\n%s", code, stderr)
		}
		sameBytes(t, "output", readFile(t, outPath), want, 192)
	})

	t.Run("-in and -out", func(t *testing.T) {
		outPath := filepath.Join(t.TempDir(), "clear.ts")
		cmd, stderr := command(t, "-q", "-in", inPath, "-out", outPath, "-cw-file", keyFile)
		var stdout bytes.Buffer
		cmd.Stdout = &stdout
		if code := exitCode(t, cmd.Run()); code != 0 || stderr.Len() != 0 || stdout.Len() != 0 {
			t.Fatalf("exit %d, %d bytes on stdout; stderr:\n%s", code, stdout.Len(), stderr)
		}
		sameBytes(t, "output", readFile(t, outPath), want, 192)
	})

	t.Run("stdout to a pipe", func(t *testing.T) {
		cmd, stderr := command(t, "-q", "-in", inPath, "-cw-file", keyFile)
		var stdout bytes.Buffer
		cmd.Stdout = &stdout // a pipe read by the test
		if code := exitCode(t, cmd.Run()); code != 0 {
			t.Fatalf("exit %d; stderr:\n%s", code, stderr)
		}
		sameBytes(t, "output", stdout.Bytes(), want, 192)
	})

	for _, tc := range []struct {
		name  string
		args  []string
		stdin []byte
		code  int
	}{
		{"no key", nil, in, 2},
		{"bad key", []string{"-cw", "123"}, in, 2},
		{"unknown flag", []string{"-cw", cwA, "-nope"}, in, 2},
		{"no sync", []string{"-cw", cwA}, noSyncInput(3000, true), 1},
		{"missing input", []string{"-cw", cwA, "-in", filepath.Join(dir, "missing.ts")}, nil, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd, stderr := command(t, tc.args...)
			var stdout bytes.Buffer
			cmd.Stdin, cmd.Stdout = bytes.NewReader(tc.stdin), &stdout
			if code := exitCode(t, cmd.Run()); code != tc.code {
				t.Errorf("exit %d, want %d; stderr:\n%s", code, tc.code, stderr)
			}
			if stdout.Len() != 0 {
				t.Errorf("stdout holds %d bytes, want none", stdout.Len())
			}
			if stderr.Len() == 0 {
				t.Errorf("nothing on stderr")
			}
		})
	}

	// tsdescramble -h | less: the help goes to the pipe, nothing to stderr.
	for _, args := range [][]string{{"-h"}, {"help", "scramble"}, {"-version"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			cmd, stderr := command(t, args...)
			var stdout bytes.Buffer
			cmd.Stdout = &stdout
			if code := exitCode(t, cmd.Run()); code != 0 || stdout.Len() == 0 || stderr.Len() != 0 {
				t.Errorf("exit %d, %d bytes on stdout, want 0 and the text there; stderr:\n%s", code, stdout.Len(), stderr)
			}
		})
	}
}

// buildBinary returns the path of the command built from this package; it skips the test when
// there is no go command. The command is built once per test binary, into a directory that
// TestMain removes (dir is not used): a build per test cost a second or more each.
func buildBinary(t *testing.T, dir string) string {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command:", err)
	}
	buildOnce()
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.path
}

// buildOnce builds the command, the first time it is called; later calls wait for that build.
func buildOnce() {
	built.once.Do(func() {
		goTool, err := exec.LookPath("go")
		if err != nil {
			built.err = err
			return
		}
		if built.dir, built.err = os.MkdirTemp("", "tsdescramble-test-"); built.err != nil {
			return
		}
		built.path = filepath.Join(built.dir, "tsdescramble")
		if runtime.GOOS == "windows" {
			built.path += ".exe"
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		var out []byte
		args := []string{"build", "-o", built.path}
		if len(binaryTags) > 0 {
			args = append(args, "-tags", strings.Join(binaryTags, ","))
		}
		if out, built.err = exec.CommandContext(ctx, goTool, append(args, ".")...).CombinedOutput(); built.err != nil {
			built.err = fmt.Errorf("go build: %v\n%s", built.err, out)
		}
	})
}

// binaryTags are the build tags the command is built with, those of this test binary that
// the command has code for (the srt tag's tests add it, so that the binary has SRT too).
var binaryTags []string

// built is the command buildBinary built.
var built struct {
	once      sync.Once
	dir, path string
	err       error
}

// descrambled returns what the library makes of a stream, as the expected output.
func descrambled(t *testing.T, stream, cw []byte) []byte {
	t.Helper()
	out := append([]byte{}, stream...)
	k, _ := csa.NewKey(cw)
	for i := 0; i < len(out); i += ts.PacketSize {
		p := out[i : i+ts.PacketSize]
		k.Decrypt(ts.Payload(p))
		ts.SetTSC(p, ts.Clear)
	}
	return out
}
