package main

import (
	"bytes"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// A -service or -pid that the stream does not have processes nothing: the run says so in one
// line on stderr, naming what the stream has, and exits 1; the output is written in full.
func TestSelectionNotInStream(t *testing.T) {
	t.Parallel()
	samples := filepath.Join("..", "..", "samples")
	in := readFile(t, filepath.Join(samples, "demo-scrambled.ts"))
	keys := filepath.Join(samples, "demo-keys.txt")
	for _, tc := range []struct {
		args []string
		code int
		msg  string // the whole of stderr, a regular expression
	}{
		{[]string{"-service", "7"}, 1, `^tsdescramble: -service 7: no such service in the stream \(its PAT names 1\), so nothing was descrambled; the output was written anyway\n$`},
		{[]string{"-pid", "0x300,0x301"}, 1, `^tsdescramble: -pid: none of these PIDs is in the stream \(it holds 0x0000, 0x0011, 0x0100, 0x0101, 0x1000\), so nothing was descrambled; the output was written anyway\n$`},
		{[]string{"-pid", "0x100,0x300"}, 0, `^$`},
		{[]string{"-service", "1"}, 0, `^$`},
	} {
		r := run(t, in, append([]string{"-q", "-cw-file", keys}, tc.args...)...)
		if r.code != tc.code || !regexp.MustCompile(tc.msg).MatchString(r.stderr) {
			t.Errorf("%v: want exit %d and stderr %s; %s", tc.args, tc.code, tc.msg, describe(r))
		}
		if processed := r.stdout != string(in); len(r.stdout) != len(in) || processed != (tc.code == 0) {
			t.Errorf("%v: %d bytes out of %d, descrambled: %v", tc.args, len(r.stdout), len(in), processed)
		}
	}
	// Without -q the summary comes first, and the message is the last line.
	r := run(t, in, "-cw-file", keys, "-service", "7")
	if r.code != 1 || !strings.HasPrefix(lastLine(r.stderr), "tsdescramble: -service 7: no such service") {
		t.Errorf("without -q: %s", describe(r))
	}
	// The scrambler says the same.
	r = run(t, readFile(t, filepath.Join(samples, "demo-clear.ts")), "scramble", "-q", "-cw", cwA, "-service", "7")
	if r.code != 1 || !strings.HasSuffix(r.stderr, "so nothing was scrambled; the output was written anyway\n") {
		t.Errorf("scramble -service 7: %s", describe(r))
	}
	// To a file: written in full under its name, nothing else left.
	dir := t.TempDir()
	out := filepath.Join(dir, "out.ts")
	if r := run(t, in, "-q", "-cw-file", keys, "-service", "7", "-out", out); r.code != 1 {
		t.Errorf("-out: %s", describe(r))
	}
	sameBytes(t, "-service 7 -out", readFile(t, out), in, 188)
	if names := dirNames(t, dir); len(names) != 1 {
		t.Errorf("the run left %v", names)
	}
}

// Random bytes hold, now and then, three sync bytes a packet apart: the framer takes them for a
// few packets. An input of over 100 kB whose packets make under 1% of it is not taken for a
// transport stream: exit 1, one line, and a file output kept as .partial, named. An input
// mostly skipped, but with packets enough, gets a warning.
func TestNotTransportStream(t *testing.T) {
	t.Parallel()
	s := periodStream(t, []period{{tscEven, cwA, 600}})
	pkts := s.input()
	junk := noSyncInput(1<<20, false)
	copy(junk[500_000:], pkts[:3*188])
	r := run(t, junk, "-q", "-cw", cwA)
	if want := "tsdescramble: the input is not a transport stream: only 3 packets (564 bytes) found in 1.0 MB, the rest skipped (188, 192 or 204-byte packets expected)\n"; r.code != 1 || r.stderr != want || r.stdout != string(s.output()[:3*188]) {
		t.Errorf("want exit 1, the three packets on stdout and %q; %s", want, describe(r))
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "out.ts")
	r = run(t, junk, "-q", "-cw", cwA, "-out", out)
	if r.code != 1 || !strings.HasSuffix(r.stderr, "; the packets found are in "+out+".partial\n") {
		t.Errorf("-out: want exit 1 and a message naming %s.partial; %s", out, describe(r))
	}
	oneLine(t, r.stderr)
	if names := dirNames(t, dir); len(names) != 1 || names[0] != "out.ts.partial" {
		t.Errorf("-out: the run left %v", names)
	}
	sameBytes(t, "partial", readFile(t, out+".partial"), s.output()[:3*188], 188)

	// Two thirds garbage, and packets enough: descrambled, exit 0, with a warning (not with -q).
	mostly := append(noSyncInput(2*len(pkts), false), pkts...)
	r = run(t, mostly, "-cw", cwA)
	if r.code != 0 || r.stdout != string(s.output()) || !strings.Contains(r.stderr, "tsdescramble: the input is mostly not a transport stream: 67% of it (261.3 kB) was skipped to find packets\n") {
		t.Errorf("two thirds garbage: want exit 0, the packets and a warning; %s", describe(r))
	}
	if r := run(t, mostly, "-q", "-cw", cwA); r.code != 0 || r.stderr != "" {
		t.Errorf("two thirds garbage, -q: %s", describe(r))
	}
	// Under 100 kB, a few packets are packets.
	small := noSyncInput(90_000, false)
	copy(small[1000:], pkts[:3*188])
	if r := run(t, small, "-q", "-cw", cwA); r.code != 0 || len(r.stdout) != 3*188 {
		t.Errorf("90 kB with 3 packets: %s", describe(r))
	}
}

// The summary counts the packets written, in the framing of each, when the framing changes.
func TestPacketsOutAcrossFramings(t *testing.T) {
	t.Parallel()
	s := periodStream(t, []period{{tscEven, cwA, 200}})
	n := len(s.in)
	var in, want []byte
	for i, size := range []int{188, 204, 188, 192} {
		a, b := i*n/4, (i+1)*n/4
		in = append(in, frame(s.in[a:b], size)...)
		want = append(want, frame(s.want[a:b], size)...)
	}
	r := run(t, in, "-cw", cwA, "-batch", "50")
	if r.code != 0 || !bytes.Equal([]byte(r.stdout), want) {
		t.Fatalf("exit %d, output equal: %v; stderr:\n%s", r.code, r.stdout == string(want), r.stderr)
	}
	summaryHas(t, r.stderr, fmt.Sprintf(`\b%d packets in, %d out \(192-byte framing\)`, n, n))
}

// PSI and null packets pass through because they are clear; packets on PID 0 and 0x1FFF that
// are marked scrambled are descrambled like any other, as the README says.
func TestScrambledPATAndNullPIDs(t *testing.T) {
	t.Parallel()
	s := &stream{}
	key := mustKey(t, mustCW(t, cwA))
	for i := range 40 {
		s.addScrambled(clearPacket(0x100, i, -1, true), key, tscEven)
		if i%4 == 0 {
			s.addScrambled(clearPacket(0, i, -1, true), key, tscEven)
			s.addScrambled(clearPacket(0x1FFF, i, -1, true), key, tscEven)
			s.addClear(nullPacket())
		}
	}
	r := run(t, s.input(), "-q", "-cw", cwA)
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("%s", describe(r))
	}
	sameBytes(t, "output", []byte(r.stdout), s.output(), 188)
}
