//go:build dvbcsa

package main

import (
	"bytes"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tsdescramble/tsdescramble/internal/testsupport/dvbcsa"
	"github.com/tsdescramble/tsdescramble/keys"
	"github.com/tsdescramble/tsdescramble/probe"
	"github.com/tsdescramble/tsdescramble/ts"
)

// pidPackets returns the packets of pid in stream, in order.
func pidPackets(stream []byte, pid uint16) [][]byte {
	var out [][]byte
	for i := 0; i+ts.PacketSize <= len(stream); i += ts.PacketSize {
		if p := stream[i : i+ts.PacketSize]; ts.PID(p) == pid {
			out = append(out, p)
		}
	}
	return out
}

// ffprobeStreams returns the codec names ffprobe finds in a file, one per stream, and whether
// it read the file at all.
func ffprobeStreams(t *testing.T, ffprobe, path string) []string {
	t.Helper()
	out, err := exec.Command(ffprobe, "-v", "quiet", "-show_entries", "stream=codec_name", "-of", "csv=p=0", path).Output()
	if err != nil {
		t.Fatalf("ffprobe %s: %v", path, err)
	}
	return strings.Fields(string(out))
}

// A capture of a real multiplex (testdata/rai-mux.ts: eight services of a terrestrial
// multiplex, PIDs shared between services) with four of its services scrambled by libdvbcsa
// under schedules of their own (three CW lists with crypto periods of their own lengths and
// phases, a BISS word), the PIDs the services share left clear. One run descrambles each
// service with its keys into a file of its own: every PID of the service comes out as in the
// clear capture, packet for packet, and ffprobe finds in each file the streams it finds in the
// same service of the clear capture.
func TestMultiplexRealCapture(t *testing.T) {
	t.Parallel()
	ffprobe, err := exec.LookPath("ffprobe")
	if err != nil {
		t.Skip("ffprobe not installed (Debian package ffmpeg)")
	}
	clear := readFile(t, filepath.Join("testdata", "rai-mux.ts"))
	rep, err := probe.Probe(bytes.NewReader(clear))
	if err != nil {
		t.Fatal(err)
	}
	// Each service's PIDs, and how many services name each PID.
	pids := map[uint16][]uint16{}
	shared := map[uint16]int{}
	for _, s := range rep.Services {
		for _, st := range s.Streams {
			pids[s.Number] = append(pids[s.Number], st.PID)
			shared[st.PID]++
		}
	}
	cw := func(s string) []byte { return mustCW(t, s) }
	biss, err := keys.ParseBISS("c1c2c3d1d2d3")
	if err != nil {
		t.Fatal(err)
	}
	scheds := map[uint16]*muxSchedule{
		3401: {cws: [][]byte{cw("0102030604050610"), cw("1112133614151640"), cw("2122236624252670")}, period: 1700},
		3402: {cws: [][]byte{biss}},
		3403: {cws: [][]byte{cw("31323396343536a1"), cw("414243c6444546d1")}, period: 2300, phase: 900},
		3411: {cws: [][]byte{cw("61626326646566af"), cw("7172735674757650"), cw("8182837684858690"), cw("9192936694959670")}, period: 1200, phase: 400},
	}
	owner := map[uint16]*muxSchedule{} // the PIDs scrambled: of one service only
	for n, s := range scheds {
		if len(pids[n]) == 0 {
			t.Fatalf("service %d is not in the capture", n)
		}
		for _, pid := range pids[n] {
			if shared[pid] == 1 {
				owner[pid] = s
			}
		}
	}
	scrambled := slices.Clone(clear)
	count, err := dvbcsa.ScramblePlan(scrambled, ts.Framing{Size: ts.PacketSize}, func(i int, pid uint16) ([]byte, bool) {
		s := owner[pid]
		if s == nil {
			return nil, false
		}
		_, cw, odd := s.at(i)
		return cw, odd
	})
	if err != nil || count < 5000 {
		t.Fatalf("%d packets scrambled: %v", count, err)
	}

	dir := t.TempDir()
	in := writeFile(t, dir, "mux.ts", scrambled)
	clearIn := writeFile(t, dir, "clear.ts", clear)
	list := func(name string, cws [][]byte) string {
		var b strings.Builder
		for _, c := range cws {
			fmt.Fprintf(&b, "%x\n", c)
		}
		return writeFile(t, dir, name, []byte(b.String()))
	}
	out := func(n uint16) string { return filepath.Join(dir, fmt.Sprintf("svc%d.ts", n)) }
	clearOut := func(n uint16) string { return filepath.Join(dir, fmt.Sprintf("clear%d.ts", n)) }
	cfg := writeFile(t, dir, "mux.yaml", []byte(fmt.Sprintf(`input: %s
services:
  - service: 3401
    keys: cw-file:%s
    output: %s
  - name: Rai 2
    keys: biss:c1c2c3d1d2d3
    output: %s
  - service: 3403
    keys: cw-file:%s
    output: %s
  - service: 3411
    keys: cw-file:%s
    output: %s
`, in, list("one.txt", scheds[3401].cws), out(3401), out(3402), list("three.txt", scheds[3403].cws), out(3403),
		list("news.txt", scheds[3411].cws), out(3411))))
	r := run(t, nil, "-config", cfg)
	if r.code != 0 {
		t.Fatal(describe(r))
	}
	// The clear capture split the same way, for what ffprobe finds in each service.
	if r := run(t, nil, "-in", clearIn, "-passthrough", "-out-service",
		fmt.Sprintf("3401=%s,3402=%s,3403=%s,3411=%s", clearOut(3401), clearOut(3402), clearOut(3403), clearOut(3411))); r.code != 0 {
		t.Fatal(describe(r))
	}
	firstOf := func(pid uint16) int { return bytes.Index(clear, pidPackets(clear, pid)[0]) / ts.PacketSize }
	for n := range scheds {
		got := readFile(t, out(n))
		// An output begins once its service's tables are known, with them (split): from there
		// every packet of each of the service's PIDs comes out, clear or, where nothing
		// placed its key (a PID's first period with nothing to check), as it came.
		svc := rep.Services[slices.IndexFunc(rep.Services, func(s probe.Service) bool { return s.Number == n })]
		start := max(firstOf(0), firstOf(svc.PMTPID))
		var inClear, asCame int
		for _, pid := range pids[n] {
			want, have := pidPackets(clear[start*ts.PacketSize:], pid), pidPackets(got, pid)
			came := pidPackets(scrambled[start*ts.PacketSize:], pid)
			if len(have) != len(want) {
				t.Fatalf("service %d, PID %#04x: %d packets out, %d in the capture from where its output begins", n, pid, len(have), len(want))
			}
			for i := range want {
				switch {
				case bytes.Equal(have[i], want[i]):
					inClear++
				case bytes.Equal(have[i], came[i]):
					asCame++
				default:
					t.Fatalf("service %d, PID %#04x: packet %d of %d is neither the clear one nor as it came", n, pid, i, len(have))
				}
			}
		}
		t.Logf("service %d: %d packets of its PIDs clear, %d as they came", n, inClear, asCame)
		if inClear < 20*asCame {
			t.Errorf("service %d: %d packets of its PIDs left as they came, %d clear", n, asCame, inClear)
		}
		if len(pidPackets(got, pids[n][0])) == 0 {
			t.Fatalf("service %d: nothing of PID %#04x out", n, pids[n][0])
		}
		if a, b := ffprobeStreams(t, ffprobe, out(n)), ffprobeStreams(t, ffprobe, clearOut(n)); !slices.Equal(a, b) || len(a) == 0 {
			t.Errorf("service %d: ffprobe finds %q, in the clear capture's %q", n, a, b)
		}
	}
	t.Log(r.stderr)
}
