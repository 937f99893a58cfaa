//go:build gc && !purego

package serpent

func archImplementations() []implAvail {
	return []implAvail{
		// 12 blocks: one pass of two interleaved register sets (8 blocks),
		// then one set (4 blocks).
		{impl{"sse2", []int{12}, 4, encryptBlocksSSE2, decryptBlocksSSE2}, true, ""},
		// 32 blocks: three interleaved register sets (24 blocks), then one
		// set; 16 blocks: two sets.
		{impl{"avx2", []int{32, 16}, 8, encryptBlocksAVX2, decryptBlocksAVX2}, useAVX2, "AVX2"},
		// 48 blocks: two interleaved register sets (32 blocks), then one
		// set (16 blocks); 16 blocks: one set.
		{impl{"avx512", []int{48, 16}, 16, encryptBlocksAVX512, decryptBlocksAVX512}, useAVX512, "AVX512F and AVX512VL"},
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
		}, useAVX512, "AVX512F and AVX512VL"},
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
