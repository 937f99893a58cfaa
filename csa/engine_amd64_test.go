//go:build amd64 && gc && !purego

package csa

import (
	"fmt"
	"strconv"
	"testing"
)

// TestDispatchAVX2 checks that NewEngine picks, for 128 and 256 lanes, the
// AVX2 kernel with the VBMI block cipher when the CPU has both, the AVX2
// one when it has AVX2 alone, and the portable one otherwise; and the
// portable one for 32 and 64 lanes.
func TestDispatchAVX2(t *testing.T) {
	defer func(a, v bool) { useAVX2, useAVX512 = a, v }(useAVX2, useAVX512)
	for _, c := range []struct{ avx2, vbmi bool }{{false, false}, {true, false}, {false, true}, {true, true}} {
		if c.avx2 && !cpuHasAVX2() || c.vbmi && !cpuHasAVX512() {
			continue
		}
		useAVX2, useAVX512 = c.avx2, c.vbmi
		wantID, wantName := "generic", "generic"
		switch {
		case c.avx2 && c.vbmi:
			wantID, wantName = "avx512vbmi_", "AVX-512"
		case c.avx2:
			wantID, wantName = "avx2_", "AVX2"
		}
		for _, lanes := range []int{32, 64, 128, 256} {
			e, err := NewEngine(lanes)
			if err != nil {
				t.Fatal(err)
			}
			id, name := wantID, wantName
			if lanes < 128 {
				id, name = "generic", "generic"
			}
			want := fmt.Sprintf("csa2: %d lanes %s", lanes, name)
			if e.k.id != id+strconv.Itoa(lanes) || e.String() != want {
				t.Errorf("useAVX2=%v useAVX512=%v: NewEngine(%d) = %v (%s), want %s", c.avx2, c.vbmi, lanes, e, e.k.id, want)
			}
		}
		if d, _ := NewEngine(0); c.avx2 && (d.k.id != wantID+"256" || d.Lanes() != 256) {
			t.Errorf("NewEngine(0) = %v, want 256 lanes %s", d, wantName)
		}
	}
}

// kernelBench is one assembly kernel for benchKernels.
type kernelBench struct {
	name string
	ok   bool // this CPU runs it
	run  func()
}

// benchKernels times each kernel on 256 lanes of 8 bytes per call.
func benchKernels(b *testing.B, label string, kernels []kernelBench) {
	for _, kn := range kernels {
		b.Run(label+"="+kn.name, func(b *testing.B) {
			if !kn.ok {
				b.Skip("this CPU cannot run it")
			}
			b.SetBytes(256 * 8)
			for b.Loop() {
				kn.run()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*256), "ns/lane")
		})
	}
}

// BenchmarkBlockKernel times the block cipher alone over one column of 256
// lanes (56 rounds each), for each S-box method this CPU runs.
func BenchmarkBlockKernel(b *testing.B) {
	k := mustKey(b, lengthTableCW)
	var in, out [256]uint64
	for l := range in {
		in[l] = uint64(l) * 0x9e3779b97f4a7c15
	}
	benchKernels(b, "sbox", []kernelBench{
		{"avx2-vpshufb", cpuHasAVX2(), func() { blockDecryptAVX2(&in, &out, &k.bsBlock, &avx2Tab, 8) }},
		{"avx512-vpermi2b", cpuHasAVX512(), func() { blockDecryptVBMI(&in, &out, &k.bsBlock, &vbmiTab, 2) }},
	})
}

// BenchmarkStreamKernel times 32 rounds of the stream cipher on 256 lanes
// (8 keystream bytes) for each kernel this CPU runs.
func BenchmarkStreamKernel(b *testing.B) {
	var st stream256
	var planes [64][4]uint64
	for i := range st {
		st[i] = [4]uint64{uint64(i) * 0x9e3779b97f4a7c15, uint64(i), ^uint64(i), uint64(i) << 7}
	}
	benchKernels(b, "kernel", []kernelBench{
		{"avx2", cpuHasAVX2(), func() { streamGenAVX2(&st, &planes) }},
		{"avx512", cpuHasAVX512(), func() { streamGenAVX512(&st, &planes) }},
	})
}
