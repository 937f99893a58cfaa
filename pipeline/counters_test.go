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
)

// Counters give a run's counts while it goes: here read after the run, where they equal its
// statistics; a live service's metrics read them from another goroutine as it runs.
func ExampleCounters() {
	cw := []byte{0x11, 0x22, 0x33, 0x66, 0x44, 0x55, 0x66, 0xff}
	var live pipeline.Counters
	_, err := pipeline.Run(context.Background(), bytes.NewReader(scrambledStream(cw, 3000, 1000)), io.Discard, pipeline.Options{
		Keys:     keys.NewFixed(cw, cw),
		Counters: &live,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(live.PacketsIn.Load(), "in,", live.PacketsOut.Load(), "out,", live.Descrambled.Load(), "descrambled,", live.KeyChanges.Load(), "key changes")
	for _, p := range live.PIDs() {
		fmt.Printf("PID %#04x: %d packets, unit starts %d good, %d bad\n", p.PID, p.Packets, p.PESGood, p.PESBad)
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

// The counters move while the run waits for more input: a unit of work read and written
// shows before the run ends.
func TestCountersWhileRunning(t *testing.T) {
	cw := []byte{0x11, 0x22, 0x33, 0x66, 0x44, 0x55, 0x66, 0xff}
	stream := scrambledStream(cw, 2000, 2000)
	const batch = 100
	r := &gatedReader{parts: [][]byte{stream[:1000*188], {}, stream[1000*188:]}, gate: make(chan struct{})}
	var live pipeline.Counters
	done := make(chan pipeline.Stats)
	go func() {
		st, err := pipeline.Run(context.Background(), r, io.Discard, pipeline.Options{Keys: keys.NewFixed(cw, cw), Counters: &live, Batch: batch, Workers: 2})
		if err != nil {
			t.Error(err)
		}
		done <- st
	}()
	// The run holds back the packets of a crypto period until a unit start decides it, and
	// writes what is decided; the first part must show, in full units of work.
	var out int64
	for range 1000 { // 10 s: the tests also run under emulators
		if out = live.PacketsOut.Load(); out >= 900 {
			break
		}
		waitABit()
	}
	// The unit being read when the input paused is not counted until it is complete.
	if in := live.PacketsIn.Load(); in < 900 || in > 1000 || out < 900 || out%batch != 0 {
		t.Fatalf("while waiting for input: %d packets in, %d out; want 900 to 1000 in and at least 900 out, whole units", in, out)
	}
	close(r.gate)
	st := <-done
	if live.PacketsIn.Load() != st.Packets || live.PacketsOut.Load() != st.PacketsOut || live.Descrambled.Load() != st.Descrambled ||
		live.PESGood.Load() != st.PESGood || live.PESBad.Load() != st.PESBad {
		t.Errorf("after the run, counters %d in %d out %d descrambled %d/%d checks; statistics %d %d %d %d/%d",
			live.PacketsIn.Load(), live.PacketsOut.Load(), live.Descrambled.Load(), live.PESGood.Load(), live.PESBad.Load(),
			st.Packets, st.PacketsOut, st.Descrambled, st.PESGood, st.PESBad)
	}
	// Both are copies of the run's counts: what they must be comes from the input.
	if in := countInput(stream); in.packets != 2000 || in.scrambled != 2000 || in.unitStarts != 2000 {
		t.Fatalf("the input has %d packets, %d scrambled, %d unit starts; want 2000 of each", in.packets, in.scrambled, in.unitStarts)
	}
	checkAgainstInput(t, &live, stream)
}

// inputCounts are the counts of a stream of 188-byte packets read from its own header bits,
// independently of the run: what a run's counters must come to when every scrambled packet
// has its key.
type inputCounts struct {
	packets, scrambled, unitStarts, keyChanges, ccErrors int64
	pids                                                 map[uint16]*pipeline.PIDCount
}

func countInput(stream []byte) inputCounts {
	in := inputCounts{pids: map[uint16]*pipeline.PIDCount{}}
	lastCC, lastTSC := map[uint16]byte{}, map[uint16]byte{}
	for off := 0; off+188 <= len(stream); off += 188 {
		p := stream[off : off+188]
		pid := uint16(p[1]&0x1f)<<8 | uint16(p[2])
		tsc, cc, payload := p[3]>>6, p[3]&0x0f, p[3]&0x10 != 0
		c := in.pids[pid]
		if c == nil {
			c = &pipeline.PIDCount{PID: pid}
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

// checkAgainstInput compares the counters of a run that descrambled every packet with the
// counts read from its input.
func checkAgainstInput(t *testing.T, live *pipeline.Counters, stream []byte) {
	t.Helper()
	in := countInput(stream)
	if got := live.BytesIn.Load(); got != int64(len(stream)) {
		t.Errorf("%d bytes in, the input has %d", got, len(stream))
	}
	for _, c := range []struct {
		name      string
		got, want int64
	}{
		{"packets in", live.PacketsIn.Load(), in.packets},
		{"packets out", live.PacketsOut.Load(), in.packets},
		{"descrambled", live.Descrambled.Load(), in.scrambled},
		{"left as they came", live.LeftAsCame.Load(), 0},
		{"key changes", live.KeyChanges.Load(), in.keyChanges},
		{"unit starts good", live.PESGood.Load(), in.unitStarts},
		{"unit starts bad", live.PESBad.Load(), 0},
		{"continuity errors", live.CCErrors.Load(), in.ccErrors},
	} {
		if c.got != c.want {
			t.Errorf("%s: counters %d, the input's headers %d", c.name, c.got, c.want)
		}
	}
	pids := live.PIDs()
	if len(pids) != len(in.pids) {
		t.Errorf("counters for %d PIDs, the input has %d", len(pids), len(in.pids))
	}
	for _, p := range pids {
		if want := in.pids[p.PID]; want == nil || p != *want {
			t.Errorf("PID %#04x: counters %+v, the input's headers %+v", p.PID, p, want)
		}
	}
}

func waitABit() { <-time.After(10 * time.Millisecond) }

// The counters carry each PID's continuity errors as the statistics count them, and with a
// latency bound how long the units of work waited in the run.
func TestCountersContinuityAndLatency(t *testing.T) {
	cw := []byte{0x11, 0x22, 0x33, 0x66, 0x44, 0x55, 0x66, 0xff}
	stream := scrambledStream(cw, 3000, 1000)
	stream = append(stream[:500*188:500*188], stream[501*188:]...) // one packet lost
	var live pipeline.Counters
	st, err := pipeline.Run(context.Background(), bytes.NewReader(stream), io.Discard, pipeline.Options{
		Keys: keys.NewFixed(cw, cw), Counters: &live, Latency: time.Second, Batch: 100,
	})
	if err != nil {
		t.Fatal(err)
	}
	if st.CCErrors == 0 || live.CCErrors.Load() != st.CCErrors {
		t.Errorf("continuity errors: counters %d, statistics %d (want above 0)", live.CCErrors.Load(), st.CCErrors)
	}
	for i, p := range live.PIDs() {
		if p.PID != st.PIDs[i].PID || p.CCErrors != st.PIDs[i].CCErrors {
			t.Errorf("PID %#04x: counters %d continuity errors, statistics %d", p.PID, p.CCErrors, st.PIDs[i].CCErrors)
		}
	}
	// The counters and the statistics are copies of one count: what it must be comes from
	// the input, where one packet of 3000 is missing and the parity changes twice.
	if in := countInput(stream); in.packets != 2999 || in.ccErrors != 1 || in.keyChanges != 2 {
		t.Fatalf("the input has %d packets, %d continuity errors, %d key changes; want 2999, 1, 2", in.packets, in.ccErrors, in.keyChanges)
	}
	checkAgainstInput(t, &live, stream)
	if l, top := live.Latency.Load(), live.LatencyMax.Load(); l <= 0 || top < l || top > int64(10*time.Second) {
		t.Errorf("latency %v, at most %v: want above 0, and the last at most the longest", time.Duration(l), time.Duration(top))
	}

	// Without a latency bound no arrival is noted: no latency.
	var file pipeline.Counters
	if _, err := pipeline.Run(context.Background(), bytes.NewReader(stream), io.Discard, pipeline.Options{Keys: keys.NewFixed(cw, cw), Counters: &file}); err != nil {
		t.Fatal(err)
	}
	if file.LatencyMax.Load() != 0 {
		t.Errorf("latency %v without a latency bound", time.Duration(file.LatencyMax.Load()))
	}
}
