//go:build amd64 && gc && !purego

package csa

import (
	"fmt"
	"strings"
	"testing"

	"golang.org/x/sys/cpu"
)

func asmTestEngines() []testEngine {
	return []testEngine{
		{"avx2_128", 128, implAVX2, cpuHasAVX2()},
		{"avx2_256", 256, implAVX2, cpuHasAVX2()},
		{"avx512vbmi_128", 128, implAVX512, cpuHasAVX512()},
		{"avx512vbmi_256", 256, implAVX512, cpuHasAVX512()},
	}
}

// missingFeatures names the CPU features the kernel impl needs and this CPU
// lacks (see cpuHasAVX2 and cpuHasAVX512), for the message of a skipped test.
func missingFeatures(impl engineImpl) string {
	x := &cpu.X86
	type feature struct {
		name string
		has  bool
	}
	need := []feature{{"AVX2", x.HasAVX2}}
	if impl == implAVX512 {
		need = append(need, feature{"AVX512F", x.HasAVX512F}, feature{"AVX512BW", x.HasAVX512BW},
			feature{"AVX512VL", x.HasAVX512VL}, feature{"AVX512VBMI", x.HasAVX512VBMI})
	}
	var missing []string
	for _, f := range need {
		if !f.has {
			missing = append(missing, f.name)
		}
	}
	return strings.Join(missing, ", ")
}

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
		wantImpl, wantName := implGeneric64, "generic"
		switch {
		case c.avx2 && c.vbmi:
			wantImpl, wantName = implAVX512, "AVX-512"
		case c.avx2:
			wantImpl, wantName = implAVX2, "AVX2"
		}
		for _, lanes := range []int{32, 64, 128, 256} {
			e, err := NewEngine(lanes)
			if err != nil {
				t.Fatal(err)
			}
			impl, name := wantImpl, wantName
			if lanes < 128 {
				impl, name = implGeneric64, "generic"
				if lanes == 32 {
					impl = implGeneric32
				}
			}
			want := fmt.Sprintf("csa2: %d lanes %s", lanes, name)
			if e.impl != impl || e.String() != want {
				t.Errorf("useAVX2=%v useAVX512=%v: NewEngine(%d) = %v, want %s", c.avx2, c.vbmi, lanes, e, want)
			}
		}
		if d, _ := NewEngine(0); c.avx2 && (d.impl != wantImpl || d.Lanes() != 256) {
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
	var st avx2Stream
	var planes [64][4]uint64
	for i := range st {
		st[i] = [4]uint64{uint64(i) * 0x9e3779b97f4a7c15, uint64(i), ^uint64(i), uint64(i) << 7}
	}
	benchKernels(b, "kernel", []kernelBench{
		{"avx2", cpuHasAVX2(), func() { streamGenAVX2(&st, &planes) }},
		{"avx512", cpuHasAVX512(), func() { streamGenAVX512(&st, &planes) }},
	})
}
