package main

import (
	"bytes"
	"path/filepath"
	"testing"
)

// TestProfiles checks that -cpuprofile and -memprofile write pprof profiles (gzip-compressed
// protocol buffers) beside a correct output, that neither may name the input, and that a
// profile file that cannot be written is refused before the run.
func TestProfiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := periodStream(t, []period{{tscEven, cwA, 40}, {tscOdd, cwA, 40}})
	in := writeFile(t, dir, "in.ts", s.input())
	out := filepath.Join(dir, "out.ts")
	cpu, mem := filepath.Join(dir, "cpu.pprof"), filepath.Join(dir, "mem.pprof")
	for _, args := range [][]string{
		{"-in", in, "-out", out, "-cw", cwA, "-cpuprofile", cpu, "-memprofile", mem},
		{"scramble", "-in", in, "-out", out, "-cw", cwA, "-cpuprofile", cpu, "-memprofile", mem},
	} {
		r := run(t, nil, args...)
		if r.code != 0 {
			t.Fatalf("%v: %s", args, describe(r))
		}
		if args[0] != "scramble" {
			sameBytes(t, "output", readFile(t, out), s.output(), 188)
		}
		for _, p := range []string{cpu, mem} {
			if b := readFile(t, p); !bytes.HasPrefix(b, []byte{0x1f, 0x8b}) {
				t.Errorf("%v: %s is not a pprof profile (%d bytes)", args, p, len(b))
			}
		}
	}

	for _, flag := range []string{"-cpuprofile", "-memprofile"} {
		r := run(t, nil, "-in", in, "-out", out, "-cw", cwA, flag, in)
		if r.code != exitUsage {
			t.Errorf("%s naming the input: %s", flag, describe(r))
		}
		oneLine(t, r.stderr)
		sameBytes(t, "input after "+flag, readFile(t, in), s.input(), 188)
	}
	r := run(t, nil, "-in", in, "-out", out, "-cw", cwA, "-memprofile", filepath.Join(dir, "no", "such", "dir", "mem.pprof"))
	if r.code != exitUsage {
		t.Errorf("-memprofile in a missing directory: %s", describe(r))
	}
}
