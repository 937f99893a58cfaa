//go:build !amd64 || !gc || purego

package aesblocks

// supportsAESNI and useAESNI are false: without the kernels NewCipher
// always wraps crypto/aes.
var (
	supportsAESNI = false
	useAESNI      = false
)

// The AES-NI functions are never reached without useAESNI; they exist so that
// aesblocks.go builds the same everywhere.

func expandKey(key []byte, enc, dec *[4 * (maxRounds + 1)]uint32) int {
	panic("aesblocks: no AES-NI in this build")
}

func encryptBlocksAESNI(nr int, xk *uint32, dst, src []byte) {
	panic("aesblocks: no AES-NI in this build")
}

func decryptBlocksAESNI(nr int, xk *uint32, dst, src []byte) {
	panic("aesblocks: no AES-NI in this build")
}
