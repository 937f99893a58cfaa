//go:build dvbcsa

package streamtest

import (
	"bytes"
	"fmt"
	"github.com/tsdescramble/tsdescramble/ts"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/tsdescramble/tsdescramble/internal/testsupport/dvbcsa"
)

// Key synchronisation on whole streams: CW lists and logs that do not start where the stream
// does, lists with CWs that belong to no period, a flipped parity bit, a key source that fits
// only some periods. Every run is repeated under each -workers/-batch pair (see runTunings):
// a key decision must reach every packet of its crypto period, whichever unit of work the
// packet was in.

// syncCWs is a list of five: with an odd count, a CW comes back with the other parity when the
// list wraps round (a list says nothing of parities, and the descrambler must assume none).
var syncCWs = append(append([][]byte{}, testCWs...), []byte{0x5a, 0x1c, 0x93, 0x09, 0xe4, 0x70, 0x0b, 0x5f})

// syncStream is the H.264/AAC stream scrambled by libdvbcsa with syncCWs in crypto periods of
// 300 packets (about ten), with the crypto period of each packet (-1: not scrambled).
func syncStream(t *testing.T) (clear, scrambled []byte, per []int, periods int) {
	t.Helper()
	clear, scrambled = scramble(t, clearStreams(t)["h264-aac"], ts.Framing188, syncCWs, 300, 50)
	per, periods = periodsOf(scrambled)
	if periods < 2*len(syncCWs)-2 {
		t.Fatalf("fixture: %d crypto periods; the list should wrap round", periods)
	}
	requireCheckablePeriods(t, clear, per)
	return clear, scrambled, per, periods
}

// firstOf returns the index of the first packet of crypto period n.
func firstOf(t *testing.T, per []int, n int) int {
	t.Helper()
	for i, p := range per {
		if p == n {
			return i
		}
	}
	t.Fatalf("fixture: no crypto period %d", n)
	return 0
}

// Streams and key files that need the list aligned, and realigned, by trial decryption: every
// output is byte-identical to the clear stream (the same cut of it, for a cut stream).
func TestSyncCutsAndLists(t *testing.T) {
	clear, scrambled, per, periods := syncStream(t)
	list := writeCWFile(t, syncCWs)

	// A cut in the middle of the second crypto period (odd, CW 2), and one at the start of the
	// third (even, CW 3): the list given starts at CW 1 either way.
	mid := (firstOf(t, per, 1) + firstOf(t, per, 2)) / 2
	third := firstOf(t, per, 2)
	requireCheckablePeriods(t, clear[mid*188:], per[mid:])

	nulls := nullPackets(900)

	// Wrong CWs between the right ones and after them: the list needs realigning at most
	// crypto periods.
	wrong := randomCWs(51, 6)
	withWrong := [][]byte{syncCWs[0], wrong[0], syncCWs[1], syncCWs[2], wrong[1], wrong[2], syncCWs[3], wrong[3], syncCWs[4], wrong[4], wrong[5]}

	// An OSCam log written newest first: one line per crypto period of the stream, each with
	// the period's parity, the header comments at the top as OSCam writes them.
	var cwl strings.Builder
	cwl.WriteString("# OSCam cardserver - http://www.streamboard.tv/oscam/\n# control word log file for use with tsdec offline decrypter\n# CAID 0x2600, SID 0x0001, SERVICE \"test\"\n")
	for i := periods - 1; i >= 0; i-- {
		cw := syncCWs[i%len(syncCWs)]
		fmt.Fprintf(&cwl, "%d %02X %02X %02X %02X %02X %02X %02X %02X # 12:00:%02d\n", i%2, cw[0], cw[1], cw[2], cw[3], cw[4], cw[5], cw[6], cw[7], 3*i)
	}

	for _, c := range []struct {
		name, file, content string // the key file: its name and content, or the list as it is
		in, want            []byte
	}{
		{"cut mid-period", "", "", scrambled[mid*188:], clear[mid*188:]},
		{"cut mid-list", "", "", scrambled[third*188:], clear[third*188:]},
		{"900 null packets first", "", "", append(append([]byte{}, nulls...), scrambled...), append(append([]byte{}, nulls...), clear...)},
		{"wrong CWs interleaved and appended", "extra.txt", listString(withWrong), scrambled, clear},
		{"OSCam log in reverse order", "reversed.cwl", cwl.String(), scrambled, clear},
	} {
		t.Run(c.name, func(t *testing.T) {
			keyFile := list
			if c.content != "" {
				keyFile = writeFile(t, c.file, c.content)
			}
			out, stderr, code, st := runTunings(t, c.in, "-cw-file", keyFile)
			if code != 0 {
				t.Fatalf("exit %d\n%s", code, stderr)
			}
			requireSame(t, c.name, out, c.want)
			if st.LeftScrambled != 0 || st.PeriodsLeftScrambled != 0 {
				t.Fatalf("-stats: %d packets and %d crypto periods left scrambled, want none", st.LeftScrambled, st.PeriodsLeftScrambled)
			}
		})
	}
}

