package live

import (
	"bytes"
	"io"
	"math"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/tsdescramble/tsdescramble/ts"
)

// virtualPacer paces to io.Discard on a clock that only sleeping moves, so that what the test
// measures is the schedule alone, never the machine's load.
func virtualPacer(w io.Writer, burst int) (*Pacer, *time.Time) {
	p := NewPacer(w, burst)
	now := time.Unix(0, 0)
	p.now = func() time.Time { return now }
	p.sleep = func(d time.Duration) { now = now.Add(d) }
	return p, &now
}

// pcrDuration is the time from the first PCR of the clock's PID to its last, jumps bridged.
func pcrDuration(t *testing.T, stream []byte) time.Duration {
	t.Helper()
	var c ts.PCRClock
	last := int64(0)
	for i := 0; i+ts.PacketSize <= len(stream); i += ts.PacketSize {
		if c.Observe(stream[i:i+ts.PacketSize], int64(i/ts.PacketSize)) != ts.NoPCR {
			last = int64(i / ts.PacketSize)
		}
	}
	// The clock's timeline starts at 0 at the first PCR.
	return time.Duration(c.Time(last) * 1000 / 27)
}

// play paces stream in writes of the given size and returns what reached the writer and how
// long it took on the virtual clock.
func play(t *testing.T, stream []byte, burst, write int) (*Pacer, []byte, time.Duration) {
	t.Helper()
	var out bytes.Buffer
	p, now := virtualPacer(&out, burst)
	start := *now
	for b := stream; len(b) > 0; {
		n := min(write, len(b))
		if _, err := p.Write(b[:n]); err != nil {
			t.Fatal(err)
		}
		b = b[n:]
	}
	if err := p.Flush(); err != nil {
		t.Fatal(err)
	}
	return p, out.Bytes(), now.Sub(start)
}

// TestPacerKeepsPCRTime plays the sample, a variable-bitrate stream (a video PID in bursts
// around its frames), and asks that the playout last as long as its PCRs say, within 0.5 %,
// whatever the size of the writes and the burst, and that every byte goes out as it came.
func TestPacerKeepsPCRTime(t *testing.T) {
	stream, err := os.ReadFile("../samples/demo-clear.ts")
	if err != nil {
		t.Fatal(err)
	}
	want := pcrDuration(t, stream)
	for _, c := range []struct{ burst, write int }{{7, 1316}, {1, 188}, {7, 188 * 1000}, {7, 188 * 3}, {7, 100}} {
		p, out, got := play(t, stream, c.burst, c.write)
		if !bytes.Equal(out, stream) {
			t.Errorf("burst %d, writes of %d bytes: the output differs from the input", c.burst, c.write)
		}
		t.Logf("burst %d, writes of %d bytes: played in %v, the PCRs span %v", c.burst, c.write, got, want)
		if off := math.Abs(float64(got-want)) / float64(want); off > 0.005 || p.Resets() != 0 {
			t.Errorf("burst %d, writes of %d bytes: played in %v, the PCRs span %v (%.2f %% off), %d restarts of the schedule",
				c.burst, c.write, got, want, off*100, p.Resets())
		}
	}
}

// TestPacerBridgesJumps plays the sample twice in a row, as a looped file: the PCRs leap back
// at the seam, and the playout lasts both plays without a restart of the schedule.
func TestPacerBridgesJumps(t *testing.T) {
	one, err := os.ReadFile("../samples/demo-clear.ts")
	if err != nil {
		t.Fatal(err)
	}
	stream := append(slices.Clip(one), one...)
	p, out, got := play(t, stream, 7, 1316)
	want := pcrDuration(t, stream)
	if !bytes.Equal(out, stream) || p.Resets() != 0 || math.Abs(float64(got-want))/float64(want) > 0.005 {
		t.Errorf("played in %v, the bridged PCRs span %v; %d restarts; output equal: %v", got, want, p.Resets(), bytes.Equal(out, stream))
	}
	if got < 2*pcrDuration(t, one) {
		t.Errorf("played in %v: less than twice the sample's %v", got, pcrDuration(t, one))
	}
}

// TestPacerWithoutPCR passes a stream with no PCR, and a piece of a packet at its end, at once
// and whole.
func TestPacerWithoutPCR(t *testing.T) {
	stream := make([]byte, 100*ts.PacketSize+50)
	for i := 0; i < 100; i++ {
		stream[i*ts.PacketSize] = ts.SyncByte
		stream[i*ts.PacketSize+1], stream[i*ts.PacketSize+2], stream[i*ts.PacketSize+3] = 0x01, 0x00, 0x10
	}
	p, out, got := play(t, stream, 7, 1000)
	if !bytes.Equal(out, stream) || got != 0 || p.Resets() != 0 {
		t.Errorf("played in %v with %d restarts; output equal: %v", got, p.Resets(), bytes.Equal(out, stream))
	}
}

// TestPacerSlowSource feeds the pacer from a source slower than real time: the schedule
// restarts once it falls MaxLate behind rather than send the backlog in one burst.
func TestPacerSlowSource(t *testing.T) {
	stream, err := os.ReadFile("../samples/demo-clear.ts")
	if err != nil {
		t.Fatal(err)
	}
	p, now := virtualPacer(io.Discard, 7)
	for b := stream; len(b) > 0; {
		n := min(1316, len(b))
		p.Write(b[:n])
		b = b[n:]
		*now = now.Add(40 * time.Millisecond) // 1316 bytes every 40 ms: 263 kbit/s of a 346 kbit/s stream
	}
	p.Flush()
	if p.Resets() == 0 {
		t.Errorf("no restart of the schedule for a source slower than the stream")
	}
}
