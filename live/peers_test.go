package live

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tsdescramble/tsdescramble/internal/testsupport/ports"
	"github.com/tsdescramble/tsdescramble/internal/testsupport/proc"
)

// Real peers from Debian, on loopback: ffmpeg, multicat and socat send to the Reader and
// receive from the Writer. Each test skips, naming the package to install, when its tool is
// missing; every process is stopped by its pid when the test ends. The tests run side by side:
// each has its own ports and spends its time waiting on its peer, not on the CPU.

const sample = "../samples/demo-clear.ts" // 20 s, PCR on PID 0x100

func need(t *testing.T, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			pkg := map[string]string{"ingests": "multicat"}[tool]
			if pkg == "" {
				pkg = tool
			}
			t.Skipf("%s is not installed (apt-get install -y %s); skipping the test against it", tool, pkg)
		}
	}
}

func readSample(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile(sample)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// freePort returns a UDP port free on 127.0.0.1 a moment ago, for a peer to bind.
func freePort(t *testing.T) int {
	t.Helper()
	return ports.UDP(t)
}

// waitBound waits until something listens on the UDP port, so that nothing is sent before a
// peer receives.
func waitBound(t *testing.T, port int) {
	t.Helper()
	hex := fmt.Sprintf(":%04X ", port)
	for range 100 {
		for _, f := range []string{"/proc/net/udp", "/proc/net/udp6"} {
			b, _ := os.ReadFile(f)
			for _, l := range strings.Split(string(b), "\n") {
				if fields := strings.Fields(l); len(fields) > 2 && strings.HasSuffix(fields[1]+" ", hex) {
					return
				}
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("nothing bound UDP port %d within 5 s", port)
}

// waitSize waits until a file holds n bytes.
func waitSize(t *testing.T, path string, n int64, limit time.Duration) {
	t.Helper()
	end := time.Now().Add(limit)
	for time.Now().Before(end) {
		if st, err := os.Stat(path); err == nil && st.Size() >= n {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	st, _ := os.Stat(path)
	t.Fatalf("%s did not reach %d bytes in %v (stat %v)", path, n, limit, st)
}

// sendAll writes a stream through a Writer and closes it.
func sendAll(t *testing.T, url string, b []byte) *Writer {
	t.Helper()
	w := dialT(t, url)
	if _, err := w.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return w
}

func sameBytes(t *testing.T, what string, got, want []byte) {
	t.Helper()
	if !bytes.Equal(got, want) {
		n := 0
		for n < min(len(got), len(want)) && got[n] == want[n] {
			n++
		}
		t.Fatalf("%s: %d bytes, want %d; first difference at byte %d (packet %d)", what, len(got), len(want), n, n/188)
	}
}

// ffmpeg sends the sample's exact bytes (mpegtsraw demuxer, data muxer) as UDP, 7 packets a
// datagram.
func TestFFmpegSendsUDP(t *testing.T) {
	t.Parallel()
	need(t, "ffmpeg")
	want := readSample(t)
	r := listenT(t, "udp://@127.0.0.1:0")
	proc.Start(t, 30*time.Second, "ffmpeg", "-v", "error", "-readrate", "10", "-f", "mpegtsraw", "-i", sample, "-flush_packets", "0",
		"-map", "0", "-c", "copy", "-f", "data", fmt.Sprintf("udp://127.0.0.1:%d?pkt_size=1316", port(r)))
	got := readN(t, r, len(want), 10*time.Second, 30*time.Second)
	sameBytes(t, "received from ffmpeg", got, want)
	if s := r.Stats(); s.Datagrams != int64((len(want)+1315)/1316) || s.RTP != 0 || s.Unaligned != 0 {
		t.Errorf("stats %+v", s)
	}
}

// ffmpeg sends RTP (rtp_mpegts muxer): the Reader strips the headers and gets ffmpeg's TS.
func TestFFmpegSendsRTP(t *testing.T) {
	t.Parallel()
	need(t, "ffmpeg")
	r := listenT(t, "rtp://@127.0.0.1:0")

	ff := proc.Start(t, 30*time.Second, "ffmpeg", "-v", "error", "-readrate", "10", "-i", sample,
		"-map", "0", "-c", "copy", "-f", "rtp_mpegts", fmt.Sprintf("rtp://127.0.0.1:%d?localrtpport=%d&localrtcpport=%d", port(r), freePort(t), freePort(t)))
	// ffmpeg may be slow to start, and pause, on a loaded machine (seconds under the race
	// detector), so an idle time cannot tell its end: wait for it to end, then read what it
	// sent (the 870 kB of the sample wait in the socket's buffer, 64 MiB by default).
	ff.WaitOK(t, 30*time.Second)
	// All it sent is in the socket's buffer now: the Reader counts silence only while it
	// waits on an empty socket, so a short idle time ends the read once that is drained.
	got := readN(t, r, 1<<30, 250*time.Millisecond, 30*time.Second)
	// ffmpeg's RTP muxer chains its TS muxer with other settings than its file output, so the
	// bytes differ; the frames in them must not, but for the last video frame and the last
	// 11 audio frames, which ffmpeg's RTP muxer does not send.
	if len(got)%188 != 0 {
		t.Errorf("%d bytes: not whole packets", len(got))
	}
	in := filepath.Join(t.TempDir(), "in.ts")
	os.WriteFile(in, got, 0o644)
	if len(got) == 0 {
		t.Fatalf("nothing from ffmpeg (%v, %v): %s", ff.Cmd.ProcessState, ff.Cmd.Args, ff.Output())
	}
	sameFrames(t, in, sample, 0, 12)
	if s := r.Stats(); s.RTP != s.Datagrams || s.Lost+s.Reordered+s.Duplicates+s.OtherPT+s.Truncated != 0 {
		t.Errorf("stats %+v", s)
	}
}

// ffmpeg receives the Writer's UDP and writes the exact bytes back out (mpegtsraw, data).
func TestFFmpegReceivesUDP(t *testing.T) {
	t.Parallel()
	need(t, "ffmpeg")
	want := readSample(t)
	p := freePort(t)
	out := filepath.Join(t.TempDir(), "out.ts")
	ff := proc.Start(t, 60*time.Second, "ffmpeg", "-v", "error", "-f", "mpegtsraw",
		"-i", fmt.Sprintf("udp://127.0.0.1:%d?timeout=1500000&buffer_size=16777216&fifo_size=100000", p),
		"-map", "0", "-c", "copy", "-f", "data", out)
	waitBound(t, p)
	time.Sleep(200 * time.Millisecond) // ffmpeg binds, then starts reading
	sendAll(t, fmt.Sprintf("udp://127.0.0.1:%d", p), want)
	ff.WaitOK(t, 30*time.Second) // its receive timeout ends it
	got, _ := os.ReadFile(out)
	sameBytes(t, "written by ffmpeg", got, want)
}

// ffmpeg receives the Writer's RTP and demuxes it: the same elementary streams as the sample.
func TestFFmpegReceivesRTP(t *testing.T) {
	t.Parallel()
	need(t, "ffmpeg")
	if testing.Short() {
		t.Skip("slow: ffmpeg's RTP input runs on for seconds after the stream ends")
	}
	p := freePort(t)
	out := filepath.Join(t.TempDir(), "out.ts")
	// Nothing marks the end of an RTP stream: ffmpeg's RTP input ends when no datagram came
	// for twice its -listen_timeout (the URL's timeout governs only the wait for the first).
	// Its default of 10 s kept ffmpeg running 20 s after the stream; 2 s still outlasts any
	// pause of the sender on a loaded machine.
	ff := proc.Start(t, 90*time.Second, "ffmpeg", "-v", "error", "-listen_timeout", "2",
		"-i", fmt.Sprintf("rtp://127.0.0.1:%d?timeout=1500000&buffer_size=16777216&fifo_size=100000", p),
		"-map", "0", "-c", "copy", "-f", "mpegts", out)
	waitBound(t, p)
	time.Sleep(200 * time.Millisecond)
	w := dialT(t, fmt.Sprintf("rtp://127.0.0.1:%d", p))
	pace := fastPacer(w, 7, 10)
	t0 := time.Now()
	if _, err := pace.Write(readSample(t)); err != nil {
		t.Fatal(err)
	}
	pace.Flush()
	w.Close()
	t.Logf("20 s of stream sent in %v", time.Since(t0))
	ff.WaitOK(t, 60*time.Second)
	// ffmpeg, joining a live RTP stream, drops the video before the keyframe it starts on
	// (the first GOP, 25 frames here) and the last frame, whose end nothing marks; every frame
	// it keeps must be the sample's, in order.
	sameFrames(t, out, sample, 30, 1)
}

// fastPacer paces a stream at speed times real time: its clock runs that much faster.
func fastPacer(w io.Writer, burst int, speed int) *Pacer {
	p := NewPacer(w, burst)
	t0 := time.Now()
	p.now = func() time.Time { return t0.Add(time.Since(t0) * time.Duration(speed)) }
	p.sleep = func(d time.Duration) { time.Sleep(d / time.Duration(speed)) }
	return p
}

// sameFrames checks that the frames of each stream of got are those of want, in order, but
// for at most lead missing at the start and trail at the end.
func sameFrames(t *testing.T, got, want string, lead, trail int) {
	t.Helper()
	g := frames(t, got)
	for st, w := range frames(t, want) {
		x := g[st]
		i := 0
		if len(x) > 0 {
			i = slices.Index(w, x[0])
		}
		if i < 0 || i > lead || len(w)-i-len(x) > trail || len(w)-i < len(x) || !slices.Equal(x, w[i:i+len(x)]) {
			t.Errorf("stream %s: %d frames, from %d: not the sample's %d less at most %d at the start and %d at the end",
				st, len(x), i, len(w), lead, trail)
		}
	}
}

// waitStable waits until a file has not grown for quiet.
func waitStable(t *testing.T, path string, quiet, limit time.Duration) {
	t.Helper()
	end := time.Now().Add(limit)
	last, since := int64(-1), time.Now()
	for time.Now().Before(end) {
		st, err := os.Stat(path)
		if err == nil && st.Size() != last {
			last, since = st.Size(), time.Now()
		} else if last > 0 && time.Since(since) >= quiet {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s still growing, or empty, after %v", path, limit)
}

// frames lists the size and MD5 of every frame of each elementary stream (ffmpeg framemd5).
func frames(t *testing.T, path string) map[string][]string {
	t.Helper()
	var stderr bytes.Buffer
	cmd := exec.Command("ffmpeg", "-v", "error", "-i", path, "-map", "0", "-c", "copy", "-f", "framemd5", "-")
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	if err != nil {
		t.Fatalf("ffmpeg framemd5 %s: %v: %s", path, err, stderr.String())
	}
	m := map[string][]string{}
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Split(l, ",")
		if len(f) >= 6 && !strings.HasPrefix(l, "#") { // side data may follow
			m[strings.TrimSpace(f[0])] = append(m[strings.TrimSpace(f[0])], strings.TrimSpace(f[4])+" "+strings.TrimSpace(f[5]))
		}
	}
	return m
}

// streamHash is ffmpeg's MD5 of each elementary stream of a file, order-independent.
func streamHash(t *testing.T, path string) string {
	t.Helper()
	cmd := exec.Command("ffmpeg", "-v", "quiet", "-i", path, "-map", "0", "-c", "copy", "-f", "streamhash", "-hash", "md5", "-")
	b, err := cmd.Output()
	if err != nil {
		t.Fatalf("ffmpeg streamhash %s: %v", path, err)
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if _, rest, ok := strings.Cut(l, ","); ok {
			lines = append(lines, rest)
		}
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}
