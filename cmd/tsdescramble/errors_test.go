package main

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// noSyncInput returns random bytes in which no 0x47 starts a chain of packets.
func noSyncInput(n int, with47 bool) []byte {
	rng := rand.New(rand.NewPCG(1, 2))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
		if b[i] == 0x47 && !with47 {
			b[i] = 0x46
		}
	}
	return b
}

// TestBadInvocations checks the exit status and the message of every kind of bad input,
// and that nothing reaches stdout.
func TestBadInvocations(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := periodStream(t, []period{{tscEven, cwA, 5}})
	ts := writeFile(t, dir, "in.ts", s.input())
	badLine := writeFile(t, dir, "bad.txt", []byte("# keys\n"+cwA+"\n\n11223344zz667788\n"+cwB+"\n"))
	shortLine := writeFile(t, dir, "short.txt", []byte(cwA+"\n"+cwB+"\n112233\n"))
	noKeys := writeFile(t, dir, "nokeys.txt", []byte("# nothing here\n\n"))
	missing := filepath.Join(dir, "missing.ts")
	missingKeys := filepath.Join(dir, "missing-keys.txt")

	tests := []struct {
		name  string
		args  []string
		stdin []byte
		code  int
		want  []string // substrings of the message
	}{
		// Usage errors: exit 2.
		{"no key flag", nil, s.input(), 2, []string{"-cw", "-cw-even", "-cw-odd", "-cw-file"}},
		{"no key flag with -in", []string{"-in", ts}, nil, 2, []string{"-cw", "-cw-even", "-cw-odd", "-cw-file"}},
		{"cw too short", []string{"-cw", "123"}, s.input(), 2, []string{"-cw", "16 hex digits"}},
		{"cw too long", []string{"-cw", cwA + "00"}, s.input(), 2, []string{"-cw", "16 hex digits"}},
		{"cw not hex", []string{"-cw", "zzzzzzzzzzzzzzzz"}, s.input(), 2, []string{"-cw", "16 hex digits"}},
		{"cw empty", []string{"-cw="}, s.input(), 2, []string{"-cw"}},
		{"cw-even bad", []string{"-cw-even", "0102", "-cw-odd", cwB}, s.input(), 2, []string{"-cw-even"}},
		{"cw-odd bad", []string{"-cw-even", cwA, "-cw-odd", "g102030608090a1b"}, s.input(), 2, []string{"-cw-odd"}},
		{"cw-file bad line", []string{"-cw-file", badLine}, s.input(), 2, []string{badLine + ":4"}},
		{"cw-file short line", []string{"-cw-file", shortLine}, s.input(), 2, []string{shortLine + ":3"}},
		{"cw-file missing", []string{"-cw-file", missingKeys}, s.input(), 2, []string{missingKeys}},
		{"cw-file is a directory", []string{"-cw-file", dir}, s.input(), 2, []string{dir}},
		{"cw-file without keys", []string{"-cw-file", noKeys}, s.input(), 2, []string{noKeys}},
		{"two key sources", []string{"-cw", cwA, "-cw-file", badLine}, s.input(), 2, []string{"-cw"}},
		{"cw and cw-even", []string{"-cw", cwA, "-cw-even", cwA}, s.input(), 2, []string{"-cw"}},
		{"unknown flag", []string{"-cw", cwA, "-frobnicate"}, s.input(), 2, []string{"-frobnicate", "-h"}},
		{"unknown long flag", []string{"--cw", cwA, "--no-such-flag=1"}, s.input(), 2, []string{"no-such-flag"}},
		{"flag without its value", []string{"-cw"}, s.input(), 2, []string{"-cw"}},
		{"workers not a number", []string{"-cw", cwA, "-workers", "many"}, s.input(), 2, []string{"workers"}},
		{"workers 0", []string{"-cw", cwA, "-workers", "0"}, s.input(), 2, []string{"-workers"}},
		{"batch 0", []string{"-cw", cwA, "-batch", "0"}, s.input(), 2, []string{"-batch"}},
		{"batch too large", []string{"-cw", cwA, "-batch", "10000000"}, s.input(), 2, []string{"-batch"}},
		{"stray argument", []string{"-cw", cwA, ts}, nil, 2, []string{ts, "-in"}},
		{"mistyped command", []string{"prob", ts}, nil, 2, []string{"unknown command prob", "did you mean probe?"}},
		{"command for a flag", []string{"version"}, nil, 2, []string{"unknown command version", "did you mean the flag -version?"}},
		{"duration without unit", []string{"-cw", cwA, "-latency", "5"}, s.input(), 2, []string{"-latency wants a duration with its unit"}},
		{"missing-key value before its source", []string{"-cw", cwA, "-missing-key", "skip"}, s.input(), 2, []string{"-missing-key: want pass", "or drop"}},

		// Runtime failures: exit 1.
		{"input missing", []string{"-q", "-cw", cwA, "-in", missing}, nil, 1, []string{missing}},
		{"input missing, -i", []string{"-q", "-cw", cwA, "-i", missing, "-o", filepath.Join(dir, "o1.ts")}, nil, 1, []string{missing}},
		{"input is a directory", []string{"-q", "-cw", cwA, "-in", dir}, nil, 1, []string{dir}},
		{"no sync: random bytes without 0x47", []string{"-q", "-cw", cwA}, noSyncInput(20000, false), 1, []string{"sync"}},
		{"no sync: random bytes", []string{"-q", "-cw", cwA}, noSyncInput(20000, true), 1, []string{"sync"}},
		{"no sync: a few bytes", []string{"-q", "-cw", cwA}, []byte("hello\n"), 1, []string{"sync"}},
		{"no sync: one short packet", []string{"-q", "-cw", cwA}, s.input()[:100], 1, []string{"sync"}},
		{"output in a missing directory", []string{"-q", "-cw", cwA, "-in", ts, "-out", filepath.Join(dir, "no", "such", "out.ts")}, nil, 1, []string{filepath.Join(dir, "no", "such")}},
		{"output is a directory", []string{"-q", "-cw", cwA, "-in", ts, "-out", dir}, nil, 1, []string{dir}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := run(t, tc.stdin, tc.args...)
			if r.code != tc.code {
				t.Errorf("exit %d, want %d; %s", r.code, tc.code, describe(r))
			}
			if r.stdout != "" {
				t.Errorf("stdout holds %d bytes, want none", len(r.stdout))
			}
			oneLine(t, r.stderr)
			if !strings.HasPrefix(r.stderr, "tsdescramble: ") {
				t.Errorf("message does not start with the command name: %q", r.stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("message does not mention %q: %q", w, r.stderr)
				}
			}
		})
	}
	// No failed run leaves files behind.
	names := dirNames(t, dir)
	for _, n := range names {
		switch n {
		case "in.ts", "bad.txt", "short.txt", "nokeys.txt":
		default:
			t.Errorf("a failed run left %s in the directory", n)
		}
	}
}

