package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tsdescramble/tsdescramble/internal/testsupport/ecmgtest"
	"github.com/tsdescramble/tsdescramble/internal/testsupport/fakeecmg"
	"github.com/tsdescramble/tsdescramble/keys"
	"github.com/tsdescramble/tsdescramble/psi"
	"github.com/tsdescramble/tsdescramble/ts"
)

const ecmPID = 0x1FF0

// packets cuts a 188-byte stream into its packets.
func packets(b []byte) [][]byte {
	var out [][]byte
	for i := 0; i+188 <= len(b); i += 188 {
		out = append(out, b[i:i+188])
	}
	return out
}

// pcrTimes gives each packet's time from the PCRs of the first PID carrying them, placing the
// packets between two PCRs at even spacing (ISO/IEC 13818-1's constant rate between PCRs).
func pcrTimes(pkts [][]byte) []time.Duration {
	type mark struct {
		i   int
		pcr int64
	}
	var marks []mark
	pcrPID := -1
	for i, p := range pkts {
		if p[3]&0x20 == 0 || p[4] < 7 || p[5]&0x10 == 0 {
			continue
		}
		if pcrPID < 0 {
			pcrPID = int(ts.PID(p))
		}
		if int(ts.PID(p)) != pcrPID {
			continue
		}
		base := int64(p[6])<<25 | int64(p[7])<<17 | int64(p[8])<<9 | int64(p[9])<<1 | int64(p[10])>>7
		marks = append(marks, mark{i, base*300 + int64(p[10]&1)<<8 | int64(p[11])})
	}
	t := make([]time.Duration, len(pkts))
	for k := 0; k+1 < len(marks); k++ {
		a, b := marks[k], marks[k+1]
		for i := a.i; i <= b.i; i++ {
			ticks := a.pcr - marks[0].pcr + (b.pcr-a.pcr)*int64(i-a.i)/int64(b.i-a.i)
			t[i] = time.Duration(ticks * 1000 / 27)
		}
	}
	last := marks[len(marks)-1]
	for i := last.i + 1; i < len(pkts); i++ {
		t[i] = t[last.i]
	}
	return t
}

func percentile(d []time.Duration, q float64) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[int(q*float64(len(s)-1))]
}

// -packets N counts the input's packets: a SimulCrypt run ends after the first N packets of its
// input, the ECM packets it inserts among them not counted, and says so in its summary.
func TestSimulCryptPacketsCountsInput(t *testing.T) {
	t.Parallel()
	addr := ecmgtest.Start(t)
	in := filepath.Join("..", "..", "samples", "demo-clear.ts")
	clear := packets(readFile(t, in))
	n := len(clear) / 2
	out := filepath.Join(t.TempDir(), "s.ts")
	r := run(t, nil, "scramble", "-i", in, "-o", out, "-ecmg", addr, "-super-cas-id", "4ADC0000",
		"-ecm-pid", fmt.Sprint(ecmPID), "-cp-duration", "1s", "-packets", fmt.Sprint(n))
	if r.code != 0 {
		t.Fatalf("scramble: %s", describe(r))
	}
	// The sample has no null packet for an ECM to take the place of: every ECM packet is
	// inserted, and the others are the input's first n, in their order.
	var pids []uint16
	ecms := 0
	for _, p := range packets(readFile(t, out)) {
		if ts.PID(p) == ecmPID {
			ecms++
			continue
		}
		pids = append(pids, ts.PID(p))
	}
	var want []uint16
	for _, p := range clear[:n] {
		want = append(want, ts.PID(p))
	}
	if ecms == 0 {
		t.Fatalf("no ECM packet in the output:\n%s", r.stderr)
	}
	if !slices.Equal(pids, want) {
		t.Fatalf("the output holds %d packets of the input beside %d ECM packets, want the input's first %d", len(pids), ecms, n)
	}
	if want := fmt.Sprintf("%d packets in, %d out", n, n+ecms); !strings.Contains(r.stderr, want) {
		t.Errorf("summary lacks %q:\n%s", want, r.stderr)
	}
}

