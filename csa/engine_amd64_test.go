//go:build amd64 && gc && !purego

package csa

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
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
		{"avx2-vpshufb", cpuHasAVX2(), func() { blockDecryptAVX2(&in, &out, &k.bsBlock, &avx2Tab, 4) }},
		{"avx2-blend", cpuHasAVX2(), func() { blockDecryptAVX2Blend(&in, &out, &k.bsBlock, &avx2Tab, 2) }},
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

// The AVX2 kernel runs the S-box method it measured fastest; these test
// kernels force each method, so that every engine test (vectors, the
// lane-by-lane differential test against the scalar cipher, bulk,
// fuzzing, allocations) runs both, whichever this CPU chose.
func init() {
	avx2 := func() bool { return useAVX2 }
	for _, m := range []struct {
		id     string
		method int
	}{{"avx2nibble_256", sboxNibble}, {"avx2blend_256", sboxBlend}} {
		testKernels = append(testKernels, &kernel{id: m.id, name: "AVX2", lanes: 256, word: 256, supported: avx2,
			newFuncs: func(int) kernelFuncs { return &avx2Kernel{sbox: m.method} }})
	}
}

// TestSboxMutations changes one S-box table entry at a time, for every
// entry each AVX2 S-box method reads, and checks that the kernel's output
// changes: the differential tests would catch any wrong entry. One column
// of 256 lanes runs 14336 S-box lookups, which reach every entry.
func TestSboxMutations(t *testing.T) {
	if !cpuHasAVX2() {
		t.Skip("the CPU has no AVX2")
	}
	defer func(saved avx2Tables) { avx2Tab = saved }(avx2Tab)
	k := mustKey(t, lengthTableCW)
	var in [256]uint64
	for l := range in {
		in[l] = uint64(l) * 0x9e3779b97f4a7c15
	}
	for _, m := range []struct {
		method     int
		first, end int // the table rows of the S-box
	}{{sboxNibble, 0, 16}, {sboxBlend, 43, 59}} {
		var want [256]uint64
		avx2BlockDecrypt(m.method, &in, &want, &k.bsBlock, 256)
		missed := 0
		for row := m.first; row < m.end; row++ {
			for col := range 32 {
				avx2Tab[row][col] ^= 0x10
				var got [256]uint64
				avx2BlockDecrypt(m.method, &in, &got, &k.bsBlock, 256)
				avx2Tab[row][col] ^= 0x10
				if got == want {
					missed++
					t.Errorf("%s: changing table row %d byte %d changes no output", sboxNames[m.method], row, col)
				}
			}
		}
		if missed > 3 {
			t.Fatalf("%s: %d changed entries went unnoticed", sboxNames[m.method], missed)
		}
	}
}

// TestChooseSbox checks that the faster method by its best time wins,
// that a tie keeps the nibble tables, and that the reason names both.
func TestChooseSbox(t *testing.T) {
	for _, c := range []struct {
		nibble, blend []time.Duration
		want          int
	}{
		{[]time.Duration{10, 12, 11}, []time.Duration{20, 8, 30}, sboxBlend},
		{[]time.Duration{5, 12, 11}, []time.Duration{20, 8, 30}, sboxNibble},
		{[]time.Duration{8}, []time.Duration{8}, sboxNibble},
	} {
		n := 0
		got := chooseSbox(func(m int) time.Duration {
			ts := c.nibble
			if m == sboxBlend {
				ts = c.blend
			}
			n++
			return ts[(n/2)%len(ts)]
		})
		if got.method != c.want || !strings.Contains(got.why, sboxNames[c.want]) || !strings.Contains(got.why, sboxNames[1-c.want]) {
			t.Errorf("nibble %v, blend %v: chose %q (%d), want %s", c.nibble, c.blend, got.why, got.method, sboxNames[c.want])
		}
	}
	// The AVX2 engines say what they chose.
	if cpuHasAVX2() {
		defer func(a, v bool) { useAVX2, useAVX512 = a, v }(useAVX2, useAVX512)
		useAVX512 = false
		e, _ := NewEngine(256)
		if !strings.HasPrefix(e.Choice(), "block S-box: ") {
			t.Errorf("%v: Choice() = %q", e, e.Choice())
		}
	}
	if e, _ := NewEngine(64); e.Choice() != "" {
		t.Errorf("%v: Choice() = %q, want none", e, e.Choice())
	}
}