// TestNoSyncWithSummary checks that an input that is not a transport stream fails with exit
// 1 and ends stderr with the message when the summary is printed too.
func TestNoSyncWithSummary(t *testing.T) {
	t.Parallel()
	r := run(t, noSyncInput(5000, true), "-cw", cwA)
	if r.code != 1 || r.stdout != "" {
		t.Fatalf("want exit 1 and no output; %s", describe(r))
	}
	lines := strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n")
	if last := lines[len(lines)-1]; !strings.HasPrefix(last, "tsdescramble: stdin: ") || !strings.Contains(last, "sync") {
		t.Errorf("last line of stderr is not the error: %q", last)
	}
}

// TestHelp checks that -h, --help and help print the help on stdout (so that it can be paged),
// nothing on stderr, and exit 0.
func TestHelp(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"-h"}, {"--help"}, {"-cw", cwA, "-h"}, {"help"}} {
		r := run(t, nil, args...)
		if r.code != 0 {
			t.Errorf("%v: exit %d, want 0", args, r.code)
		}
		if r.stderr != "" {
			t.Errorf("%v: stderr holds %q, want nothing", args, r.stderr)
		}
		for _, w := range []string{"tsdescramble", "-cw", "-cw-even", "-cw-odd", "-cw-file", "-in", "-out", "-reduce-entropy", "-workers", "-show-keys"} {
			if !strings.Contains(r.stdout, w) {
				t.Errorf("%v: help does not mention %q", args, w)
			}
		}
		// A duration flag's default is shown as the others' are.
		if !regexp.MustCompile(`(?s)-key-wait DURATION.*?\(default: 2s\)`).MatchString(r.stdout) {
			t.Errorf("%v: help does not give -key-wait's default", args)
		}
	}
}

