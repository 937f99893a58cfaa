package psi

import (
	"slices"
	"testing"

	"github.com/tsdescramble/tsdescramble/internal/testsupport/testmedia"
)

// TestFFmpegTwoPrograms reads the tables of a two-program stream made by ffmpeg, a muxer
// written independently of this package.
func TestFFmpegTwoPrograms(t *testing.T) {
	ts := testmedia.TwoPrograms(t, 1, "176x144", "two")
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
