package csa

import (
	"bytes"
	"math/rand/v2"
	"reflect"
	"testing"
)

// TestEngineReset runs an engine over payloads of one key, both directions and a batch cut
// short by a panic, resets it, and checks that it keeps nothing of them (no payload byte, no
// payload reference, no stream state) and that it then gives the same bytes as a new engine.
func TestEngineReset(t *testing.T) {
	for _, te := range allEngines() {
		t.Run("engine="+te.name, func(t *testing.T) {
			if !te.available {
				t.Skipf("the CPU cannot run %s: no %s", te.name, missingFeatures(te.k))
			}
			rng := rand.New(rand.NewPCG(21, uint64(te.lanes)))
			payloads := func(n int) [][]byte {
				ps := make([][]byte, n)
				for i := range ps {
					n := maxPayload // most payloads are whole, some follow an adaptation field
					if rng.IntN(4) == 0 {
						n = rng.IntN(maxPayload + 1)
					}
					ps[i] = make([]byte, n)
					for j := range ps[i] {
						ps[i][j] = byte(rng.Uint32())
					}
				}
				return ps
			}
			cw := make([]byte, CWSize)
			for i := range cw {
				cw[i] = byte(rng.Uint32())
			}
			used := newEngine(te.k)
			first := mustKey(t, cw)
			used.Decrypt(first, payloads(te.lanes+5))
			used.Encrypt(first, payloads(te.lanes/2+1))
			func() {
				defer func() { _ = recover() }()
				used.Decrypt(first, append(payloads(3), make([]byte, maxPayload+1)))
			}()
			used.Reset()
			checkWiped(t, used, newEngine(te.k))
			if n := testing.AllocsPerRun(3, used.Reset); n != 0 {
				t.Errorf("Reset: %v allocations per call, want 0", n)
			}

			cw[0] ^= 0x5a
			k := mustKey(t, cw)
			for _, decrypt := range []bool{true, false} {
				fresh := newEngine(te.k)
				a := payloads(2*te.lanes + 3)
				b := make([][]byte, len(a))
				for i, p := range a {
					b[i] = bytes.Clone(p)
				}
				if decrypt {
					used.Decrypt(k, a)
					fresh.Decrypt(k, b)
				} else {
					used.Encrypt(k, a)
					fresh.Encrypt(k, b)
				}
				for i := range a {
					if !bytes.Equal(a[i], b[i]) {
						t.Fatalf("decrypt %v: payload %d of %d bytes: reset engine gives\n%x\nnew engine gives\n%x", decrypt, i, len(a[i]), a[i], b[i])
					}
				}
			}
		})
	}
}

// checkWiped fails t if e holds anything a new engine of its kernel does not.
func checkWiped(t *testing.T, e, fresh *Engine) {
	t.Helper()
	b := &e.b
	for c, col := range b.blocks {
		for l, v := range col {
			if v != 0 {
				t.Fatalf("column %d lane %d holds %#x after Reset", c, l, v)
			}
		}
	}
	for l, p := range b.payload {
		if p != nil {
			t.Fatalf("lane %d still refers to a payload of %d bytes after Reset", l, len(p))
		}
	}
	for l, p := range b.ptrs {
		if p != b.scratchAddr(l) {
			t.Fatalf("lane %d points at %#x, not its scratch slot, after Reset", l, p)
		}
	}
	if !isZero(b.full) || !isZero(b.scratch) || !isZero(e.in) || !isZero(e.out) || b.n != 0 || b.cols != 0 || b.maxFull != 0 {
		t.Fatal("lane bookkeeping, scratch or block cipher columns not zero after Reset")
	}
	if !reflect.DeepEqual(e.f, fresh.f) {
		t.Fatal("kernel state (stream registers, planes, rows) differs from a new engine's after Reset")
	}
}

func isZero[T uint8 | uint64](s []T) bool {
	for _, v := range s {
		if v != 0 {
			return false
		}
	}
	return true
}
