package web

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/url"
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

const sample = "../samples/demo-scrambled.ts"

// readSample returns the bundled sample, 4611 packets of 188 bytes.
func readSample(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile(sample)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != 4611*188 {
		t.Fatalf("%s has %d bytes, want 4611 packets", sample, len(b))
	}
	return b
}

// cut cuts b into n segments at packet boundaries.
func cut(b []byte, n int) [][]byte {
	pkts := len(b) / 188
	per := (pkts + n - 1) / n
	var segs [][]byte
	for i := 0; i < pkts; i += per {
		segs = append(segs, b[i*188:min(i+per, pkts)*188])
	}
	return segs
}

// mediaPlaylist writes a media playlist of segments seg<first>.ts to seg<last>.ts.
func mediaPlaylistText(first, last int, end bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:1\n#EXT-X-MEDIA-SEQUENCE:%d\n", first)
	for i := first; i <= last; i++ {
		fmt.Fprintf(&b, "#EXTINF:1.000,\nseg%d.ts\n", i)
	}
	if end {
		b.WriteString("#EXT-X-ENDLIST\n")
	}
	return b.String()
}

// writeFile writes a file whole under its name at once (through a rename), so that the server
// never serves half of it.
func writeFile(t *testing.T, dir, name string, b []byte) {
	t.Helper()
	tmp := filepath.Join(dir, "."+name+".tmp")
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		t.Fatal(err)
	}
}

// pythonServer serves dir with Python's http.server, a real HTTP/1.0 peer that sends a
// Content-Length with every file, and returns its URL.
func pythonServer(t *testing.T, dir string) string {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is missing: the tests against Python's http.server need it")
	}
	port := ports.TCP(t)
	p := proc.Start(t, 60*time.Second, "python3", "-m", "http.server", "--bind", "127.0.0.1", strconv.Itoa(port), "--directory", dir)
	waitListening(t, p, port)
	return "http://127.0.0.1:" + strconv.Itoa(port)
}

// waitListening waits, at most 10 seconds, until something accepts connections on port.
func waitListening(t *testing.T, p *proc.Proc, port int) {
	t.Helper()
	for range 200 {
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), time.Second)
		if err == nil {
			c.Close()
			return
		}
		if p.Exited() {
			t.Fatalf("%s exited: %s", p.Cmd.Path, p.Output())
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("nothing listens on port %d: %s", port, p.Output())
}

// waitStats waits, at most 10 seconds, until ok holds of r's stats.
func waitStats(t *testing.T, r *Reader, what string, ok func(Stats) bool) {
	t.Helper()
	for range 1000 {
		if ok(r.Stats()) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%s did not happen in 10 s: %+v", what, r.Stats())
}

// TestPython runs the tests against Python's http.server, one server for all (Python takes
// a while to start), each test in a directory of its own.
func TestPython(t *testing.T) {
	root := t.TempDir()
	server := pythonServer(t, root)
	for _, tc := range []struct {
		name string
		test func(t *testing.T, dir, base string)
	}{
		{"file", pythonFile},
		{"file-cut", pythonFileCut},
		{"hls", pythonHLS},
		{"live", pythonLive},
		{"live-missed", pythonLiveMissed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(root, tc.name)
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			tc.test(t, dir, server+"/"+tc.name)
		})
	}
}

// The sample served as a file is read byte for byte.
func pythonFile(t *testing.T, dir, base string) {
	want := readSample(t)
	writeFile(t, dir, "s.ts", want)
	r := open(t, base+"/s.ts")
	got, err := readAll(r, 10*time.Second)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("read %d bytes (%v), want the sample's %d", len(got), err, len(want))
	}
}

