package probe

import (
	"bytes"
	"testing"
)

// BenchmarkProbe measures Probe on a two-service stream held in memory, in MB/s of input.
func BenchmarkProbe(b *testing.B) {
	ts := buildSynthetic(400).ts
	b.SetBytes(int64(len(ts)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Probe(bytes.NewReader(ts)); err != nil {
			b.Fatal(err)
		}
	}
}
