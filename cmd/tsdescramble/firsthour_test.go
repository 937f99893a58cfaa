package main

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/tsdescramble/tsdescramble/internal/clihelp"
)

// The tests of this file hold the command to what a new user meets first: help that can be
// paged, one line for each mistake with the way out, no binary on a terminal, no wait on one,
// and no control word repeated back from a command line.

// watchedReader is a stdin that records whether the command read it.
type watchedReader struct {
	r    io.Reader
	read bool
}

func (w *watchedReader) Read(p []byte) (int, error) {
	w.read = true
	return w.r.Read(p)
}

// refused runs the command and checks that it was refused as a usage error, before it read
// its input: exit 2, nothing on stdout, one line on stderr that starts with the command's name
// and holds every string of want and none of avoid.
func refused(t *testing.T, args []string, want, avoid []string) {
	t.Helper()
	checkRefused(t, args, want, avoid, false)
}

// refusedAfterPeek is refused for the errors of the key flags: the descrambler may read the
// start of its input before them, to learn from the PMT which system, and so which key sizes,
// to expect.
func refusedAfterPeek(t *testing.T, args []string, want, avoid []string) {
	t.Helper()
	checkRefused(t, args, want, avoid, true)
}

func checkRefused(t *testing.T, args []string, want, avoid []string, mayRead bool) {
	t.Helper()
	stdin := &watchedReader{r: bytes.NewReader(periodStream(t, []period{{tscEven, cwA, 5}}).input())}
	var stdout, stderr bytes.Buffer
	code := runEnv(t, Env{Stdin: stdin, Stdout: &stdout, Stderr: &stderr, IsTerminal: func(*os.File) bool { return false }}, args...)
	r := result{code, stdout.String(), stderr.String()}
	if code != exitUsage || r.stdout != "" {
		t.Errorf("%q: want exit 2 and nothing on stdout; %s", args, describe(r))
	}
	if stdin.read && !mayRead {
		t.Errorf("%q: the input was read before the command line was refused", args)
	}
	oneLine(t, r.stderr)
	if !strings.HasPrefix(r.stderr, "tsdescramble: ") {
		t.Errorf("%q: message does not start with the command name: %q", args, r.stderr)
	}
	for _, w := range want {
		if !strings.Contains(r.stderr, w) {
			t.Errorf("%q: message does not mention %q: %q", args, w, r.stderr)
		}
	}
	for _, a := range avoid {
		if strings.Contains(strings.ToLower(r.stderr), strings.ToLower(a)) {
			t.Errorf("%q: message shows %q: %q", args, a, r.stderr)
		}
	}
}

// noFilesBut fails the test if dir holds anything but the names given.
func noFilesBut(t *testing.T, dir string, names ...string) {
	t.Helper()
	for _, n := range dirNames(t, dir) {
		found := false
		for _, m := range names {
			found = found || n == m
		}
		if !found {
			t.Errorf("%s left behind in the directory", n)
		}
	}
}

