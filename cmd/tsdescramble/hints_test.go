package main

import (
	"bytes"
	"encoding/hex"
	"slices"
	"strings"
	"testing"

	"github.com/tsdescramble/tsdescramble/internal/keyhint"
	"github.com/tsdescramble/tsdescramble/keys"
	"github.com/tsdescramble/tsdescramble/pipeline"
	"github.com/tsdescramble/tsdescramble/scrambling"
)

// reversedHex returns the hex of the control word cw with its bytes in reverse order.
func reversedHex(t testing.TB, cw string) string {
	b := mustCW(t, cw)
	slices.Reverse(b)
	return hex.EncodeToString(b)
}

func reducedHex(t testing.TB, cw string) string {
	return hex.EncodeToString(reduced(mustCW(t, cw)))
}

// TestKeyHints gives the keys of test streams the usual wrong ways: the run must still exit
// with status 3 and leave the stream as it came (the guess is not applied), and its message
// must say which change makes the keys fit, without printing a key.
func TestKeyHints(t *testing.T) {
	t.Parallel()
	rawRev := reversedHex(t, cwRaw)
	tests := []struct {
		name    string
		periods []period
		keyFile string // written to KEYFILE when set
		args    []string
		want    string // in the message; "" for no hint
	}{
		{
			name:    "-reduce-entropy missing",
			periods: []period{{tscEven, reducedHex(t, cwRaw), 40}, {tscOdd, reducedHex(t, cwRaw), 40}},
			args:    []string{"-cw", cwRaw},
			want:    "the keys fit with -reduce-entropy: the scrambler set CW bytes 3 and 7 to the checksums of bytes 0-2 and 4-6, as TSDuck does by default",
		},
		{
			name:    "-reduce-entropy given for a full 64-bit CW",
			periods: []period{{tscEven, cwRaw, 40}, {tscOdd, cwRaw, 40}},
			args:    []string{"-cw", cwRaw, "-reduce-entropy"},
			want:    "the keys fit without -reduce-entropy",
		},
		{
			name:    "-reduce-entropy given for a key file of full 64-bit CWs",
			periods: []period{{tscEven, cwRaw, 40}, {tscOdd, cwC, 40}},
			keyFile: cwRaw + "\n" + cwC + "\n",
			args:    []string{"-reduce-entropy", "-cw-file", "KEYFILE"},
			want:    "the keys fit without -reduce-entropy",
		},
		{
			name:    "-cw-even and -cw-odd swapped",
			periods: []period{{tscEven, cwA, 40}, {tscOdd, cwB, 40}, {tscEven, cwA, 40}},
			args:    []string{"-cw-even", cwB, "-cw-odd", cwA},
			want:    "the keys fit with -cw-even and -cw-odd swapped",
		},
		{
			name:    "bytes reversed",
			periods: []period{{tscOdd, cwC, 40}, {tscEven, cwC, 40}},
			args:    []string{"-cw", reversedHex(t, cwC)},
			want:    "the keys fit with their bytes in reverse order",
		},
		{
			name:    "bytes reversed, with -reduce-entropy",
			periods: []period{{tscEven, reducedHex(t, rawRev), 40}},
			args:    []string{"-reduce-entropy", "-cw", cwRaw},
			want:    "the keys fit with their bytes in reverse order",
		},
		{
			name:    "bytes reversed in a CW list",
			periods: []period{{tscEven, cwA, 40}, {tscOdd, cwB, 40}, {tscEven, cwC, 40}},
			keyFile: reversedHex(t, cwA) + "\n" + reversedHex(t, cwB) + "\n" + reversedHex(t, cwC) + "\n",
			args:    []string{"-cw-file", "KEYFILE"},
			want:    "fit with their bytes in reverse order",
		},
		{
			name:    "pair file with its columns swapped",
			periods: []period{{tscEven, cwA, 40}, {tscOdd, cwB, 40}, {tscEven, cwC, 40}, {tscOdd, cwD, 40}},
			keyFile: cwB + " " + cwA + "\n" + cwD + " " + cwC + "\n",
			args:    []string{"-cw-file", "KEYFILE"},
			want:    "fit the other parity: swap its two columns (EVEN ODD), or shift its keys by one crypto period",
		},
		{
			name:    "OSCam log with the parity digits the wrong way round",
			periods: []period{{tscEven, cwA, 40}, {tscOdd, cwB, 40}, {tscEven, cwC, 40}},
			keyFile: "1 " + cwA + "\n0 " + cwB + "\n1 " + cwC + "\n",
			args:    []string{"-cw-file", "KEYFILE"},
			want:    "fit the other parity: its parity digits (0 even, 1 odd) are the wrong way round",
		},
		{
			name:    "wrong keys: no hint",
			periods: []period{{tscEven, cwA, 40}, {tscOdd, cwA, 40}},
			args:    []string{"-cw", cwD},
		},
		{
			name:    "wrong pair: no hint",
			periods: []period{{tscEven, cwA, 40}, {tscOdd, cwB, 40}},
			args:    []string{"-cw-even", cwC, "-cw-odd", cwD},
		},
	}
	secrets := []string{cwA, cwB, cwC, cwD, cwRaw, rawRev}
	for _, cw := range []string{cwA, cwB, cwC, cwD, cwRaw, rawRev} {
		secrets = append(secrets, reducedHex(t, cw), reversedHex(t, cw))
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := periodStream(t, tc.periods)
			args := slices.Clone(tc.args)
			if tc.keyFile != "" {
				path := writeFile(t, t.TempDir(), "keys.txt", []byte(tc.keyFile))
				for i, a := range args {
					if a == "KEYFILE" {
						args[i] = path
					}
				}
			}
			r := run(t, s.input(), args...)
			if r.code != exitNoFit {
				t.Fatalf("want exit 3; %s", describe(r))
			}
			sameBytes(t, "output (left as it came: the guess is not applied)", []byte(r.stdout), s.input(), 188)
			msg := lastLine(r.stderr)
			if tc.want == "" {
				if !strings.Contains(msg, "(check the control words, their parity and order, -cipher and -reduce-entropy)") {
					t.Errorf("want the general advice and no hint: %s", msg)
				}
			} else if !strings.Contains(msg, tc.want) {
				t.Errorf("message does not say %q:\n%s", tc.want, msg)
			}
			low := strings.ToLower(r.stderr)
			for _, k := range secrets {
				if strings.Contains(low, k) {
					t.Errorf("stderr shows a control word (%s...):\n%s", k[:4], r.stderr)
				}
			}
		})
	}
}

