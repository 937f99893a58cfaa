package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tsdescramble/tsdescramble/internal/runfiles"
)

// unreadable is a stdin that fails the test if the command reads it.
type unreadable struct{ t *testing.T }

func (u unreadable) Read([]byte) (int, error) {
	u.t.Error("the command read its input before refusing the flags")
	return 0, os.ErrClosed
}

// TestOutputNamesInput checks that an output flag naming an input, a key file or another
// output is a usage error found before the input is read: exit 2, one line naming both flags,
// every file as it was, and nothing new in the directory.
func TestOutputNamesInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := periodStream(t, []period{{tscEven, cwA, 20}})
	data := s.input()
	keyData := []byte(cwA + "\n" + cwB + "\n")
	in := writeFile(t, dir, "rec.ts", data)
	keyFile := writeFile(t, dir, "keys.txt", keyData)
	symlink := filepath.Join(dir, "link.ts")
	if err := os.Symlink(in, symlink); err != nil {
		t.Fatal(err)
	}
	hardlink := filepath.Join(dir, "hard.ts")
	if err := os.Link(in, hardlink); err != nil {
		t.Fatal(err)
	}
	keyLink := filepath.Join(dir, "keys-link.txt")
	if err := os.Symlink(keyFile, keyLink); err != nil {
		t.Fatal(err)
	}
	subdir := filepath.Join(dir, "sub")
	if err := os.Mkdir(subdir, 0o755); err != nil {
		t.Fatal(err)
	}
	dirLink := filepath.Join(dir, "sub-link")
	if err := os.Symlink(subdir, dirLink); err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{"rec.ts": data, "keys.txt": keyData}
	out := filepath.Join(dir, "out.ts")
	missingDir := filepath.Join(dir, "no", "such")

	tests := []struct {
		name  string
		args  []string
		stdin bool // the input is stdin, which must not be read
		want  []string
	}{
		{"stats = in", []string{"-cw", cwA, "-in", in, "-out", out, "-stats", in}, false, []string{"-in", "-stats", in, "same file"}},
		{"stats = in, -i", []string{"-cw", cwA, "-i", in, "-o", out, "-stats", in}, false, []string{"-in", "-stats", "same file"}},
		{"stats = in, unclean path", []string{"-cw", cwA, "-in", in, "-stats", filepath.Join(dir, ".", "sub", "..", "rec.ts")}, false, []string{"-in", "-stats", "same file"}},
		{"stats = in, symbolic link", []string{"-cw", cwA, "-in", in, "-stats", symlink}, false, []string{"-in", "-stats", in, symlink, "same file"}},
		{"stats = in, hard link", []string{"-cw", cwA, "-in", in, "-stats", hardlink}, false, []string{"-in", "-stats", hardlink, "same file"}},
		{"stats = in as a symbolic link", []string{"-cw", cwA, "-in", symlink, "-stats", in}, false, []string{"-in", "-stats", "same file"}},
		{"stats = cw-file", []string{"-cw-file", keyFile, "-stats", keyFile}, true, []string{"-cw-file", "-stats", keyFile, "same file"}},
		{"stats = cw-file, symbolic link", []string{"-cw-file", keyFile, "-stats", keyLink}, true, []string{"-cw-file", "-stats", "same file"}},
		{"stats = out", []string{"-cw", cwA, "-in", in, "-out", out, "-stats", out}, false, []string{"-out", "-stats", out, "same file"}},
		{"stats = out, unclean path", []string{"-cw", cwA, "-in", in, "-out", out, "-stats", dir + "//out.ts"}, false, []string{"-out", "-stats", "same file"}},
		{"stats = out through a linked directory", []string{"-cw", cwA, "-in", in, "-out", filepath.Join(subdir, "o.ts"), "-stats", filepath.Join(dirLink, "o.ts")}, false, []string{"-out", "-stats", "same file"}},
		{"stats = existing out", []string{"-cw", cwA, "-in", in, "-out", keyFile + ".x", "-stats", keyFile + ".x"}, false, []string{"-out", "-stats", "same file"}},
		{"out = cw-file", []string{"-cw-file", keyFile, "-out", keyFile}, true, []string{"-cw-file", "-out", keyFile, "same file"}},
		{"out = cw-file, hard link via symlink", []string{"-cw-file", keyLink, "-out", keyFile}, true, []string{"-cw-file", "-out", "same file"}},
		{"out = rescramble-cw-file", []string{"-cw", cwA, "-rescramble", "csa2", "-rescramble-cw-file", keyFile, "-out", keyFile}, true, []string{"-rescramble-cw-file", "-out", "same file"}},
		{"stats = rescramble-cw-file", []string{"-cw", cwA, "-rescramble", "csa2", "-rescramble-cw-file", keyFile, "-stats", keyFile}, true, []string{"-rescramble-cw-file", "-stats", "same file"}},
		{"out = in, hard link", []string{"-cw", cwA, "-in", hardlink, "-out", in}, false, []string{"-in", "-out", "same file"}},
		{"scramble: stats = in", []string{"scramble", "-cw", cwA, "-in", in, "-out", out, "-stats", in}, false, []string{"-in", "-stats", "same file"}},
		{"scramble: out = cw-file", []string{"scramble", "-cw-file", keyFile, "-out", keyFile}, true, []string{"-cw-file", "-out", "same file"}},
		{"scramble: cw-log = in", []string{"scramble", "-in", in, "-out", out, "-cp-duration", "1s", "-cw-log", in}, false, []string{"-in", "-cw-log", "same file", "CW log"}},
		{"scramble: cw-log = cw-file", []string{"scramble", "-cw-file", keyFile, "-cp-duration", "1s", "-cw-log", keyLink}, true, []string{"-cw-file", "-cw-log", "same file"}},
		{"stats in a missing directory", []string{"-cw", cwA, "-in", in, "-out", out, "-stats", filepath.Join(missingDir, "s.json")}, false, []string{"-stats", missingDir, "does not exist"}},
		{"stats in a missing directory, stdin", []string{"-cw", cwA, "-stats", filepath.Join(missingDir, "s.json")}, true, []string{"-stats", missingDir}},
		{"stats is a directory", []string{"-cw", cwA, "-in", in, "-out", out, "-stats", subdir}, false, []string{"-stats", subdir, "directory"}},
		{"stats under a file", []string{"-cw", cwA, "-in", in, "-out", out, "-stats", filepath.Join(in, "s.json")}, false, []string{"-stats", in}},
	}
	// The existing output of one case.
	if err := os.WriteFile(keyFile+".x", []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	files["keys.txt.x"] = []byte("x")
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			env := Env{Stdin: bytes.NewReader(data), Stdout: &stdout, Stderr: &stderr, IsTerminal: func(*os.File) bool { return false }}
			if tc.stdin {
				env.Stdin = unreadable{t}
			}
			code := runEnv(t, env, tc.args...)
			r := result{code, stdout.String(), stderr.String()}
			if code != exitUsage {
				t.Errorf("exit %d, want 2; %s", code, describe(r))
			}
			if r.stdout != "" {
				t.Errorf("stdout holds %d bytes, want none", len(r.stdout))
			}
			oneLine(t, r.stderr)
			for _, w := range tc.want {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("message does not mention %q: %q", w, r.stderr)
				}
			}
			for name, want := range files {
				if got := readFile(t, filepath.Join(dir, name)); !bytes.Equal(got, want) {
					t.Errorf("%s changed: %d bytes, was %d", name, len(got), len(want))
				}
			}
		})
	}
	names := dirNames(t, dir)
	slices.Sort(names)
	want := []string{"hard.ts", "keys-link.txt", "keys.txt", "keys.txt.x", "link.ts", "rec.ts", "sub", "sub-link"}
	if !slices.Equal(names, want) {
		t.Errorf("the directory holds %v after the runs, want %v", names, want)
	}
	if sub := dirNames(t, subdir); len(sub) != 0 {
		t.Errorf("the runs left %v in %s", sub, subdir)
	}
}

