package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tsdescramble/tsdescramble/internal/testsupport/httpcut"
	"github.com/tsdescramble/tsdescramble/internal/testsupport/ports"
	"github.com/tsdescramble/tsdescramble/internal/testsupport/proc"
)

// waitTCP waits until something accepts connections on the TCP port of 127.0.0.1.
func waitTCP(t *testing.T, port int) {
	t.Helper()
	for range 200 {
		if c, err := net.Dial("tcp4", "127.0.0.1:"+strconv.Itoa(port)); err == nil {
			c.Close()
			return
		}
		time.Sleep(25 * time.Millisecond)
	}
	t.Fatalf("nothing listens on TCP port %d", port)
}

// indexOfPacket returns where the first 188-byte packet of got is in want, or -1.
func indexOfPacket(got, want []byte) int {
	if len(got) < 188 {
		return -1
	}
	for i := 0; i+188 <= len(want); i += 188 {
		if bytes.Equal(want[i:i+188], got[:188]) {
			return i
		}
	}
	return -1
}

// TestHTTPRelayOutput serves a descrambled live feed over HTTP to curl, a client nobody here
// wrote: curl gets the clear stream from a PAT on, byte for byte, and its response ends when
// the run does; the summary counts it.
func TestHTTPRelayOutput(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not installed (Debian package curl): the HTTP output is tested with it")
	}
	in, out := freeUDPPort(t), ports.TCP(t)
	url := fmt.Sprintf("http://127.0.0.1:%d/live.ts", out)
	r := startLive(t, "-in", fmt.Sprintf("udp://@127.0.0.1:%d", in), "-out", url, "-cw-file", demoKeys,
		"-packets", strconv.Itoa(demoPackets))
	waitListening(t, in)
	waitTCP(t, out)
	got := filepath.Join(t.TempDir(), "got.ts")
	c := proc.Start(t, 60*time.Second, "curl", "-s", "-S", "--max-time", "50", "-o", got, url)
	time.Sleep(200 * time.Millisecond) // curl connects; a client that comes later joins at a later PAT
	sendUDP(t, fmt.Sprintf("udp://127.0.0.1:%d", in), readFile(t, demoScrambled), 2*time.Millisecond)
	res := r.wait(t, 30*time.Second)
	if res.code != 0 {
		t.Fatal(describe(res))
	}
	c.WaitOK(t, 30*time.Second)
	b, err := os.ReadFile(got)
	if err != nil {
		t.Fatal(err)
	}
	clear := readFile(t, demoClear)
	at := indexOfPacket(b, clear)
	if at < 0 || len(b) < 1000*188 {
		t.Fatalf("curl got %d bytes, from packet %d of the clear stream", len(b), at/188)
	}
	if pid := uint16(b[1]&0x1F)<<8 | uint16(b[2]); pid != 0 {
		t.Fatalf("curl's stream starts with PID %#x, not a PAT", pid)
	}
	sameBytes(t, "what curl got", b, clear[at:], 188)
	summaryHas(t, res.stderr, `HTTP output: 1 client served, 0 dropped`)
}

// An HTTP output names the address and path to serve at, over plain HTTP, and a password in a
// URL never shows in a message.
func TestHTTPOutputUsage(t *testing.T) {
	for _, c := range []struct{ out, want string }{
		{"https://127.0.0.1:8443/s.ts", "plain HTTP only"},
		{"http://127.0.0.1/s.ts", "want http://[HOST]:PORT/PATH"},
		{"http://user:secret@127.0.0.1:8080/s.ts", "want http://[HOST]:PORT/PATH"},
	} {
		r := run(t, nil, "-in", demoScrambled, "-out", c.out, "-cw-file", demoKeys)
		if r.code != exitUsage || !strings.Contains(r.stderr, c.want) || strings.Contains(r.stderr, "secret") {
			t.Errorf("-out %s: %s", c.out, describe(r))
		}
		oneLine(t, r.stderr)
	}
}

