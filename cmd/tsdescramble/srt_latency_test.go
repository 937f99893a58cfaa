//go:build srt && linux

package main

import (
	"fmt"
	"testing"
	"time"

	"github.com/tsdescramble/tsdescramble/internal/testsupport/ports"
	"github.com/tsdescramble/tsdescramble/internal/testsupport/proc"
	"github.com/tsdescramble/tsdescramble/srt"
)

// srtLatency is the latency= of the SRT ends the latency tests measure through: each message
// is played that long after it was sent, so it adds to the delay the command adds.
const srtLatency = 20 * time.Millisecond

// TestSRTInputLatency measures the delay through the command from an SRT input at 2 Mbit/s (a
// message of 7 packets at a time, from the package's Writer as the caller) to a UDP output, as
// TestLiveLatency does from UDP: p99 within four times the bound, plus the SRT latency, after
// the startup.
func TestSRTInputLatency(t *testing.T) {
	needLong(t, "sends for 5 s to measure the latency")
	bin := buildBinary(t, "")
	stream := readFile(t, demoScrambled)
	const mbit2 = time.Duration(7 * 188 * 8 * float64(time.Second) / 2e6)
	port := ports.UDP(t)
	ms := srtLatency.Milliseconds()
	var w *srt.Writer
	ready := func() {
		waitListening(t, port)
		var err error
		if w, err = srt.NewWriter(mustSRT(t, fmt.Sprintf("srt://127.0.0.1:%d?latency=%d", port, ms))); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { w.Close() })
	}
	send := func(d []byte) error {
		w.Write(d)
		return w.Flush()
	}
	delays, sent := measureLatencyFrom(t, bin, fmt.Sprintf("srt://127.0.0.1:%d?mode=listener&latency=%d", port, ms), ready, send, stream, 7, mbit2, 7*900)
	if _, s99 := logLatency(t, fmt.Sprintf("SRT in (latency=%d ms), 2 Mbit/s", ms), delays, sent); s99 > 4*defaultLatency+srtLatency {
		t.Errorf("p99 %v after the first %v: the latency bound of %v (and SRT's %v) does not hold", s99, startup, defaultLatency, srtLatency)
	}
}

// TestSRTOutputLatency measures the delay through the command from a UDP input at 2 Mbit/s (7
// packets a datagram) to the package's Reader listening for the command's SRT output: each
// packet's delay is the time from its datagram's send to the Read that returned it.
func TestSRTOutputLatency(t *testing.T) {
	needLong(t, "sends for 5 s to measure the latency")
	bin := buildBinary(t, "")
	stream := readFile(t, demoScrambled)
	const (
		mbit2   = time.Duration(7 * 188 * 8 * float64(time.Second) / 2e6)
		packets = 7 * 900
	)
	ms := srtLatency.Milliseconds()
	in, out := freeUDPPort(t), ports.UDP(t)
	rd, err := srt.Open(t.Context(), mustSRT(t, fmt.Sprintf("srt://127.0.0.1:%d?mode=listener&latency=%d", out, ms)))
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	tsd := proc.Start(t, time.Minute, bin, "-q", "-in", fmt.Sprintf("udp://@127.0.0.1:%d", in), "-out", fmt.Sprintf("srt://127.0.0.1:%d?latency=%d", out, ms),
		"-cw-file", demoKeys, "-packets", fmt.Sprint(packets))
	waitListening(t, in)
	for end := time.Now().Add(10 * time.Second); rd.Stats().Connections == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("the command did not call:\n%s", tsd.Output())
		}
	}
	var arrived []time.Time
	done := make(chan struct{})
	go func() {
		defer close(done)
		rd.SetIdleTimeout(5 * time.Second)
		arrived, _ = stampArrivals(rd, packets)
	}()
	sc := udpSender(t, in)
	sent := paceSend(t, func(d []byte) error { _, err := sc.Write(d); return err }, stream, 7, mbit2, packets)
	awaitRun(t, tsd, done, "the reader did not get every packet")
	if len(arrived) != packets {
		t.Fatalf("%d packets came out of %d", len(arrived), packets)
	}
	delays := delaysOf(arrived, sent)
	if _, s99 := logLatency(t, fmt.Sprintf("SRT out (latency=%d ms), 2 Mbit/s", ms), delays, sent); s99 > 4*defaultLatency+srtLatency {
		t.Errorf("p99 %v after the first %v: the latency bound of %v (and SRT's %v) does not hold", s99, startup, defaultLatency, srtLatency)
	}
}
