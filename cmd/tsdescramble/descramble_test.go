package main

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tsdescramble/tsdescramble/internal/units"
)

// TestKeySources descrambles streams whose crypto periods use different control words, with
// each way of giving the keys.
func TestKeySources(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		periods []period
		keyFile string // written to KEYFILE when set
		args    []string
	}{
		{
			name:    "cw for both parities",
			periods: []period{{tscEven, cwA, 20}, {tscOdd, cwA, 20}, {tscEven, cwA, 10}},
			args:    []string{"-cw", cwA},
		},
		{
			name:    "cw with colons and upper case",
			periods: []period{{tscOdd, cwC, 12}, {tscEven, cwC, 12}},
			args:    []string{"-cw", "A1:B2:C3:D4:E5:F6:07:18"},
		},
		{
			name:    "cw with spaces",
			periods: []period{{tscEven, cwC, 12}},
			args:    []string{"-cw", "a1 b2 c3 d4 e5 f6 07 18"},
		},
		{
			name:    "cw with 0x prefix and dashes",
			periods: []period{{tscOdd, cwC, 12}},
			args:    []string{"-cw", "0xa1b2-c3d4-e5f6-0718"},
		},
		{
			name:    "cw-even and cw-odd",
			periods: []period{{tscEven, cwA, 15}, {tscOdd, cwB, 15}, {tscEven, cwA, 15}, {tscOdd, cwB, 15}},
			args:    []string{"-cw-even", cwA, "-cw-odd", cwB},
		},
		{
			name:    "cw-odd and cw-even given in the other order",
			periods: []period{{tscOdd, cwD, 15}, {tscEven, cwC, 15}},
			args:    []string{"-cw-odd", cwD, "-cw-even", cwC},
		},
		{
			name:    "cw-file with one control word",
			periods: []period{{tscEven, cwB, 10}, {tscOdd, cwB, 10}, {tscEven, cwB, 10}},
			keyFile: cwB + "\n",
			args:    []string{"-cw-file", "KEYFILE"},
		},
		{
			name:    "cw-file with two control words",
			periods: []period{{tscEven, cwA, 10}, {tscOdd, cwB, 10}, {tscEven, cwA, 10}, {tscOdd, cwB, 10}},
			keyFile: cwA + "\n" + cwB + "\n",
			args:    []string{"-cw-file", "KEYFILE"},
		},
		{
			name: "cw-file cycles through three control words",
			periods: []period{
				{tscEven, cwA, 9}, {tscOdd, cwB, 9}, {tscEven, cwC, 9}, {tscOdd, cwA, 9},
				{tscEven, cwB, 9}, {tscOdd, cwC, 9}, {tscEven, cwA, 9},
			},
			keyFile: cwA + "\n" + cwB + "\n" + cwC + "\n",
			args:    []string{"-cw-file", "KEYFILE"},
		},
		{
			name: "cw-file: the first control word is for the first period, whatever its parity",
			periods: []period{
				{tscOdd, cwA, 9}, {tscEven, cwB, 9}, {tscOdd, cwC, 9}, {tscEven, cwD, 9}, {tscOdd, cwA, 9},
			},
			keyFile: cwA + "\n" + cwB + "\n" + cwC + "\n" + cwD + "\n",
			args:    []string{"-cw-file", "KEYFILE"},
		},
		{
			name:    "cw-file with comments, blank lines and separators",
			periods: []period{{tscEven, cwA, 9}, {tscOdd, cwB, 9}, {tscEven, cwC, 9}, {tscOdd, cwA, 9}},
			keyFile: "# keys of the test stream\n\n" +
				"01:02:03:06:08:09:0A:1B   # first period\n" +
				"   \n" +
				"#" + cwD + "\n" +
				"11 12 13 36 24 25 26 71\n" +
				"\t\n" +
				"0x" + cwC + "\n" +
				"# end\n",
			args: []string{"-cw-file", "KEYFILE"},
		},
		{
			name:    "cw-file with CRLF line ends",
			periods: []period{{tscEven, cwA, 9}, {tscOdd, cwB, 9}},
			keyFile: "# keys\r\n" + cwA + "\r\n\r\n" + cwB + "\r\n",
			args:    []string{"-cw-file", "KEYFILE"},
		},
		{
			name:    "cw-file without a final newline",
			periods: []period{{tscEven, cwA, 9}, {tscOdd, cwB, 9}},
			keyFile: cwA + "\n" + cwB,
			args:    []string{"-cw-file", "KEYFILE"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := periodStream(t, tc.periods)
			args := append([]string{"-q"}, tc.args...)
			if tc.keyFile != "" {
				path := writeFile(t, t.TempDir(), "keys.txt", []byte(tc.keyFile))
				for i, a := range args {
					if a == "KEYFILE" {
						args[i] = path
					}
				}
			}
			r := run(t, s.input(), args...)
			if r.code != 0 || r.stderr != "" {
				t.Fatalf("want exit 0 and no message; %s", describe(r))
			}
			sameBytes(t, "output", []byte(r.stdout), s.output(), 188)
		})
	}
}

