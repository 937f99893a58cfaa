package scs

import (
	"bytes"
	"testing"
	"time"

	"github.com/tsdescramble/tsdescramble/ts"
)

// TestLiveWallClock: with Live, each packet is handed on in the call that brings it, without
// waiting for more input or for a PCR, and crypto periods follow the wall clock, on a feed that
// carries no PCR at all (on the PCR clock it would be one period for ever).
func TestLiveWallClock(t *testing.T) {
	var starts []int64
	s, err := New(t.Context(), Config{CPDuration: 100 * time.Millisecond, Live: true,
		NextCW:   func() ([]byte, error) { return make([]byte, 8), nil },
		OnPeriod: func(n int64, _ []byte) { starts = append(starts, n) }})
	if err != nil {
		t.Fatal(err)
	}
	pkt := make([]byte, ts.PacketSize)
	pkt[0], pkt[1], pkt[2], pkt[3] = 0x47, 0x01, 0x00, 0x10 // no adaptation field: no PCR
	var out ts.Units
	for i := range 6 {
		// Five packets, then a pause: each packet goes on before the next comes.
		for j := range 5 {
			if err := s.Packet(pkt, ts.Framing188, &out); err != nil {
				t.Fatalf("batch %d, packet %d: %v", i, j, err)
			}
			if n := out.Len(); n != 1 {
				t.Fatalf("batch %d, packet %d: %d units handed on, want the packet: the Stage waits for more input", i, j, n)
			}
			if u, _ := out.Take(); !bytes.Equal(u, pkt) {
				t.Fatalf("batch %d, packet %d: % X handed on", i, j, u[:4])
			}
		}
		time.Sleep(60 * time.Millisecond)
	}
	if err := s.End(&out); err != nil || out.Len() != 0 {
		t.Fatalf("at the end: %d units held back, %v", out.Len(), err)
	}
	// 6 batches 60 ms apart: 300 ms and more of wall time, periods of 100 ms.
	if len(starts) < 3 || starts[0] != 1 {
		t.Fatalf("periods began at packets %v, want 3 or more from packet 1", starts)
	}
	if st := s.Stats(); st.PCRs != 0 || st.Periods != int64(len(starts)) || st.Packets != 30 {
		t.Fatalf("stats %+v", st)
	}
}
