// Package blockcheck holds the argument checks shared by the block ciphers of this module
// (dfc, serpent and internal/aesblocks): whole blocks, room for the output, and no partial
// overlap between input and output.
//
// A failed check is a caller's bug, so it panics, with the messages of crypto/aes and
// crypto/cipher prefixed by the cipher's package name ("serpent: invalid buffer overlap"). The
// checks run in Go before any assembly, which relies on them for its memory safety.
package blockcheck

import "unsafe"

// Block panics unless src and dst each start with a whole block of size bytes and those two
// blocks overlap entirely or not at all: the contract of cipher.Block's Encrypt and Decrypt,
// which ignore any bytes after the first block. pkg names the cipher in the message.
func Block(pkg string, size int, dst, src []byte) {
	if len(src) < size {
		panic(pkg + ": input not full block")
	}
	if len(dst) < size {
		panic(pkg + ": output not full block")
	}
	if overlap(dst, src, size) {
		panic(pkg + ": invalid buffer overlap")
	}
}

// Blocks panics unless src is whole blocks of size bytes, dst is at least as long, and the
// first len(src) bytes of dst overlap src entirely or not at all: the contract of the
// multi-block methods (EncryptBlocks, DecryptBlocks). pkg names the cipher in the message.
func Blocks(pkg string, size int, dst, src []byte) {
	if len(src)%size != 0 {
		panic(pkg + ": input not full blocks")
	}
	if len(dst) < len(src) {
		panic(pkg + ": output smaller than input")
	}
	if len(src) > 0 && overlap(dst, src, len(src)) {
		panic(pkg + ": invalid buffer overlap")
	}
}

// overlap reports whether the first n > 0 bytes of x and of y, which both hold at least n,
// share memory at different starting positions. Identical buffers are fine, since the ciphers
// read each block before writing it; any other overlap would let a kernel that writes block i
// before reading block i+1 read its own output as input. It is written for the inliner's
// budget, so that Block and Blocks inline into the methods that call them.
func overlap(x, y []byte, n int) bool {
	x0, y0 := uintptr(unsafe.Pointer(&x[0])), uintptr(unsafe.Pointer(&y[0]))
	return x0 != y0 && x0 < y0+uintptr(n) && y0 < x0+uintptr(n)
}
