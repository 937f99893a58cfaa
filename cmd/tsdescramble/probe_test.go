package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/tsdescramble/tsdescramble/internal/testsupport/testmedia"
	"github.com/tsdescramble/tsdescramble/probe"
	"github.com/tsdescramble/tsdescramble/psi"
)

// probeStream is the library's two-service test stream: service 1 with a Conax CA descriptor
// and a Viaccess one on its audio, service 2 in clear, a CAT with two EMM PIDs, an SDT.
const probeStream = "../../probe/testdata/two-services.ts"

// probeRun runs `tsdescramble ARGS` in-process like run, adding the probe command to the app
// when app.go does not list it yet.
func probeRun(t *testing.T, stdin []byte, args ...string) result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	env := Env{
		Stdin:      bytes.NewReader(stdin),
		Stdout:     &stdout,
		Stderr:     &stderr,
		IsTerminal: func(*os.File) bool { return false },
	}
	if newApp(env).Command("probe") != nil {
		return run(t, stdin, args...)
	}
	code := probeMain(t, env, args...)
	return result{code: code, stdout: stdout.String(), stderr: stderr.String()}
}

// probeMain is Main with the probe command added to the app.
func probeMain(t *testing.T, env Env, args ...string) int {
	t.Helper()
	app := newApp(env)
	app.Commands = append(app.Commands, probeCommand(env))
	done := make(chan error, 1)
	go func() { done <- app.Run(append([]string{"tsdescramble"}, args...)) }()
	var err error
	select {
	case err = <-done:
	case <-time.After(time.Minute):
		t.Fatalf("tsdescramble %s did not return", strings.Join(args, " "))
	}
	if err == nil {
		return exitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.msg != "" {
			env.Stderr.Write([]byte("tsdescramble: " + ee.msg + "\n"))
		}
		return ee.code
	}
	env.Stderr.Write([]byte("tsdescramble: " + err.Error() + "\n"))
	return exitUsage
}

func TestProbeCommandText(t *testing.T) {
	t.Parallel()
	r := probeRun(t, nil, "probe", probeStream)
	if r.code != exitOK || r.stderr != "" {
		t.Fatalf("%s", describe(r))
	}
	for _, want := range []string{
		"framing:   188-byte packets",
		"size:      70.50 kB (70500 bytes), 375 packets",
		`service 1 (0x0001) "Unicode Über" from "Test Provider", PMT PID 0x0100, PCR PID 0x0101`,
		"  CA Conax (0x0B00), ECM PID 0x0200",
		"      CA Viaccess (0x0500), ECM PID 0x0201",
		`service 2 (0x0002) "Two"`,
		"  CA Viaccess (0x0500), EMM PID 0x0301",
		"H.264 video of service 1",
		"ECM (Conax 0x0B00) of service 1",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, r.stdout)
		}
	}
	// The row of PID 0x0101: 120 packets, 90 even, 30 odd, 2 crypto periods.
	if !regexp.MustCompile(`(?m)^0x0101 +120 +0 +90 +30 +0 +2 +H\.264 video of service 1$`).MatchString(r.stdout) {
		t.Errorf("no row for PID 0x0101 with its counts:\n%s", r.stdout)
	}
}

func TestProbeCommandJSON(t *testing.T) {
	t.Parallel()
	ts := readFile(t, probeStream)
	want, err := probe.Probe(bytes.NewReader(ts))
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"probe", "-json", probeStream},
		{"probe", "-json", "-"},
		{"probe", "--json"},
	} {
		r := probeRun(t, ts, args...)
		if r.code != exitOK || r.stderr != "" {
			t.Fatalf("%v: %s", args, describe(r))
		}
		var got probe.Report
		if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
			t.Fatalf("%v: stdout is not JSON: %v\n%s", args, err, r.stdout)
		}
		if len(got.Services) != 2 || got.Services[0].Name != "Unicode Über" || got.Services[1].Number != 2 {
			t.Errorf("%v: services %+v", args, got.Services)
		}
		if len(got.Services[0].CA) != 1 || got.Services[0].CA[0].SystemID != 0x0B00 || got.Services[0].CA[0].ECMPID != 0x0200 {
			t.Errorf("%v: CA of service 1: %+v", args, got.Services[0].CA)
		}
		if len(got.EMM) != 2 || got.EMM[0].EMMPID != 0x0300 || got.EMM[0].SystemName != "Conax" {
			t.Errorf("%v: EMM %+v", args, got.EMM)
		}
		gj, _ := json.Marshal(&got)
		wj, _ := json.Marshal(want)
		if !bytes.Equal(gj, wj) {
			t.Errorf("%v: the command's report differs from the library's:\n%s\n%s", args, gj, wj)
		}
	}
}

