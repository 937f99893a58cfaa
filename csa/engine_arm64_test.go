//go:build arm64 && gc && !purego

package csa

import (
	"fmt"
	"testing"
)

// TestDispatchNEON checks that NewEngine picks the NEON kernel for 128 and
// 256 lanes, and for the default width 128, and the portable one for 32
// and 64 lanes or when NEON is turned off.
func TestDispatchNEON(t *testing.T) {
	defer func(n bool) { useNEON = n }(useNEON)
	for _, neon := range []bool{false, true} {
		useNEON = neon
		for _, lanes := range []int{32, 64, 128, 256} {
			e, err := NewEngine(lanes)
			if err != nil {
				t.Fatal(err)
			}
			id, name := fmt.Sprintf("generic%d", lanes), "generic"
			if neon && lanes >= 128 {
				id, name = fmt.Sprintf("neon_%d", lanes), "NEON"
			}
			if want := fmt.Sprintf("csa2: %d lanes %s", lanes, name); e.k.id != id || e.String() != want {
				t.Errorf("useNEON=%v: NewEngine(%d) = %v (%s), want %s (%s)", neon, lanes, e, e.k.id, want, id)
			}
		}
		d, _ := NewEngine(0)
		if want := map[bool]string{false: "generic64", true: "neon_128"}[neon]; d.k.id != want {
			t.Errorf("useNEON=%v: NewEngine(0) = %v (%s), want %s", neon, d, d.k.id, want)
		}
	}
}

// TestNEONTableMutations changes one entry of the NEON block cipher's
// tables at a time (the S-box and the two nibble tables of the bit
// permutation) and checks that the kernel's output changes: every entry
// is read, so the differential tests would catch a wrong one. One column
// of 128 lanes runs 7168 S-box lookups, which reach every entry.
func TestNEONTableMutations(t *testing.T) {
	defer func(saved neonTables) { neonTab = saved }(neonTab)
	k := mustKey(t, lengthTableCW)
	var in [128]uint64
	for l := range in {
		in[l] = uint64(l) * 0x9e3779b97f4a7c15
	}
	for _, decrypt := range []bool{true, false} {
		run := func(out *[128]uint64) {
			if decrypt {
				blockDecryptNEON(&in, out, &k.bsBlock, &neonTab, 4)
			} else {
				blockEncryptNEON(&in, out, &k.bsBlock, &neonTab, 4)
			}
		}
		var want [128]uint64
		run(&want)
		missed := 0
		for row := range neonTab {
			for col := range neonTab[row] {
				neonTab[row][col] ^= 0x10
				var got [128]uint64
				run(&got)
				neonTab[row][col] ^= 0x10
				if got == want {
					missed++
					t.Errorf("decrypt=%v: changing table row %d byte %d changes no output", decrypt, row, col)
				}
			}
		}
		if missed > 3 {
			t.Fatalf("decrypt=%v: %d changed entries went unnoticed", decrypt, missed)
		}
	}
}

// TestNEONTranspose checks the NEON transposes against the portable ones:
// each NEON plane holds the bits of two 64-lane planes, lane 2m+q in bit m
// of element q.
func TestNEONTranspose(t *testing.T) {
	var col [128]uint64
	for l := range col {
		col[l] = uint64(l+1) * 0x9e3779b97f4a7c15
	}
	var planes [64][2]uint64
	lanesToPlanesNEON(&col, &planes)
	for q := range 2 {
		var half [64]uint64
		for m := range half {
			half[m] = col[2*m+q]
		}
		var want [64]uint64
		lanesToPlanes(half[:], &want)
		for k := range want {
			if planes[k][q] != want[k] {
				t.Fatalf("plane %d element %d = %#x, want %#x", k, q, planes[k][q], want[k])
			}
		}
	}
	out := col
	planesToLanesXorNEON(&planes, &out)
	for l, v := range out {
		if v != 0 {
			t.Fatalf("lane %d: planes XORed into their own lanes give %#x, want 0", l, v)
		}
	}
}

// BenchmarkNEONKernels times the NEON kernels alone on 128 lanes: the
// block cipher over one column (56 rounds), 32 stream cipher rounds (8
// keystream bytes), and the two transposes.
func BenchmarkNEONKernels(b *testing.B) {
	k := mustKey(b, lengthTableCW)
	var in, out [128]uint64
	for l := range in {
		in[l] = uint64(l) * 0x9e3779b97f4a7c15
	}
	var st stream128
	var planes [64][2]uint64
	for i := range st {
		st[i] = [2]uint64{uint64(i) * 0x9e3779b97f4a7c15, ^uint64(i)}
	}
	for _, kn := range []struct {
		name string
		run  func()
	}{
		{"block", func() { blockDecryptNEON(&in, &out, &k.bsBlock, &neonTab, 4) }},
		{"stream", func() { streamGenNEON(&st, &planes) }},
		{"to-planes", func() { lanesToPlanesNEON(&in, &planes) }},
		{"to-lanes", func() { planesToLanesXorNEON(&planes, &out) }},
	} {
		b.Run("kernel="+kn.name, func(b *testing.B) {
			b.SetBytes(128 * 8)
			for b.Loop() {
				kn.run()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*128), "ns/lane")
		})
	}
}