// TestDistinctPathsRun checks that the path checks let through what is not a conflict: a new
// statistics file beside the input, stdin and stdout, and a device named by two outputs.
func TestDistinctPathsRun(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := periodStream(t, []period{{tscEven, cwA, 20}})
	in := writeFile(t, dir, "rec.ts", s.input())
	keyFile := writeFile(t, dir, "keys.txt", []byte(cwA+"\n"))
	out, stats := filepath.Join(dir, "out.ts"), filepath.Join(dir, "stats.json")

	r := run(t, nil, "-q", "-cw-file", keyFile, "-in", in, "-out", out, "-stats", stats)
	if r.code != 0 {
		t.Fatalf("%s", describe(r))
	}
	sameBytes(t, "output", readFile(t, out), s.output(), 188)
	if b := readFile(t, stats); !bytes.HasPrefix(b, []byte("{")) {
		t.Errorf("the statistics file does not hold JSON: %.40q", b)
	}

	// Written over when it exists already.
	r = run(t, s.input(), "-q", "-cw", cwA, "-stats", stats)
	if r.code != 0 || r.stdout != string(s.output()) {
		t.Fatalf("stdin to stdout with an existing -stats file: %s", describe(r))
	}

	if _, err := os.Stat(os.DevNull); err == nil {
		r = run(t, nil, "-q", "-cw", cwA, "-in", in, "-out", os.DevNull, "-stats", os.DevNull)
		if r.code != 0 {
			t.Errorf("-out and -stats %s: %s", os.DevNull, describe(r))
		}
	}
}