// One packet in the middle of an even crypto period marked odd, as a bit error would leave it:
// the period goes on and the list stays aligned, so the output is the clear stream but for that
// one packet, which comes out as it came in.
func TestSyncOneFlippedParityBit(t *testing.T) {
	clear, scrambled, per, _ := syncStream(t)
	const period = 2 // even: the third
	// The PID with the most packets in the period (the video).
	counts := map[uint16]int{}
	for i, p := range per {
		if p == period {
			counts[ts.PID(pkt(scrambled, i))]++
		}
	}
	var pid uint16
	for p, n := range counts {
		if n > counts[pid] {
			pid = p
		}
	}
	// Candidates: packets of that PID in the period, not PES starts, with a whole payload, with
	// two packets of the PID in the period before them and one after.
	var idx []int
	for i, p := range per {
		if p == period && ts.PID(pkt(scrambled, i)) == pid {
			idx = append(idx, i)
		}
	}
	var cands []int
	for k := 2; k < len(idx)-1; k++ {
		p := pkt(scrambled, idx[k])
		if off, ok := ts.PayloadOffset(p); ok && off == 4 && !ts.PUSI(p) {
			cands = append(cands, idx[k])
		}
	}
	if len(cands) == 0 {
		t.Fatalf("fixture: no packet of PID 0x%04x to flip in crypto period %d", pid, period)
	}
	flip := cands[len(cands)/2]
	damaged := append([]byte{}, scrambled...)
	if damaged[flip*188+3]>>6 != 2 {
		t.Fatal("fixture: the packet to flip is not marked even")
	}
	damaged[flip*188+3] |= 0x40 // TSC 10 -> 11
	want := append([]byte{}, clear...)
	copy(want[flip*188:], pkt(damaged, flip))

	out, stderr, code, st := runTunings(t, damaged, "-cw-file", writeCWFile(t, syncCWs))
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	if d := packetsDiffering(out, clear); d != 1 {
		t.Errorf("%d packets differ from the clear stream; want 1, the flipped packet %d", d, flip)
	}
	requireSame(t, "flipped packet left as it came, the rest clear", out, want)
	if st.ParityGlitches != 1 {
		t.Fatalf("-stats: parity_glitches %d, want 1", st.ParityGlitches)
	}
}

// A stream scrambled with a list of three CWs, descrambled with -cw and the first of them: the
// periods of that CW come out clear, every other period exactly as it came in, and the run
// fails with status 3, naming the PIDs.
func TestSyncOneCWOfThree(t *testing.T) {
	cws := syncCWs[:3]
	clear, scrambled := scramble(t, clearStreams(t)["h264-aac"], ts.Framing188, cws, 350, 52)
	per, periods := periodsOf(scrambled)
	if periods < 6 {
		t.Fatalf("fixture: %d crypto periods, want 6 or more", periods)
	}
	requireCheckablePeriods(t, clear, per)
	fits := func(n int) bool { return n%len(cws) == 0 } // periods scrambled with CW 1
	want := make([]byte, 0, len(clear))
	type pidPeriods struct{ all, fit map[int]bool }
	byPID := map[uint16]pidPeriods{}
	for i, n := range per {
		if n < 0 || fits(n) {
			want = append(want, pkt(clear, i)...)
		} else {
			want = append(want, pkt(scrambled, i)...)
		}
		if n >= 0 {
			pid := ts.PID(pkt(scrambled, i))
			pp, ok := byPID[pid]
			if !ok {
				pp = pidPeriods{map[int]bool{}, map[int]bool{}}
				byPID[pid] = pp
			}
			pp.all[n] = true
			if fits(n) {
				pp.fit[n] = true
			}
		}
	}

	out, stderr, code, st := runTunings(t, scrambled, "-cw", fmt.Sprintf("%x", cws[0]))
	if code != 3 {
		t.Fatalf("exit %d, want 3\n%s", code, stderr)
	}
	requireSame(t, "periods of CW 1 clear, the others as they came", out, want)
	if !strings.Contains(stderr, "left scrambled") {
		t.Fatalf("stderr does not say \"left scrambled\":\n%s", stderr)
	}
	marked := markedPerPID(out)
	var left, periodsLeft int64
	for pid, pp := range byPID {
		if !strings.Contains(stderr, fmt.Sprintf("0x%04x", pid)) {
			t.Errorf("stderr does not name PID 0x%04x:\n%s", pid, stderr)
		}
		ps := st.pid(t, pid)
		wantLeft := int64(len(pp.all) - len(pp.fit))
		if ps.Periods != int64(len(pp.all)) || ps.PeriodsFit != int64(len(pp.fit)) || ps.PeriodsLeftScrambled != wantLeft || ps.LeftScrambled != marked[pid] {
			t.Errorf("-stats, PID 0x%04x: %d periods, %d fit, %d left scrambled, %d packets left scrambled; want %d, %d, %d, %d",
				pid, ps.Periods, ps.PeriodsFit, ps.PeriodsLeftScrambled, ps.LeftScrambled, len(pp.all), len(pp.fit), wantLeft, marked[pid])
		}
		left += marked[pid]
		periodsLeft += wantLeft
	}
	if st.LeftScrambled != left || st.PeriodsLeftScrambled != periodsLeft {
		t.Errorf("-stats: %d packets and %d periods left scrambled; want %d and %d", st.LeftScrambled, st.PeriodsLeftScrambled, left, periodsLeft)
	}
}

