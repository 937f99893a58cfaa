//go:build amd64 && gc && !purego

package csa

import (
	"fmt"
	"testing"
)

func asmTestEngines() []testEngine {
	return []testEngine{
		{"avx2_128", 128, implAVX2, useAVX2},
		{"avx2_256", 256, implAVX2, useAVX2},
	}
}

// TestDispatchAVX2 checks that NewEngine picks the AVX2 kernel for 128 and
// 256 lanes exactly when the CPU has AVX2, the portable one when it is
// turned off, and the portable one for 32 and 64 lanes.
func TestDispatchAVX2(t *testing.T) {
	defer func(v bool) { useAVX2 = v }(useAVX2)
	for _, avx2 := range []bool{false, true} {
		if avx2 && !cpuHasAVX2() {
			continue
		}
		useAVX2 = avx2
		for _, lanes := range []int{32, 64, 128, 256} {
			e, err := NewEngine(lanes)
			if err != nil {
				t.Fatal(err)
			}
			wantAVX2 := avx2 && lanes >= 128
			want := fmt.Sprintf("csa2: %d lanes generic", lanes)
			if wantAVX2 {
				want = fmt.Sprintf("csa2: %d lanes AVX2", lanes)
			}
			if (e.impl == implAVX2) != wantAVX2 || e.String() != want {
				t.Errorf("useAVX2=%v: NewEngine(%d) = %v, want %s", avx2, lanes, e, want)
			}
		}
		if d, _ := NewEngine(0); avx2 && (d.impl != implAVX2 || d.Lanes() != 256) {
			t.Errorf("NewEngine(0) = %v on an AVX2 CPU", d)
		}
	}
}