// TestTerminals checks that a forgotten -in with a terminal on stdin, and a forgotten -out with a
// terminal on stdout, are usage errors that say what to give, for the descrambler and the
// scrambler, and that -in - and -out - given explicitly use the terminal anyway.
func TestTerminals(t *testing.T) {
	t.Parallel()
	s := periodStream(t, []period{{tscEven, cwA, 20}})
	dir := t.TempDir()
	inPath := writeFile(t, dir, "in.ts", s.input())
	clearPath := writeFile(t, dir, "clear.ts", s.output())

	for _, tc := range []struct {
		name      string
		args      []string
		stdinData []byte
		ttyIn     bool // stdin is a terminal
		ttyOut    bool // stdout is a terminal
		code      int
		want      string // in the message; "" for a run that succeeds
	}{
		{"no -in, stdin a terminal", []string{"-cw", cwA, "-out", filepath.Join(dir, "o.ts")}, nil, true, false, 2, "-in FILE"},
		{"no -out, stdout a terminal", []string{"-cw", cwA, "-in", inPath}, nil, false, true, 2, "-out FILE"},
		{"neither, both terminals", []string{"-cw", cwA}, nil, true, true, 2, "-in FILE"},
		{"scramble: no -in", []string{"scramble", "-cw", cwA, "-out", filepath.Join(dir, "o.ts")}, nil, true, false, 2, "-in FILE"},
		{"scramble: no -out", []string{"scramble", "-cw", cwA, "-in", clearPath}, nil, false, true, 2, "-out FILE"},
		{"-out - forces the terminal", []string{"-q", "-cw", cwA, "-in", inPath, "-out", "-"}, nil, false, true, 0, ""},
		{"-o - forces the terminal", []string{"-q", "-cw", cwA, "-in", inPath, "-o", "-"}, nil, false, true, 0, ""},
		{"-in - forces the terminal", []string{"-q", "-cw", cwA, "-in", "-"}, s.input(), true, false, 0, ""},
		{"scramble: -out - forces the terminal", []string{"scramble", "-q", "-cw", cwA, "-in", clearPath, "-out", "-"}, nil, false, true, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tmp := t.TempDir()
			stdin := writeFile(t, tmp, "stdin", tc.stdinData)
			in, err := os.Open(stdin)
			if err != nil {
				t.Fatal(err)
			}
			defer in.Close()
			out, err := os.Create(filepath.Join(tmp, "stdout"))
			if err != nil {
				t.Fatal(err)
			}
			defer out.Close()
			var stderr bytes.Buffer
			env := Env{Stdin: in, Stdout: out, Stderr: &stderr, IsTerminal: func(f *os.File) bool {
				return f == in && tc.ttyIn || f == out && tc.ttyOut
			}}
			code := runEnv(t, env, tc.args...)
			written := readFile(t, out.Name())
			if code != tc.code {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, tc.code, stderr.String())
			}
			if tc.want == "" {
				if len(written) == 0 {
					t.Errorf("nothing written to the terminal given with -out -")
				}
				if tc.ttyOut && !tc.ttyIn && stderr.Len() != 0 {
					t.Errorf("stderr holds %q with -q", stderr.String())
				}
				return
			}
			if len(written) != 0 {
				t.Errorf("%d bytes written to stdout", len(written))
			}
			if pos, _ := in.Seek(0, io.SeekCurrent); pos != 0 {
				t.Errorf("stdin was read")
			}
			oneLine(t, stderr.String())
			if !strings.Contains(stderr.String(), tc.want) || !strings.Contains(stderr.String(), "terminal") {
				t.Errorf("message does not say to give %s: %q", tc.want, stderr.String())
			}
		})
	}
	noFilesBut(t, dir, "in.ts", "clear.ts")
}

// TestFlagsBeforeCommand checks that flags given before a command's name, which the command
// would not read, are refused with a message that says where they go.
func TestFlagsBeforeCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	keyFile := writeFile(t, dir, "keys.txt", []byte(cwA+"\n"))
	in := writeFile(t, dir, "in.ts", periodStream(t, []period{{tscEven, cwA, 5}}).output())
	out := filepath.Join(dir, "out.ts")
	for _, args := range [][]string{
		{"-cw-file", keyFile, "scramble", "-in", in, "-out", out},
		{"-cw", cwA, "scramble", "-cw", cwA, "-in", in, "-out", out},
		{"-i", in, "-q", "probe", in},
		{"-v", "bench"},
	} {
		cmd := ""
		for _, a := range args {
			if a == "scramble" || a == "probe" || a == "bench" {
				cmd = a
			}
		}
		refused(t, args, []string{"before the command " + cmd, "after it", "tsdescramble " + cmd + " -h"}, []string{cwA})
	}
	// Each flag is named once, by its first name, whichever name was typed.
	refused(t, []string{"-i", in, "-q", "probe", in}, []string{"-in and -quiet are given"}, nil)
	noFilesBut(t, dir, "keys.txt", "in.ts")
}

// TestContradictions checks that flags that contradict each other, and arguments nothing
// reads, are refused.
func TestContradictions(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"-q", "-v", "-cw", cwA}, []string{"-q", "-v", "one or the other"}},
		{[]string{"-quiet", "-verbose", "-cw", cwA}, []string{"-q", "-v"}},
		{[]string{"scramble", "-q", "-v", "-cw", cwA}, []string{"-q", "-v"}},
		{[]string{"-show-keys", "-cw", cwA}, []string{"-show-keys", "-v"}},
		{[]string{"-q", "-show-keys", "-cw", cwA}, []string{"-show-keys", "-v"}},
		{[]string{"scramble", "-show-keys", "-cw", cwA}, []string{"-show-keys", "-v"}},
		{[]string{"-rescramble-cp-packets", "100", "-cw", cwA}, []string{"-rescramble-cp-packets", "-rescramble SYSTEM"}},
		{[]string{"bench", "EXTRA"}, []string{"bench takes no arguments"}},
		{[]string{"bench", "-packets", "1000", "more", "things"}, []string{"bench takes no arguments"}},
	} {
		refused(t, tc.args, tc.want, []string{cwA, "EXTRA", "more"})
	}
}

