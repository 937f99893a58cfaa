package pipeline_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/tsdescramble/tsdescramble/keys"
	"github.com/tsdescramble/tsdescramble/pipeline"
	"github.com/tsdescramble/tsdescramble/ts"
)

// An Observer gives a run's counts while it goes: here read after the run, where they are its
// statistics; a live service's metrics read them from another goroutine as it runs.
func ExampleObserver() {
	cw := []byte{0x11, 0x22, 0x33, 0x66, 0x44, 0x55, 0x66, 0xff}
	var obs pipeline.Observer
	_, err := pipeline.Run(context.Background(), ts.NewSource(bytes.NewReader(scrambledStream(cw, 3000, 1000))), io.Discard, pipeline.Options{
		Keys:     keys.NewFixed(cw, cw),
		Observer: &obs,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	live := obs.Snapshot()
	fmt.Println(live.Packets, "in,", live.PacketsOut, "out,", live.Descrambled, "descrambled,", live.KeyChanges, "key changes")
	for _, p := range live.PIDs {
		fmt.Printf("PID %#04x: %d packets, unit starts %d good, %d bad\n", p.PID, p.Packets, p.PESGood[0]+p.PESGood[1], p.PESBad[0]+p.PESBad[1])
	}
	// Output:
	// 3000 in, 3000 out, 3000 descrambled, 2 key changes
	// PID 0x0100: 3000 packets, unit starts 3000 good, 0 bad
}

// gatedReader hands out its stream in parts, each only when the test asks for it.
type gatedReader struct {
	parts [][]byte
	gate  chan struct{}
}

func (g *gatedReader) Read(p []byte) (int, error) {
	if len(g.parts) == 0 {
		return 0, io.EOF
	}
	if len(g.parts[0]) == 0 {
		g.parts = g.parts[1:]
		<-g.gate
		return 0, nil
	}
	n := copy(p, g.parts[0])
	g.parts[0] = g.parts[0][n:]
	return n, nil
}

// The counts move while the run waits for more input: a unit of work read and written shows
// before the run ends.
func TestObserverWhileRunning(t *testing.T) {
	cw := []byte{0x11, 0x22, 0x33, 0x66, 0x44, 0x55, 0x66, 0xff}
	stream := scrambledStream(cw, 2000, 2000)
	const batch = 100
	r := &gatedReader{parts: [][]byte{stream[:1000*188], {}, stream[1000*188:]}, gate: make(chan struct{})}
	var obs pipeline.Observer
	done := make(chan pipeline.Stats)
	go func() {
		st, err := pipeline.Run(context.Background(), ts.NewSource(r), io.Discard, pipeline.Options{Keys: keys.NewFixed(cw, cw), Observer: &obs, Batch: batch, Workers: 2})
		if err != nil {
			t.Error(err)
		}
		done <- st
	}()
	// The run holds back the packets of a crypto period until a unit start decides it, and
	// writes what is decided; the first part must show, in full units of work.
	var out int64
	for range 1000 { // 10 s: the tests also run under emulators
		if out = obs.Snapshot().PacketsOut; out >= 900 {
			break
		}
		waitABit()
	}
	// The unit being read when the input paused is not counted until it is complete.
	if in := obs.Snapshot().Packets; in < 900 || in > 1000 || out < 900 || out%batch != 0 {
		t.Fatalf("while waiting for input: %d packets in, %d out; want 900 to 1000 in and at least 900 out, whole units", in, out)
	}
	close(r.gate)
	st := <-done
	live := obs.Snapshot()
	if live.Packets != st.Packets || live.PacketsOut != st.PacketsOut || live.Descrambled != st.Descrambled ||
		live.PESGood != st.PESGood || live.PESBad != st.PESBad {
		t.Errorf("after the run, snapshot %d in %d out %d descrambled %d/%d checks; statistics %d %d %d %d/%d",
			live.Packets, live.PacketsOut, live.Descrambled, live.PESGood, live.PESBad,
			st.Packets, st.PacketsOut, st.Descrambled, st.PESGood, st.PESBad)
	}
	// Both are copies of the run's counts: what they must be comes from the input.
	if in := countInput(stream); in.packets != 2000 || in.scrambled != 2000 || in.unitStarts != 2000 {
		t.Fatalf("the input has %d packets, %d scrambled, %d unit starts; want 2000 of each", in.packets, in.scrambled, in.unitStarts)
	}
	checkAgainstInput(t, live, stream)
}

// pidCount is what the input's headers say of one PID: what a run's counts of it must come to.
type pidCount struct {
	PID         uint16
	Packets     int64
	Descrambled int64
	PESGood     int64
	PESBad      int64
	CCErrors    int64
}

// countOf is the part of a run's counts of a PID that the input's headers say.
func countOf(p pipeline.PIDStats) pidCount {
	return pidCount{p.PID, p.Packets, p.Descrambled, p.PESGood[0] + p.PESGood[1], p.PESBad[0] + p.PESBad[1], p.CCErrors}
}

// inputCounts are the counts of a stream of 188-byte packets read from its own header bits,
// independently of the run: what a run's counters must come to when every scrambled packet
// has its key.
type inputCounts struct {
	packets, scrambled, unitStarts, keyChanges, ccErrors int64
	pids                                                 map[uint16]*pidCount
}

func countInput(stream []byte) inputCounts {
	in := inputCounts{pids: map[uint16]*pidCount{}}
	lastCC, lastTSC := map[uint16]byte{}, map[uint16]byte{}
	for off := 0; off+188 <= len(stream); off += 188 {
		p := stream[off : off+188]
		pid := uint16(p[1]&0x1f)<<8 | uint16(p[2])
		tsc, cc, payload := p[3]>>6, p[3]&0x0f, p[3]&0x10 != 0
		c := in.pids[pid]
		if c == nil {
			c = &pidCount{PID: pid}
			in.pids[pid] = c
		}
		in.packets++
		c.Packets++
		if last, seen := lastCC[pid]; payload && seen && cc != (last+1)&0x0f && cc != last {
			in.ccErrors++
			c.CCErrors++
		}
		if payload {
			lastCC[pid] = cc
		}
		if tsc < 2 {
			continue
		}
		in.scrambled++
		c.Descrambled++
		if p[1]&0x40 != 0 {
			in.unitStarts++
			c.PESGood++
		}
		if last, seen := lastTSC[pid]; seen && last != tsc {
			in.keyChanges++
		}
		lastTSC[pid] = tsc
	}
	return in
}

// checkAgainstInput compares the counts of a run that descrambled every packet with the
// counts read from its input.
func checkAgainstInput(t *testing.T, live pipeline.Stats, stream []byte) {
	t.Helper()
	in := countInput(stream)
	if got := live.BytesIn; got != int64(len(stream)) {
		t.Errorf("%d bytes in, the input has %d", got, len(stream))
	}
	for _, c := range []struct {
		name      string
		got, want int64
	}{
		{"packets in", live.Packets, in.packets},
		{"packets out", live.PacketsOut, in.packets},
		{"descrambled", live.Descrambled, in.scrambled},
		{"left as they came", live.NoKey + live.LeftScrambled, 0},
		{"key changes", int64(live.KeyChanges), in.keyChanges},
		{"unit starts good", live.PESGood, in.unitStarts},
		{"unit starts bad", live.PESBad, 0},
		{"continuity errors", live.CCErrors, in.ccErrors},
	} {
		if c.got != c.want {
			t.Errorf("%s: counters %d, the input's headers %d", c.name, c.got, c.want)
		}
	}
	if len(live.PIDs) != len(in.pids) {
		t.Errorf("counts for %d PIDs, the input has %d", len(live.PIDs), len(in.pids))
	}
	for _, ps := range live.PIDs {
		if p, want := countOf(ps), in.pids[ps.PID]; want == nil || p != *want {
			t.Errorf("PID %#04x: counts %+v, the input's headers %+v", p.PID, p, want)
		}
	}
}

func waitABit() { <-time.After(10 * time.Millisecond) }

// A snapshot carries each PID's continuity errors as the statistics count them, and with a
// latency bound how long the units of work waited in the run.
func TestObserverContinuityAndLatency(t *testing.T) {
	cw := []byte{0x11, 0x22, 0x33, 0x66, 0x44, 0x55, 0x66, 0xff}
	stream := scrambledStream(cw, 3000, 1000)
	stream = append(stream[:500*188:500*188], stream[501*188:]...) // one packet lost
	var obs pipeline.Observer
	st, err := pipeline.Run(context.Background(), ts.NewSource(bytes.NewReader(stream)), io.Discard, pipeline.Options{
		Keys: keys.NewFixed(cw, cw), Observer: &obs, Latency: time.Second, Batch: 100,
	})
	if err != nil {
		t.Fatal(err)
	}
	live := obs.Snapshot()
	if st.CCErrors == 0 || live.CCErrors != st.CCErrors {
		t.Errorf("continuity errors: snapshot %d, statistics %d (want above 0)", live.CCErrors, st.CCErrors)
	}
	for i, p := range live.PIDs {
		if p.PID != st.PIDs[i].PID || p.CCErrors != st.PIDs[i].CCErrors {
			t.Errorf("PID %#04x: snapshot %d continuity errors, statistics %d", p.PID, p.CCErrors, st.PIDs[i].CCErrors)
		}
	}
	// The counters and the statistics are copies of one count: what it must be comes from
	// the input, where one packet of 3000 is missing and the parity changes twice.
	if in := countInput(stream); in.packets != 2999 || in.ccErrors != 1 || in.keyChanges != 2 {
		t.Fatalf("the input has %d packets, %d continuity errors, %d key changes; want 2999, 1, 2", in.packets, in.ccErrors, in.keyChanges)
	}
	checkAgainstInput(t, live, stream)
	if l, top := live.Latency, live.LatencyMax; l <= 0 || top < l || top > 10*time.Second {
		t.Errorf("latency %v, at most %v: want above 0, and the last at most the longest", l, top)
	}

	// Without a latency bound no arrival is noted: no latency.
	var file pipeline.Observer
	if _, err := pipeline.Run(context.Background(), ts.NewSource(bytes.NewReader(stream)), io.Discard, pipeline.Options{Keys: keys.NewFixed(cw, cw), Observer: &file}); err != nil {
		t.Fatal(err)
	}
	if top := file.Snapshot().LatencyMax; top != 0 {
		t.Errorf("latency %v without a latency bound", top)
	}
}
