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