// TestErrorStatus checks the exit status Main gives each kind of error: a runtime failure that
// is not a typed exit error is a failure (1), never a usage error, while the flag parser's
// errors stay usage errors (2), whichever command they come from.
func TestErrorStatus(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err  error
		code int
		msg  string
	}{
		{nil, exitOK, ""},
		{errors.New("the disk is on fire"), exitFail, "tsdescramble: the disk is on fire\n"},
		{cli.Exit("an error of urfave/cli", 3), exitFail, "tsdescramble: an error of urfave/cli\n"},
		{failErr("cannot read it"), exitFail, "tsdescramble: cannot read it\n"},
		{usageErr("bad flag"), exitUsage, "tsdescramble: bad flag\n"},
		{quietExit, exitOK, ""},
	} {
		var stdout, stderr bytes.Buffer
		code := errorStatus(tc.err, Env{Stdout: &stdout, Stderr: &stderr})
		if code != tc.code || stderr.String() != tc.msg || stdout.Len() != 0 {
			t.Errorf("%v: exit %d, stderr %q, want %d and %q", tc.err, code, stderr.String(), tc.code, tc.msg)
		}
	}
	for _, args := range [][]string{
		{"-workers", "many"}, {"-cw"}, {"-nosuchflag"},
		{"scramble", "-workers", "many"}, {"probe", "-json=maybe"}, {"bench", "-packets", "lots"}, {"help", "-x"},
	} {
		refused(t, args, []string{"-h)"}, nil)
	}
}

// TestTextGoesToStdout checks that the help, the version and bench's results, which are what
// was asked for, go to stdout, and nothing to stderr.
func TestTextGoesToStdout(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-h"}, "NAME:\n   tsdescramble - "},
		{[]string{"--help"}, "NAME:\n   tsdescramble - "},
		{[]string{"help"}, "NAME:\n   tsdescramble - "},
		{[]string{"h"}, "NAME:\n   tsdescramble - "},
		{[]string{"scramble", "-h"}, "NAME:\n   tsdescramble scramble - "},
		{[]string{"probe", "--help"}, "NAME:\n   tsdescramble probe - "},
		{[]string{"bench", "-h"}, "NAME:\n   tsdescramble bench - "},
		{[]string{"-version"}, "tsdescramble version "},
		{[]string{"bench", "-packets", "1000", "-rounds", "1"}, "fastest: "},
	} {
		r := run(t, nil, tc.args...)
		if r.code != 0 || r.stderr != "" || !strings.Contains(r.stdout, tc.want) {
			t.Errorf("%q: want exit 0, %q on stdout and nothing on stderr; %s\nstdout:\n%s", tc.args, tc.want, describe(r), r.stdout)
		}
	}
}

// TestHelpCommand checks help and help COMMAND, as in other urfave/cli programs, and that an
// unknown topic is a usage error.
func TestHelpCommand(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"scramble", "probe", "bench", "help"} {
		for _, help := range []string{"help", "h"} {
			r := run(t, nil, help, name)
			want := "NAME:\n   tsdescramble " + name + " - "
			if r.code != 0 || r.stderr != "" || !strings.HasPrefix(r.stdout, want) {
				t.Errorf("%s %s: want exit 0 and the command's help on stdout; %s\n%s", help, name, describe(r), r.stdout)
			}
			// (help -h shows the help of tsdescramble, as urfave/cli's help command does.)
			if h := run(t, nil, name, "-h"); name != "help" && h.stdout != r.stdout {
				t.Errorf("help %s and %s -h differ:\n%s\n%s", name, name, r.stdout, h.stdout)
			}
		}
	}
	refused(t, []string{"help", "nosuch"}, []string{"no command of that name", "scramble, probe, bench"}, []string{"nosuch"})
	refused(t, []string{"help", cwA}, []string{"no command of that name"}, []string{cwA})
	refused(t, []string{"help", "scramble", "probe"}, []string{"one command at a time"}, nil)
}

// helpPages returns the help page of the app and of each command, by their arguments.
func helpPages(t *testing.T) map[string]string {
	pages := map[string]string{}
	for _, args := range [][]string{{"-h"}, {"help", "scramble"}, {"help", "probe"}, {"help", "bench"}, {"help", "help"}} {
		r := run(t, nil, args...)
		if r.code != 0 || r.stdout == "" {
			t.Fatalf("%q: %s", args, describe(r))
		}
		pages[strings.Join(args, " ")] = r.stdout
	}
	return pages
}

