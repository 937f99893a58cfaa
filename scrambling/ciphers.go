package scrambling

import (
	"crypto/cipher"

	"github.com/tsdescramble/tsdescramble/dfc"
	"github.com/tsdescramble/tsdescramble/internal/aesblocks"
	"github.com/tsdescramble/tsdescramble/serpent"
)

// blockLanes is the batch width of the 128-bit block-cipher systems. Each CBC encryption step
// ciphers one block of every payload of a batch in one multi-block call; the DFC and Serpent
// kernels take 8 blocks per AVX2 pass and gain little beyond a few dozen blocks per call, while
// larger batches only grow the gather buffer out of the L1 cache.
const blockLanes = 64

// dvbCISSAIV is the fixed IV of DVB-CISSA, the ASCII string "DVBTMCPTAESCISSA"
// (ETSI TS 103 127; TSDuck tsDVBCISSA.cpp uses the same value).
var dvbCISSAIV = [blockSize]byte{
	0x44, 0x56, 0x42, 0x54, 0x4d, 0x43, 0x50, 0x54, 0x41, 0x45, 0x53, 0x43, 0x49, 0x53, 0x53, 0x41,
}

// dvbCISSA is DVB-CISSA 1.0: AES-128-CBC with a fixed IV restarted for each payload; the
// residue and payloads shorter than 16 bytes stay clear (ETSI TS 103 127; TSDuck tsDVBCISSA).
var dvbCISSA = &chainSystem{
	name:      "dvb-cissa",
	sizes:     []int{16},
	lanes:     blockLanes,
	iv:        dvbCISSAIV,
	newCipher: newAES,
}

// atisIDSA is ATIS-IDSA: AES-128 in the DVS-042 chaining with a zero IV, the
// 2003 DVS-042 short-payload rule (TSDuck tsIDSA).
var atisIDSA = &chainSystem{
	name:      "atis-idsa",
	sizes:     []int{16},
	lanes:     blockLanes,
	dvs042:    true,
	newCipher: newAES,
}

// dfcSystem is DFC in the DVS-042 chaining with a zero IV.
var dfcSystem = &chainSystem{
	name:   "dfc",
	sizes:  []int{16, 24, 32},
	lanes:  blockLanes,
	dvs042: true,
	newCipher: func(key []byte) (multiBlock, error) {
		return asMultiBlock(dfc.NewCipher(key))
	},
}

// serpentSystem is Serpent in the DVS-042 chaining with a zero IV.
var serpentSystem = &chainSystem{
	name:   "serpent",
	sizes:  []int{16, 24, 32},
	lanes:  blockLanes,
	dvs042: true,
	newCipher: func(key []byte) (multiBlock, error) {
		return asMultiBlock(serpent.NewCipher(key))
	},
}

// asMultiBlock reaches the multi-block methods that the dfc and serpent ciphers document.
func asMultiBlock(b cipher.Block, err error) (multiBlock, error) {
	if err != nil {
		return nil, err
	}
	m, ok := b.(multiBlock)
	if !ok {
		// The dfc and serpent packages promise these methods; without them the fast path
		// would silently be lost, so fall back to one block at a time.
		return blockByBlock{b}, nil
	}
	return m, nil
}

// newAES returns AES-128 as a multiBlock from package aesblocks, which runs the blocks of one
// call through AES-NI eight at a time: on 64 blocks about four times as fast as crypto/aes one
// block per interface call (blockByBlock), in both directions. In the pipeline benchmarks
// (BenchmarkModes, 16 interleaved runs, medians) that made dvb-cissa and atis-idsa scrambling
// about 37% faster and descrambling about 56-60% faster; what remains of scrambling is mostly
// the gather and scatter of the CBC steps around the calls.
func newAES(key []byte) (multiBlock, error) {
	c, err := aesblocks.NewCipher(key)
	if err != nil {
		// Not c: a nil *Cipher in the interface would not compare equal to nil.
		return nil, err
	}
	return c, nil
}

// blockByBlock gives a cipher.Block without multi-block methods the multiBlock shape, one
// block at a time; asMultiBlock keeps it as the fallback should dfc or serpent lose theirs.
// The blocks of one call are independent, so the processor can still overlap consecutive calls
// instead of waiting for each CBC link. Measured with crypto/aes on AVX2/AES-NI x86-64, 64 full
// payloads: gathered CBC encryption ran about 1.5 times as fast as per-payload CBC
// (crypto/cipher's encrypter reused through SetIV, or a plain loop), decryption about as fast
// as either, and both about twice as fast as a new cipher.NewCBCDecrypter per payload, which
// also allocates.
type blockByBlock struct {
	b cipher.Block
}

func (c blockByBlock) EncryptBlocks(dst, src []byte) {
	for i := 0; i+blockSize <= len(src); i += blockSize {
		c.b.Encrypt(dst[i:i+blockSize], src[i:i+blockSize])
	}
}

func (c blockByBlock) DecryptBlocks(dst, src []byte) {
	for i := 0; i+blockSize <= len(src); i += blockSize {
		c.b.Decrypt(dst[i:i+blockSize], src[i:i+blockSize])
	}
}
