package scrambling_test

import (
	"testing"

	"github.com/tsdescramble/tsdescramble/scrambling"
)

// tsPacketSize is what a scrambled payload stands for in the input: a whole TS packet.
const tsPacketSize = 188

// BenchmarkSystems measures each system, and each key-slot mode, on a batch of Lanes() full 184-byte payloads, in MB/s
// of TS packets (188 bytes per payload).
func BenchmarkSystems(b *testing.B) {
	var systems []scrambling.System
	for _, name := range scrambling.Names() {
		systems = append(systems, lookup(b, name))
	}
	for _, s := range append(systems, modeSystems(b)...) {
		name := s.Name()
		k, err := s.NewKey(testKey(name, s.KeySizes()[0]))
		if err != nil {
			b.Fatal(err)
		}
		payloads := make([][]byte, s.Lanes())
		for i := range payloads {
			payloads[i] = make([]byte, maxPayload)
		}
		for _, dir := range []string{"Decrypt", "Encrypt"} {
			b.Run(name+"/"+dir, func(b *testing.B) {
				p := s.NewProcessor()
				f := p.Decrypt
				if dir == "Encrypt" {
					f = p.Encrypt
				}
				b.SetBytes(int64(len(payloads) * tsPacketSize))
				b.ReportAllocs()
				for b.Loop() {
					f(k, payloads)
				}
			})
		}
	}
}
