package ts

import (
	"bytes"
	"io"
	"math/rand/v2"
	"testing"
)

// benchInput is 100,000 packets, in memory.
func benchInput() []byte {
	rng := rand.New(rand.NewPCG(1, 2))
	u := makeUnits(1000, Framing188, rng)
	return bytes.Repeat(u, 100)
}

// The framer alone, and the source over it: what a run pays for the one reader of its packets.
func BenchmarkFramerNext(b *testing.B) {
	in := benchInput()
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		f := NewFramer(bytes.NewReader(in))
		for {
			if _, err := f.Next(); err != nil {
				if err != io.EOF {
					b.Fatal(err)
				}
				break
			}
			_ = f.Framing()
		}
		f.Release()
	}
}

func BenchmarkSourceNext(b *testing.B) {
	in := benchInput()
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		s := NewSource(bytes.NewReader(in))
		for {
			if _, err := s.Next(); err != nil {
				if err != io.EOF {
					b.Fatal(err)
				}
				break
			}
			_ = s.Framing()
		}
		s.Close()
	}
}