// TestSameInputAndOutput checks that -in and -out naming one file is a usage error that
// leaves the file as it was.
func TestSameInputAndOutput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := periodStream(t, []period{{tscEven, cwA, 20}})
	data := s.input()
	path := writeFile(t, dir, "rec.ts", data)
	link := filepath.Join(dir, "link.ts")
	if err := os.Symlink(path, link); err != nil {
		t.Fatal(err)
	}
	hard := filepath.Join(dir, "hard.ts")
	if err := os.Link(path, hard); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		in, out string
	}{
		{"same path", path, path},
		{"-i and -o", path, path},
		{"unclean path", path, filepath.Join(dir, ".", "sub", "..", "rec.ts")},
		{"trailing separator", path, dir + "//rec.ts"},
		{"symbolic link", path, link},
		{"symbolic link as input", link, path},
		{"hard link", hard, path},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inFlag, outFlag := "-in", "-out"
			if tc.name == "-i and -o" {
				inFlag, outFlag = "-i", "-o"
			}
			for _, extra := range [][]string{{"-cw", cwA}, {"-q", "-cw", cwA}, {"-v", "-cw", cwA}} {
				r := run(t, nil, append(extra, inFlag, tc.in, outFlag, tc.out)...)
				if r.code != 2 {
					t.Errorf("%v: exit %d, want 2; %s", extra, r.code, describe(r))
				}
				if r.stdout != "" {
					t.Errorf("%v: stdout holds %d bytes", extra, len(r.stdout))
				}
				if !strings.Contains(r.stderr, "same file") {
					t.Errorf("%v: message does not say the files are the same: %q", extra, r.stderr)
				}
				if got := readFile(t, path); string(got) != string(data) {
					t.Fatalf("%v: the input file changed: %d bytes, was %d", extra, len(got), len(data))
				}
			}
		})
	}
	for _, n := range dirNames(t, dir) {
		if n != "rec.ts" && n != "link.ts" && n != "hard.ts" {
			t.Errorf("the runs left %s in the directory", n)
		}
	}
}

// -log-format json: one object a line, the summary's detail lines without the indentation of
// the text format.
func TestJSONLogLines(t *testing.T) {
	t.Parallel()
	r := run(t, readFile(t, demoScrambled), "-log-format", "json", "-cw-file", demoKeys)
	if r.code != 0 {
		t.Fatal(describe(r))
	}
	lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
	if len(lines) < 3 {
		t.Fatalf("stderr: %s", r.stderr)
	}
	for _, l := range lines {
		var rec struct{ Level, Msg string }
		if err := json.Unmarshal([]byte(l), &rec); err != nil || rec.Msg == "" || strings.HasPrefix(rec.Msg, " ") {
			t.Errorf("line %q: %v", l, err)
		}
	}
}

// A PID in a message is written as the summaries and probe write it: 0x and four lower-case
// hex digits (probe's own form: TestProbeCommandRealPSI).
func TestPIDForm(t *testing.T) {
	t.Parallel()
	r := run(t, nil, "scramble", "-in", demoClear, "-out", os.DevNull, "-ecmg", "127.0.0.1:1", "-super-cas-id", "4ADC0000",
		"-ecm-pid", "0x1FF0", "-pid", "0x1ff0", "-cp-duration", "1s")
	if r.code != exitUsage || !strings.Contains(r.stderr, "-ecm-pid 0x1ff0 is among the -pid list") {
		t.Errorf("%s", describe(r))
	}
}