// Python's http.server takes no range requests: a file whose connection a proxy cuts is not
// resumed, and the input fails after exactly the bytes that came, with one line that says
// where the file was cut and why it cannot be resumed.
func pythonFileCut(t *testing.T, dir, base string) {
	want := readSample(t)
	writeFile(t, dir, "s.ts", want)
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	proxy := cutProxy(t, u.Host, 200_000, 0)
	r := open(t, "http://"+proxy+u.Path+"/s.ts")
	got, err := readAll(r, 10*time.Second)
	if len(got) == 0 || len(got) >= 200_000 || !bytes.Equal(got, want[:len(got)]) {
		t.Fatalf("read %d bytes, want the sample's first bytes up to the cut", len(got))
	}
	line := fmt.Sprintf("the file was cut short at byte %d of %d (connection lost), and the server cannot resume it: it answered the range request with the whole file (200 OK)", len(got), len(want))
	if err == nil || !strings.HasSuffix(err.Error(), line) {
		t.Fatalf("error %v, want one ending %q", err, line)
	}
}

// The sample cut into six segments of a VOD playlist is read back whole, in order; from a
// master playlist, the variant of the highest bandwidth is read, and variant=N picks another.
func pythonHLS(t *testing.T, dir, base string) {
	want := readSample(t)
	segs := cut(want, 6)
	for i, s := range segs {
		writeFile(t, dir, fmt.Sprintf("seg%d.ts", i), s)
	}
	writeFile(t, dir, "vod.m3u8", []byte(mediaPlaylistText(0, len(segs)-1, true)))
	// The low variant names segments that do not exist: reading it fails on the first.
	writeFile(t, dir, "low.m3u8", []byte("#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXTINF:1,\nmissing0.ts\n#EXT-X-ENDLIST\n"))
	writeFile(t, dir, "master.m3u8", []byte("#EXTM3U\n"+
		"#EXT-X-STREAM-INF:BANDWIDTH=800000\nlow.m3u8\n"+
		"#EXT-X-STREAM-INF:BANDWIDTH=3000000\nvod.m3u8\n"))

	for _, path := range []string{"/vod.m3u8", "/master.m3u8", "/master.m3u8?variant=1"} {
		t.Run("url="+path, func(t *testing.T) {
			r := open(t, base+path)
			got, err := readAll(r, 10*time.Second)
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("read %d bytes (%v), want the sample's %d", len(got), err, len(want))
			}
			if st := r.Stats(); st.Segments != int64(len(segs)) || st.SegmentsMissed != 0 || st.PlaylistReloads != 0 {
				t.Errorf("stats %+v, want %d segments, none missed, no reload", st, len(segs))
			}
		})
	}
	t.Run("url=/master.m3u8?variant=0", func(t *testing.T) {
		r := open(t, base+"/master.m3u8?variant=0")
		got, err := readAll(r, 10*time.Second)
		if len(got) != 0 || err == nil || !strings.Contains(err.Error(), "/missing0.ts: server answered 404") {
			t.Fatalf("read %d bytes, error %v; want the low variant's missing segment", len(got), err)
		}
	})
}

// A live playlist that grows on disk while the reader runs, its window sliding, is read whole
// and in order, each segment once, to the EXT-X-ENDLIST it ends with.
func pythonLive(t *testing.T, dir, base string) {
	want := readSample(t)
	segs := cut(want, 6)
	for i, s := range segs {
		writeFile(t, dir, fmt.Sprintf("seg%d.ts", i), s)
	}
	writeFile(t, dir, "live.m3u8", []byte(mediaPlaylistText(0, 1, false)))
	r := open(t, base+"/live.m3u8")
	type result struct {
		b   []byte
		err error
	}
	done := make(chan result, 1)
	go func() {
		b, err := readAll(r, 20*time.Second)
		done <- result{b, err}
	}()
	waitStats(t, r, "2 segments read", func(s Stats) bool { return s.Segments >= 2 })
	writeFile(t, dir, "live.m3u8", []byte(mediaPlaylistText(1, 3, false)))
	waitStats(t, r, "4 segments read", func(s Stats) bool { return s.Segments >= 4 })
	writeFile(t, dir, "live.m3u8", []byte(mediaPlaylistText(3, 5, true)))
	res := <-done
	if res.err != nil || !bytes.Equal(res.b, want) {
		t.Fatalf("read %d bytes (%v), want the sample's %d", len(res.b), res.err, len(want))
	}
	if st := r.Stats(); st.Segments != 6 || st.SegmentsMissed != 0 || st.PlaylistReloads < 2 {
		t.Errorf("stats %+v, want 6 segments, none missed, 2 reloads at least", st)
	}
}