var (
	benchOnce              sync.Once
	benchBin               string
	benchClear, benchScram []byte
	benchErr               error
	benchCWs               = randomCWs(70, 4)
)

// benchFixture builds the command and a 4-second H.264/AAC stream scrambled by libdvbcsa with
// benchCWs in four crypto periods. The whole-stream helpers take a *testing.T, hence this one.
func benchFixture(b *testing.B) (bin string, clear, scrambled []byte) {
	b.Helper()
	if _, err := exec.LookPath("ffmpeg"); err != nil {
		b.Skip("ffmpeg is not installed (apt-get install ffmpeg): benchmark skipped")
	}
	benchOnce.Do(func() {
		benchBin = filepath.Join(dir, "tsdescramble-bench")
		if out, err := exec.Command("go", "build", "-o", benchBin, "github.com/tsdescramble/tsdescramble/cmd/tsdescramble").CombinedOutput(); err != nil {
			benchErr = fmt.Errorf("go build: %v\n%s", err, out)
			return
		}
		path := filepath.Join(dir, "bench-clear.ts")
		if out, err := exec.Command("ffmpeg", "-hide_banner", "-loglevel", "error", "-y",
			"-f", "lavfi", "-i", "testsrc=size=320x240:rate=25", "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000",
			"-t", "4", "-c:v", "libx264", "-preset", "veryfast", "-b:v", "600k", "-g", "25", "-pix_fmt", "yuv420p",
			"-c:a", "aac", "-b:a", "96k", "-f", "mpegts", path).CombinedOutput(); err != nil {
			benchErr = fmt.Errorf("ffmpeg: %v\n%s", err, out)
			return
		}
		if benchClear, benchErr = os.ReadFile(path); benchErr != nil {
			return
		}
		pids := pesPIDs(benchClear)
		var n int
		for at := 0; at < len(benchClear); at += 188 {
			// The packets the scrambler counts: those of a PES PID with a payload.
			p := benchClear[at : at+188]
			if off, ok := ts.PayloadOffset(p); ok && off < 188 && pids[ts.PID(p)] {
				n++
			}
		}
		benchScram = append([]byte{}, benchClear...)
		periods, err := dvbcsa.ScrambleStream(benchScram, ts.Framing188, dvbcsa.ScrambleOptions{CWs: benchCWs, CPPackets: n/4 + 1, PIDs: pids})
		if err != nil || periods != 4 {
			benchErr = fmt.Errorf("scrambling the benchmark stream: %d periods, %v", periods, err)
		}
	})
	if benchErr != nil {
		b.Fatal(benchErr)
	}
	return benchBin, benchClear, benchScram
}

// BenchmarkSyncBehindWrongCWs descrambles a short stream (four crypto periods) with a CW list
// whose right CWs come after many wrong ones, so that aligning the list means trying them all:
// the cost of a long list and of a search through it, process start and key-file reading
// included. It reports the peak resident memory of the command (peak-RSS-MB, the largest of the
// runs) beside the time per run; wrong=0 is the same run with the right CWs alone.
func BenchmarkSyncBehindWrongCWs(b *testing.B) {
	for _, wrong := range []int{0, 10_000, 100_000} { // 0: the cost of the run itself
		b.Run(fmt.Sprintf("wrong=%d", wrong), func(b *testing.B) {
			bin, clear, scrambled := benchFixture(b)
			cws := append(randomCWs(71, wrong), benchCWs...)
			var list bytes.Buffer
			for _, cw := range cws {
				fmt.Fprintf(&list, "%x\n", cw)
			}
			keyFile := filepath.Join(b.TempDir(), "cws.txt")
			if err := os.WriteFile(keyFile, list.Bytes(), 0o644); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(scrambled)))
			var peak int64
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				cmd := exec.Command(bin, "-q", "-cw-file", keyFile)
				cmd.Stdin = bytes.NewReader(scrambled)
				var out, stderr bytes.Buffer
				cmd.Stdout, cmd.Stderr = &out, &stderr
				if err := cmd.Run(); err != nil {
					b.Fatalf("%v\n%s", err, stderr.String())
				}
				if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
					peak = max(peak, ru.Maxrss) // kilobytes on Linux
				}
				if i == 0 && !bytes.Equal(out.Bytes(), clear) {
					b.Fatalf("output differs from the clear stream in %d packets: the list was not aligned", packetsDiffering(out.Bytes(), clear))
				}
			}
			b.ReportMetric(float64(peak)/1024, "peak-RSS-MB")
		})
	}
}