// TestWrongKeyDoesNotDescramble checks that the comparisons above can fail: a stream
// descrambled with control words other than its own differs from the clear one.
func TestWrongKeyDoesNotDescramble(t *testing.T) {
	t.Parallel()
	s := periodStream(t, []period{{tscEven, cwA, 9}, {tscOdd, cwB, 9}, {tscEven, cwC, 9}})
	dir := t.TempDir()
	others := writeFile(t, dir, "others.txt", []byte(cwD+"\n"+cwRaw+"\n"))
	for _, args := range [][]string{
		{"-cw", cwA},
		{"-cw-even", cwB, "-cw-odd", cwA},
		{"-cw-file", others},
	} {
		r := run(t, s.input(), append([]string{"-q"}, args...)...)
		if !wrongKeyExit(r.code) {
			t.Fatalf("%v: %s", args, describe(r))
		}
		if bytes.Equal([]byte(r.stdout), s.output()) {
			t.Errorf("%v: the stream came out clear with the wrong control words", args)
		}
		if len(r.stdout) != len(s.output()) {
			t.Errorf("%v: got %d bytes, want %d", args, len(r.stdout), len(s.output()))
		}
	}
}

// wrongKeyExit reports whether code is an exit status of a run with the wrong keys: the
// output is written either way, and the command may report with exit 3 that the keys do not
// fit the stream.
func wrongKeyExit(code int) bool { return code == 0 || code == 3 }

