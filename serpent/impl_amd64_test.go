//go:build gc && !purego

package serpent

func archImplementations() []implAvail {
	return []implAvail{
		// Width 12: one interleaved 8-block pass plus one 4-block pass.
		{impl{"sse2", 12, 4, encryptBlocksSSE2, decryptBlocksSSE2}, true},
		// Width 24: one interleaved 16-block pass plus one 8-block pass.
		{impl{"avx2", 24, 8, encryptBlocksAVX2, decryptBlocksAVX2}, useAVX2},
	}
}