// TestHTTPInput reads the scrambled sample from Python's http.server, a server nobody here
// wrote: as a file, and cut into TS segments behind an HLS playlist. Both come out as the file
// path's output, byte for byte, exit 0.
func TestHTTPInput(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is missing (Debian package python3): the HTTP input is tested against its http.server")
	}
	dir := t.TempDir()
	scrambled := readFile(t, demoScrambled)
	if err := os.WriteFile(filepath.Join(dir, "demo.ts"), scrambled, 0o644); err != nil {
		t.Fatal(err)
	}
	// Six segments at packet boundaries, a VOD media playlist over them.
	playlist := "#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:4\n#EXT-X-MEDIA-SEQUENCE:0\n#EXT-X-PLAYLIST-TYPE:VOD\n"
	per := (demoPackets + 5) / 6 * 188
	for i := 0; i*per < len(scrambled); i++ {
		seg := scrambled[i*per : min((i+1)*per, len(scrambled))]
		name := fmt.Sprintf("seg%d.ts", i)
		if err := os.WriteFile(filepath.Join(dir, name), seg, 0o644); err != nil {
			t.Fatal(err)
		}
		playlist += "#EXTINF:3.3,\n" + name + "\n"
	}
	playlist += "#EXT-X-ENDLIST\n"
	if err := os.WriteFile(filepath.Join(dir, "index.m3u8"), []byte(playlist), 0o644); err != nil {
		t.Fatal(err)
	}
	port := ports.TCP(t)
	proc.Start(t, 60*time.Second, "python3", "-m", "http.server", "--bind", "127.0.0.1", strconv.Itoa(port), "--directory", dir)
	waitTCP(t, port)
	want := readFile(t, demoClear)
	for _, name := range []string{"demo.ts", "index.m3u8"} {
		out := filepath.Join(t.TempDir(), "out.ts")
		r := run(t, nil, "-in", fmt.Sprintf("http://127.0.0.1:%d/%s", port, name), "-out", out, "-cw-file", demoKeys)
		if r.code != 0 {
			t.Fatalf("%s: %s", name, describe(r))
		}
		sameBytes(t, name, readFile(t, out), want, 188)
		summaryHas(t, r.stderr, `HTTP input: .*0 reconnections`)
		if name == "index.m3u8" {
			summaryHas(t, r.stderr, `HLS: 6 segments read, 0 missed`)
		}
	}
}

// A password in an input URL is sent and never printed: not when the server fails the request,
// nor when it cuts the stream short.
func TestHTTPInputHidesPassword(t *testing.T) {
	scrambled := readFile(t, demoScrambled)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, pass, _ := r.BasicAuth(); pass != "s3cret" {
			t.Errorf("the server got password %q", pass)
		}
		switch r.URL.Path {
		case "/cut.ts":
			w.Header().Set("Content-Length", strconv.Itoa(len(scrambled)))
			w.Write(scrambled[:len(scrambled)/2]) // a file cut short: a read error
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	for _, path := range []string{"/missing.ts", "/cut.ts"} {
		url := strings.Replace(srv.URL, "http://", "http://viewer:s3cret@", 1) + path
		r := run(t, nil, "-in", url, "-out", filepath.Join(t.TempDir(), "out.ts"), "-cw-file", demoKeys)
		if r.code != exitFail || strings.Contains(r.stderr, "s3cret") || !strings.Contains(r.stderr, "viewer") {
			t.Errorf("%s: %s", path, describe(r))
		}
	}
}

// An HTTP file whose connection drops twice, at places that cut packets, is resumed with
// range requests: the output is the one of the whole file, byte for byte, and the summary and
// -stats count the resumes. From a server that sends the whole file again instead, the run
// fails with one line saying where the file was cut, its output kept as it stood.
func TestHTTPInputResumed(t *testing.T) {
	scrambled := readFile(t, demoScrambled)
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i := requests.Add(1)
		if r.URL.Path == "/ignores.ts" {
			r.Header.Del("Range") // as a server that takes no range requests
		}
		limit := 0
		if i <= 2 || r.URL.Path == "/ignores.ts" {
			limit = 200_001
		}
		httpcut.Serve(w, r, scrambled, `"demo"`, limit)
	}))
	defer srv.Close()
	dir := t.TempDir()
	out, stats := filepath.Join(dir, "out.ts"), filepath.Join(dir, "stats.json")
	r := run(t, nil, "-in", srv.URL+"/demo.ts", "-out", out, "-cw-file", demoKeys, "-stats", stats)
	if r.code != 0 {
		t.Fatal(describe(r))
	}
	sameBytes(t, "the output", readFile(t, out), readFile(t, demoClear), 188)
	summaryHas(t, r.stderr, `HTTP input: .*0 reconnections, 2 resumes of a file cut short, 0 stalled connections dropped`)
	var v struct {
		Live struct {
			Web struct {
				Resumes int64 `json:"resumes"`
				Stalls  int64 `json:"stalls"`
			} `json:"http_input"`
		} `json:"live"`
	}
	if err := json.Unmarshal(readFile(t, stats), &v); err != nil || v.Live.Web.Resumes != 2 {
		t.Errorf("-stats: %+v (%v), want 2 resumes", v.Live.Web, err)
	}

	r = run(t, nil, "-in", srv.URL+"/ignores.ts", "-out", out, "-cw-file", demoKeys)
	want := fmt.Sprintf("the file was cut short at byte 200001 of %d (connection lost), and the server cannot resume it: it answered the range request with the whole file (200 OK)", len(scrambled))
	if r.code != exitFail || !strings.Contains(r.stderr, want) {
		t.Errorf("a server that ignores the range: %s", describe(r))
	}
}

