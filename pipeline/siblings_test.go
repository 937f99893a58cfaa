package pipeline

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/tsdescramble/tsdescramble/keys"
	"github.com/tsdescramble/tsdescramble/ts"
)

// nullOut replaces, in both streams, the packets of pid that keep(k) refuses (k counts the
// PID's packets from 0) with null packets: a PID silent for a while, or sparse, in a stream of
// unchanged length. The packets kept are renumbered so that their continuity counters follow
// on, as a PID that simply sent nothing for a while has them.
func nullOut(streams [][]byte, pid uint16, keep func(k int) bool) {
	null := bytes.Repeat([]byte{0xFF}, ts.PacketSize)
	null[0], null[1], null[2], null[3] = ts.SyncByte, 0x1F, 0xFF, 0x10
	for _, s := range streams {
		k, kept := 0, 0
		for i := 0; i+ts.PacketSize <= len(s); i += ts.PacketSize {
			if ts.PID(s[i:]) != pid {
				continue
			}
			if keep(k) {
				s[i+3] = s[i+3]&0xF0 | byte(kept&0x0F)
				kept++
			} else {
				copy(s[i:i+ts.PacketSize], null)
			}
			k++
		}
	}
}

// checkOracle requires every packet of out to be the clear packet or the scrambled one as it
// came, and returns how many came out as they came though scrambled.
func checkOracle(t *testing.T, what string, out, clear, scrambled []byte) int {
	t.Helper()
	if len(out) != len(clear) {
		t.Fatalf("%s: %d bytes out, want %d", what, len(out), len(clear))
	}
	asCame := 0
	for i := 0; i < len(out); i += ts.PacketSize {
		o, c, s := out[i:i+ts.PacketSize], clear[i:i+ts.PacketSize], scrambled[i:i+ts.PacketSize]
		switch {
		case bytes.Equal(o, c):
		case bytes.Equal(o, s):
			asCame++
		default:
			t.Fatalf("%s: packet %d (PID %#x) is neither clear nor as it came", what, i/ts.PacketSize, ts.PID(o))
		}
	}
	return asCame
}

// A PID silent over a whole crypto period or more (subtitles, teletext, data) comes back in a
// period its own packets cannot place: of the same parity as its last under another CW, or of
// the other parity several CWs on. Its siblings in the service, whose periods went on, place
// it, and every packet comes out clear, the ones before its first unit start included.
func TestSilentPIDTakesItsSiblingsPeriods(t *testing.T) {
	t.Parallel()
	cws := append(append([][]byte{}, muxCWs...), []byte{0x31, 0x41, 0x59, 0x26, 0x53, 0x58, 0x97, 0x93})
	// One stream for every case, each silencing its copy of it: scrambling it is most of the
	// test's time.
	clear0, scrambled0 := muxStream(t, 8000, []muxPID{
		{pid: 0x100, streamType: 0x1B, cws: cws, period: 400},
		{pid: 0x101, streamType: 0x0F, cws: cws, period: 400},
	})
	for _, silent := range []struct{ from, to int }{
		{450, 1203}, // over period 2 (800-1199): back in period 3, of the same parity, mid-PES
		{390, 1611}, // over periods 1 to 3: back in period 4, of the same parity, four CWs on
		{780, 1607}, // over periods 2 and 3: back in period 4, of the other parity, three CWs on
		{800, 1200}, // exactly period 2, from its first packet to the next one's first
	} {
		t.Run(fmt.Sprintf("silent %d-%d", silent.from, silent.to), func(t *testing.T) {
			clear, scrambled := bytes.Clone(clear0), bytes.Clone(scrambled0)
			nullOut([][]byte{clear, scrambled}, 0x101, func(k int) bool { return k < silent.from || k >= silent.to })
			out, st := runMux(t, scrambled, func() *keys.Schedule { return keys.NewList(cws) })
			if n := checkOracle(t, "silent audio", out, clear, scrambled); n != 0 || !bytes.Equal(out, clear) {
				t.Fatalf("%d packets as they came; the output is not the clear stream (key failures %d, syncs %d)",
					n, st.KeyFailures, st.KeySyncs)
			}
		})
	}
}

// A PID with about one packet per crypto period changes parity from one packet to the next: a
// change its siblings share is a period, not a glitch, and no packet is descrambled with the
// key of the period before.
func TestSparsePIDIsNotAGlitch(t *testing.T) {
	t.Parallel()
	// One stream for every case, each thinning its copy of it: scrambling it is most of the
	// test's time.
	clear0, scrambled0 := muxStream(t, 12000, []muxPID{
		{pid: 0x100, streamType: 0x1B, cws: muxCWs, period: 400},
		{pid: 0x101, streamType: 0x06, cws: muxCWs, period: 400},
	})
	for _, every := range []int{310, 390, 170, 440} {
		t.Run(fmt.Sprint("one packet in ", every), func(t *testing.T) {
			clear, scrambled := bytes.Clone(clear0), bytes.Clone(scrambled0)
			// Keep runs of three packets, none a unit start, and now and then a fourth: the
			// periods of two packets or more make a later single change look like a glitch.
			nullOut([][]byte{clear, scrambled}, 0x101, func(k int) bool { return k%every >= 1 && k%every <= 3 || k%(3*every) == 7 })
			out, st := runMux(t, scrambled, func() *keys.Schedule { return keys.NewList(muxCWs) })
			n := checkOracle(t, "sparse PID", out, clear, scrambled)
			if n != 0 || st.ParityGlitches != 0 {
				t.Fatalf("%d packets left as they came, %d glitches: the sparse PID's periods were taken for glitches", n, st.ParityGlitches)
			}
		})
	}
}

