// Package serpent implements the Serpent block cipher of Anderson, Biham and
// Knudsen, an AES finalist with a 128-bit block and keys of up to 256 bits.
//
// Bytes are read in the standard order of the NESSIE test vectors, as in
// Botan, Crypto++, libgcrypt, nettle and the Linux kernel: a block is four
// little-endian 32-bit words, and so is the key. The known-answer files of
// the original AES submission print every value byte-reversed relative to
// this order.
//
// Every path is bitsliced: the S-boxes are boolean instruction sequences,
// with no table lookups and no data-dependent branches, so the running time
// does not depend on the key or the data. [Cipher.Encrypt] and
// [Cipher.Decrypt] run one block in portable Go, or on amd64 CPUs with
// AVX-512 (F and VL) in assembly whose S-boxes are VPTERNLOGD operations.
// [Cipher.EncryptBlocks] and [Cipher.DecryptBlocks] process many
// independent blocks at once: with SSE2, AVX2 and AVX-512 assembly on amd64
// (4, 8 and 16 blocks per register set; AVX-512 for calls of 16 blocks or
// more), chosen at run time, and in portable Go, two blocks side by side,
// elsewhere or when built with the purego tag. All paths give identical
// results.
//
// Serpent in ECB form provides no authentication and hides no patterns;
// callers build a mode (CBC, CTR) on top.
package serpent

import (
	"crypto/cipher"
	"strconv"

	"github.com/tsdescramble/tsdescramble/internal/blockcheck"
)

// BlockSize is the Serpent block size in bytes.
const BlockSize = 16

// MaxKeySize is the length in bytes of the longest Serpent key. Shorter keys,
// down to the empty key, are padded as the specification defines.
const MaxKeySize = 32

// KeySizeError is returned by [NewCipher] for a key longer than
// [MaxKeySize] bytes.
type KeySizeError int

// Error returns the message "serpent: invalid key size N".
func (k KeySizeError) Error() string {
	return "serpent: invalid key size " + strconv.Itoa(int(k))
}

// Cipher is a Serpent instance for one key. It holds only the expanded key,
// which no method writes, so a Cipher is safe for concurrent use.
type Cipher struct {
	ks [132]uint32 // 33 round keys of four words each
	// The same round keys adjusted for the single-block path, which adds
	// them inside the linear transformation (see foldKeys).
	ek, dk [132]uint32
}

var _ cipher.Block = (*Cipher)(nil)

// NewCipher returns a Serpent cipher for key, which may be 0 to 32 bytes
// long. The *[Cipher] it returns is a [cipher.Block]; being the concrete
// type, it also offers [Cipher.EncryptBlocks] and [Cipher.DecryptBlocks]
// without a type assertion.
func NewCipher(key []byte) (*Cipher, error) {
	if len(key) > MaxKeySize {
		return nil, KeySizeError(len(key))
	}
	c := new(Cipher)
	expandKey(&c.ks, key)
	c.foldKeys()
	return c, nil
}

// BlockSize returns the Serpent block size, 16 bytes.
func (c *Cipher) BlockSize() int { return BlockSize }

// Encrypt encrypts the first block of src into dst. dst and src must
// overlap entirely or not at all.
func (c *Cipher) Encrypt(dst, src []byte) {
	checkBlock(dst, src)
	encryptBlock(&c.ek, dst, src)
}

// Decrypt decrypts the first block of src into dst. dst and src must
// overlap entirely or not at all.
func (c *Cipher) Decrypt(dst, src []byte) {
	checkBlock(dst, src)
	decryptBlock(&c.dk, dst, src)
}

// EncryptBlocks encrypts each 16-byte block of src independently (as in ECB
// mode) into the same position of dst. len(src) must be a multiple of
// [BlockSize], dst must be at least as long, and dst and src must overlap
// entirely or not at all. Blocks from unrelated messages can be batched:
// for CBC encryption, one block from each of many independent chains.
func (c *Cipher) EncryptBlocks(dst, src []byte) {
	checkBlocks(dst, src)
	encryptBlocks(&c.ks, dst[:len(src)], src)
}

// DecryptBlocks decrypts each 16-byte block of src independently into the
// same position of dst, with the requirements of [Cipher.EncryptBlocks].
func (c *Cipher) DecryptBlocks(dst, src []byte) {
	checkBlocks(dst, src)
	decryptBlocks(&c.ks, dst[:len(src)], src)
}

// checkBlock panics on the caller errors that Encrypt and Decrypt reject.
// The checks happen here, in Go, so no lower layer has to repeat them.
func checkBlock(dst, src []byte) { blockcheck.Block("serpent", BlockSize, dst, src) }

// checkBlocks panics on the caller errors that the multi-block methods
// reject, before any assembly runs.
func checkBlocks(dst, src []byte) { blockcheck.Blocks("serpent", BlockSize, dst, src) }