// A live HTTP stream that stalls, its connection open, is dropped after the default stall
// timeout (5 s) and connected again, long before -timeout: the run gets every packet of the
// second connection, and the summary and -stats count the stall.
func TestHTTPInputStalled(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out the 5 s stall timeout")
	}
	scrambled := readFile(t, demoScrambled)
	const first = 1000 * 188
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b := scrambled[first:]
		if requests.Add(1) == 1 {
			b = scrambled[:first]
		}
		w.Write(b) // chunked: a live stream
		w.(http.Flusher).Flush()
		<-r.Context().Done() // then nothing, the connection open
	}))
	defer srv.Close()
	dir := t.TempDir()
	out, stats := filepath.Join(dir, "out.ts"), filepath.Join(dir, "stats.json")
	began := time.Now()
	r := run(t, nil, "-in", srv.URL+"/live", "-out", out, "-cw-file", demoKeys, "-packets", strconv.Itoa(demoPackets),
		"-timeout", "20s", "-stats", stats)
	if r.code != 0 {
		t.Fatal(describe(r))
	}
	if d := time.Since(began); d > 15*time.Second {
		t.Errorf("the run took %v: the stall was not cut at 5 s", d)
	}
	sameBytes(t, "the output", readFile(t, out), readFile(t, demoClear), 188)
	summaryHas(t, r.stderr, `HTTP input: .*1 reconnection, 0 resumes of a file cut short, 1 stalled connection dropped`)
	var v struct {
		Live struct {
			Web struct {
				Stalls int64 `json:"stalls"`
			} `json:"http_input"`
		} `json:"live"`
	}
	if err := json.Unmarshal(readFile(t, stats), &v); err != nil || v.Live.Web.Stalls != 1 {
		t.Errorf("-stats: %+v (%v), want 1 stall", v.Live.Web, err)
	}
}

// A run started at a terminal reads the PMTs of a network input all the same: only an input
// typed at the terminal (stdin) is not looked ahead into. The stream signals atis-idsa in its
// PMT, which the run must find.
func TestHTTPInputLookAheadFromATerminal(t *testing.T) {
	clear := detStream(100, false, 0, detService1)
	r := run(t, frame(clear, 188), "scramble", "-q", "-cipher", "atis-idsa", "-cw", cw128)
	if r.code != 0 {
		t.Fatal(describe(r))
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(len(r.stdout))) // a file: it ends
		w.Write([]byte(r.stdout))
	}))
	defer srv.Close()
	tty, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer tty.Close()
	var stdout, stderr bytes.Buffer
	out := filepath.Join(t.TempDir(), "o.ts")
	code := runEnv(t, Env{Stdin: tty, Stdout: &stdout, Stderr: &stderr, IsTerminal: func(*os.File) bool { return true }},
		"-in", srv.URL+"/s.ts", "-out", out, "-cw", cw128)
	if code != 0 || !strings.Contains(stderr.String(), "service 1: atis-idsa") {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr.String())
	}
}

// curlGet fetches url with curl and returns its HTTP status and body.
func curlGet(t *testing.T, url string) (int, string) {
	t.Helper()
	c := proc.Start(t, 20*time.Second, "curl", "-s", "-S", "--max-time", "10", "-w", "\n%{http_code}", url)
	c.WaitOK(t, 15*time.Second)
	out := c.Output()
	i := strings.LastIndexByte(out, '\n')
	code, err := strconv.Atoi(strings.TrimSpace(out[i+1:]))
	if i < 0 || err != nil {
		t.Fatalf("curl %s: %q", url, out)
	}
	return code, out[:i]
}

