package pipeline

import (
	"math/rand/v2"

	"github.com/tsdescramble/tsdescramble/ts"
)

// framings are the packet framings, for tests that run over each.
var framings = []ts.Framing{ts.Framing188, ts.Framing192, ts.Framing204}

// makeUnits returns n packet units in framing fr; unit i has PID i and a payload that tells
// the units apart, prefix and trailer bytes included.
func makeUnits(n int, fr ts.Framing, rng *rand.Rand) []byte {
	var out []byte
	for i := range n {
		u := make([]byte, fr.Size)
		for j := range u {
			u[j] = byte(rng.IntN(256))
		}
		p := u[fr.Prefix : fr.Prefix+ts.PacketSize]
		p[0] = ts.SyncByte
		p[1], p[2] = byte(i>>8)&0x1F, byte(i)
		p[3] = 0x10 | byte(i&0xF)
		// Keep 0x47 out of the payload so that the tests control where sync bytes are.
		for j := 4; j < ts.PacketSize; j++ {
			if p[j] == ts.SyncByte {
				p[j] = 0
			}
		}
		out = append(out, u...)
	}
	return out
}
