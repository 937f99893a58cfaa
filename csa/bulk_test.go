package csa

import (
	"bytes"
	"math/rand/v2"
	"os"
	"slices"
	"testing"
)

// TestBulk runs many packets through every engine and compares each with
// the scalar cipher, in chunks of 4096 packets under a fresh key: most
// payloads are full 184-byte ones, the rest of random length, the way a
// real stream mixes them. The scalar reference is far slower than the
// engines, so the default run checks 20,000 packets and -short 2,000; set
// TSD_BULK=1 for the full 1,000,000.
func TestBulk(t *testing.T) {
	total := 20_000
	switch {
	case os.Getenv("TSD_BULK") == "1":
		total = 1_000_000
	case testing.Short():
		total = 2_000
	}
	var engines []*Engine
	var names []string
	for _, te := range allEngines() {
		if te.available {
			engines = append(engines, newEngine(te.k))
			names = append(names, te.name)
		}
	}
	rng := rand.New(rand.NewPCG(21, 22))
	const chunk = 4096
	clear := make([][]byte, chunk)
	scrambled := make([][]byte, chunk)
	work := make([][]byte, chunk)
	cw := make([]byte, CWSize)
	for done := 0; done < total; done += chunk {
		n := min(chunk, total-done)
		for i := range cw {
			cw[i] = byte(rng.Uint32())
		}
		k := mustKey(t, cw)
		for i := range n {
			l := maxPayload
			if rng.IntN(4) == 0 {
				l = rng.IntN(maxPayload + 1)
			}
			clear[i] = make([]byte, l)
			for j := range clear[i] {
				clear[i][j] = byte(rng.Uint32())
			}
			scrambled[i] = slices.Clone(clear[i])
			k.Encrypt(scrambled[i])
		}
		for ei, e := range engines {
			for i := range n {
				work[i] = slices.Clone(scrambled[i])
			}
			e.Decrypt(k, work[:n])
			for i := range n {
				if !bytes.Equal(work[i], clear[i]) {
					t.Fatalf("%s: Decrypt of packet %d (length %d) differs from the scalar cipher", names[ei], done+i, len(clear[i]))
				}
			}
			e.Encrypt(k, work[:n])
			for i := range n {
				if !bytes.Equal(work[i], scrambled[i]) {
					t.Fatalf("%s: Encrypt of packet %d (length %d) differs from the scalar cipher", names[ei], done+i, len(clear[i]))
				}
			}
		}
	}
}
