package scs

import (
	"io"
	"testing"
	"time"

	"github.com/tsdescramble/tsdescramble/ts"
)

// TestLiveWallClock: with Live, a Read hands out the packets that have come without waiting
// for more input or for a PCR, and crypto periods follow the wall clock, on a feed that
// carries no PCR at all (on the PCR clock it would be one period for ever).
func TestLiveWallClock(t *testing.T) {
	pr, pw := io.Pipe()
	defer pr.Close()
	var starts []int64
	s, err := New(t.Context(), pr, Config{CPDuration: 100 * time.Millisecond, Live: true,
		NextCW:   func() ([]byte, error) { return make([]byte, 8), nil },
		OnPeriod: func(n int64, _ []byte) { starts = append(starts, n) }})
	if err != nil {
		t.Fatal(err)
	}
	pkt := make([]byte, ts.PacketSize)
	pkt[0], pkt[1], pkt[2], pkt[3] = 0x47, 0x01, 0x00, 0x10 // no adaptation field: no PCR
	// The Stage is read in a goroutine, so that a Read that waits for more fails the test
	// rather than hanging it.
	type read struct {
		n   int
		err error
	}
	reads := make(chan read, 64)
	go func() {
		buf := make([]byte, 64<<10)
		for {
			n, err := s.Read(buf)
			reads <- read{n, err}
			if err != nil {
				return
			}
		}
	}()
	for i := range 6 {
		// Five packets, then a pause: each batch comes out before the next is written.
		go func() {
			for range 5 {
				pw.Write(pkt)
			}
		}()
		got := 0
		timeout := time.After(2 * time.Second)
		for got < 5*ts.PacketSize {
			select {
			case r := <-reads:
				if r.err != nil {
					t.Fatalf("batch %d: %v", i, r.err)
				}
				got += r.n
			case <-timeout:
				t.Fatalf("batch %d: %d bytes out after 2 s, want %d: the Stage waits for more input", i, got, 5*ts.PacketSize)
			}
		}
		time.Sleep(60 * time.Millisecond)
	}
	pw.Close()
	if r := <-reads; r.err != io.EOF {
		t.Fatalf("at the end: %d, %v", r.n, r.err)
	}
	// 6 batches 60 ms apart: 300 ms and more of wall time, periods of 100 ms.
	if len(starts) < 3 || starts[0] != 1 {
		t.Fatalf("periods began at packets %v, want 3 or more from packet 1", starts)
	}
	if st := s.Stats(); st.PCRs != 0 || st.Periods != int64(len(starts)) {
		t.Fatalf("stats %+v", st)
	}
}
