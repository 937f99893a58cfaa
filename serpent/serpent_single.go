package serpent

import (
	"encoding/binary"
	"math/bits"
)

// The single-block path. One block is one long chain of dependent
// instructions (about 1,300 of them), so its speed is set by the depth of
// that chain, not by the instruction count: a superscalar core has idle
// units to spare. Two changes shorten the chain compared with the textbook
// round (key addition, S-box, linear transformation):
//
//   - Each XOR of three or four terms in the linear transformation is
//     associated so that the terms that are ready first (a word rotated at the
//     start of the transformation, a round-key word) are combined while the
//     late ones are still being computed.
//   - The round-key addition is folded into the linear transformation of the
//     previous round (encryption) or the next one (decryption) instead of
//     adding one XOR to the chain between the two. The linear transformation
//     is linear, so a key word can enter before its final rotation once it
//     is rotated the other way, and a key added before the inverse
//     transformation can be added after it once transformed. These adjusted
//     round keys are computed once, in [Cipher.foldKeys].
//
// The association was chosen by computing the length of the longest chain
// over the 32 rounds, with the S-boxes as they are, for every order of every
// XOR chain: 521 to 462 cycles for encryption, 457 to 410 for decryption, at
// one cycle per instruction.

// foldKeys fills ek and dk, the round keys of encryptFolded and
// decryptFolded, from ks.
func (c *Cipher) foldKeys() {
	ks := &c.ks
	c.ek, c.dk = *ks, *ks
	for r := 1; r < 32; r++ {
		// Encryption: words a and c of round key r enter the linear
		// transformation of round r-1 before its last rotations.
		c.ek[4*r] = bits.RotateLeft32(ks[4*r], -5)
		c.ek[4*r+2] = bits.RotateLeft32(ks[4*r+2], -22)

		// Decryption: key r, added after S-box r, moves through the
		// inverse linear transformation that follows: ltInv(y^k) is
		// ltInv(y)^ltInv(k). decryptFolded adds word c before the last
		// rotation, and words b and d inside XORs that also take the
		// adjusted word c, so those carry the difference.
		ka, kb, kc, kd := ltInv(ks[4*r], ks[4*r+1], ks[4*r+2], ks[4*r+3])
		xc := bits.RotateLeft32(kc, 3)
		c.dk[4*r], c.dk[4*r+1], c.dk[4*r+2], c.dk[4*r+3] = ka, kb^xc, xc, kd^xc
	}
}

// ltKey is lt followed by the addition of the next round key, given as
// adjusted by foldKeys (words 0 and 2 rotated right by 5 and 22).
func ltKey(a, b, c, d, k0, k1, k2, k3 uint32) (uint32, uint32, uint32, uint32) {
	a = bits.RotateLeft32(a, 13)
	c = bits.RotateLeft32(c, 3)
	b = bits.RotateLeft32(b^a^c, 1)
	d = bits.RotateLeft32(d^a<<3^c, 7)
	a = bits.RotateLeft32(a^k0^b^d, 5)
	c = bits.RotateLeft32(c^k2^d^b<<7, 22)
	return a, b ^ k1, c, d ^ k3
}

// ltInvKey is the addition of a round key followed by ltInv, with the key
// as adjusted by foldKeys.
func ltInvKey(a, b, c, d, k0, k1, k2, k3 uint32) (uint32, uint32, uint32, uint32) {
	c = bits.RotateLeft32(c, -22)
	a = bits.RotateLeft32(a, -5)
	c = d ^ k2 ^ b<<7 ^ c
	a = a ^ b ^ d
	d = bits.RotateLeft32(d, -7)
	b = bits.RotateLeft32(b, -1)
	d = d ^ k3 ^ a<<3 ^ c
	b = b ^ k1 ^ a ^ c
	return bits.RotateLeft32(a, -13) ^ k0, b, bits.RotateLeft32(c, -3), d
}

