package csa

import (
	"bytes"
	"slices"
	"testing"
)

// FuzzEngines checks every engine against the scalar cipher on payloads cut
// from the fuzz input: 8 bytes of control word, then for each payload a
// length byte (mod 185) followed by that many bytes.
func FuzzEngines(f *testing.F) {
	f.Add(append(slices.Clone(lengthTableCW), 184))
	seed := slices.Clone(lengthTableCW)
	for _, n := range []byte{0, 7, 8, 9, 15, 16, 17, 100, 183, 184} {
		seed = append(seed, n)
		seed = append(seed, make([]byte, n)...)
	}
	f.Add(seed)
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < CWSize {
			return
		}
		k := mustKey(t, data[:CWSize])
		data = data[CWSize:]
		var payloads [][]byte
		for len(data) > 0 {
			n := min(int(data[0])%(maxPayload+1), len(data)-1)
			payloads = append(payloads, slices.Clone(data[1:1+n]))
			data = data[1+n:]
		}
		for _, te := range allEngines() {
			if !te.available {
				continue
			}
			e := newEngine(te.k)
			for _, decrypt := range []bool{true, false} {
				got := make([][]byte, len(payloads))
				for i, p := range payloads {
					got[i] = slices.Clone(p)
				}
				if decrypt {
					e.Decrypt(k, got)
				} else {
					e.Encrypt(k, got)
				}
				for i, p := range payloads {
					want := slices.Clone(p)
					if decrypt {
						k.Decrypt(want)
					} else {
						k.Encrypt(want)
					}
					if !bytes.Equal(got[i], want) {
						t.Fatalf("%s (decrypt=%v): payload %d of length %d differs from the scalar cipher", te.name, decrypt, i, len(p))
					}
				}
			}
		}
	})
}
