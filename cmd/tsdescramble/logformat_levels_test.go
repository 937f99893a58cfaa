package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tsdescramble/tsdescramble/internal/testsupport/ports"
)

// logRecord is one line of -log-format json.
type logRecord struct {
	Level string `json:"level"`
	Job   *int   `json:"job"`
	Msg   string `json:"msg"`
}

// jsonRecords reads the lines of a JSON log, failing the test on one that is not JSON.
func jsonRecords(t *testing.T, stderr string) []logRecord {
	t.Helper()
	var recs []logRecord
	for _, l := range strings.Split(strings.TrimSpace(stderr), "\n") {
		var rec logRecord
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		recs = append(recs, rec)
	}
	return recs
}

// levelOf returns the level and job of the first record whose message contains s.
func levelOf(recs []logRecord, s string) (level string, job int, ok bool) {
	for _, r := range recs {
		if strings.Contains(r.Msg, s) {
			job = -1
			if r.Job != nil {
				job = *r.Job
			}
			return r.Level, job, true
		}
	}
	return "", 0, false
}

// gapCWL writes an OSCam CW log of the demo sample's keys in which two odd keys follow each
// other: the even crypto period between them has no key, which the run says as a warning.
func gapCWL(t *testing.T) string {
	t.Helper()
	return writeFile(t, t.TempDir(), "gap.cwl", []byte("# OSCam cardserver v1.20 - http://www.streamboard.tv/oscam/\n"+
		"# control word log file for use with tsdec offline decrypter\n"+
		"# DATE 2013-06-20, TIME 21:10:29, TZ CEST\n"+
		"# CAID 0x0B00, SID 0x0001, SERVICE \"demo\"\n"+
		"0 11 22 33 66 44 55 66 FF\n1 01 02 03 06 08 09 0A 1B\n1 A1 B2 C3 16 D4 E5 F6 AF\n"))
}

// -log-format json gives what goes wrong its level wherever it is written: a key file's
// warning at "warn" beside its note at "info"; in a batch, a job whose line is wrong at
// "error" with its job number, the batch's line that says jobs cannot run at "warn", a job's
// own warning at "warn" with its number (through the job's prefix), and the batch's end at
// "error".
func TestJSONLogLevelsThroughBatch(t *testing.T) {
	t.Parallel()
	cwl := gapCWL(t)
	t.Run("run", func(t *testing.T) {
		t.Parallel()
		r := run(t, nil, "-in", demoScrambled, "-out", filepath.Join(t.TempDir(), "o.ts"), "-cw-file", cwl, "-log-format", "json")
		recs := jsonRecords(t, r.stderr)
		for _, c := range []struct{ msg, level string }{
			{"two odd keys in a row", "warn"},
			{"3 control words, OSCam", "info"},
			{" packets in, ", "info"},
		} {
			if l, _, ok := levelOf(recs, c.msg); !ok || l != c.level {
				t.Errorf("%q at %q, want %q:\n%s", c.msg, l, c.level, r.stderr)
			}
		}
	})
	t.Run("batch", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		manifest := writeFile(t, dir, "m.jsonl", []byte(
			manifestLine(t, map[string]any{"in": sample(t, "demo-scrambled.ts"), "out": filepath.Join(dir, "o0.ts"), "cw-file": filepath.Join(dir, "missing.txt")})+
				manifestLine(t, map[string]any{"in": sample(t, "demo-scrambled.ts"), "out": filepath.Join(dir, "o1.ts"), "cw-file": cwl})))
		r := run(t, nil, "batch", "-manifest", manifest, "-jobs", "1", "-log-format", "json")
		if r.code == 0 {
			t.Fatalf("a batch with a job whose key file is missing: %s", describe(r))
		}
		recs := jsonRecords(t, r.stderr)
		for _, c := range []struct {
			msg, level string
			job        int
		}{
			{"missing.txt", "error", 0},
			{"1 of 2 jobs cannot run", "warn", -1},
			{"two odd keys in a row", "warn", 1},
			{" packets in, ", "info", 1},
			{"batch of 2 jobs", "error", -1},
		} {
			if l, job, ok := levelOf(recs, c.msg); !ok || l != c.level || job != c.job {
				t.Errorf("%q at %q for job %d, want %q for job %d:\n%s", c.msg, l, job, c.level, c.job, r.stderr)
			}
		}
	})
}

// An HTTP output's client that reads nothing is dropped once it is more than the relay's
// buffer behind, and the line that says so is a warning in the JSON log; the summary counts
// it.
func TestJSONLogRelayClientDropped(t *testing.T) {
	t.Parallel()
	port := ports.TCP(t)
	url := fmt.Sprintf("http://127.0.0.1:%d/live.ts", port)
	pr, pw := io.Pipe()
	r := &liveRun{done: make(chan int, 1)}
	env := Env{Stdin: pr, Stdout: &r.stdout, Stderr: &r.stderr, IsTerminal: func(*os.File) bool { return false }}
	go func() {
		code := Main([]string{"tsdescramble", "-passthrough", "-out", url, "-log-format", "json"}, env)
		pr.Close() // a run that ended early fails the writes below rather than block them
		r.done <- code
	}()
	// The first packets (a PAT among them) open the run, and its output's listener.
	stream := readFile(t, demoScrambled)
	if _, err := pw.Write(stream[:188*100]); err != nil {
		t.Fatal(err)
	}
	waitTCP(t, port)
	c, err := net.Dial("tcp4", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.(*net.TCPConn).SetReadBuffer(4096)
	fmt.Fprintf(c, "GET /live.ts HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
	time.Sleep(200 * time.Millisecond) // the client is served from the next PAT
	// 40 MB: the relay's 4 MiB and the sockets' buffers are full long before the end.
	for range 46 {
		if _, err := pw.Write(stream); err != nil {
			t.Fatalf("%v: %s", err, describe(r.wait(t, 10*time.Second)))
		}
	}
	pw.Close()
	res := r.wait(t, 60*time.Second)
	if res.code != 0 {
		t.Fatal(describe(res))
	}
	recs := jsonRecords(t, res.stderr)
	if l, _, ok := levelOf(recs, "dropped: more than"); !ok || l != "warn" {
		t.Errorf("the client's drop at %q, want warn:\n%s", l, res.stderr)
	}
	if _, _, ok := levelOf(recs, "HTTP output: 1 client served, 1 dropped"); !ok {
		t.Errorf("the summary does not count the client dropped:\n%s", res.stderr)
	}
}
