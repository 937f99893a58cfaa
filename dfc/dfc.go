// Package dfc implements DFC, the Decorrelated Fast Cipher of H. Gilbert,
// M. Girault, P. Hoogvorst, F. Noilhan, T. Pornin, G. Poupard, J. Stern and
// S. Vaudenay: a 128-bit block cipher submitted to the first round of the
// AES selection in 1998, specified in "Decorrelated Fast Cipher: an AES
// Candidate" and its errata (https://lasec.epfl.ch/events/memo/dfc.shtml).
// This is the cipher of the AES submission, checked against its published
// known-answer tests, not the later DFCv2 with a different key schedule.
//
// DFC is an 8-round Feistel network on two 64-bit halves. Its round function
// is an affine map modulo the prime 2^64+13, truncated to 64 bits, followed
// by a fixed permutation that uses a 64-entry table. [NewCipher] accepts keys
// of 0 to 32 bytes; the specification pads shorter keys to 256 bits with
// constants. The [Cipher] it returns also encrypts many independent blocks in
// one call ([Cipher.EncryptBlocks], [Cipher.DecryptBlocks]), which is several
// times faster than one block at a time: the blocks' multiplications overlap,
// and on amd64 with AVX2 their table selections run in vector registers;
// with AVX-512 the whole round function does, eight blocks per register.
//
// # Constant time
//
// No branch and no memory address depends on the key or the data:
//   - The reduction modulo 2^64+13 computes every correction and keeps the
//     right one with masks made from carry and borrow bits, never by
//     comparing and branching (the timing leak of careless implementations
//     that I. Harvey described).
//   - The table RT is never indexed by a secret. The portable code reads all
//     64 entries and keeps the wanted one with masks and a shift; the AVX2
//     code reads all of them into registers with VPERMD and chooses with
//     blends, the AVX-512 code holds the table in four registers and
//     chooses with two VPERMI2D and a masked blend. Cache timing therefore
//     reveals nothing about the index.
//   - Loops and the key schedule branch only on lengths and loop counters.
//
// What remains, 64-bit multiplication and shifts by a variable amount, takes
// constant time on the 64-bit processors the package is meant for (amd64,
// arm64). DFC itself is an old design with published attacks on reduced
// rounds and classes of weak keys; use it where a format requires it.
package dfc

import (
	"crypto/cipher"
	"strconv"

	"github.com/tsdescramble/tsdescramble/internal/blockcheck"
)

// BlockSize is the DFC block size in bytes.
const BlockSize = 16

// maxKeySize is the largest key size in bytes; shorter keys, down to none,
// are padded as the specification describes.
const maxKeySize = 32

// A KeySizeError reports a key longer than 32 bytes.
type KeySizeError int

// Error describes the error, with the key size in bytes.
func (k KeySizeError) Error() string {
	return "dfc: invalid key size " + strconv.Itoa(int(k))
}

// schedule holds the eight round keys (a_i, b_i).
type schedule [8][2]uint64

// A Cipher is an instance of DFC with a particular key. It holds only its
// round keys and is never modified after [NewCipher], so one Cipher may be
// used by many goroutines at once. The zero Cipher is not a valid key
// schedule; use [NewCipher].
type Cipher struct {
	enc, dec schedule
	// encIFMA and decIFMA are enc and dec split for the AVX-512 IFMA
	// kernels; the other paths do not read them.
	encIFMA, decIFMA ifmaSchedule
}

var _ cipher.Block = (*Cipher)(nil)

// NewCipher returns a DFC cipher with the given key, 0 to 32 bytes long.
// Keys shorter than 32 bytes are padded with the constant KS of the
// specification; the published test vectors use 16, 18, ..., 32 bytes.
//
// The *[Cipher] it returns is a [cipher.Block]; being the concrete type, it
// also offers the multi-block methods without a type assertion.
func NewCipher(key []byte) (*Cipher, error) {
	if len(key) > maxKeySize {
		return nil, KeySizeError(len(key))
	}
	c := new(Cipher)
	expandKey(key, &c.enc, &c.dec)
	splitIFMA(&c.enc, &c.encIFMA)
	splitIFMA(&c.dec, &c.decIFMA)
	return c, nil
}

// BlockSize returns the DFC block size, 16 bytes.
func (c *Cipher) BlockSize() int { return BlockSize }

// Encrypt encrypts the first block of src into dst. The block is read as
// R0|R1 with big-endian halves and written as R9|R8, as in the specification.
// dst and src must overlap entirely or not at all.
func (c *Cipher) Encrypt(dst, src []byte) {
	checkBlock(dst, src)
	cryptBlock(&c.enc, dst, src)
}

// Decrypt decrypts the first block of src into dst.
// dst and src must overlap entirely or not at all.
func (c *Cipher) Decrypt(dst, src []byte) {
	checkBlock(dst, src)
	cryptBlock(&c.dec, dst, src)
}

// EncryptBlocks encrypts each 16-byte block of src into the same place in
// dst, independently of the others (as ECB mode would), several blocks at a
// time. len(src) must be a multiple of [BlockSize], dst must be at least as
// long as src, and dst and src must overlap entirely or not at all.
func (c *Cipher) EncryptBlocks(dst, src []byte) {
	checkBlocks(dst, src)
	cryptBlocks(&c.enc, &c.encIFMA, dst, src)
}

// DecryptBlocks decrypts each 16-byte block of src into the same place in
// dst, under the same rules as [Cipher.EncryptBlocks].
func (c *Cipher) DecryptBlocks(dst, src []byte) {
	checkBlocks(dst, src)
	cryptBlocks(&c.dec, &c.decIFMA, dst, src)
}

// checkBlock panics on buffers that Encrypt and Decrypt cannot use: a
// caller's bug, caught here before any code that trusts the lengths runs.
func checkBlock(dst, src []byte) { blockcheck.Block("dfc", BlockSize, dst, src) }

// checkBlocks is checkBlock for EncryptBlocks and DecryptBlocks.
func checkBlocks(dst, src []byte) { blockcheck.Blocks("dfc", BlockSize, dst, src) }