// TestReduceEntropy checks -reduce-entropy: a stream scrambled with the 48-bit form of a
// control word descrambles from the 64-bit control word with the flag, and not without it.
func TestReduceEntropy(t *testing.T) {
	t.Parallel()
	raw := mustCW(t, cwRaw)
	red := reduced(raw)
	if bytes.Equal(raw, red) {
		t.Fatal("test control word already has its checksums")
	}
	redHex := hex.EncodeToString(red)
	s := periodStream(t, []period{{tscEven, redHex, 12}, {tscOdd, redHex, 12}, {tscEven, redHex, 12}})
	keyFile := writeFile(t, t.TempDir(), "keys.txt", []byte(cwRaw+"\n"))

	tests := []struct {
		args  []string
		clear bool
	}{
		{[]string{"-reduce-entropy", "-cw", cwRaw}, true},
		{[]string{"-cw", cwRaw, "-reduce-entropy"}, true},
		{[]string{"-reduce-entropy", "-cw-even", cwRaw, "-cw-odd", cwRaw}, true},
		{[]string{"-reduce-entropy", "-cw-file", keyFile}, true},
		{[]string{"-reduce-entropy", "-cw", redHex}, true}, // already reduced: unchanged
		{[]string{"-cw", redHex}, true},
		{[]string{"-cw", cwRaw}, false},
		{[]string{"-cw-even", cwRaw, "-cw-odd", cwRaw}, false},
		{[]string{"-cw-file", keyFile}, false},
	}
	for _, tc := range tests {
		t.Run(strings.ReplaceAll(strings.Join(tc.args, " "), keyFile, "FILE"), func(t *testing.T) {
			r := run(t, s.input(), append([]string{"-q"}, tc.args...)...)
			if tc.clear && r.code != 0 || !tc.clear && !wrongKeyExit(r.code) {
				t.Fatalf("%s", describe(r))
			}
			if tc.clear {
				sameBytes(t, "output", []byte(r.stdout), s.output(), 188)
				return
			}
			if len(r.stdout) != len(s.output()) {
				t.Fatalf("got %d bytes, want %d", len(r.stdout), len(s.output()))
			}
			// Every scrambled packet must come out wrong; clear ones unchanged.
			for i, in := range s.in {
				got := []byte(r.stdout[i*188 : (i+1)*188])
				if in[3]>>6 == tscClear {
					sameBytes(t, fmt.Sprintf("clear packet %d", i), got, s.want[i], 188)
				} else if bytes.Equal(got, s.want[i]) {
					t.Fatalf("packet %d descrambled with the unreduced control word", i)
				}
			}
		})
	}
}

// TestPacketKinds runs a stream with every kind of packet through the command and checks
// each packet of the output and the counts of the summary.
func TestPacketKinds(t *testing.T) {
	t.Parallel()
	key := mustKey(t, mustCW(t, cwA))
	s := &stream{}
	seq := 0
	next := func() int { seq++; return seq }

	s.addClear(clearPacket(0x100, next(), -1, true))                   // clear
	s.addScrambled(clearPacket(0x100, next(), -1, true), key, tscEven) // even, full payload
	s.addScrambled(clearPacket(0x101, next(), -1, true), key, tscOdd)  // odd, full payload
	// TSC 01: reserved, passed through untouched.
	s.addClear(setTSC(scramble(clearPacket(0x100, next(), -1, true), key, tscReserved), tscReserved))
	s.addClear(setTSC(clearPacket(0x100, next(), 20, true), tscReserved))
	// Adaptation field only, clear and scrambled: untouched.
	s.addClear(clearPacket(0x100, next(), 183, false))
	s.addClear(setTSC(clearPacket(0x100, next(), 183, false), tscEven))
	s.addClear(setTSC(clearPacket(0x101, next(), 183, false), tscOdd))
	// Adaptation field filling the packet with the payload flag set: an empty payload.
	s.addClear(setTSC(clearPacket(0x100, next(), 183, true), tscEven))
	// Payloads of every length around the 8-byte block: under 8 bytes they are clear by
	// definition (TSC cleared, payload untouched); from 8 bytes on they are descrambled.
	for _, n := range []int{1, 5, 7, 8, 9, 15, 16, 17, 23, 100, 183} {
		afLen := 188 - 5 - n
		for _, tsc := range []byte{tscEven, tscOdd} {
			p := clearPacket(0x100, next(), afLen, true)
			in := scramble(p, key, tsc)
			if n < 8 && !bytes.Equal(in[188-n:], p[188-n:]) {
				t.Fatalf("a %d-byte payload was scrambled", n)
			}
			if n >= 8 && bytes.Equal(in[188-n:], p[188-n:]) {
				t.Fatalf("a %d-byte payload was not scrambled", n)
			}
			s.add(in, p)
		}
	}
	// Null packets and a clear packet of another PID.
	s.addClear(nullPacket())
	s.addClear(clearPacket(0x1FFE, next(), -1, true))
	s.addClear(nullPacket())
	s.addScrambled(clearPacket(0x100, next(), -1, true), key, tscEven)

	r := run(t, s.input(), "-cw", cwA)
	if r.code != 0 {
		t.Fatalf("%s", describe(r))
	}
	for i := range s.in {
		got := []byte(r.stdout[i*188 : min((i+1)*188, len(r.stdout))])
		sameBytes(t, fmt.Sprintf("packet %d (header % x)", i, s.in[i][:4]), got, s.want[i], 188)
	}
	sameBytes(t, "output", []byte(r.stdout), s.output(), 188)

	summaryHas(t, r.stderr,
		fmt.Sprintf(`\b%d packets in\b`, len(s.in)),
		`\b15 even\b`, `\b13 odd\b`, `\b5 clear\b`, `\b2 TSC 01\b`,
		`\b3 [a-z ]*without payload\b`, `\b0 [a-z ]*without a key\b`)
}

