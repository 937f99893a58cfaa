package scrambling

import (
	"github.com/tsdescramble/tsdescramble/dfc"
	"github.com/tsdescramble/tsdescramble/internal/aesblocks"
	"github.com/tsdescramble/tsdescramble/serpent"
)

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
	iv:        dvbCISSAIV,
	newCipher: newAES,
}

// atisIDSA is ATIS-IDSA: AES-128 in the DVS-042 chaining with a zero IV, the
// 2003 DVS-042 short-payload rule (TSDuck tsIDSA).
var atisIDSA = &chainSystem{
	name:      "atis-idsa",
	sizes:     []int{16},
	dvs042:    true,
	newCipher: newAES,
}

// dfcSystem is DFC in the DVS-042 chaining with a zero IV.
var dfcSystem = &chainSystem{
	name:      "dfc",
	sizes:     []int{16, 24, 32},
	dvs042:    true,
	newCipher: asMultiBlock(dfc.NewCipher),
}

// serpentSystem is Serpent in the DVS-042 chaining with a zero IV.
var serpentSystem = &chainSystem{
	name:      "serpent",
	sizes:     []int{16, 24, 32},
	dvs042:    true,
	newCipher: asMultiBlock(serpent.NewCipher),
}

// newAES makes AES-128 ciphers from package aesblocks, whose multi-block calls run the blocks
// of one call through AES-NI eight at a time. crypto/aes takes one block per interface call,
// so each block pays for a call and consecutive blocks overlap only as far as the processor
// finds on its own; the multi-block calls speed up both directions of dvb-cissa and atis-idsa,
// and what remains of scrambling is mostly the gather and scatter around the calls.
var newAES = asMultiBlock(aesblocks.NewCipher)

// asMultiBlock turns the constructor of a cipher package, which returns its concrete *Cipher,
// into a chainSystem's newCipher. The constraint makes the compiler check that the cipher has
// the multi-block methods, so a cipher without them cannot be slipped in and silently run one
// block at a time.
func asMultiBlock[C multiBlock](newCipher func(key []byte) (C, error)) func(key []byte) (multiBlock, error) {
	return func(key []byte) (multiBlock, error) {
		c, err := newCipher(key)
		if err != nil {
			// Not c: a nil *Cipher in the interface would not compare equal to nil.
			return nil, err
		}
		return c, nil
	}
}