// TestHelpLayout checks the shape of the help pages: flags grouped by category in a fixed
// order, every flag that takes a value with a placeholder, no default that says nothing, the
// flags written as the contract writes them (-name), usage lines of one form, and no line of
// 100 columns or more.
func TestHelpLayout(t *testing.T) {
	t.Parallel()
	pages := helpPages(t)
	for name, page := range pages {
		for i, line := range strings.Split(page, "\n") {
			if len(line) >= 100 {
				t.Errorf("%s: line %d has %d columns: %q", name, i+1, len(line), line)
			}
		}
		for _, noise := range []string{"(default: false)", "(default: 0)", `(default: "`, "(default: -)", " --", "[command options]", "[arguments...]", "VALUE"} {
			if strings.Contains(page, noise) {
				t.Errorf("%s: the page holds %q", name, noise)
			}
		}
	}
	root := pages["-h"]
	last := -1
	for _, heading := range []string{"USAGE:", "COMMANDS:", "INPUT AND OUTPUT:", "KEYS:", "SELECTION:", "SCRAMBLING:", "TUNING:", "REPORTING:", "HELP:"} {
		i := strings.Index(root, "\n"+heading+"\n")
		if i < 0 || i < last {
			t.Errorf("heading %s missing or out of order", heading)
		}
		last = i
	}
	for _, want := range []string{"-in, -i FILE", "-group N", "-workers N", "-batch N", "-cw HEX", "-service NUMBER", "(default: number of CPUs)", "(default: auto)", "(default: csa2)", "(default: 1024)"} {
		if !strings.Contains(root, want) {
			t.Errorf("the help does not show %q", want)
		}
	}
	if !strings.Contains(pages["help bench"], "-packets N") || !strings.Contains(pages["help probe"], "-json") {
		t.Errorf("the commands' pages miss their flags:\n%s\n%s", pages["help bench"], pages["help probe"])
	}

	// Every usage line reads "tsdescramble [COMMAND] [flags] ...".
	app := newApp(Env{})
	for _, c := range app.Commands {
		want := "tsdescramble " + c.Name + " [flags]"
		if c.Name == "help" {
			want = "tsdescramble help [COMMAND]"
		}
		if !strings.HasPrefix(c.UsageText, want) {
			t.Errorf("%s: usage %q does not start with %q", c.Name, c.UsageText, want)
		}
	}
	if !strings.HasPrefix(app.UsageText, "tsdescramble [flags]") {
		t.Errorf("usage %q", app.UsageText)
	}

	// Every flag that takes a value names it, and every flag of the descrambler and the
	// scrambler has a category.
	check := func(where string, flags []cli.Flag, categorised bool) {
		for _, f := range flags {
			df := f.(cli.DocGenerationFlag)
			if _, placeholder := clihelp.UnquoteUsage(df.GetUsage()); df.TakesValue() && placeholder == "" {
				t.Errorf("%s: -%s has no placeholder", where, f.Names()[0])
			}
			if cf := f.(cli.CategorizableFlag); categorised && cf.GetCategory() == "" {
				t.Errorf("%s: -%s has no category", where, f.Names()[0])
			}
		}
	}
	check("tsdescramble", app.Flags, true)
	for _, c := range app.Commands {
		check(c.Name, c.Flags, c.Name == "scramble")
	}
}

// TestBadFlagOneLine checks that a bad flag gives one line pointing at the help, after any
// command as at the top level, not the whole help.
func TestBadFlagOneLine(t *testing.T) {
	t.Parallel()
	for _, cmd := range []string{"", "scramble", "probe", "bench", "help"} {
		args := []string{"-nosuchflag"}
		help := "tsdescramble -h"
		if cmd != "" {
			args = []string{cmd, "-nosuchflag"}
			help = "tsdescramble " + cmd + " -h"
		}
		refused(t, args, []string{"unknown flag -nosuchflag", "(see " + help + ")"}, []string{"NAME:", "USAGE:"})
	}
	refused(t, []string{"-cwfile", "k.txt"}, []string{"did you mean -cw-file?"}, nil)
	refused(t, []string{"scramble", "-cp-packet", "5"}, []string{"did you mean -cp-packets?"}, nil)
}