// -metrics out, or -metrics naming the HTTP output's own address, serves /metrics and /healthz
// on the output's listener: curl reads both there while another curl reads the stream, which
// comes out as without them, from a PAT on, byte for byte.
func TestHTTPRelayMetrics(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not installed (Debian package curl): the HTTP output is tested with it")
	}
	for _, spelling := range []string{"out", "address"} {
		t.Run("metrics="+spelling, func(t *testing.T) {
			in, out := freeUDPPort(t), ports.TCP(t)
			base := fmt.Sprintf("http://127.0.0.1:%d", out)
			metrics := "out"
			if spelling == "address" {
				metrics = fmt.Sprintf("127.0.0.1:%d", out)
			}
			r := startLive(t, "-in", fmt.Sprintf("udp://@127.0.0.1:%d", in), "-out", base+"/live.ts", "-cw-file", demoKeys,
				"-packets", strconv.Itoa(demoPackets), "-metrics", metrics)
			waitListening(t, in)
			waitTCP(t, out)
			got := filepath.Join(t.TempDir(), "got.ts")
			c := proc.Start(t, 60*time.Second, "curl", "-s", "-S", "--max-time", "50", "-o", got, base+"/live.ts")
			time.Sleep(200 * time.Millisecond) // curl connects; a client that comes later joins at a later PAT
			scrambled := readFile(t, demoScrambled)
			half := len(scrambled) / (7 * 188) / 2 * 7 * 188 // whole datagrams of 7 packets
			dst := fmt.Sprintf("udp://127.0.0.1:%d", in)
			sendUDP(t, dst, scrambled[:half], 2*time.Millisecond)

			// The run waits for the second half, the stream's client still connected.
			var body string
			for range 100 {
				code, b := curlGet(t, base+"/metrics")
				if code != 200 {
					t.Fatalf("/metrics: %d %s", code, b)
				}
				if !strings.Contains(b, "tsdescramble_written_packets_total 0\n") && strings.Contains(b, `tsdescramble_packets_total{pid="0x0100"}`) {
					body = b
					break
				}
				time.Sleep(50 * time.Millisecond)
			}
			if body == "" || !strings.Contains(body, `tsdescramble_unit_start_checks_total{pid="0x0100",result="good"}`) {
				t.Fatalf("/metrics on the output's port while the stream runs:\n%s", body)
			}
			if code, b := curlGet(t, base+"/healthz"); code != 200 || !strings.HasPrefix(b, "ok: ") {
				t.Errorf("/healthz on the output's port while packets come: %d %s", code, b)
			}
			sendUDP(t, dst, scrambled[half:], 2*time.Millisecond)
			res := r.wait(t, 30*time.Second)
			if res.code != 0 {
				t.Fatal(describe(res))
			}
			c.WaitOK(t, 30*time.Second)
			b := readFile(t, got)
			clear := readFile(t, demoClear)
			at := indexOfPacket(b, clear)
			if at < 0 || len(b) < 1000*188 {
				t.Fatalf("curl got %d bytes, from packet %d of the clear stream", len(b), at/188)
			}
			sameBytes(t, "what curl got", b, clear[at:], 188)
			summaryHas(t, res.stderr, `HTTP output: 1 client served, 0 dropped`)
		})
	}
}

// -metrics out needs an HTTP output, and on the output's listener the stream's path may not be
// /metrics or /healthz: usage errors, one line each, nothing listening after.
func TestHTTPRelayMetricsUsage(t *testing.T) {
	port := ports.TCP(t)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	for _, c := range []struct {
		out, metrics, want string
	}{
		{filepath.Join(t.TempDir(), "o.ts"), "out", "-metrics out serves the metrics on the listener of the HTTP output: give -out http://[HOST]:PORT/PATH"},
		{"http://" + addr + "/metrics", "out", "-out http://" + addr + "/metrics: the stream's path /metrics is where -metrics out serves /metrics on the same listener"},
		{"http://" + addr + "/healthz", addr, "the stream's path /healthz is where -metrics " + addr + " serves /healthz"},
		{"http://" + addr + "/%6detrics", "out", "the stream's path /%6detrics is where -metrics out serves /metrics"},
		{"http://" + addr + "/s.ts", "outside", `-metrics "outside": want [HOST]:PORT (:9400, 127.0.0.1:9400, [::1]:9400), or out for the HTTP output's listener`},
	} {
		r := run(t, nil, "-in", demoScrambled, "-out", c.out, "-cw-file", demoKeys, "-metrics", c.metrics)
		if r.code != exitUsage || !strings.Contains(r.stderr, c.want) {
			t.Errorf("-out %s -metrics %s: %s", c.out, c.metrics, describe(r))
		}
		oneLine(t, r.stderr)
	}
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		c.Close()
		t.Error("something listens after the usage errors")
	}
}
