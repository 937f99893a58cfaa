//go:build gc && !purego

package serpent

func archImplementations() []implAvail {
	return []implAvail{
		// 12 blocks: one pass of two interleaved register sets (8 blocks),
		// then one set (4 blocks).
		{impl{"sse2", []int{12}, 4, encryptBlocksSSE2, decryptBlocksSSE2}, true},
		// 32 blocks: three interleaved register sets (24 blocks), then one
		// set; 16 blocks: two sets.
		{impl{"avx2", []int{32, 16}, 8, encryptBlocksAVX2, decryptBlocksAVX2}, useAVX2},
		// The dispatcher as it runs on a CPU without AVX2. Tests do not
		// run in parallel, so switching the flag for one call is safe.
		{impl{"dispatch-noavx2", []int{31}, 1, withoutAVX2(encryptBlocks), withoutAVX2(decryptBlocks)}, true},
	}
}

func withoutAVX2(f func(ks *[132]uint32, dst, src []byte)) func(ks *[132]uint32, dst, src []byte) {
	return func(ks *[132]uint32, dst, src []byte) {
		defer func(saved bool) { useAVX2 = saved }(useAVX2)
		useAVX2 = false
		f(ks, dst, src)
	}
}
