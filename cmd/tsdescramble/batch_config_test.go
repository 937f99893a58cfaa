package main

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/tsdescramble/tsdescramble/pipeline"
)

// appConfig runs the command line through the whole app, as Main does, and returns the config
// its action would run with.
func appConfig(t *testing.T, command string, args []string) *config {
	t.Helper()
	app := newApp(Env{Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: io.Discard})
	var got *config
	record := func(c *config, flags []cli.Flag) cli.ActionFunc {
		return func(ctx *cli.Context) error { c.readGiven(ctx, flags); got = c; return nil }
	}
	full := []string{"tsdescramble"}
	if command == "" {
		c := &config{mode: modeOf[""]}
		app.Flags = append(descrambleFlags(c), cli.HelpFlag)
		app.Action = record(c, app.Flags)
	} else {
		full = append(full, command)
		for _, cmd := range app.Commands {
			if cmd.Name == command {
				c := &config{mode: modeOf[command]}
				cmd.Flags = flagsOf(c.mode, c)
				cmd.Action = record(c, cmd.Flags)
			}
		}
	}
	if err := app.Run(append(full, args...)); err != nil {
		t.Fatalf("%s %v: %v", command, args, err)
	}
	if got == nil {
		t.Fatalf("%s %v: the action did not run", command, args)
	}
	return got
}

// TestJobReadsAsTheCommandLine checks that a manifest line gives its job the config that the
// same flags give on the command line: every field, and which flags were given.
func TestJobReadsAsTheCommandLine(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.ts"), filepath.Join(dir, "out.ts")
	cases := []struct {
		command string
		line    map[string]any
	}{
		{"", map[string]any{"cw-file": "keys.txt"}},
		{"", map[string]any{"cw": "11223366445566ff", "quiet": true, "workers": 3, "batch": 7, "group": "64"}},
		{"", map[string]any{"biss": "112233445566", "verbose": true, "service": 2, "stats": "s.json", "stats-interval": "1m30s"}},
		{"", map[string]any{"cw-file": "k", "rescramble": "serpent", "rescramble-cw-file": "k2", "rescramble-cp-packets": 500, "pid": "0x100,0x101"}},
		{"", map[string]any{"cw-file": "k", "quiet": false, "show-keys": false, "packets": 1000, "latency": "0s", "key-wait": "3s"}},
		{"scramble", map[string]any{"cw-file": "k", "cp-packets": 800, "workers": 1, "q": true}},
		{"scramble", map[string]any{"cw": "11223366445566ff", "cp-duration": "10s", "ecm-wait": "clear:2s"}},
	}
	specs := jobSpecs()
	for _, tc := range cases {
		tc.line["in"], tc.line["out"] = in, out
		var args []string
		for k, v := range tc.line {
			args = append(args, fmt.Sprintf("-%s=%v", k, v))
		}
		text, _ := json.Marshal(map[string]any{"command": cmdName(tc.command)})
		line, _ := json.Marshal(tc.line)
		got, err := decodeJob(string(text[:len(text)-1])+","+string(line[1:]), specs)
		if err != nil {
			t.Errorf("%s %s: %v", tc.command, line, err)
			continue
		}
		want := appConfig(t, tc.command, args)
		want.cmdline, want.commands, want.flags = nil, nil, nil // of a command line only
		if len(want.args) == 0 {
			want.args = nil
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s %s:\njob  %+v\nline %+v", tc.command, line, got, want)
		}
	}
}

// modeOf is the mode of each command a manifest may name.
var modeOf = map[string]pipeline.Mode{"": pipeline.Descramble, "scramble": pipeline.Scramble}

func cmdName(command string) string {
	if command == "" {
		return "descramble"
	}
	return command
}

// BenchmarkJobParse is the cost of turning a manifest line into its job's config, paid once per
// job of a batch.
func BenchmarkJobParse(b *testing.B) {
	specs := jobSpecs()
	line := `{"in": "in.ts", "out": "out.ts", "cw-file": "keys.txt", "quiet": true, "workers": 1}`
	for b.Loop() {
		if _, err := decodeJob(line, specs); err != nil {
			b.Fatal(err)
		}
	}
}