// TestErrorWording checks messages a new user meets early: a missing output directory named as
// such (not the temporary file), twelve digits given to -cw, and the notes a key file gives,
// which come only once the run starts.
func TestErrorWording(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := periodStream(t, []period{{tscEven, cwA, 20}})
	in := writeFile(t, dir, "in.ts", s.input())
	keyFile := writeFile(t, dir, "keys.txt", []byte(cwA+"\n"+cwB+"\n"))
	missingDir := filepath.Join(dir, "nodir")

	for _, tc := range []struct {
		args  []string
		code  int
		want  []string
		avoid []string
	}{
		{[]string{"-cw-file", keyFile, "-in", in, "-out", filepath.Join(missingDir, "x.ts")}, 1,
			[]string{filepath.Join(missingDir, "x.ts"), "the directory " + missingDir + " does not exist"}, []string{".tmp", "control words"}},
		{[]string{"scramble", "-cw", cwA, "-in", in, "-out", filepath.Join(missingDir, "x.ts")}, 1,
			[]string{"the directory " + missingDir + " does not exist"}, []string{".tmp"}},
		{[]string{"-cw", "a1b2c3d4e5f6", "-in", in}, 2, []string{"-cw", "BISS", "-biss"}, []string{"a1b2c3", "d4e5f6"}},
		{[]string{"-cw", "A1:B2:C3:D4:E5:F6", "-in", in}, 2, []string{"-biss"}, []string{"A1:B2"}},
		{[]string{"-cw-even", "a1b2c3d4e5f6", "-in", in}, 2, []string{"-cw-even", "-biss"}, []string{"a1b2c3"}},
		{[]string{"-cipher", "dfc", "-cw", "a1b2c3d4e5f6", "-in", in}, 2, []string{"-cw", "32, 48 or 64"}, []string{"-biss", "a1b2c3"}},
		// The key file's note is not printed before a failure that comes first.
		{[]string{"-cw-file", keyFile, "-in", filepath.Join(dir, "missing.ts")}, 1, []string{"missing.ts"}, []string{"control words"}},
		{[]string{"-cw-file", keyFile, "-in", in, "-pid", "0x100,x"}, 2, []string{"-pid"}, []string{"control words"}},
		{[]string{"-cw-file", keyFile, "-in", in, "-workers", "0"}, 2, []string{"-workers"}, []string{"control words"}},
	} {
		r := run(t, nil, tc.args...)
		if r.code != tc.code || r.stdout != "" {
			t.Errorf("%q: want exit %d and nothing on stdout; %s", tc.args, tc.code, describe(r))
		}
		oneLine(t, r.stderr)
		for _, w := range tc.want {
			if !strings.Contains(r.stderr, w) {
				t.Errorf("%q: message does not mention %q: %q", tc.args, w, r.stderr)
			}
		}
		for _, a := range tc.avoid {
			if strings.Contains(r.stderr, a) {
				t.Errorf("%q: message holds %q: %q", tc.args, a, r.stderr)
			}
		}
	}
	noFilesBut(t, dir, "in.ts", "keys.txt")

	// A run that starts prints the note first.
	r := run(t, s.input(), "-cw-file", keyFile)
	if r.code != 0 || !strings.HasPrefix(r.stderr, "tsdescramble: "+keyFile+": 2 control words") {
		t.Errorf("the key file's note does not open the run's messages; %s", describe(r))
	}
}