// TestProbeCommandFramings gives the command the same packets in 192 and 204-byte framing.
func TestProbeCommandFramings(t *testing.T) {
	t.Parallel()
	ts := readFile(t, probeStream)
	var pkts [][]byte
	for i := 0; i+188 <= len(ts); i += 188 {
		pkts = append(pkts, ts[i:i+188])
	}
	ref := probeRun(t, ts, "probe", "-json", "-")
	var want probe.Report
	if err := json.Unmarshal([]byte(ref.stdout), &want); err != nil {
		t.Fatal(err)
	}
	for _, size := range []int{192, 204} {
		r := probeRun(t, frame(pkts, size), "probe", "-json")
		var got probe.Report
		if err := json.Unmarshal([]byte(r.stdout), &got); err != nil || r.code != exitOK {
			t.Fatalf("%d: %v %s", size, err, describe(r))
		}
		if got.Framing != size {
			t.Errorf("framing %d, want %d", got.Framing, size)
		}
		gj, _ := json.Marshal(got.PIDs)
		wj, _ := json.Marshal(want.PIDs)
		if !bytes.Equal(gj, wj) || len(got.Services) != 2 {
			t.Errorf("%d: PIDs differ:\n%s\n%s", size, gj, wj)
		}
	}
}

// TestProbeCommandFFmpeg probes a two-program stream made by ffmpeg, with some packets of each
// program marked scrambled.
func TestProbeCommandFFmpeg(t *testing.T) {
	t.Parallel()
	ts := testmedia.TwoPrograms(t, 2, "176x144", "two")

	// Video of program 1 even, audio of program 2 odd; count them independently.
	var even, odd int64
	for i := 0; i+188 <= len(ts); i += 188 {
		switch pid := int(ts[i+1]&0x1F)<<8 | int(ts[i+2]); pid {
		case 0x100:
			ts[i+3] = ts[i+3]&0x3F | 0x80
			even++
		case 0x103:
			ts[i+3] |= 0xC0
			odd++
		}
	}
	path := writeFile(t, t.TempDir(), "two.ts", ts)

	r := probeRun(t, nil, "probe", path)
	if r.code != exitOK || !strings.Contains(r.stdout, `service 1 (0x0001) "one"`) || !strings.Contains(r.stdout, `service 2 (0x0002) "two"`) {
		t.Errorf("text: %s\n%s", describe(r), r.stdout)
	}
	r = probeRun(t, nil, "probe", "-json", path)
	var rep probe.Report
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || r.code != exitOK {
		t.Fatalf("%v %s", err, describe(r))
	}
	if len(rep.Services) != 2 || len(rep.Services[0].Streams) != 2 || len(rep.Services[1].Streams) != 2 {
		t.Errorf("services %+v", rep.Services)
	}
	seen := map[uint16]probe.PID{}
	for _, p := range rep.PIDs {
		seen[p.PID] = p
	}
	for _, pid := range []uint16{0x0000, 0x0011, 0x0100, 0x0101, 0x0102, 0x0103, 0x1000, 0x1001} {
		if _, ok := seen[pid]; !ok {
			t.Errorf("PID 0x%04X missing from %+v", pid, rep.PIDs)
		}
	}
	if p := seen[0x100]; p.Even != even || p.Packets != even || p.CryptoPeriods != 1 {
		t.Errorf("PID 0x100: %+v, want %d even packets in 1 crypto period", p, even)
	}
	if p := seen[0x103]; p.Odd != odd || p.Packets != odd || p.CryptoPeriods != 1 {
		t.Errorf("PID 0x103: %+v, want %d odd packets in 1 crypto period", p, odd)
	}
	if p := seen[0x101]; p.Clear != p.Packets || p.Packets == 0 {
		t.Errorf("PID 0x101: %+v, want all clear", p)
	}
	if rep.Timing == nil || rep.Timing.DurationSeconds < 1.8 || rep.Timing.DurationSeconds > 2.2 {
		t.Errorf("timing %+v, want about 2 s", rep.Timing)
	}
}

func TestProbeCommandErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	text := writeFile(t, dir, "notes.txt", []byte(strings.Repeat("not a transport stream\n", 200)))
	for _, c := range []struct {
		name  string
		stdin []byte
		args  []string
		code  int
		msg   string
	}{
		{"missing file", nil, []string{"probe", filepath.Join(dir, "nope.ts")}, exitFail, "no such file"},
		{"directory", nil, []string{"probe", dir}, exitFail, "is a directory"},
		{"not TS", nil, []string{"probe", text}, exitFail, "no MPEG-TS sync"},
		{"not TS on stdin", []byte(strings.Repeat("x", 3000)), []string{"probe", "-json", "-"}, exitFail, "stdin: no MPEG-TS sync"},
		{"empty", nil, []string{"probe", "-"}, exitFail, "stdin: the input is empty"},
		{"two paths", nil, []string{"probe", probeStream, probeStream}, exitUsage, "one input at a time"},
		{"flag after path", nil, []string{"probe", probeStream, "-json"}, exitUsage, "flags go before the path"},
		{"unknown flag", nil, []string{"probe", "-bogus", probeStream}, exitUsage, "bogus"},
	} {
		r := probeRun(t, c.stdin, c.args...)
		if r.code != c.code || !strings.Contains(r.stderr, c.msg) || r.stdout != "" {
			t.Errorf("%s: %s\nwant exit %d and %q", c.name, describe(r), c.code, c.msg)
			continue
		}
		oneLine(t, r.stderr)
	}

	// A terminal on stdin and no path: say what to do rather than wait.
	var stdout, stderr bytes.Buffer
	env := Env{Stdin: os.Stdin, Stdout: &stdout, Stderr: &stderr, IsTerminal: func(*os.File) bool { return true }}
	var code int
	if newApp(env).Command("probe") != nil {
		code = runEnv(t, env, "probe")
	} else {
		code = probeMain(t, env, "probe")
	}
	if code != exitUsage || !strings.Contains(stderr.String(), "give a PATH") {
		t.Errorf("terminal stdin: exit %d, %q", code, stderr.String())
	}
}

func TestProbeCommandHelp(t *testing.T) {
	t.Parallel()
	r := probeRun(t, nil, "probe", "-h")
	if r.code != exitOK || !strings.Contains(r.stdout, "tsdescramble probe -json recording.ts") || r.stderr != "" {
		t.Errorf("%s", describe(r))
	}
}

// TestProbeCommandNoLeak checks that runs of the command, good and bad, leave no goroutine.
func TestProbeCommandNoLeak(t *testing.T) {
	ts := readFile(t, probeStream)
	before := runtime.NumGoroutine()
	for range 3 {
		probeRun(t, ts, "probe", "-json", "-")
		probeRun(t, ts[:len(ts)/2], "probe", "-")
		probeRun(t, []byte("garbage"), "probe", "-")
	}
	deadline := time.Now().Add(2 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		t.Errorf("%d goroutines before, %d after", before, n)
	}
}

// probeSection builds a long-syntax section (version 0, current, section 0 of 0) with its
// CRC_32.
func probeSection(tid byte, ext uint16, body []byte) []byte {
	n := 5 + len(body) + 4
	s := append([]byte{tid, 0xB0 | byte(n>>8), byte(n), byte(ext >> 8), byte(ext), 0xC1, 0, 0}, body...)
	c := psi.CRC32(s)
	return append(s, byte(c>>24), byte(c>>16), byte(c>>8), byte(c))
}

