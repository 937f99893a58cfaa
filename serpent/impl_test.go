package serpent

import (
	"sync"
	"testing"
)

// impl is one multi-block implementation, called directly so that every
// path compiled in is tested, not only the one the dispatcher picks.
type impl struct {
	name    string
	widths  []int // blocks per call in the vector tests, chosen so that every kernel pass runs
	step    int   // the length in blocks must be a multiple of step
	encrypt func(ks *[132]uint32, dst, src []byte)
	decrypt func(ks *[132]uint32, dst, src []byte)
}

// allImplementations lists the implementations compiled into this build
// with whether this CPU can run them; archImplementations comes from the
// architecture's test file.
func allImplementations() []implAvail {
	return append([]implAvail{
		// 3 blocks: one two-block pass plus the single-block tail.
		{impl{"generic", []int{3}, 1, encryptBlocksGeneric, decryptBlocksGeneric}, true, ""},
		// The dispatched path, with lengths that need every kernel.
		{impl{"dispatch", []int{31, 23, 47}, 1, encryptBlocks, decryptBlocks}, true, ""},
	}, archImplementations()...)
}

type implAvail struct {
	impl
	available bool
	missing   string // the CPU features it needs and this CPU lacks, for the messages
}

// singleImpl is one single-block implementation, called directly with the
// folded round keys so that every path is tested whichever Encrypt picks.
type singleImpl struct {
	name      string
	encrypt   func(ek *[132]uint32, dst, src []byte)
	decrypt   func(dk *[132]uint32, dst, src []byte)
	available bool
	missing   string
}

// singleImplementations lists the single-block implementations compiled
// into this build; archSingleImplementations comes from the
// architecture's test file.
func singleImplementations() []singleImpl {
	return append([]singleImpl{
		{"go", encryptFolded, decryptFolded, true, ""},
		{"dispatch", encryptBlock, decryptBlock, true, ""},
	}, archSingleImplementations()...)
}

// availableSingles returns the single-block implementations this CPU can
// run, logging the others.
func availableSingles(t testing.TB) []singleImpl {
	t.Helper()
	var out []singleImpl
	for _, s := range singleImplementations() {
		if s.available {
			out = append(out, s)
		} else {
			t.Logf("single=%s cannot run on this CPU: no %s; not tested", s.name, s.missing)
		}
	}
	return out
}

var (
	implsOnce sync.Once
	impls     []impl
	missing   []implAvail
)

// implementations returns the implementations this CPU can run.
// TestImplementations reports the others.
func implementations() []impl {
	implsOnce.Do(func() {
		for _, ia := range allImplementations() {
			if ia.available {
				impls = append(impls, ia.impl)
			} else {
				missing = append(missing, ia)
			}
		}
	})
	return impls
}

// reportMissing logs each implementation this CPU cannot run, with the CPU
// features it lacks, so that go test -v shows what a machine left untested.
func reportMissing(t *testing.T) {
	t.Helper()
	implementations()
	for _, m := range missing {
		t.Logf("impl=%s cannot run on this CPU: no %s; not tested", m.name, m.missing)
	}
}
