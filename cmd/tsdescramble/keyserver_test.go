package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tsdescramble/tsdescramble/internal/testsupport/camdouble"
	"github.com/tsdescramble/tsdescramble/pipeline"
)

func keyServerStream(t *testing.T) (clear, scrambled []byte, in string) {
	cws := [][]byte{mustCW(t, "11223366445566FF"), mustCW(t, "A1B2C316D4E5F6AF"), mustCW(t, "0102030604050610"), mustCW(t, "7F6E5D4A3C2B1A81")}
	clear, scrambled, _ = camdouble.ECMStream(camdouble.StreamSpec{Packets: 4000, PeriodPackets: 1000, CWs: cws})
	in = filepath.Join(t.TempDir(), "in.ts")
	if err := os.WriteFile(in, scrambled, 0o644); err != nil {
		t.Fatal(err)
	}
	return clear, scrambled, in
}

func TestKeyServerCS378x(t *testing.T) {
	t.Parallel()
	clear, _, in := keyServerStream(t)
	srv := camdouble.NewCS378x(t, "alice", "pa55word")
	dir := t.TempDir()
	out, stats := filepath.Join(dir, "out.ts"), filepath.Join(dir, "st.json")
	r := run(t, nil, "-v", "-key-server", "cs378x://alice:pa55word@"+srv.Addr+"?caid=0B00", "-in", in, "-out", out, "-stats", stats)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if got := readFile(t, out); !bytes.Equal(got, clear) {
		t.Fatalf("output differs from the clear stream\n%s", r.stderr)
	}
	if strings.Contains(r.stderr, "pa55word") {
		t.Fatalf("the password was printed: %s", r.stderr)
	}
	if u := strings.ToUpper(r.stderr); strings.Contains(u, "11223366445566FF") || strings.Contains(u, "11 22 33 66") {
		t.Fatalf("a control word was printed without -show-keys: %s", r.stderr)
	}
	// -v -show-keys prints the CW of each period.
	r2 := run(t, nil, "-v", "-show-keys", "-key-server", "cs378x://alice:pa55word@"+srv.Addr, "-in", in, "-out", out)
	if r2.code != 0 || !strings.Contains(strings.ToUpper(r2.stderr), "11223366445566FF") || strings.Contains(r2.stderr, "pa55word") {
		t.Fatalf("-v -show-keys: exit %d: %s", r2.code, r2.stderr)
	}
	if !strings.Contains(r.stderr, "key server (cs378x): 4 ECMs sent, 4 answered") ||
		!strings.Contains(r.stderr, "CWs applied: PID 0x0100 even 2 periods, PID 0x0100 odd 2 periods") {
		t.Fatalf("summary: %s", r.stderr)
	}
	if strings.Contains(r.stderr, "CWs rejected") {
		t.Fatalf("the summary counts rejected CWs when none was: %s", r.stderr)
	}
	var st struct {
		LiveKeys pipeline.LiveKeyStats `json:"live_keys"`
		PIDs     []pipeline.PIDStats   `json:"pids"`
	}
	if err := json.Unmarshal(readFile(t, stats), &st); err != nil {
		t.Fatal(err)
	}
	if st.LiveKeys.Server == nil || st.LiveKeys.Server.Sent != 4 || len(st.LiveKeys.Server.Applied) != 2 {
		t.Fatalf("stats %+v", st.LiveKeys)
	}
	// Each period's key passed the trial decryption on its first unit start: it fits.
	for _, ps := range st.PIDs {
		if ps.PID == camdouble.ESPID && (ps.PeriodsFit != 4 || ps.PeriodsUnchecked != 0 || ps.KeyFit != "all") {
			t.Fatalf("-stats: PID %#04x: %d periods fit, %d unchecked, key fit %q; want 4 that fit", ps.PID, ps.PeriodsFit, ps.PeriodsUnchecked, ps.KeyFit)
		}
	}
	if !strings.Contains(r.stderr, "crypto periods 4 (4 fit, 0 unchecked, 0 left scrambled)") {
		t.Fatalf("-v: the periods that fit are not counted as such: %s", r.stderr)
	}
	t.Log(strings.TrimSpace(r.stderr))
}