// TestOneParityKey checks that with only -cw-even (or -cw-odd) the packets of the other
// parity pass through untouched, still scrambled.
func TestOneParityKey(t *testing.T) {
	t.Parallel()
	keyA, keyB := mustKey(t, mustCW(t, cwA)), mustKey(t, mustCW(t, cwB))
	s := &stream{}
	for i := 1; i <= 30; i++ {
		p := clearPacket(0x100, i, -1, true)
		if i%2 == 0 {
			s.addScrambled(p, keyA, tscEven)
		} else {
			s.addClear(scramble(p, keyB, tscOdd)) // no key: must stay as it is
		}
	}
	r := run(t, s.input(), "-cw-even", cwA)
	if r.code != 0 {
		t.Fatalf("%s", describe(r))
	}
	sameBytes(t, "output", []byte(r.stdout), s.output(), 188)
	summaryHas(t, r.stderr, `\b15 even\b`, `\b15 odd\b`, `\b15 [a-z ]*without a key\b`)

	// The same with the odd key only.
	s = &stream{}
	for i := 1; i <= 30; i++ {
		p := clearPacket(0x100, i, -1, true)
		if i%3 == 0 {
			s.addClear(scramble(p, keyA, tscEven))
		} else {
			s.addScrambled(p, keyB, tscOdd)
		}
	}
	r = run(t, s.input(), "-q", "-cw-odd", cwB)
	if r.code != 0 {
		t.Fatalf("%s", describe(r))
	}
	sameBytes(t, "output", []byte(r.stdout), s.output(), 188)
}

// TestFramings checks that 188, 192 and 204-byte packets are descrambled and written back in
// their framing, prefix and trailer bytes included.
func TestFramings(t *testing.T) {
	t.Parallel()
	s := periodStream(t, []period{{tscEven, cwA, 40}, {tscOdd, cwB, 40}, {tscEven, cwA, 40}})
	for _, tc := range []struct {
		size    int
		framing string
	}{
		{188, `packets in.*\b188\b`},
		{192, `packets in.*\b192\b`},
		{204, `packets in.*\b204\b`},
	} {
		t.Run(fmt.Sprint(tc.size), func(t *testing.T) {
			in, want := frame(s.in, tc.size), frame(s.want, tc.size)
			r := run(t, in, "-cw-even", cwA, "-cw-odd", cwB)
			if r.code != 0 {
				t.Fatalf("%s", describe(r))
			}
			sameBytes(t, "output", []byte(r.stdout), want, tc.size)
			summaryHas(t, r.stderr, tc.framing, fmt.Sprintf(`\b%d packets in\b`, len(s.in)))
			if strings.Contains(r.stderr, "skipped") {
				t.Errorf("summary reports skipped bytes in a clean stream:\n%s", r.stderr)
			}
		})
	}
}

