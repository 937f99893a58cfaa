package ts

import (
	"math/rand/v2"
	"testing"
)

// loopReader returns its bytes over and over.
type loopReader struct {
	b   []byte
	off int
}

func (r *loopReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		k := copy(p[n:], r.b[r.off:])
		n += k
		r.off = (r.off + k) % len(r.b)
	}
	return n, nil
}

// BenchmarkFramer measures the framer on a stream in sync, per framing: the work per packet.
func BenchmarkFramer(b *testing.B) {
	for _, fr := range framings {
		b.Run(fr.String(), func(b *testing.B) {
			f := NewFramer(&loopReader{b: makeUnits(1000, fr, rand.New(rand.NewPCG(1, 2)))})
			b.SetBytes(int64(fr.Size))
			b.ReportAllocs()
			for range b.N {
				if _, err := f.Next(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
