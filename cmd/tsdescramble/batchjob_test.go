package main

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

// flagReadings is what the action of a command sees of its flags: for each name of each flag,
// whether it was given and its value as text.
func flagReadings(c *cli.Context, flags []cli.Flag) map[string]string {
	seen := map[string]string{}
	for _, f := range flags {
		for _, n := range f.Names() {
			seen[n] = fmt.Sprintf("set=%v value=%q", c.IsSet(n), c.Value(n))
		}
	}
	return seen
}

// appReadings runs the command line through the whole app, as Main does, and returns what its
// action would see of the flags.
func appReadings(t *testing.T, command string, args []string, flags []cli.Flag) map[string]string {
	t.Helper()
	env := Env{Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: io.Discard}
	app := newApp(env)
	var seen map[string]string
	record := func(c *cli.Context) error { seen = flagReadings(c, flags); return nil }
	full := []string{"tsdescramble"}
	if command == "" {
		app.Action = record
	} else {
		full = append(full, command)
		for _, c := range app.Commands {
			if c.Name == command {
				c.Action = record
			}
		}
	}
	if err := app.Run(append(full, args...)); err != nil {
		t.Fatalf("%s %v: %v", command, args, err)
	}
	if seen == nil {
		t.Fatalf("%s %v: the action did not run", command, args)
	}
	return seen
}

// TestJobParseReadsAsTheApp checks that a batch job's flags, parsed without an app of
// urfave/cli, read in the command's action as the app's parse of the same command line does:
// every name of every flag, given or not, with its value or default.
func TestJobParseReadsAsTheApp(t *testing.T) {
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.ts"), filepath.Join(dir, "out.ts")
	cases := []struct {
		command string
		args    []string
	}{
		{"", []string{"-in=" + in, "-out=" + out, "-cw-file=keys.txt"}},
		{"", []string{"-in=" + in, "-out=" + out, "-cw=11223366445566ff", "-quiet", "-workers=3", "-batch=7", "-group=64"}},
		{"", []string{"-in=" + in, "-out=" + out, "-biss=112233445566", "-verbose=true", "-service=2", "-stats=s.json", "-stats-interval=1m30s"}},
		{"", []string{"-in=" + in, "-out=" + out, "-cw-file=k", "-rescramble=serpent", "-rescramble-cw-file=k2", "-rescramble-cp-packets=500", "-pid=0x100,0x101"}},
		{"", []string{"-in=" + in, "-out=" + out, "-cw-file=k", "-quiet=false", "-show-keys=false", "-batch=0x20"}},
		{"scramble", []string{"-in=" + in, "-out=" + out, "-cw-file=k", "-cp-packets=800", "-workers=1", "-quiet"}},
		{"scramble", []string{"-in=" + in, "-out=" + out, "-cw=11223366445566ff", "-cp-duration=10s"}},
	}
	r := newJobRunner(Env{Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: io.Discard})
	for _, tc := range cases {
		name := tc.command
		if name == "" {
			name = "descramble"
		}
		jc := r.cmds[name]
		ctx := jc.parse(tc.args)
		if ctx == nil {
			t.Errorf("%s %v: the job's parse refused it", name, tc.args)
			continue
		}
		got := flagReadings(ctx, jc.flags)
		want := appReadings(t, tc.command, tc.args, jc.flags)
		if len(got) != len(want) || len(got) < 40 {
			t.Fatalf("%s: %d flag names read, the app %d", name, len(got), len(want))
		}
		for n, w := range want {
			if got[n] != w {
				t.Errorf("%s %v: -%s reads %s, the app's %s", name, tc.args, n, got[n], w)
			}
		}
	}
}

// TestJobParseFallsBackToTheApp checks that a job whose command line the flag set refuses ends
// as the single command does: its message and exit status.
func TestJobParseFallsBackToTheApp(t *testing.T) {
	dir := t.TempDir()
	in := writeFile(t, dir, "in.ts", readFile(t, sample(t, "demo-scrambled.ts")))
	for _, bad := range []string{"-stats-interval=soon", "-timeout=x", "-quiet=maybe"} {
		args := []string{"-in=" + in, "-out=" + filepath.Join(dir, "out.ts"), "-cw-file=" + sample(t, "demo-keys.txt"), bad}
		r := newJobRunner(Env{})
		if r.cmds["descramble"].parse(args) != nil {
			t.Fatalf("%s: the job's parse took it", bad)
		}
		var stderr strings.Builder
		code := r.run("", args, Env{Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: &stderr})
		single := run(t, nil, args...)
		if code != exitUsage || code != single.code || stderr.String() != single.stderr {
			t.Errorf("%s: job exit %d, %q; the command's exit %d, %q", bad, code, stderr.String(), single.code, single.stderr)
		}
	}
}

// BenchmarkJobParse is the cost of turning a job's command line into its context, paid once per
// job of a batch.
func BenchmarkJobParse(b *testing.B) {
	r := newJobRunner(Env{Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: io.Discard})
	jc := r.cmds["descramble"]
	args := []string{"-in=in.ts", "-out=out.ts", "-cw-file=keys.txt", "-quiet", "-workers=1"}
	for b.Loop() {
		if jc.parse(args) == nil {
			b.Fatal("refused")
		}
	}
}
