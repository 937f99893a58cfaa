package csa

import (
	"math/rand/v2"
	"strconv"
	"testing"
)

// benchPayloads returns n payloads: all 184 bytes long ("full"), or of
// random lengths 0..184 ("mixed").
func benchPayloads(n int, mixed bool) [][]byte {
	rng := rand.New(rand.NewPCG(1, 1))
	ps := make([][]byte, n)
	for i := range ps {
		l := maxPayload
		if mixed {
			l = rng.IntN(maxPayload + 1)
		}
		ps[i] = make([]byte, l)
		for j := range ps[i] {
			ps[i][j] = byte(rng.Uint32())
		}
	}
	return ps
}

// Throughput is counted in bytes of TS input: 188 per packet.

func BenchmarkScalar(b *testing.B) {
	k := mustKey(b, lengthTableCW)
	for _, mixed := range []bool{false, true} {
		name := "payloads=full"
		if mixed {
			name = "payloads=mixed"
		}
		b.Run(name, func(b *testing.B) {
			ps := benchPayloads(64, mixed)
			b.SetBytes(int64(len(ps) * 188))
			b.ReportAllocs()
			for b.Loop() {
				for _, p := range ps {
					k.Decrypt(p)
				}
			}
		})
	}
}

func BenchmarkEngine(b *testing.B) {
	k := mustKey(b, lengthTableCW)
	for _, te := range allEngines() {
		if !te.available {
			continue
		}
		for _, dir := range []string{"decrypt", "encrypt"} {
			for _, c := range []struct {
				payloads string
				packets  int
			}{{"full", te.lanes}, {"mixed", te.lanes}, {"full", 12}} {
				name := "engine=" + te.name + "/dir=" + dir + "/payloads=" + c.payloads + "/packets=" + strconv.Itoa(c.packets)
				b.Run(name, func(b *testing.B) {
					e := newEngine(te.k)
					ps := benchPayloads(c.packets, c.payloads == "mixed")
					b.SetBytes(int64(len(ps) * 188))
					b.ReportAllocs()
					for b.Loop() {
						if dir == "decrypt" {
							e.Decrypt(k, ps)
						} else {
							e.Encrypt(k, ps)
						}
					}
					b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(ps)), "ns/packet")
				})
			}
		}
	}
}
