package psi

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
)

// TestFFmpegTwoPrograms reads the tables of a two-program stream made by ffmpeg, a muxer
// written independently of this package.
func TestFFmpegTwoPrograms(t *testing.T) {
	ffmpeg, err := exec.LookPath("ffmpeg")
	if err != nil {
		t.Skip("ffmpeg is not installed: skipping the check against a stream it makes")
	}
	if testing.Short() {
		t.Skip("skipping ffmpeg in -short mode")
	}
	out := filepath.Join(t.TempDir(), "two.ts")
	cmd := exec.Command(ffmpeg, "-hide_banner", "-loglevel", "error", "-nostdin",
		"-f", "lavfi", "-i", "testsrc2=size=176x144:rate=25",
		"-f", "lavfi", "-i", "smptebars=size=176x144:rate=25",
		"-f", "lavfi", "-i", "sine=frequency=1000:sample_rate=48000",
		"-t", "1", "-map", "0:v", "-map", "2:a", "-map", "1:v", "-map", "2:a",
		"-c:v", "mpeg2video", "-c:a", "mp2",
		"-program", "program_num=1:title=one:st=0:st=1",
		"-program", "program_num=2:title=two:st=2:st=3",
		"-f", "mpegts", out)
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("ffmpeg: %v\n%s", err, msg)
	}
	ts, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(ts) == 0 || len(ts)%PacketSize != 0 {
		t.Fatalf("ffmpeg wrote %d bytes", len(ts))
	}
	tr := NewTracker()
	seen := map[uint16]bool{}
	for p := range slices.Chunk(ts, PacketSize) {
		seen[uint16(p[1]&0x1F)<<8|uint16(p[2])] = true
		tr.Feed(p)
	}
	ss := tr.Services()
	if len(ss) != 2 || ss[0].Number != 1 || ss[1].Number != 2 {
		t.Fatalf("services %+v", ss)
	}
	if st := tr.Stats(); st.CRCErrors+st.Malformed+st.Discontinuities != 0 || st.Sections == 0 {
		t.Fatalf("stats %+v", st)
	}
	for _, s := range ss {
		if !s.PMTSeen || len(s.Streams) != 2 || s.Streams[0].Type != 0x02 || s.Streams[1].Type != 0x03 && s.Streams[1].Type != 0x04 {
			t.Fatalf("service %+v", s)
		}
		pids, ok := tr.ServicePIDs(s.Number)
		if !ok || len(pids) < 3 {
			t.Fatalf("service %d PIDs %#x", s.Number, pids)
		}
		for _, pid := range pids {
			if !seen[pid] {
				t.Errorf("service %d: PID %#x is not in the stream", s.Number, pid)
			}
		}
	}
	if ss[0].Streams[0].PID == ss[1].Streams[0].PID {
		t.Fatal("both services have the same video PID")
	}
}
