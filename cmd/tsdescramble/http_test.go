package main

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

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
	summaryHas(t, res.stderr, `HTTP output: 1 clients served, 0 dropped`)
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