// TestSimulCryptClosedLoop scrambles a clear stream as a SimulCrypt SCS with random CWs and the
// ECMs of the independent example ECMG, then checks the output from its own bytes: the PMT's
// CA_descriptor, the ECMs (decoded with the ECMG's XOR key) against the CW log, the timing of
// each ECM against each parity flip on the PCR clock, and that descrambling with the CW log
// gives back the clear stream except the PMT and ECM packets.
func TestSimulCryptClosedLoop(t *testing.T) {
	t.Parallel()
	addr := ecmgtest.Start(t)
	dir := t.TempDir()
	in := filepath.Join("..", "..", "samples", "demo-clear.ts")
	clear := readFile(t, in)
	scrambled, cwl, clean := filepath.Join(dir, "s.ts"), filepath.Join(dir, "s.cwl"), filepath.Join(dir, "d.ts")
	// A log left readable by an earlier run is made private too.
	writeFile(t, dir, "s.cwl", []byte("old"))
	os.Chmod(cwl, 0o644)
	r := run(t, nil, "scramble", "-i", in, "-o", scrambled, "-ecmg", addr, "-super-cas-id", "4ADC0000",
		"-ecm-pid", fmt.Sprint(ecmPID), "-cp-duration", "2s", "-cw-log", cwl)
	if r.code != 0 {
		t.Fatalf("scramble: %s", describe(r))
	}
	for _, want := range []string{"delay_start 200ms", "ECM_rep_period 300ms", "lead_CW 1, CW_per_msg 2", "inserted", "CA_descriptor in"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("summary lacks %q:\n%s", want, r.stderr)
		}
	}
	// The summary counts the input's packets in, the ECM packets inserted among them out.
	inPkts, outPkts := len(clear)/188, len(readFile(t, scrambled))/188
	if want := fmt.Sprintf("%d packets in, %d out", inPkts, outPkts); inPkts == outPkts || !strings.Contains(r.stderr, want) {
		t.Errorf("summary lacks %q:\n%s", want, r.stderr)
	}
	if fi, err := os.Stat(cwl); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("CW log: %v, mode %v", err, fi.Mode())
	}
	kf, err := keys.LoadKeyFile(cwl, 8)
	if err != nil || kf.Format != keys.FormatCWL {
		t.Fatalf("CW log: %v", err)
	}
	var logged [][]byte
	for _, p := range kf.Periods {
		logged = append(logged, p.CW)
	}

	out := readFile(t, scrambled)
	pkts := packets(out)
	times := pcrTimes(pkts)
	tr := psi.NewTracker()
	var flips, ecmStarts []time.Duration
	var ecmTimes []time.Duration
	lastParity, lastTable := ts.Scrambling(0xFF), byte(0)
	ecms := 0
	for i, p := range pkts {
		tr.Feed(p)
		pid := ts.PID(p)
		switch {
		case pid == ecmPID:
			if !ts.PUSI(p) || p[4] != 0 {
				t.Fatalf("ECM packet %d without a section start", i)
			}
			sec := p[5:]
			if sec[0] != 0x80 && sec[0] != 0x81 || int(binary.BigEndian.Uint16(sec[1:])&0xFFF) != 16 {
				t.Fatalf("ECM packet %d: % X", i, sec[:19])
			}
			ecmTimes = append(ecmTimes, times[i])
			if sec[0] != lastTable {
				// The first ECM of crypto period n (parity of n in table_id): it carries the CW
				// of n and n+1 in the even and odd slots.
				n := ecms
				var even, odd []byte
				for j := range 8 {
					even = append(even, sec[3+j]^ecmgtest.XORKey[j])
					odd = append(odd, sec[11+j]^ecmgtest.XORKey[j])
				}
				cur, next := even, odd
				if n%2 == 1 {
					cur, next = odd, even
				}
				if n >= len(logged) || !bytes.Equal(cur, logged[n]) || n+1 < len(logged) && !bytes.Equal(next, logged[n+1]) {
					t.Fatalf("ECM of period %d carries CWs %X %X, the log says otherwise", n, cur, next)
				}
				if int(sec[0]&1) != n%2 {
					t.Fatalf("ECM of period %d has table_id %#x", n, sec[0])
				}
				ecms++
				lastTable = sec[0]
				ecmStarts = append(ecmStarts, times[i])
			}
		case ts.TSC(p) == ts.Even || ts.TSC(p) == ts.Odd:
			if ts.TSC(p) != lastParity {
				lastParity = ts.TSC(p)
				flips = append(flips, times[i])
			}
		}
	}
	svcs := tr.Services()
	if len(svcs) == 0 || len(svcs[0].CA) != 1 || svcs[0].CA[0].SystemID != 0x4ADC || svcs[0].CA[0].PID != ecmPID {
		t.Fatalf("PMT: %+v", svcs)
	}
	if len(flips) < 8 || ecms < len(flips)-1 {
		t.Fatalf("%d flips, %d ECM periods", len(flips), ecms)
	}
	// Timing: the first ECM opens the stream; the ECM of period n >= 1 goes out delay_start
	// after its flip, within one repetition period.
	var starts []time.Duration
	for n := 1; n < min(len(flips), ecms); n++ {
		d := ecmStarts[n] - flips[n]
		starts = append(starts, d)
		if d < ecmgtest.DelayStart-ecmgtest.RepPeriod || d > ecmgtest.DelayStart+ecmgtest.RepPeriod {
			t.Errorf("period %d: ECM %v after the flip, want %v within %v", n, d, ecmgtest.DelayStart, ecmgtest.RepPeriod)
		}
	}
	var gaps []time.Duration
	for i := 1; i < len(ecmTimes); i++ {
		gaps = append(gaps, ecmTimes[i]-ecmTimes[i-1])
	}
	if m := slices.Max(gaps); m > ecmgtest.RepPeriod {
		t.Errorf("an ECM repeats after %v, ECM_rep_period is %v", m, ecmgtest.RepPeriod)
	}
	t.Logf("%d crypto periods; ECM start after flip: p50 %v max %v min %v; ECM repetition: p50 %v max %v (ECM_rep_period %v)",
		len(flips), percentile(starts, 0.5), slices.Max(starts), slices.Min(starts), percentile(gaps, 0.5), slices.Max(gaps), ecmgtest.RepPeriod)

	// Descrambled with the log alone, and with the ECMs alone: the clear stream but for the PMT
	// and the ECMs.
	pmtPID := svcs[0].PMTPID
	r = run(t, nil, "-i", scrambled, "-o", clean, "-cw-file", cwl)
	if r.code != 0 {
		t.Fatalf("descramble with the CW log: %s", describe(r))
	}
	sameAsClear(t, "descrambled with the CW log", clear, readFile(t, clean), pmtPID)
	r = run(t, nil, "-i", scrambled, "-o", clean, "-ecm-xor", "4212022421206688")
	if r.code != 0 {
		t.Fatalf("descramble with -ecm-xor: %s", describe(r))
	}
	if !strings.Contains(r.stderr, fmt.Sprintf("ECMs: %d read on PID 0x1ff0, %d distinct", len(ecmTimes), ecms)) {
		t.Errorf("the summary does not count the %d ECMs, %d distinct:\n%s", len(ecmTimes), ecms, r.stderr)
	}
	sameAsClear(t, "descrambled with -ecm-xor", clear, readFile(t, clean), pmtPID)
	simulcryptOracle(t, readFile(t, scrambled), clear, logged, pmtPID)
	if got := receive(t, readFile(t, scrambled), clear, pmtPID); got.lost > 0 || got.badECM > 0 || got.pmtEarly {
		t.Errorf("the receiver model: %d scrambled packets lost (the first at output packet %d), %d ECM packets dropped, a CA_descriptor before any ECM %v",
			got.lost, got.firstLost, got.badECM, got.pmtEarly)
	}
}