// encryptFolded encrypts one 16-byte block with the round keys of foldKeys.
func encryptFolded(ek *[132]uint32, dst, src []byte) {
	_, _ = src[15], dst[15]
	a := binary.LittleEndian.Uint32(src[0:4]) ^ ek[0]
	b := binary.LittleEndian.Uint32(src[4:8]) ^ ek[1]
	c := binary.LittleEndian.Uint32(src[8:12]) ^ ek[2]
	d := binary.LittleEndian.Uint32(src[12:16]) ^ ek[3]
	for r := 0; r < 32; r += 8 {
		// Round keys r+1 to r+8: one bounds check per eight rounds.
		k := (*[32]uint32)(ek[4*r+4 : 4*r+36])
		a, b, c, d = sb0(a, b, c, d)
		a, b, c, d = ltKey(a, b, c, d, k[0], k[1], k[2], k[3])
		a, b, c, d = sb1(a, b, c, d)
		a, b, c, d = ltKey(a, b, c, d, k[4], k[5], k[6], k[7])
		a, b, c, d = sb2(a, b, c, d)
		a, b, c, d = ltKey(a, b, c, d, k[8], k[9], k[10], k[11])
		a, b, c, d = sb3(a, b, c, d)
		a, b, c, d = ltKey(a, b, c, d, k[12], k[13], k[14], k[15])
		a, b, c, d = sb4(a, b, c, d)
		a, b, c, d = ltKey(a, b, c, d, k[16], k[17], k[18], k[19])
		a, b, c, d = sb5(a, b, c, d)
		a, b, c, d = ltKey(a, b, c, d, k[20], k[21], k[22], k[23])
		a, b, c, d = sb6(a, b, c, d)
		a, b, c, d = ltKey(a, b, c, d, k[24], k[25], k[26], k[27])
		a, b, c, d = sb7(a, b, c, d)
		if r == 24 {
			// The last round ends with a plain key addition.
			a, b, c, d = a^k[28], b^k[29], c^k[30], d^k[31]
			break
		}
		a, b, c, d = ltKey(a, b, c, d, k[28], k[29], k[30], k[31])
	}
	binary.LittleEndian.PutUint32(dst[0:4], a)
	binary.LittleEndian.PutUint32(dst[4:8], b)
	binary.LittleEndian.PutUint32(dst[8:12], c)
	binary.LittleEndian.PutUint32(dst[12:16], d)
}

// decryptFolded decrypts one 16-byte block with the round keys of foldKeys.
func decryptFolded(dk *[132]uint32, dst, src []byte) {
	_, _ = src[15], dst[15]
	a := binary.LittleEndian.Uint32(src[0:4]) ^ dk[128]
	b := binary.LittleEndian.Uint32(src[4:8]) ^ dk[129]
	c := binary.LittleEndian.Uint32(src[8:12]) ^ dk[130]
	d := binary.LittleEndian.Uint32(src[12:16]) ^ dk[131]
	for r := 24; ; r -= 8 {
		// Round keys r to r+7: one bounds check per eight rounds.
		k := (*[32]uint32)(dk[4*r : 4*r+32])
		a, b, c, d = sb7Inv(a, b, c, d)
		a, b, c, d = ltInvKey(a, b, c, d, k[28], k[29], k[30], k[31])
		a, b, c, d = sb6Inv(a, b, c, d)
		a, b, c, d = ltInvKey(a, b, c, d, k[24], k[25], k[26], k[27])
		a, b, c, d = sb5Inv(a, b, c, d)
		a, b, c, d = ltInvKey(a, b, c, d, k[20], k[21], k[22], k[23])
		a, b, c, d = sb4Inv(a, b, c, d)
		a, b, c, d = ltInvKey(a, b, c, d, k[16], k[17], k[18], k[19])
		a, b, c, d = sb3Inv(a, b, c, d)
		a, b, c, d = ltInvKey(a, b, c, d, k[12], k[13], k[14], k[15])
		a, b, c, d = sb2Inv(a, b, c, d)
		a, b, c, d = ltInvKey(a, b, c, d, k[8], k[9], k[10], k[11])
		a, b, c, d = sb1Inv(a, b, c, d)
		a, b, c, d = ltInvKey(a, b, c, d, k[4], k[5], k[6], k[7])
		a, b, c, d = sb0Inv(a, b, c, d)
		if r == 0 {
			// The first round key is added plainly.
			a, b, c, d = a^k[0], b^k[1], c^k[2], d^k[3]
			break
		}
		a, b, c, d = ltInvKey(a, b, c, d, k[0], k[1], k[2], k[3])
	}
	binary.LittleEndian.PutUint32(dst[0:4], a)
	binary.LittleEndian.PutUint32(dst[4:8], b)
	binary.LittleEndian.PutUint32(dst[8:12], c)
	binary.LittleEndian.PutUint32(dst[12:16], d)
}
