package main

import (
	"bytes"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
)

// TestMainSideBySide runs Main from several goroutines at once, as a program that embeds the
// command may: help pages, the version, a usage error and a descrambling run, each of which
// must give what it gives alone. Under -race it also checks that the runs share nothing they
// write (urfave/cli adds one package-level help flag and version flag to every app).
func TestMainSideBySide(t *testing.T) {
	t.Parallel()
	s := periodStream(t, []period{{tscEven, cwA, 40}, {tscOdd, cwB, 40}})
	descramble := []string{"-cw-even", cwA, "-cw-odd", cwB}
	cases := [][]string{
		{"-h"}, {"-version"}, {"help", "probe"}, {"probe", "-h"}, {"scramble", "--help"},
		{"-nosuch"}, descramble,
	}
	alone := make([]result, len(cases))
	for i, args := range cases {
		alone[i] = run(t, s.input(), args...)
	}
	if r := alone[len(cases)-1]; r.code != 0 || r.stdout != string(s.output()) {
		t.Fatalf("%q alone: want exit 0 and the clear stream; %s", descramble, describe(r))
	}

	const rounds = 4
	got := make([]result, rounds*len(cases))
	var wg sync.WaitGroup
	for i := range got {
		wg.Go(func() {
			var stdout, stderr bytes.Buffer
			code := Main(append([]string{"tsdescramble"}, cases[i%len(cases)]...), Env{
				Stdin:      bytes.NewReader(s.input()),
				Stdout:     &stdout,
				Stderr:     &stderr,
				IsTerminal: func(*os.File) bool { return false },
			})
			got[i] = result{code: code, stdout: stdout.String(), stderr: stderr.String()}
		})
	}
	wg.Wait()
	for i, r := range got {
		args, want := cases[i%len(cases)], alone[i%len(cases)]
		if r.code != want.code || r.stdout != want.stdout {
			t.Errorf("%q beside other runs: %s; alone it gave %s", args, describe(r), describe(want))
		}
		// A run's summary has its rate and time, which vary; a page or a message may not.
		if !slices.Equal(args, descramble) && r.stderr != want.stderr {
			t.Errorf("%q beside other runs wrote to stderr:\n%s\nalone:\n%s", args, r.stderr, want.stderr)
		}
		counts := fmt.Sprintf("%d packets in, %d out", len(s.in), len(s.want))
		if slices.Equal(args, descramble) && !strings.Contains(r.stderr, counts) {
			t.Errorf("%q beside other runs: its summary does not say %q:\n%s", args, counts, r.stderr)
		}
	}
}