// TestStatsNotWritable checks that a -stats file that cannot be created or written is
// refused before the run.
func TestStatsNotWritable(t *testing.T) {
	t.Parallel()
	if os.Geteuid() == 0 {
		t.Skip("permissions do not bind root")
	}
	dir := t.TempDir()
	s := periodStream(t, []period{{tscEven, cwA, 5}})
	ro := filepath.Join(dir, "ro")
	if err := os.Mkdir(ro, 0o555); err != nil {
		t.Fatal(err)
	}
	roFile := writeFile(t, dir, "ro.json", []byte("old"))
	if err := os.Chmod(roFile, 0o444); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{filepath.Join(ro, "s.json"), roFile} {
		r := run(t, s.input(), "-cw", cwA, "-stats", path)
		if r.code != exitUsage || r.stdout != "" || !strings.Contains(r.stderr, path) {
			t.Errorf("-stats %s: want exit 2, no output and a message naming it; %s", path, describe(r))
		}
		oneLine(t, r.stderr)
	}
	if got := readFile(t, roFile); string(got) != "old" {
		t.Errorf("the read-only file changed: %q", got)
	}
}

func TestSameFileAs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a := writeFile(t, dir, "a", []byte("a"))
	b := writeFile(t, dir, "b", []byte("b"))
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	subLink := filepath.Join(dir, "link")
	if err := os.Symlink(sub, subLink); err != nil {
		t.Fatal(err)
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(wd, a)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		a, b string
		same bool
	}{
		{a, a, true},
		{a, b, false},
		{a, rel, true},
		{a, filepath.Join(dir, "new"), false},
		{filepath.Join(dir, "new"), filepath.Join(dir, "new"), true},
		{filepath.Join(dir, "new"), filepath.Join(dir, "x", "..", "new"), true},
		{filepath.Join(dir, "new"), filepath.Join(dir, "new2"), false},
		{filepath.Join(sub, "new"), filepath.Join(subLink, "new"), true},
		{filepath.Join(sub, "new"), filepath.Join(subLink, "other"), false},
		{os.DevNull, os.DevNull, false},
	} {
		if got := runfiles.SameFile(tc.a, tc.b); got != tc.same {
			t.Errorf("runfiles.SameFile(%s, %s) = %v, want %v", tc.a, tc.b, got, tc.same)
		}
	}
}
