package main

import (
	"io"
	"net"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"
)

// get fetches a path of the metrics server at addr.
func get(t *testing.T, addr, path string) (int, string) {
	t.Helper()
	code, body, err := tryGet(addr, path)
	if err != nil {
		t.Fatal(err)
	}
	return code, body
}

// tryGet fetches a path of the metrics server at addr, which may not listen yet.
func tryGet(addr, path string) (int, string, error) {
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get("http://" + addr + path)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// freeAddr returns a loopback address with a port that was free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// A run reading a pipe serves its counts while it waits for more: half the sample is counted
// per PID, in the Prometheus text format, and /healthz says it is healthy.
func TestMetricsWhileRunning(t *testing.T) {
	t.Parallel()
	stream := readFile(t, sample(t, "demo-scrambled.ts"))
	addr := freeAddr(t)
	pw, done, stderr := mainOnPipe(t, "-in", "-", "-out", os.DevNull, "-cw-file", sample(t, "demo-keys.txt"),
		"-cipher", "csa2", "-batch", "256", "-metrics", addr, "-log-format", "json")
	half := len(stream) / 188 / 2 * 188
	if _, err := pw.Write(stream[:half]); err != nil {
		t.Fatal(err)
	}
	var body string
	for range 200 {
		// The run starts its server once it has read its flags: the first tries may find none,
		// and the reader counts a unit of work before the writer has written it.
		if code, b, err := tryGet(addr, "/metrics"); err == nil && code == 200 && strings.Contains(b, `tsdescramble_packets_total{pid="0x0100"}`) &&
			!strings.Contains(b, "tsdescramble_written_packets_total 0\n") {
			body = b
			break
		}
		time.Sleep(25 * time.Millisecond)
	}
	if body == "" {
		t.Fatal("no per-PID counts while the run waits for input")
	}
	named := map[string]bool{}
	sample := regexp.MustCompile(`^([a-z_]+)(\{[a-z]+="[^"]*"(,[a-z]+="[^"]*")*\})? [0-9]+(\.[0-9]+)?(e-?[0-9]+)?$`)
	for _, line := range strings.Split(strings.TrimSpace(body), "\n") {
		if f := strings.Fields(line); len(f) >= 3 && f[0] == "#" && f[1] == "TYPE" {
			named[f[2]] = true
			continue
		}
		if strings.HasPrefix(line, "# HELP ") {
			continue
		}
		m := sample.FindStringSubmatch(line)
		if m == nil || !named[m[1]] || !strings.HasPrefix(m[1], "tsdescramble_") {
			t.Errorf("not a sample of a declared metric: %q", line)
		}
	}
	written := regexp.MustCompile(`(?m)^tsdescramble_written_packets_total ([0-9]+)$`).FindStringSubmatch(body)
	if written == nil || written[1] == "0" || !strings.Contains(body, `tsdescramble_unit_start_checks_total{pid="0x0100",result="good"}`) {
		t.Errorf("metrics while running:\n%s", body)
	}
	if code, b := get(t, addr, "/healthz"); code != 200 {
		t.Errorf("/healthz while packets come and keys fit: %d %s", code, b)
	}
	pw.Write(stream[half:])
	pw.Close()
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr.String())
		}
	case <-time.After(time.Minute):
		t.Fatal("the run did not end")
	}
	for _, line := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
		if !strings.HasPrefix(line, `{"time":"`) || !strings.HasSuffix(line, "}") {
			t.Errorf("-log-format json wrote a line that is no JSON object: %q", line)
		}
	}
	// The server is gone with the run.
	if _, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		t.Errorf("the metrics server still listens after the run")
	}
}

func TestLogFormatJSONError(t *testing.T) {
	t.Parallel()
	r := run(t, nil, "-in", "/nonexistent.ts", "-out", os.DevNull, "-cw", cwA, "-log-format", "json")
	if r.code != exitFail || !strings.Contains(r.stderr, `"level":"error","msg":"cannot open the input`) {
		t.Errorf("an error as JSON: %s", describe(r))
	}
	if r := run(t, nil, "-in", "x", "-cw", cwA, "-log-format", "xml"); r.code != exitUsage || !strings.Contains(r.stderr, "-log-format: want text or json") {
		t.Errorf("-log-format xml: %s", describe(r))
	}
}