func TestKeyServerDVBAPIFromEnv(t *testing.T) {
	clear, _, in := keyServerStream(t)
	srv := camdouble.NewDVBAPI(t)
	t.Setenv("TSD_TEST_KEY_SERVER", "dvbapi://"+srv.Addr)
	out := filepath.Join(t.TempDir(), "out.ts")
	r := run(t, nil, "-key-server-env", "TSD_TEST_KEY_SERVER", "-in", in, "-out", out)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if got := readFile(t, out); !bytes.Equal(got, clear) {
		t.Fatalf("output differs from the clear stream\n%s", r.stderr)
	}
	t.Log(strings.TrimSpace(r.stderr))
}

func TestKeyServerNoAnswer(t *testing.T) {
	_, scrambled, in := keyServerStream(t)
	srv := camdouble.NewCS378x(t, "u", "p")
	srv.SetAnswer(func([]byte) (byte, [16]byte, bool) { return 0x44, [16]byte{}, false }) // not found
	out := filepath.Join(t.TempDir(), "out.ts")
	r := run(t, nil, "-key-server", "cs378x://u:p@"+srv.Addr, "-key-wait", "50ms", "-in", in, "-out", out)
	if r.code != exitNoFit {
		t.Fatalf("exit %d, want %d: %s", r.code, exitNoFit, r.stderr)
	}
	if !strings.Contains(r.stderr, "got no key from the key server") || !strings.Contains(r.stderr, "found no control word") {
		t.Fatalf("message: %s", r.stderr)
	}
	// Every packet passed as it came.
	if got := readFile(t, out); !bytes.Equal(got, scrambled) {
		t.Fatal("packets without a key were changed")
	}
	// -v: a line for each ECM answered without a key.
	r = run(t, nil, "-v", "-key-server", "cs378x://u:p@"+srv.Addr, "-key-wait", "50ms", "-in", in, "-out", out)
	if n := strings.Count(r.stderr, "found no control word for the ECM after"); n != 4 {
		t.Fatalf("%d per-ECM lines, want 4: %s", n, r.stderr)
	}
	// -missing-key drop: only the clear packets are left.
	r = run(t, nil, "-key-server", "cs378x://u:p@"+srv.Addr, "-key-wait", "50ms", "-missing-key", "drop", "-in", in, "-out", out)
	if r.code != exitNoFit || !strings.Contains(r.stderr, "4000 packets dropped") {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var want []byte
	for i := 0; i < len(scrambled); i += 188 {
		if scrambled[i+3]&0xC0 == 0 {
			want = append(want, scrambled[i:i+188]...)
		}
	}
	if got := readFile(t, out); !bytes.Equal(got, want) {
		t.Fatalf("%d bytes out, want the %d of the clear packets", len(got), len(want))
	}
}

// A CW from the key server that fails the trial decryption is rejected, and counted in -stats
// and in the summary. Here the
// server answers the second ECM with a wrong key for its period, whose right key comes with the
// next ECM (a card sends the other parity's previous key with each), while a file's reader has
// already reached the period's end: the reader waits for that answer, so the output is the
// clear stream whatever -batch cuts the reads into.
func TestKeyServerRejectedCW(t *testing.T) {
	clear, _, in := keyServerStream(t)
	right := mustCW(t, "A1B2C316D4E5F6AF") // the second period's (odd) CW
	wrong := mustCW(t, "0F1E2D5A3C4B5AF1")
	srv := camdouble.NewCS378x(t, "u", "p")
	srv.SetAnswer(func(ecm []byte) (byte, [16]byte, bool) {
		cmd, cw, drop := camdouble.TestCAAnswer(ecm)
		if ecm[0] == 0x81 && bytes.Equal(cw[8:], right) {
			copy(cw[8:], wrong) // the odd period's own ECM; the next ECM carries the right key
		}
		return cmd, cw, drop
	})
	dir := t.TempDir()
	out, stats := filepath.Join(dir, "out.ts"), filepath.Join(dir, "st.json")
	for _, batch := range []string{"1", "100", "1024"} {
		// Whether the wrong CW is tried depends on timing: when the next ECM's answer, which
		// carries the right key, comes before the reader checks the period's first unit start
		// (the race detector slows the reader enough), the wrong key is superseded unseen. The
		// output must be clear every time; the rejection must be seen within a few runs.
		rejected := false
		for try := 0; try < 5 && !rejected; try++ {
			r := run(t, nil, "-v", "-batch", batch, "-key-server", "cs378x://u:p@"+srv.Addr, "-key-wait", "10s", "-in", in, "-out", out, "-stats", stats)
			if r.code != 0 {
				t.Fatalf("-batch %s: exit %d: %s", batch, r.code, r.stderr)
			}
			if got := readFile(t, out); !bytes.Equal(got, clear) {
				t.Fatalf("-batch %s: output differs from the clear stream\n%s", batch, r.stderr)
			}
			if u := strings.ToUpper(r.stderr); strings.Contains(u, "0F1E2D5A3C4B5AF1") {
				t.Fatalf("-batch %s: the rejected CW was printed without -show-keys: %s", batch, r.stderr)
			}
			var st struct {
				LiveKeys pipeline.LiveKeyStats `json:"live_keys"`
			}
			if err := json.Unmarshal(readFile(t, stats), &st); err != nil {
				t.Fatal(err)
			}
			summary := strings.Contains(r.stderr, "; CWs rejected, each not fitting its crypto period's first unit start: 1")
			switch st.LiveKeys.NotFitting {
			case 0:
				if summary {
					t.Fatalf("-batch %s: the summary counts a rejected CW that -stats does not: %s", batch, r.stderr)
				}
			case 1:
				// The summary counts it beside the other key counts, as -stats does.
				if !summary {
					t.Fatalf("-batch %s: the summary does not count the rejected CW: %s", batch, r.stderr)
				}
				rejected = true
			default:
				t.Fatalf("-batch %s: -stats: %d CWs not fitting, want 1\n%s", batch, st.LiveKeys.NotFitting, r.stderr)
			}
		}
		if !rejected {
			t.Fatalf("-batch %s: the wrong CW was never tried in 5 runs", batch)
		}
	}
}

func TestKeyServerFlagErrors(t *testing.T) {
	t.Parallel()
	in := filepath.Join(t.TempDir(), "in.ts")
	os.WriteFile(in, nullPacket(), 0o644)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-key-server", "cs378x://u:secretpw@127.0.0.1"}, "needs a port"},
		{[]string{"-key-server", "cs378x://127.0.0.1:1"}, "needs a user and a password"},
		{[]string{"-key-server", "radegast://u:secretpw@127.0.0.1:1"}, "unknown key server protocol: want cs378x://, newcamd:// or dvbapi://"},
		{[]string{"-key-server", "newcamd://127.0.0.1:1"}, "newcamd needs a user and a password"},
		{[]string{"-key-server", "newcamd://u:secretpw@127.0.0.1:1?key=A1B2C3D4E5F60718293A4B5C6D"}, "key: want the port's DES key in 28 hex digits"},
		{[]string{"-key-server", "newcamd://u:secretpw@127.0.0.1:1?key=A1B2C3D4E5F60718293A4B5C6DZZ"}, "key: want the port's DES key in 28 hex digits"},
		{[]string{"-key-server", "newcamd://u:secretpw@127.0.0.1:1?provid=1234567"}, "provid=1234567: want the provider id in hex"},
		{[]string{"-key-server", "newcamd://u:secretpw@127.0.0.1:1?caid=zz"}, "caid=zz"},
		{[]string{"-key-server", "newcamd://u:secretpw@127.0.0.1:1?desKey=1"}, `unknown option "desKey": newcamd takes key=28HEXDIGITS`},
		{[]string{"-key-server", "cs378x://u:secretpw@127.0.0.1:1?key=1"}, `unknown option "key": cs378x takes caid=HEX and ecm-pid=PID`},
		{[]string{"-key-server", "dvbapi://u:secretpw@127.0.0.1:1"}, "dvbapi takes no user"},
		{[]string{"-key-server", "cs378x://u:secretpw@127.0.0.1:1?caid=zz"}, "caid=zz"},
		{[]string{"-key-server", "cs378x://u:secretpw@127.0.0.1:1", "-cw", "11223366445566FF"}, "one key source"},
		{[]string{"-key-server", "cs378x://u:secretpw@127.0.0.1:1", "-missing-key", "keep"}, "-missing-key: want pass"},
		{[]string{"-key-wait", "1s", "-cw", "11223366445566FF"}, "-key-wait needs -key-server"},
		{[]string{"-key-server-env", "TSD_TEST_UNSET_VAR"}, "not set"},
		{[]string{"-follow"}, "-follow needs -cw-file"},
		{[]string{"-follow", "-cw-file", "../../samples/demo-keys.txt"}, "no parities to follow"},
		{[]string{"-follow", "-cw-file", "../../samples/demo-keys.cwl", "-key-server", "dvbapi://127.0.0.1:1"}, "not both"},
	} {
		r := run(t, nil, append(c.args, "-in", in, "-out", filepath.Join(t.TempDir(), "o.ts"))...)
		if r.code != exitUsage || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%v: exit %d, %q; want exit %d and %q", c.args, r.code, r.stderr, exitUsage, c.want)
		}
		if strings.Contains(r.stderr, "secretpw") || strings.Contains(strings.ToUpper(r.stderr), "A1B2C3D4E5F6") {
			t.Errorf("%v: the password or the DES key was printed: %s", c.args, r.stderr)
		}
	}
}