// probePackets cuts a section into 188-byte packets of pid, continuity counters from 0.
func probePackets(pid uint16, sec []byte) []byte {
	var out []byte
	data := append([]byte{0}, sec...)
	for cc := byte(0); len(data) > 0; cc++ {
		p := bytes.Repeat([]byte{0xFF}, 188)
		p[0], p[1], p[2], p[3] = 0x47, byte(pid>>8)&0x1F, byte(pid), 0x10|cc&0x0F
		if cc == 0 {
			p[1] |= 0x40
		}
		data = data[copy(p[4:], data):]
		out = append(out, p...)
	}
	return out
}

// TestProbeCommandRealPSI probes, through stdin, a stream shaped like a broadcast or Blu-ray
// capture: its PMT comes before its PAT, the PMT carries an "HDMV" registration, a CA
// descriptor of a BISS system and an ECM PID of Irdeto, and the network PID carries a SIT.
// The text and the JSON say the same.
func TestProbeCommandRealPSI(t *testing.T) {
	t.Parallel()
	es := func(typ byte, pid uint16, desc ...byte) []byte {
		return append([]byte{typ, 0xE0 | byte(pid>>8), byte(pid), 0xF0, byte(len(desc))}, desc...)
	}
	prog := []byte{0x05, 4, 'H', 'D', 'M', 'V', 0x09, 4, 0x26, 0x00, 0xFF, 0xFF, 0x09, 4, 0x06, 0x04, 0xE5, 0x00}
	pmt := append([]byte{0xF0, 0x11, 0xF0, byte(len(prog))}, prog...)
	pmt = append(pmt, es(0x1B, 0x1011)...)
	pmt = append(pmt, es(0x86, 0x1100)...)
	pmt = append(pmt, es(0x90, 0x1200)...)
	var ts []byte
	ts = append(ts, probePackets(0x0100, probeSection(0x02, 1, pmt))...)
	ts = append(ts, probePackets(0x0010, probeSection(0x7F, 0xFFFF, []byte{0xF0, 0x00, 0x00, 0x01, 0x80, 0x00}))...)
	ts = append(ts, probePackets(0x0000, probeSection(0x00, 5, []byte{0, 0, 0xE0, 0x10, 0, 1, 0xE1, 0x00}))...)

	r := probeRun(t, ts, "probe", "-")
	if r.code != exitOK || r.stderr != "" {
		t.Fatalf("%s", describe(r))
	}
	for _, want := range []string{
		"service 1 (0x0001), PMT PID 0x0100, PCR PID 0x1011",
		"  CA BISS-1 (EBU) (0x2600), ECM PID 0x1fff",
		"  CA Irdeto (0x0604), ECM PID 0x0500",
		"  PID 0x1100  type 0x86  DTS-HD Master Audio",
		"  PID 0x1200  type 0x90  PGS subtitles",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, r.stdout)
		}
	}
	if !regexp.MustCompile(`(?m)^0x0010 .* SIT$`).MatchString(r.stdout) {
		t.Errorf("the network PID is not shown as a SIT:\n%s", r.stdout)
	}

	r = probeRun(t, ts, "probe", "-json", "-")
	var rep probe.Report
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || r.code != exitOK {
		t.Fatalf("%v %s", err, describe(r))
	}
	if len(rep.Services) != 1 || !rep.Services[0].PMTSeen || len(rep.Services[0].Streams) != 3 ||
		rep.Services[0].Streams[1].TypeName != "DTS-HD Master Audio" || len(rep.Services[0].CA) != 2 ||
		rep.Services[0].CA[1].SystemName != "Irdeto" {
		t.Errorf("services %+v", rep.Services)
	}
	if rep.NITPID == nil || *rep.NITPID != 0x10 || len(rep.PIDs) < 2 || rep.PIDs[1].PID != 0x10 ||
		rep.PIDs[1].Description != "SIT" || len(rep.PIDs[1].Tables) != 1 || rep.PIDs[1].Tables[0] != "SIT" {
		t.Errorf("network PID %v, PIDs %+v", rep.NITPID, rep.PIDs)
	}
}