// TestGarbageAndTruncation checks that bytes between packets and a truncated last packet are
// dropped and counted, and that every whole packet comes out in order.
func TestGarbageAndTruncation(t *testing.T) {
	t.Parallel()
	s := periodStream(t, []period{{tscEven, cwA, 30}, {tscOdd, cwB, 30}})
	// Clear packets at the places where garbage follows, so no byte of theirs can look like
	// a sync byte.
	s.in[9], s.want[9] = clearPacket(0x200, 9, -1, true), clearPacket(0x200, 9, -1, true)
	last := len(s.in) - 1
	s.in[last], s.want[last] = clearPacket(0x200, 99, -1, true), clearPacket(0x200, 99, -1, true)

	noSync := func(n int, seed int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = fill(seed, i)
		}
		return b
	}
	withSync := func(n, first int) []byte { // 0x47 bytes that start no chain of packets
		b := noSync(n, 7)
		for i := first; i < n; i += 5 {
			b[i] = 0x47
		}
		return b
	}
	type insert struct {
		after int // insert after this packet; -1: before the first
		junk  []byte
	}
	tests := []struct {
		name      string
		size      int
		inserts   []insert
		tail      []byte
		skipped   int
		truncated int
	}{
		{"leading garbage", 188, []insert{{-1, noSync(100, 1)}}, nil, 100, 0},
		{"garbage between packets", 188, []insert{{9, noSync(37, 2)}, {20, noSync(1, 3)}, {40, noSync(500, 4)}}, nil, 538, 0},
		{"garbage with 0x47 bytes", 188, []insert{{9, withSync(61, 0)}, {30, withSync(190, 1)}}, nil, 251, 0},
		{"truncated last packet", 188, nil, clearPacket(0x100, 1, -1, true)[:100], 0, 100},
		{"truncated last packet, 1 byte", 188, nil, []byte{0x47}, 0, 1},
		{"trailing garbage", 188, nil, noSync(50, 5), 50, 0},
		{"garbage and truncated last packet", 188, []insert{{-1, noSync(10, 6)}, {15, noSync(300, 8)}}, clearPacket(0x100, 1, -1, true)[:187], 310, 187},
		{"192: garbage and truncated last packet", 192, []insert{{9, noSync(37, 2)}}, frame([][]byte{clearPacket(0x100, 1, -1, true)}, 192)[:150], 37, 150},
		{"204: garbage and truncated last packet", 204, []insert{{9, noSync(37, 2)}}, frame([][]byte{clearPacket(0x100, 1, -1, true)}, 204)[:200], 37, 200},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			unit := tc.size
			clean := frame(s.in, unit)
			var in []byte
			for _, ins := range tc.inserts {
				if ins.after == -1 {
					in = append(in, ins.junk...)
				}
			}
			for i := range s.in {
				in = append(in, clean[i*unit:(i+1)*unit]...)
				for _, ins := range tc.inserts {
					if ins.after == i {
						in = append(in, ins.junk...)
					}
				}
			}
			in = append(in, tc.tail...)

			r := run(t, in, "-cw-even", cwA, "-cw-odd", cwB)
			if r.code != 0 {
				t.Fatalf("%s", describe(r))
			}
			sameBytes(t, "output", []byte(r.stdout), frame(s.want, unit), unit)
			summaryHas(t, r.stderr, fmt.Sprintf(`\b%d packets in\b`, len(s.in)))
			if tc.skipped > 0 {
				summaryHas(t, r.stderr, `skipped `+units.Count(int64(tc.skipped), "byte")+`\b`)
			}
			if tc.truncated > 0 {
				summaryHas(t, r.stderr, `truncated [a-z ]*\b`+units.Count(int64(tc.truncated), "byte")+`\b`)
			}
		})
	}
}