// A live playlist whose window slides past segments before they are read: those are counted
// missed, and the reader goes on with the next it finds.
func pythonLiveMissed(t *testing.T, dir, base string) {
	sample := readSample(t)
	segs := cut(sample, 6)
	for i, s := range segs {
		writeFile(t, dir, fmt.Sprintf("seg%d.ts", i), s)
	}
	writeFile(t, dir, "live.m3u8", []byte(mediaPlaylistText(0, 1, false)))
	r := open(t, base+"/live.m3u8")
	done := make(chan []byte, 1)
	go func() {
		b, err := readAll(r, 20*time.Second)
		if err != nil {
			t.Error(err)
		}
		done <- b
	}()
	waitStats(t, r, "2 segments read", func(s Stats) bool { return s.Segments >= 2 })
	writeFile(t, dir, "live.m3u8", []byte(mediaPlaylistText(4, 5, true))) // 2 and 3 are gone
	got := <-done
	want := bytes.Join([][]byte{segs[0], segs[1], segs[4], segs[5]}, nil)
	if !bytes.Equal(got, want) {
		t.Fatalf("read %d bytes, want the %d of segments 0, 1, 4 and 5", len(got), len(want))
	}
	if st := r.Stats(); st.Segments != 4 || st.SegmentsMissed != 2 {
		t.Errorf("stats %+v, want 4 segments read and 2 missed", st)
	}
}

// ffmpeg serving a sample with -listen 1 is read as a live stream (no Content-Length) until
// ffmpeg ends it and the reconnections give up. The sample is the clear one: ffmpeg cannot
// find the codec parameters of the scrambled one's streams and writes nothing of it. ffmpeg
// remuxes the stream (its own PSI, PCR and padding), so the bytes are not the sample's: the
// check is that a long run of whole 188-byte packets comes, each with its sync byte.
func TestFFmpegListen(t *testing.T) {
	if _, err := exec.LookPath("ffmpeg"); err != nil {
		t.Skip("ffmpeg is missing: the test against ffmpeg -listen needs it")
	}
	port := ports.TCP(t)
	u := "http://127.0.0.1:" + strconv.Itoa(port) + "/s.ts"
	p := proc.Start(t, 60*time.Second, "ffmpeg", "-hide_banner", "-nostdin", "-loglevel", "error",
		"-i", "../samples/demo-clear.ts", "-c", "copy", "-f", "mpegts", "-listen", "1", u)
	// ffmpeg -listen 1 serves one client, so no probe may connect first: Open is tried until
	// ffmpeg listens, each refused try leaving it untouched.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	var r *Reader
	for range 200 {
		var err error
		if r, err = Open(ctx, u, Options{GiveUpAfter: time.Second}); err == nil {
			break
		}
		if p.Exited() {
			t.Fatalf("ffmpeg exited: %s", p.Output())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if r == nil {
		t.Fatalf("ffmpeg did not serve %s: %s", u, p.Output())
	}
	t.Cleanup(func() { r.Close() })
	got, err := readAll(r, 20*time.Second)
	if err == nil || !strings.Contains(err.Error(), "gave up") {
		t.Errorf("the stream ended with %v, want the reconnections given up once ffmpeg is gone", err)
	}
	if len(got)%188 != 0 || len(got)/188 < 1000 {
		t.Fatalf("read %d bytes, want over 1000 whole packets", len(got))
	}
	for i := 0; i < len(got); i += 188 {
		if got[i] != 0x47 {
			t.Fatalf("no sync byte at packet %d", i/188)
		}
	}
	if !p.Ended(5 * time.Second) {
		t.Error("ffmpeg still runs after serving its one client")
	}
	if st := r.Stats(); st.Bytes != int64(len(got)) {
		t.Errorf("stats count %d bytes, read %d", st.Bytes, len(got))
	}
}