// Two recordings joined inside an even period: the second goes on, without a parity change,
// under another CW. Where the continuity counters break, the join starts a period whose key the
// next unit start checks; where the counters say nothing (left at 0) and the second recording
// starts at a unit start, that unit start fails the period's key and ends the decision there.
// The packets after the join take their own key, those before it keep theirs.
func TestFailedCheckEndsDecision(t *testing.T) {
	t.Parallel()
	a, as := muxStream(t, 3000, []muxPID{{pid: 0x100, streamType: 0x1B, cws: muxCWs, period: 400}})
	other := [][]byte{muxCWs[2], muxCWs[1], muxCWs[0]} // the second recording's periods
	b, bs := muxStream(t, 3000, []muxPID{{pid: 0x100, streamType: 0x1B, cws: other, period: 400}})
	// The first cut in its third period (even, CW 3, continuity counter 3 last), the second
	// joined in its third (even, CW 1).
	cutA := (2 + 900) * ts.PacketSize
	for _, join := range []struct {
		name     string
		at       int  // the second recording's first packet of its PID
		failures bool // the classifier sees a unit start fail a decided key
	}{
		{"continuity broken mid-PES", 808, false},
		{"counters that say nothing, at a unit start", 820, true},
	} {
		t.Run(join.name, func(t *testing.T) {
			cutB := (2 + join.at) * ts.PacketSize
			clear := append(append([]byte{}, a[:cutA]...), b[cutB:]...)
			scrambled := append(append([]byte{}, as[:cutA]...), bs[cutB:]...)
			if join.failures {
				// A muxer that leaves the continuity counters at 0: they show no
				// splice, and every unit start of a decided period is tried.
				for _, s := range [][]byte{clear, scrambled} {
					for i := 0; i < len(s); i += ts.PacketSize {
						if ts.PID(s[i:]) == 0x100 {
							s[i+3] &= 0xF0
						}
					}
				}
			}
			out, st := runMux(t, scrambled, func() *keys.Schedule { return keys.NewList(muxCWs) })
			if n := checkOracle(t, "joined recordings", out, clear, scrambled); n != 0 || !bytes.Equal(out, clear) {
				t.Fatalf("%d packets as they came; the output is not the clear stream (key failures %d, bad checks %d)", n, st.KeyFailures, st.PESBad)
			}
			if st.KeyFailures > 0 != join.failures || st.PESBad != 0 {
				t.Fatalf("key failures %d (want some: %v), bad unit starts after descrambling %d", st.KeyFailures, join.failures, st.PESBad)
			}
		})
	}
}

// A capture that starts before its PAT and PMT: a PID of sections that span packets (DSM-CC,
// say) has unit starts that are neither a PES header nor a whole section under any key. Before
// a PMT says what it carries, they say nothing: they are checked again when the PMT comes,
// and the PID is neither taken for another CA system's nor counted as bad PES starts.
func TestBeforeTheTables(t *testing.T) {
	t.Parallel()
	clear, scrambled := muxStream(t, 4000, []muxPID{
		{pid: 0x100, streamType: 0x1B, cws: muxCWs, period: 400},
		{pid: 0x200, streamType: 0x0B, cws: muxCWs, period: 400, sections: true, long: true},
	})
	// The PAT and the PMT, the first two packets, come 1500 packets later.
	const at = 1500 * ts.PacketSize
	move := func(s []byte) []byte {
		tables := s[:2*ts.PacketSize]
		out := append([]byte{}, s[2*ts.PacketSize:at]...)
		out = append(out, tables...)
		return append(out, s[at:]...)
	}
	clear, scrambled = move(clear), move(scrambled)
	out, st := runMux(t, scrambled, func() *keys.Schedule { return keys.NewList(muxCWs) })
	if n := checkOracle(t, "before the tables", out, clear, scrambled); n != 0 {
		t.Fatalf("%d packets left as they came", n)
	}
	samePackets(t, "the sections", out, clear, 0x200)
	if ps := pidStats(st, 0x200); ps.PeriodsLeft != 0 || ps.PESBad != [2]int64{} || st.PESBad != 0 {
		t.Fatalf("PID 0x200: %d periods left, bad unit starts %v (in all %d)", ps.PeriodsLeft, ps.PESBad, st.PESBad)
	}
}
