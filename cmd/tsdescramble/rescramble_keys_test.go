package main

import (
	"bytes"
	"strings"
	"testing"
)

// The rescrambled output takes its keys by the same flags as the input, each under the
// -rescramble- prefix: a CW per parity, a CW from the environment, a BISS word. Each gives the
// same bytes as scrambling the clear stream with those keys, and the messages name only flags
// that exist.
func TestRescrambleKeyFlags(t *testing.T) {
	s := periodStream(t, []period{{2, cwA, 40}, {3, cwB, 40}})
	in, clear := s.input(), s.output()
	scramble := func(args ...string) []byte {
		t.Helper()
		r := run(t, clear, append([]string{"scramble", "-q", "-pid", "0x100,0x101", "-cp-packets", "30"}, args...)...)
		if r.code != 0 {
			t.Fatalf("scramble %v: %s", args, describe(r))
		}
		return []byte(r.stdout)
	}
	rescramble := func(args ...string) []byte {
		t.Helper()
		r := run(t, in, append([]string{"-q", "-cw-even", cwA, "-cw-odd", cwB, "-rescramble", "csa2", "-rescramble-cp-packets", "30"}, args...)...)
		if r.code != 0 {
			t.Fatalf("rescramble %v: %s", args, describe(r))
		}
		return []byte(r.stdout)
	}
	if !bytes.Equal(rescramble("-rescramble-cw-even", cwB, "-rescramble-cw-odd", cwA), scramble("-cw-even", cwB, "-cw-odd", cwA)) {
		t.Error("-rescramble-cw-even/-rescramble-cw-odd: not the bytes scramble gives")
	}
	t.Setenv("TSD_TEST_RESCRAMBLE_CW", cwB) // restored at the end, and refuses a parallel test
	if !bytes.Equal(rescramble("-rescramble-cw-env", "TSD_TEST_RESCRAMBLE_CW"), scramble("-cw", cwB)) {
		t.Error("-rescramble-cw-env: not the bytes scramble gives")
	}
	if !bytes.Equal(rescramble("-rescramble-biss", "112233445566"), scramble("-biss", "112233445566")) {
		t.Error("-rescramble-biss: not the bytes scramble gives")
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-cw", cwA, "-rescramble", "csa2"}, "-rescramble-cw-env NAME"},
		{[]string{"-cw", cwA, "-rescramble", "csa2", "-rescramble-cw", cwB, "-rescramble-biss", "112233445566"}, "-rescramble-biss or -rescramble-cw-env"},
		{[]string{"-cw", cwA, "-rescramble-cw-odd", cwB}, "-rescramble-cw-odd needs -rescramble SYSTEM"},
		{[]string{"-cw", cwA, "-rescramble", "serpent", "-rescramble-biss", "112233445566"}, "-rescramble-biss gives a DVB-CSA2 key: use it with -rescramble csa2"},
	} {
		r := run(t, in, tc.args...)
		if r.code != 2 || !strings.Contains(r.stderr, tc.want) || strings.Contains(r.stderr, "-rescramble--") {
			t.Errorf("%v: %s, want exit 2 and %q", tc.args, describe(r), tc.want)
		}
		oneLine(t, r.stderr)
	}
}
