//go:build gc && !purego

package serpent

import (
	"strings"

	"golang.org/x/sys/cpu"
)

func archImplementations() []implAvail {
	return []implAvail{
		// 12 blocks: one pass of two interleaved register sets (8 blocks),
		// then one set (4 blocks).
		{impl{"sse2", []int{12}, 4, encryptBlocksSSE2, decryptBlocksSSE2}, true, ""},
		// 32 blocks: three interleaved register sets (24 blocks), then one
		// set; 16 blocks: two sets.
		{impl{"avx2", []int{32, 16}, 8, encryptBlocksAVX2, decryptBlocksAVX2}, useAVX2, missingAVX2()},
		// 48 blocks: two interleaved register sets (32 blocks), then one
		// set (16 blocks); 16 blocks: one set.
		{impl{"avx512", []int{48, 16}, 16, encryptBlocksAVX512, decryptBlocksAVX512}, useAVX512, missingAVX512()},
		// The dispatcher as it runs on a CPU without AVX2 (and so without
		// AVX-512) and on one with AVX2 but without AVX-512. Tests do not
		// run in parallel, so switching the flags for one call is safe.
		{impl{"dispatch-noavx2", []int{31}, 1, without(&useAVX2, without(&useAVX512, encryptBlocks)), without(&useAVX2, without(&useAVX512, decryptBlocks))}, true, ""},
		{impl{"dispatch-noavx512", []int{31, 47}, 1, without(&useAVX512, encryptBlocks), without(&useAVX512, decryptBlocks)}, true, ""},
	}
}

// without runs f with the CPU feature flag *flag cleared.
func without(flag *bool, f func(ks *[132]uint32, dst, src []byte)) func(ks *[132]uint32, dst, src []byte) {
	return func(ks *[132]uint32, dst, src []byte) {
		defer func(saved bool) { *flag = saved }(*flag)
		*flag = false
		f(ks, dst, src)
	}
}

func archSingleImplementations() []singleImpl {
	return []singleImpl{
		{"avx512", func(ek *[132]uint32, dst, src []byte) {
			encryptBlockAVX512(ek, (*[16]byte)(dst), (*[16]byte)(src))
		}, func(dk *[132]uint32, dst, src []byte) {
			decryptBlockAVX512(dk, (*[16]byte)(dst), (*[16]byte)(src))
		}, useAVX512, missingAVX512()},
		// Encrypt and Decrypt as they run on a CPU without AVX-512.
		{"dispatch-noavx512", singleWithout(&useAVX512, encryptBlock), singleWithout(&useAVX512, decryptBlock), true, ""},
	}
}

func singleWithout(flag *bool, f func(k *[132]uint32, dst, src []byte)) func(k *[132]uint32, dst, src []byte) {
	return func(k *[132]uint32, dst, src []byte) {
		defer func(saved bool) { *flag = saved }(*flag)
		*flag = false
		f(k, dst, src)
	}
}

// missingAVX2 and missingAVX512 name the CPU features that the AVX2 and the
// AVX-512 kernels need (see the init in serpent_amd64.go) and this CPU
// lacks, for the messages of paths it cannot run.
func missingAVX2() string { return missingOf(feature{"AVX2", cpu.X86.HasAVX2}) }

func missingAVX512() string {
	return missingOf(feature{"AVX512F", cpu.X86.HasAVX512F}, feature{"AVX512VL", cpu.X86.HasAVX512VL})
}

// feature is a CPU feature and whether this CPU has it.
type feature struct {
	name string
	has  bool
}

// missingOf joins the names of the features the CPU lacks.
func missingOf(fs ...feature) string {
	var missing []string
	for _, f := range fs {
		if !f.has {
			missing = append(missing, f.name)
		}
	}
	return strings.Join(missing, ", ")
}