// The checks of the flags around each source of keys that come while the stream runs
// (-key-server, -ecm-xor, -follow), with their messages to the letter: each is a usage error
// (exit 2) in one line.
func TestLiveKeySourceFlagMessages(t *testing.T) {
	in := filepath.Join(t.TempDir(), "in.ts")
	os.WriteFile(in, nullPacket(), 0o644)
	const server, xor, cw = "cs378x://u:secretpw@127.0.0.1:1", "4212022421206688", "11223366445566FF"
	for _, c := range []struct {
		stdin []byte
		args  []string
		want  string
	}{
		{nil, []string{"-key-server", server, "-cw", cw}, "give one key source: -key-server or -cw, not both"},
		{nil, []string{"-key-server", server, "-cw-env", "X"}, "give one key source: -key-server or -cw-env, not both"},
		{nil, []string{"-key-server-env", "TSD_TEST_KEY_SERVER_SET", "-biss", "112233445566"}, "give one key source: -key-server-env or -biss, not both"},
		{nil, []string{"-key-server-env", "TSD_TEST_KEY_SERVER_SET", "-key-server", server}, "give -key-server or -key-server-env, not both"},
		{nil, []string{"-missing-key", "drop", "-cw", cw}, "-missing-key needs -key-server or -key-server-env"},
		{nil, []string{"-key-server", server, "-key-wait", "0s"}, "-key-wait: want a duration from 1ms to 1h, 2s for instance"},
		{nil, []string{"-ecm-xor", xor, "-cw", cw}, "-ecm-xor reads the CWs from the stream: give no other key flag"},
		{nil, []string{"-ecm-xor", xor, "-cw-file", "../../samples/demo-keys.cwl"}, "-ecm-xor reads the CWs from the stream: give no other key flag"},
		{nil, []string{"-ecm-xor", xor, "-cipher", "dvb-cissa"}, "-ecm-xor carries 8-byte CWs: use it with -cipher csa2"},
		{nil, []string{"-ecm-xor", "zz"}, "-ecm-xor: want 16 hex digits, found 'z' (example: -ecm-xor 4212022421206688)"},
		{nil, []string{"-ecm-xor", xor, "-key-wait", "1s"}, "-key-wait: -ecm-xor reads a file's ECMs before the run, and no period waits for its key: leave -key-wait out"},
		{nil, []string{"-ecm-xor", xor, "-missing-key", "drop"}, "-missing-key: -ecm-xor reads a file's ECMs before the run, and no period waits for its key: leave -missing-key out"},
		{nil, []string{"-ecm-xor", xor, "-key-server", server}, "-ecm-xor and -key-server are two sources of the same CWs: give one"},
		{nullPacket(), []string{"-ecm-xor", xor, "-missing-key", "keep", "-in", "-"}, "-missing-key: want pass (the packets of a period without its key pass as they came) or drop"},
		{nullPacket(), []string{"-ecm-xor", xor, "-key-wait", "2h", "-in", "-"}, "-key-wait: want a duration from 1ms to 1h, 2s for instance"},
		{nil, []string{"-follow", "-cw-file", "../../samples/demo-keys.cwl", "-cw", cw}, "give one key source: -cw-file or -cw, not both"},
		{nil, []string{"-follow", "-cw-file", "../../samples/demo-keys.cwl", "-cipher", "dvb-cissa"}, "-follow reads DVB-CSA2 control words: use it with -cipher csa2"},
		{nil, []string{"-follow", "-cw-file", "../../samples/demo-keys.cwl", "-missing-key", "keep"}, "-missing-key: want pass (the packets of a period without its key pass as they came) or drop"},
	} {
		t.Setenv("TSD_TEST_KEY_SERVER_SET", server)
		args := append([]string{"-in", in}, c.args...)
		r := run(t, c.stdin, append(args, "-out", filepath.Join(t.TempDir(), "o.ts"))...)
		if want := "tsdescramble: " + c.want + "\n"; r.code != exitUsage || r.stderr != want {
			t.Errorf("%v: exit %d, %q; want exit %d and %q", c.args, r.code, r.stderr, exitUsage, want)
		}
	}
}

