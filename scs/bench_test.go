package scs

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/tsdescramble/tsdescramble/ts"
)

// BenchmarkStage measures the stage's cost a packet without an ECMG (crypto periods on the PCR
// clock, every packet placed in time), against BenchmarkFramer, the framing alone that any
// reading of the stream pays.
func BenchmarkStage(b *testing.B) {
	in := synthStream(20, 10000, 0, ts.Framing188, false)
	cw := []byte{1, 2, 3, 6, 5, 6, 7, 18}
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		s, err := New(context.Background(), Config{CPDuration: time.Second,
			NextCW: func() ([]byte, error) { return cw, nil }})
		if err != nil {
			b.Fatal(err)
		}
		if err := drive(s, bytes.NewReader(in), func([]byte) {}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkFramer(b *testing.B) {
	in := synthStream(20, 10000, 0, ts.Framing188, false)
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		fr := ts.NewFramer(bytes.NewReader(in))
		for {
			if _, err := fr.Next(); err != nil {
				break
			}
		}
	}
}
