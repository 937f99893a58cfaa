package relay_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tsdescramble/tsdescramble/internal/testsupport/proc"
	"github.com/tsdescramble/tsdescramble/relay"
	"github.com/tsdescramble/tsdescramble/ts"
)

// Real clients: curl and ffprobe read the stream as any HTTP client of a TS stream does. Each
// test skips, naming the Debian package, when its tool is missing.

// needTool returns the path of a tool, or skips the test when it is missing.
func needTool(t *testing.T, tool, pkg string) string {
	t.Helper()
	path, err := exec.LookPath(tool)
	if err != nil {
		t.Skipf("%s is not installed (apt-get install -y %s); skipping the test with it as a client", tool, pkg)
	}
	return path
}

// curl saves the stream to a file; the file starts at the first PAT written after curl
// connected and holds every unit from there to Close, as written.
func TestCurl(t *testing.T) {
	curl := needTool(t, "curl", "curl")
	f := ts.Framing188
	srv := listen(t, relay.Options{})
	out := filepath.Join(t.TempDir(), "got.ts")
	p := proc.Start(t, 30*time.Second, curl, "-s", "-S", "--max-time", "20", "-o", out, url(srv, "/stream.ts"))
	srv.Write(units(0, 10, f))
	waitFor(t, "curl to connect", func() bool { return srv.Stats().Clients == 1 || p.Exited() })
	if p.Exited() {
		t.Fatalf("curl ended before it connected: %s", p.Output())
	}
	var stream []byte
	for i := 10; i < 3000; i += 37 {
		b := units(i, 37, f)
		srv.Write(b)
		stream = append(stream, b...)
		time.Sleep(time.Millisecond) // a stream comes in over time, not in one piece
	}
	srv.Close()
	p.WaitOK(t, 10*time.Second) // a clean end of the response: curl exits 0
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) < f.Size || !isPAT(got, f) {
		t.Fatalf("curl's file does not start with a PAT (%d bytes)", len(got))
	}
	want := stream[(nextPAT(10)-10)*f.Size:]
	if !bytes.Equal(got, want) {
		t.Fatalf("curl's file: %d bytes, want the %d written from unit %d on", len(got), len(want), nextPAT(10))
	}
}

// ffprobe finds the video and the audio stream of the clear sample, which the test writes in a
// loop, paced, for as long as ffprobe reads.
func TestFFprobe(t *testing.T) {
	ffprobe := needTool(t, "ffprobe", "ffmpeg")
	sample, err := os.ReadFile("../samples/demo-clear.ts")
	if err != nil {
		t.Fatal(err)
	}
	srv := listen(t, relay.Options{})
	p := proc.Start(t, 30*time.Second, ffprobe, "-hide_banner", "-v", "error",
		"-show_entries", "stream=codec_type,codec_name", "-of", "compact", url(srv, "/stream.ts"))
	const chunk = 100 * ts.PacketSize // about 2 MB/s at one write every 10 ms
	for end, off := time.Now().Add(20*time.Second), 0; !p.Exited(); off = (off + chunk) % len(sample) {
		if time.Now().After(end) {
			t.Fatalf("ffprobe did not finish in 20 s: %s", p.Output())
		}
		if _, err := srv.Write(sample[off:min(off+chunk, len(sample))]); err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	p.WaitOK(t, 5*time.Second)
	out := p.Output()
	for _, want := range []string{"codec_name=h264|codec_type=video", "codec_name=aac|codec_type=audio"} {
		if !strings.Contains(out, want) {
			t.Errorf("ffprobe did not find %s:\n%s", want, out)
		}
	}
	if s := srv.Stats(); s.Served != 1 || s.Dropped != 0 {
		t.Errorf("stats %+v, want 1 served, none dropped", s)
	}
}
