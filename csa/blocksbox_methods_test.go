package csa

import (
	"math/rand/v2"
	"testing"
)

// sboxPlanes bitslices 64 S-box inputs: bit i of in[l] becomes bit l of x[i].
func sboxPlanes(in *[64]byte) (x [8]uint64) {
	for l, v := range in {
		for i := range 8 {
			x[i] |= uint64(v>>i&1) << l
		}
	}
	return x
}

// TestBlockSboxCircuit checks the generated boolean circuit against the
// S-box table on all 256 inputs, 64 lanes at a time, and on random lanes.
func TestBlockSboxCircuit(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for round := range 20 {
		var in [64]byte
		for l := range in {
			if round < 4 {
				in[l] = byte(64*round + l)
			} else {
				in[l] = byte(rng.Uint32())
			}
		}
		x := sboxPlanes(&in)
		var y [8]uint64
		blockSboxCircuit(&x, &y)
		for l, v := range in {
			var got byte
			for j := range 8 {
				got |= byte(y[j]>>l&1) << j
			}
			if got != blockSbox[v] {
				t.Fatalf("circuit(%#02x) = %#02x, want %#02x", v, got, blockSbox[v])
			}
		}
	}
}

// BenchmarkBlockSboxMethods compares, per lane, two ways of computing the
// block cipher S-box in portable Go on 64 lanes: the boolean circuit on
// bitsliced lanes, and the byte-sliced table lookups of the generic kernel
// (which yield the permuted output too). The AVX2 and AVX-512 methods are
// timed as whole kernels by BenchmarkBlockKernel.
func BenchmarkBlockSboxMethods(b *testing.B) {
	var in [64]byte
	for l := range in {
		in[l] = byte(l * 37)
	}
	b.Run("method=circuit", func(b *testing.B) {
		x := sboxPlanes(&in)
		var y [8]uint64
		for b.Loop() {
			blockSboxCircuit(&x, &y)
			x[0] ^= y[7] // a dependency between calls, as between rounds
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*64), "ns/lane")
	})
	b.Run("method=table", func(b *testing.B) {
		var rows, s, p [8]uint64
		for g := range rows {
			for i := range 8 {
				rows[g] |= uint64(in[8*g+i]) << (8 * i)
			}
		}
		t := &sboxPerm4
		for b.Loop() {
			for g, x := range rows {
				lo := t[0][uint8(x)] | t[1][uint8(x>>8)] | t[2][uint8(x>>16)] | t[3][uint8(x>>24)]
				hi := t[0][uint8(x>>32)] | t[1][uint8(x>>40)] | t[2][uint8(x>>48)] | t[3][uint8(x>>56)]
				s[g], p[g] = lo&0xffffffff|hi<<32, lo>>32|hi&^0xffffffff
			}
			rows[0] ^= s[7] ^ p[7]
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*64), "ns/lane")
	})
}