// slowReader hands out data 16 kB at a time, 4 ms apart.
type slowReader struct{ data []byte }

func (r *slowReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	time.Sleep(4 * time.Millisecond)
	n := copy(p[:min(len(p), 16<<10)], r.data)
	r.data = r.data[n:]
	return n, nil
}

// sameAsClear fails the test unless got, without its ECM packets, is the clear stream but for
// the packets of the PMT.
func sameAsClear(t *testing.T, what string, clear, got []byte, pmtPID uint16) {
	t.Helper()
	var g [][]byte
	for _, p := range packets(got) {
		if ts.PID(p) != ecmPID {
			g = append(g, p)
		}
	}
	want := packets(clear)
	if len(g) != len(want) {
		t.Fatalf("%s: %d packets besides the ECMs, want %d", what, len(g), len(want))
	}
	for i := range want {
		if !bytes.Equal(g[i], want[i]) && ts.PID(want[i]) != pmtPID {
			t.Fatalf("%s: packet %d (PID %#x) differs from the clear stream", what, i, ts.PID(want[i]))
		}
	}
}

// TestSimulCryptFaults: an ECMG that answers a CW_provision with an error and then closes the
// connection mid-run never stops the stream: every packet goes out, the run says what happened
// in words, the period whose ECM never came goes on with the last ECM repeating, and the
// output still descrambles with the CW log to the clear stream, and with the ECMs in it.
func TestSimulCryptFaults(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name                     string
		errAt, lost, late, conns int
		says                     []string
	}{
		{"late", -1, -1, 3, 1, []string{"no ECM for crypto period 3 within 2s", "keeps repeating", "1 crypto period prolonged"}},
		{"error reply", 3, -1, -1, 1, []string{"not enough control words to compute ECM (0x000B)", "no ECM for crypto period 3: the ECM of crypto period 2 keeps repeating", "the ECM of period 4 follows"}},
		{"reconnected", -1, 4, -1, 2, []string{"the ECMG closed the connection", "the ECMG is back after", "lost 1 time (back 1)"}},
		{"closed mid-run", -1, 4, -1, 1, []string{"the ECMG closed the connection", "keeps repeating", "lost 1 time"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			addr := fakeecmg.Start(t, fakeecmg.Config{ErrorAt: tc.errAt, CloseAt: tc.lost, LateAt: tc.late, Late: 3 * time.Second, Connections: tc.conns, RepPeriod: 100 * time.Millisecond})
			dir := t.TempDir()
			in := filepath.Join("..", "..", "samples", "demo-clear.ts")
			clear := readFile(t, in)
			scrambled, cwl, clean := filepath.Join(dir, "s.ts"), filepath.Join(dir, "s.cwl"), filepath.Join(dir, "d.ts")
			// The input comes at about 70 times its real rate, so that a reconnection, which
			// runs beside the stream, has the time to come back before the end.
			var stdout, stderr bytes.Buffer
			code := runEnv(t, Env{Stdin: &slowReader{data: clear}, Stdout: &stdout, Stderr: &stderr, IsTerminal: func(*os.File) bool { return false }},
				"scramble", "-i", "-", "-o", scrambled, "-ecmg", addr, "-super-cas-id", "4ADC0000",
				"-ecm-pid", fmt.Sprint(ecmPID), "-cp-duration", "1s", "-cw-log", cwl)
			r := result{code: code, stdout: stdout.String(), stderr: stderr.String()}
			if r.code != 0 {
				t.Fatalf("scramble: %s", describe(r))
			}
			for _, want := range tc.says {
				if !strings.Contains(r.stderr, want) {
					t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
				}
			}
			r = run(t, nil, "-i", scrambled, "-o", clean, "-cw-file", cwl)
			if r.code != 0 {
				t.Fatalf("descramble: %s", describe(r))
			}
			sameAsClear(t, "descrambled with the CW log", clear, readFile(t, clean), 0x1000)
			// And by a receiver, from the ECMs alone: no ECM on air may carry a CW of the
			// parity in use other than the current one.
			if got := receive(t, readFile(t, scrambled), clear, 0x1000); got.lost > 0 {
				t.Errorf("%d scrambled packets no ECM before them can descramble, the first at output packet %d", got.lost, got.firstLost)
			}
		})
	}
}