// TestWorkersAndBatches checks that the output does not depend on the number of workers or
// the batch size, and that packets leave in input order.
func TestWorkersAndBatches(t *testing.T) {
	t.Parallel()
	var periods []period
	cws := []string{cwA, cwB, cwC, cwD}
	for i := 0; i < 30; i++ {
		periods = append(periods, period{byte(tscEven + i%2), cws[i%len(cws)], 40 + i%7})
	}
	s := periodStream(t, periods)
	keyFile := writeFile(t, t.TempDir(), "keys.txt", []byte(strings.Join(cws, "\n")+"\n"))
	in, want := frame(s.in, 204), frame(s.want, 204)

	for _, args := range [][]string{
		{"-workers", "1"},
		{"-workers", "2"},
		{"-workers", "8"},
		{"-batch", "1"},
		{"-batch", "7"},
		{"-workers", "1", "-batch", "1"},
		{"-workers", "2", "-batch", "1"},
		{"-workers", "2", "-batch", "7"},
		{"-workers", "3", "-batch", "65536"},
		{},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			r := run(t, in, append([]string{"-q", "-cw-file", keyFile}, args...)...)
			if r.code != 0 {
				t.Fatalf("%s", describe(r))
			}
			sameBytes(t, "output", []byte(r.stdout), want, 204)
		})
	}
}

// TestEmptyInput checks that an empty input is a failure (exit 1) with one line saying so, as
// probe says it, and leaves no output file behind: a run that read nothing was most often given
// the wrong file or fed by a producer that failed.
func TestEmptyInput(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"-q", "-cw", cwA}, {"-cw", cwA}, {"-v", "-cw", cwA}, {"scramble", "-cw", cwA}} {
		r := run(t, nil, args...)
		if r.code != 1 || r.stdout != "" || r.stderr != "tsdescramble: stdin: the input is empty\n" {
			t.Errorf("%v: want exit 1, no output and one line; %s", args, describe(r))
		}
	}

	dir := t.TempDir()
	in := writeFile(t, dir, "empty.ts", nil)
	out := filepath.Join(dir, "out.ts")
	keyFile := writeFile(t, dir, "keys.txt", []byte(cwA+"\n"+cwB+"\n"))
	for _, args := range [][]string{
		{"-cw", cwA, "-in", in, "-out", out},
		{"-cw-file", keyFile, "-in", in, "-out", out}, // the key file's note is not printed either
		{"scramble", "-cw", cwA, "-in", in, "-out", out},
	} {
		r := run(t, nil, args...)
		if r.code != 1 || r.stdout != "" || r.stderr != "tsdescramble: "+in+": the input is empty\n" {
			t.Errorf("%v: want exit 1, no output and one line; %s", args, describe(r))
		}
	}
	for _, n := range dirNames(t, dir) {
		if n != "empty.ts" && n != "keys.txt" {
			t.Errorf("a run on an empty input left %s behind", n)
		}
	}
}

// -passthrough takes a stream to the output as it came, scrambled packets and PMTs alike, with
// the statistics of any run, and takes no key.
func TestPassthrough(t *testing.T) {
	t.Parallel()
	in := readFile(t, demoScrambled)
	dir := t.TempDir()
	stats := filepath.Join(dir, "s.json")
	r := run(t, in, "-passthrough", "-stats", stats)
	if r.code != 0 {
		t.Fatal(describe(r))
	}
	sameBytes(t, "passed through", []byte(r.stdout), in, 188)
	if !strings.Contains(r.stderr, "passed through as they came (-passthrough): 399 clear, 2400 even, 1812 odd") {
		t.Errorf("summary: %s", r.stderr)
	}
	var st struct {
		Even, Odd, Descrambled int64
	}
	if err := json.Unmarshal(readFile(t, stats), &st); err != nil {
		t.Fatal(err)
	}
	if st.Even != 2400 || st.Odd != 1812 || st.Descrambled != 0 {
		t.Errorf("-stats: %+v", st)
	}
	for _, bad := range [][]string{{"-cw", cwA}, {"-cw-file", demoKeys}, {"-key-server", "cs378x://u:p@127.0.0.1:1"}, {"-cipher", "dfc"}} {
		r := run(t, in, append([]string{"-passthrough"}, bad...)...)
		if r.code != 2 || !strings.Contains(r.stderr, "-passthrough changes no packet: it takes no "+bad[0]) {
			t.Errorf("%v: %s", bad, describe(r))
		}
	}
}