// TestNoKeyEcho checks that no message repeats an argument that could be a control word: one
// typed without quotes, given to a flag that wants something else, or given as a flag.
func TestNoKeyEcho(t *testing.T) {
	t.Parallel()
	const key = cwC
	hi, lo := key[:8], key[8:]
	dir := t.TempDir()
	in := writeFile(t, dir, "in.ts", periodStream(t, []period{{tscEven, cwA, 5}}).input())
	avoid := []string{hi, lo, key[4:12]}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"-cw", hi, lo}, []string{"argument 3", "quote"}},
		{[]string{"-cw", hi, lo, "-in", in}, []string{"argument 3"}},
		{[]string{"-in", in, "-cw", hi, lo}, []string{"argument 5"}},
		{[]string{"scramble", "-cw", hi, lo}, []string{"argument 4"}},
		{[]string{"-cw-even", hi + " " + lo, "-cw-odd", hi, lo}, []string{"argument 5"}},
		{[]string{"-cw", cwA, "-service", key}, []string{"-service"}},
		{[]string{"-cw", cwA, "-service", "1122336644556677"}, []string{"-service"}},
		{[]string{"-cw", cwA, "-service", "11223366"}, []string{"-service", "1 to 65535"}},
		{[]string{"-cw", cwA, "-pid", key}, []string{"-pid", "item 1"}},
		{[]string{"-cw", cwA, "-pid", "0x100," + key}, []string{"-pid", "item 2"}},
		{[]string{"-cw", cwA, "-pid", hi + "-" + lo}, []string{"-pid", "item 1"}},
		{[]string{"-cw", cwA, "-workers", key}, []string{"-workers"}},
		{[]string{"-cw", cwA, "-workers", "11223366"}, []string{"-workers", "1 to 1024"}},
		{[]string{"-cw", cwA, "-batch", key}, []string{"-batch"}},
		{[]string{"-cw", cwA, "-batch", "11223366"}, []string{"-batch"}},
		{[]string{"-cw", cwA, "-group", key}, []string{"-group"}},
		{[]string{"-cw", cwA, "-cipher", key}, []string{"-cipher"}},
		{[]string{"-cw", cwA, "-rescramble", key}, []string{"-rescramble"}},
		{[]string{"-cw", cwA, "-rescramble", "csa2", "-rescramble-cw", cwB, "-rescramble-cp-packets", "-11223366"}, []string{"-rescramble-cp-packets"}},
		{[]string{"scramble", "-cw", cwA, "-cp-packets", "-11223366"}, []string{"-cp-packets"}},
		{[]string{"-" + key}, []string{"names no flag"}},
		{[]string{"--" + key + "=1"}, []string{"names no flag"}},
		{[]string{"-cw-evn=" + key}, []string{"unknown flag -cw-evn", "did you mean -cw-even?"}},
		{[]string{"-q=" + key, "-cw", cwA}, []string{"-q is a switch"}},
		{[]string{"-cw", cwA, "-workers=" + key}, []string{"-workers wants a whole number"}},
		{[]string{"bench", key}, []string{"bench takes no arguments"}},
		{[]string{"bench", "-packets", key}, []string{"-packets"}},
		{[]string{"bench", "-rounds", "11223366"}, []string{"-rounds"}},
		{[]string{"probe", "-json=" + key}, []string{"-json"}},
		{[]string{"help", key}, []string{"help"}},
	} {
		refused(t, tc.args, tc.want, avoid)
	}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"-cw-env", key}, []string{"-cw-env", "name of an environment variable"}},
		{[]string{"-cw-file", key}, []string{"-cw-file", "-cw"}},
		{[]string{"-cw-file", hi + " " + lo}, []string{"-cw-file", "-cw"}},
		{[]string{"-cw", key + "0"}, []string{"-cw", "16 hex digits"}},
		{[]string{"-cw", key[:15]}, []string{"-cw", "16 hex digits"}},
		{[]string{"-cw", key[:14] + "zz"}, []string{"-cw", "16 hex digits"}},
		{[]string{"-biss", key[:10]}, []string{"-biss"}},
		{[]string{"-cw", cwA, "-rescramble", "serpent", "-rescramble-cw", key}, []string{"-rescramble-cw"}},
		{[]string{"-cw", cwA, "-rescramble", "serpent", "-rescramble-cw-file", key}, []string{"-rescramble-cw-file"}},
	} {
		refusedAfterPeek(t, tc.args, tc.want, avoid)
	}
	noFilesBut(t, dir, "in.ts")
}

// TestEmptyNames checks that an empty file name is refused before anything is read.
func TestEmptyNames(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	in := writeFile(t, dir, "in.ts", periodStream(t, []period{{tscEven, cwA, 5}}).input())
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-cw", cwA, "-in", in, "-out", ""}, "-out is empty"},
		{[]string{"-cw", cwA, "-in", in, "-o="}, "-out is empty"},
		{[]string{"-cw", cwA, "-in", "", "-out", filepath.Join(dir, "o.ts")}, "-in is empty"},
		{[]string{"-cw", cwA, "-in", in, "-out", filepath.Join(dir, "o.ts"), "-stats", ""}, "-stats is empty"},
		{[]string{"-cw-file", "", "-in", in}, "-cw-file is empty"},
		{[]string{"scramble", "-cw", cwA, "-in", in, "-out", ""}, "-out is empty"},
	} {
		refused(t, tc.args, []string{tc.want}, nil)
	}
	noFilesBut(t, dir, "in.ts")
}