// TestKeyHintCases calls keyHint directly on unit starts the usual mistakes cannot explain.
func TestKeyHintCases(t *testing.T) {
	t.Parallel()
	sys, err := scrambling.NewCSA2(0)
	if err != nil {
		t.Fatal(err)
	}
	cw := mustCW(t, cwA)
	ks := keyhint.Keys{Sched: keys.NewFixed(cw, cw)}
	src := keyhint.Source{Flag: "cw"}
	pes := clearPacket(0x100, 8, -1, true)
	scrambledWith := func(cw string) pipeline.Sample {
		p := scramble(pes, mustKey(t, mustCW(t, cw)), tscEven)
		return pipeline.Sample{PID: 0x100, Payload: p[4:]}
	}
	for _, tc := range []struct {
		name    string
		samples []pipeline.Sample
	}{
		{"no unit starts", nil},
		{"every unit start fits as given", []pipeline.Sample{scrambledWith(cwA), scrambledWith(cwA)}},
		{"no guess fits", []pipeline.Sample{scrambledWith(cwD), scrambledWith(cwD)}},
		{"a guess fits one unit start of two", []pipeline.Sample{scrambledWith(reversedHex(t, cwA)), scrambledWith(cwD)}},
		{"a clear unit start", []pipeline.Sample{{PID: 0x100, Payload: bytes.Clone(pes[4:])}}},
	} {
		if h := keyhint.Hint(tc.samples, sys, ks, src); h != "" {
			t.Errorf("%s: got hint %q, want none", tc.name, h)
		}
	}
	// One unit start in all: one fit is enough.
	if h := keyhint.Hint([]pipeline.Sample{scrambledWith(reversedHex(t, cwA))}, sys, ks, src); !strings.Contains(h, "reverse order") {
		t.Errorf("one unit start, bytes reversed: got %q", h)
	}
}

// A key given for the parity the stream is not scrambled in descrambles nothing: exit 3, with
// the flag that gives it for the right parity, never exit 0.
func TestKeyOfTheOtherParityOnly(t *testing.T) {
	t.Parallel()
	s := periodStream(t, []period{{tscEven, cwA, 60}})
	r := run(t, s.input(), "-cw-odd", cwA)
	if r.code != exitNoFit || !strings.Contains(r.stderr, "-cw-even") || r.stdout != string(s.input()) {
		t.Fatalf("an odd key on an even-only stream: want exit %d naming -cw-even, the input unchanged: %s", exitNoFit, describe(r))
	}
	r = run(t, s.input(), "-cw-even", cwA)
	if r.code != 0 || r.stdout != string(s.output()) {
		t.Fatalf("the same key given even: %s", describe(r))
	}
}
