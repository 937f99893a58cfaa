package serpent

import (
	"os"
	"sync"
	"testing"
)

// impl is one multi-block implementation, called directly so that every
// path compiled in is tested, not only the one the dispatcher picks.
type impl struct {
	name    string
	width   int // blocks per call in the vector tests: a full group of the widest kernel step
	step    int // the length in blocks must be a multiple of step
	encrypt func(ks *[132]uint32, dst, src []byte)
	decrypt func(ks *[132]uint32, dst, src []byte)
}

// allImplementations lists the implementations compiled into this build
// with whether this CPU can run them; archImplementations comes from the
// architecture's test file.
func allImplementations() []implAvail {
	return append([]implAvail{
		// Width 3: one two-block pass plus the single-block tail.
		{impl{"generic", 3, 1, encryptBlocksGeneric, decryptBlocksGeneric}, true},
		// The dispatched path, with a length that needs every kernel.
		{impl{"dispatch", 31, 1, encryptBlocks, decryptBlocks}, true},
	}, archImplementations()...)
}

type implAvail struct {
	impl
	available bool
}

var (
	implsOnce sync.Once
	impls     []impl
	missing   []string
)

// implementations returns the implementations this CPU can run. A missing
// one is logged, and fails the test when TSDESCRAMBLE_REQUIRE_ALL_ENGINES is
// set, so that a CI machine cannot quietly stop testing the assembly.
func implementations(t *testing.T) []impl {
	t.Helper()
	implsOnce.Do(func() {
		for _, ia := range allImplementations() {
			if ia.available {
				impls = append(impls, ia.impl)
			} else {
				missing = append(missing, ia.name)
			}
		}
	})
	for _, m := range missing {
		if os.Getenv("TSDESCRAMBLE_REQUIRE_ALL_ENGINES") != "" {
			t.Fatalf("impl=%s cannot run on this CPU", m)
		}
		t.Logf("impl=%s cannot run on this CPU: not tested", m)
	}
	return impls
}
