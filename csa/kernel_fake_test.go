package csa

import (
	"math/rand/v2"
	"slices"
	"testing"
)

func init() { testKernels = append(testKernels, fake512) }

// TestRegisterKernel registers fake512 for the duration of the test and
// checks that the engine takes it like the package's own kernels.
func TestRegisterKernel(t *testing.T) {
	defer func(ks []*kernel) { kernels = ks }(slices.Clone(kernels))
	before, _ := NewEngine(0)
	register(fake512)

	if avail := Available(); !slices.Contains(avail, 512) || !slices.IsSorted(avail) {
		t.Errorf("Available() = %v, want 512 among ascending widths", avail)
	}
	e, err := NewEngine(512)
	if err != nil {
		t.Fatalf("NewEngine(512): %v", err)
	}
	if e.k != fake512 || e.Lanes() != 512 || e.String() != "csa2: 512 lanes fake" {
		t.Errorf("NewEngine(512) = %v, %d lanes, want csa2: 512 lanes fake", e, e.Lanes())
	}
	// Rank 0: the fake is never the default.
	if d, _ := NewEngine(0); d.k != before.k {
		t.Errorf("NewEngine(0) = %v after registering fake512, was %v", d, before)
	}
	// One batch of 512 against the scalar cipher (every engine test runs
	// the fake beside the others; this is the engine NewEngine returned).
	k := mustKey(t, lengthTableCW)
	pool := newLanePool(rand.New(rand.NewPCG(23, 24)), k)
	for _, decrypt := range []bool{true, false} {
		checkLanes(t, e, k, pool.take(512, decrypt), decrypt)
	}
}
