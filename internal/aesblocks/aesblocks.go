// Package aesblocks implements AES with multi-block calls: EncryptBlocks and
// DecryptBlocks cipher many independent 16-byte blocks (ECB-like) in one
// call.
//
// The CBC modes of package scrambling encrypt one block of each payload of a
// batch at once. crypto/aes offers only one block per call through the
// cipher.Block interface, so each block costs an interface call and the AES
// rounds of consecutive blocks overlap only as far as the processor finds on
// its own; CBC encryption ran much slower than CBC decryption, which
// crypto/aes pipelines internally. On amd64 with AES-NI the kernels here run
// eight blocks through each round together.
//
// Elsewhere, and under the purego build tag, a Cipher wraps crypto/aes and
// loops over the blocks: that path is only as fast as crypto/aes, but it is
// correct and constant-time wherever crypto/aes is.
package aesblocks

import (
	"crypto/aes"
	"crypto/cipher"
	"strconv"

	"github.com/tsdescramble/tsdescramble/internal/blockcheck"
)

// BlockSize is the AES block size in bytes.
const BlockSize = 16

// maxRounds is the number of rounds of AES-256, the most of the three key
// sizes; a schedule holds maxRounds+1 round keys of four words.
const maxRounds = 14

// KeySizeError is returned by NewCipher for a key that is not 16, 24 or 32
// bytes long.
type KeySizeError int

func (k KeySizeError) Error() string {
	return "aesblocks: invalid key size " + strconv.Itoa(int(k))
}

// Cipher is an AES cipher with multi-block methods. It is a cipher.Block.
// It is not modified after NewCipher, so one Cipher may be used from many
// goroutines at once.
type Cipher struct {
	// rounds is 10, 12 or 14 on the AES-NI path, 0 on the portable path.
	rounds int
	// enc holds the encryption round keys, dec those of the equivalent
	// inverse cipher (FIPS-197 5.3.5) in the order decryption applies
	// them. Each word holds four key bytes in memory order (little-endian),
	// so that each round key is the 16 bytes the AES-NI instructions load.
	enc, dec [4 * (maxRounds + 1)]uint32
	// block is crypto/aes on the portable path, nil on the AES-NI path.
	block cipher.Block
}

// NewCipher returns an AES cipher for a 16-, 24- or 32-byte key (AES-128,
// AES-192 or AES-256).
func NewCipher(key []byte) (*Cipher, error) {
	switch len(key) {
	case 16, 24, 32:
	default:
		return nil, KeySizeError(len(key))
	}
	c := new(Cipher)
	if useAESNI {
		c.rounds = expandKey(key, &c.enc, &c.dec)
		return c, nil
	}
	b, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	c.block = b
	return c, nil
}

// BlockSize returns the AES block size, 16 bytes.
func (c *Cipher) BlockSize() int { return BlockSize }

// Encrypt encrypts the first block of src into dst. dst and src must overlap
// entirely or not at all.
func (c *Cipher) Encrypt(dst, src []byte) {
	checkBlock(dst, src)
	c.EncryptBlocks(dst[:BlockSize], src[:BlockSize])
}

// Decrypt decrypts the first block of src into dst. dst and src must overlap
// entirely or not at all.
func (c *Cipher) Decrypt(dst, src []byte) {
	checkBlock(dst, src)
	c.DecryptBlocks(dst[:BlockSize], src[:BlockSize])
}

// EncryptBlocks encrypts the len(src)/16 blocks of src independently into
// dst. len(src) must be a multiple of 16 and len(dst) >= len(src); dst and
// src must overlap entirely (dst and src start at the same byte) or not at
// all. It panics otherwise, as the modes of crypto/cipher do.
func (c *Cipher) EncryptBlocks(dst, src []byte) {
	checkBlocks(dst, src)
	if c.block != nil {
		for i := 0; i < len(src); i += BlockSize {
			c.block.Encrypt(dst[i:i+BlockSize], src[i:i+BlockSize])
		}
		return
	}
	if len(src) > 0 {
		encryptBlocksAESNI(c.rounds, &c.enc[0], dst, src)
	}
}

// DecryptBlocks decrypts the len(src)/16 blocks of src independently into
// dst, with the same requirements as EncryptBlocks.
func (c *Cipher) DecryptBlocks(dst, src []byte) {
	checkBlocks(dst, src)
	if c.block != nil {
		for i := 0; i < len(src); i += BlockSize {
			c.block.Decrypt(dst[i:i+BlockSize], src[i:i+BlockSize])
		}
		return
	}
	if len(src) > 0 {
		decryptBlocksAESNI(c.rounds, &c.dec[0], dst, src)
	}
}

// checkBlocks panics, with the messages of crypto/cipher, unless src is whole
// blocks, dst can hold them and the two do not overlap in part. The
// assembly relies on these checks for its memory safety.
func checkBlocks(dst, src []byte) { blockcheck.Blocks("aesblocks", BlockSize, dst, src) }

// checkBlock is the check of crypto/aes for single-block calls, which ignore
// the bytes past the first block.
func checkBlock(dst, src []byte) { blockcheck.Block("aesblocks", BlockSize, dst, src) }