// -cw-file FILE -follow: the log grows while the stream comes through a pipe, each key written
// before its crypto period's packets.
func TestFollowGrowingLog(t *testing.T) {
	if testing.Short() {
		t.Skip("feeds a stream over a few seconds")
	}
	cws := []string{"11223366445566FF", "A1B2C316D4E5F6AF", "0102030604050610", "7F6E5D4A3C2B1A81"}
	var keys [][]byte
	for _, s := range cws {
		keys = append(keys, mustCW(t, s))
	}
	const period = 500
	clear, scrambled, _ := camdouble.ECMStream(camdouble.StreamSpec{Packets: 4 * period, PeriodPackets: period, CWs: keys})
	dir := t.TempDir()
	logPath, out := filepath.Join(dir, "live.cwl"), filepath.Join(dir, "out.ts")
	if err := os.WriteFile(logPath, []byte("# OSCam control word log\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	pr, pw := io.Pipe()
	go func() {
		defer pw.Close()
		es := 0
		for i := 0; i < len(scrambled); i += 188 {
			if scrambled[i+3]&0xC0 != 0 {
				if es%period == 0 {
					k := es / period
					f, _ := os.OpenFile(logPath, os.O_APPEND|os.O_WRONLY, 0)
					fmt.Fprintf(f, "%d %s # 12:00:%02d\n", k%2, spaced(cws[k]), k)
					f.Close()
					time.Sleep(400 * time.Millisecond) // more than the log's poll
				}
				es++
			}
			if _, err := pw.Write(scrambled[i : i+188]); err != nil {
				return
			}
		}
	}()
	var stderr bytes.Buffer
	code := runEnv(t, Env{Stdin: pr, Stdout: io.Discard, Stderr: &stderr}, "-cw-file", logPath, "-follow", "-in", "-", "-out", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if got := readFile(t, out); !bytes.Equal(got, clear) {
		t.Fatalf("output differs from the clear stream: %s", stderr.String())
	}
	t.Log(strings.TrimSpace(stderr.String()))
}

func spaced(hex string) string {
	var b strings.Builder
	for i := 0; i < len(hex); i += 2 {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(hex[i : i+2])
	}
	return b.String()
}

// -follow starts on a log whose last line is still being written (no newline yet), and uses
// that line once its newline comes; it refused to start, the half line read as a bad key line.
func TestFollowPartialLineAtStart(t *testing.T) {
	t.Parallel()
	const cw, period = "11223366445566FF", 300
	clear, scrambled, _ := camdouble.ECMStream(camdouble.StreamSpec{Packets: period, PeriodPackets: period, CWs: [][]byte{mustCW(t, cw)}})
	dir := t.TempDir()
	logPath, out := filepath.Join(dir, "live.cwl"), filepath.Join(dir, "out.ts")
	line := "0 " + spaced(cw) + " # 12:00:00\n"
	if err := os.WriteFile(logPath, []byte("# OSCam control word log\n"+line[:7]), 0o644); err != nil {
		t.Fatal(err)
	}
	// A file input: a pipe would be read for its PMT before the keys, by when the line may be
	// whole. The run waits for the key (-key-wait) as the line's end is written.
	in := writeFile(t, dir, "in.ts", scrambled)
	go func() {
		time.Sleep(300 * time.Millisecond)
		f, err := os.OpenFile(logPath, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			return
		}
		f.WriteString(line[7:])
		f.Close()
	}()
	var stderr bytes.Buffer
	code := runWithin(t, 30*time.Second, Env{Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: &stderr}, "-cw-file", logPath, "-follow", "-cipher", "csa2", "-key-wait", "10s", "-in", in, "-out", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if got := readFile(t, out); !bytes.Equal(got, clear) {
		t.Fatalf("output differs from the clear stream: %s", stderr.String())
	}
	if strings.Contains(stderr.String(), "live.cwl:2") {
		t.Errorf("the half line was reported as a bad line: %s", stderr.String())
	}
}

// A period that gets no key from a followed log says so of the CW log, not of a key server,
// and has no server's answer to speak of.
func TestFollowMessagesNameTheLog(t *testing.T) {
	t.Parallel()
	const cw, period = "11223366445566FF", 300
	_, scrambled, _ := camdouble.ECMStream(camdouble.StreamSpec{Packets: period, PeriodPackets: period, CWs: [][]byte{mustCW(t, cw)}})
	dir := t.TempDir()
	logPath := filepath.Join(dir, "live.cwl")
	if err := os.WriteFile(logPath, []byte("# OSCam control word log\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	in := writeFile(t, dir, "in.ts", scrambled)
	var stderr bytes.Buffer
	code := runWithin(t, 30*time.Second, Env{Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: &stderr},
		"-cw-file", logPath, "-follow", "-cipher", "csa2", "-key-wait", "100ms", "-in", in, "-out", filepath.Join(dir, "out.ts"))
	if code != exitNoFit {
		t.Fatalf("exit %d, want %d: %s", code, exitNoFit, stderr.String())
	}
	if !strings.Contains(stderr.String(), "no key from the CW log for PID") {
		t.Errorf("no line names the CW log: %s", stderr.String())
	}
	for _, s := range []string{"from the key server", "answer pending"} {
		if strings.Contains(stderr.String(), s) {
			t.Errorf("a line says %q of a CW log: %s", s, stderr.String())
		}
	}
}

// -log-format json: a line that says something went wrong in a run that goes on (here the
// stream's crypto periods get no key: it carries no ECM for the key server) is at level "warn",
// the summary at "info", and the error that ends the run at "error".
func TestJSONLogLevels(t *testing.T) {
	t.Parallel()
	srv := camdouble.NewCS378x(t, "u", "p")
	r := run(t, nil, "-key-server", "cs378x://u:p@"+srv.Addr, "-key-wait", "200ms", "-in", demoScrambled, "-out", os.DevNull, "-log-format", "json")
	if r.code != exitNoFit {
		t.Fatalf("want exit %d; %s", exitNoFit, describe(r))
	}
	levels := map[string]string{}
	lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
	for i, l := range lines {
		var rec struct{ Level, Msg string }
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		switch {
		case i == len(lines)-1:
			levels["end"] = rec.Level
		case strings.HasPrefix(rec.Msg, "the stream carries no ECM"):
			levels["no ECM"] = rec.Level
		case strings.Contains(rec.Msg, " packets in, "):
			levels["summary"] = rec.Level
		}
	}
	if want := map[string]string{"end": "error", "no ECM": "warn", "summary": "info"}; fmt.Sprint(levels) != fmt.Sprint(want) {
		t.Errorf("levels %v, want %v:\n%s", levels, want, r.stderr)
	}
}

// A key-server run on a stream that carries no CA descriptor says so once, rather than a line
// per crypto period, and ends with that reason, not advice about control words; a server that
// cannot be connected to has its ECMs counted as not sent, not as sent and failed.
func TestKeyServerWithoutECMs(t *testing.T) {
	t.Parallel()
	srv := camdouble.NewCS378x(t, "u", "p")
	r := run(t, nil, "-key-server", "cs378x://u:p@"+srv.Addr, "-key-wait", "200ms", "-in", demoScrambled, "-out", os.DevNull)
	if r.code != exitNoFit {
		t.Fatalf("want exit %d; %s", exitNoFit, describe(r))
	}
	lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
	once := 0
	for _, l := range lines {
		if strings.HasPrefix(l, "tsdescramble: the stream carries no ECM") {
			once++
		}
	}
	if once != 1 ||
		!strings.Contains(lines[len(lines)-1], "the stream carries no ECM for the key server") || strings.Contains(r.stderr, "no key from the key server for PID") {
		t.Errorf("want the reason in one line as the periods end and in the last line, and no line per period:\n%s", r.stderr)
	}
	if strings.Contains(r.stderr, "-reduce-entropy") || strings.Contains(r.stderr, "check the control words") {
		t.Errorf("advice about control words for a stream without ECMs:\n%s", r.stderr)
	}

	_, _, in := keyServerStream(t)
	srv.Stop()
	r = run(t, nil, "-key-server", "cs378x://u:p@"+srv.Addr, "-key-wait", "200ms", "-in", in, "-out", os.DevNull)
	if r.code != exitNoFit || !regexp.MustCompile(`key server \(cs378x\): 0 ECMs sent, .*; [1-9][0-9]* not sent \(the server could not be connected to\)`).MatchString(r.stderr) {
		t.Errorf("a server that is down: %s", describe(r))
	}
}
