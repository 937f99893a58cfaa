package serpent

import (
	"encoding/binary"
	"math/bits"
)

// phi is the fractional part of the golden ratio, the constant of the key
// schedule recurrence.
const phi = 0x9e3779b9

// expandKey fills ks with the 33 round keys of the padded key (at most 32
// bytes, checked by the caller).
func expandKey(ks *[132]uint32, key []byte) {
	// The prekey w[-8..-1] is the key read as little-endian words; a key
	// shorter than 256 bits is followed by a single 1 bit and zeros.
	var padded [32]byte
	copy(padded[:], key)
	if len(key) < len(padded) {
		padded[len(key)] = 0x01
	}
	var w [140]uint32
	for i := range 8 {
		w[i] = binary.LittleEndian.Uint32(padded[4*i:])
	}
	for i := 8; i < len(w); i++ {
		x := w[i-8] ^ w[i-5] ^ w[i-3] ^ w[i-1] ^ phi ^ uint32(i-8)
		w[i] = bits.RotateLeft32(x, 11)
	}
	p := w[8:]
	// Round key i goes through S-box (3 - i) mod 8.
	for i := 0; i < 33; i++ {
		a, b, c, d := p[4*i], p[4*i+1], p[4*i+2], p[4*i+3]
		switch (3 - i) & 7 {
		case 0:
			a, b, c, d = sb0(a, b, c, d)
		case 1:
			a, b, c, d = sb1(a, b, c, d)
		case 2:
			a, b, c, d = sb2(a, b, c, d)
		case 3:
			a, b, c, d = sb3(a, b, c, d)
		case 4:
			a, b, c, d = sb4(a, b, c, d)
		case 5:
			a, b, c, d = sb5(a, b, c, d)
		case 6:
			a, b, c, d = sb6(a, b, c, d)
		case 7:
			a, b, c, d = sb7(a, b, c, d)
		}
		ks[4*i], ks[4*i+1], ks[4*i+2], ks[4*i+3] = a, b, c, d
	}
	clear(w[:])
	clear(padded[:])
}

// lt is Serpent's linear transformation.
func lt(a, b, c, d uint32) (uint32, uint32, uint32, uint32) {
	a = bits.RotateLeft32(a, 13)
	c = bits.RotateLeft32(c, 3)
	b ^= a ^ c
	d ^= c ^ a<<3
	b = bits.RotateLeft32(b, 1)
	d = bits.RotateLeft32(d, 7)
	a ^= b ^ d
	c ^= d ^ b<<7
	a = bits.RotateLeft32(a, 5)
	c = bits.RotateLeft32(c, 22)
	return a, b, c, d
}

// ltInv is the inverse of lt: the same steps in reverse order.
func ltInv(a, b, c, d uint32) (uint32, uint32, uint32, uint32) {
	c = bits.RotateLeft32(c, -22)
	a = bits.RotateLeft32(a, -5)
	c ^= d ^ b<<7
	a ^= b ^ d
	d = bits.RotateLeft32(d, -7)
	b = bits.RotateLeft32(b, -1)
	d ^= c ^ a<<3
	b ^= a ^ c
	c = bits.RotateLeft32(c, -3)
	a = bits.RotateLeft32(a, -13)
	return a, b, c, d
}

// encryptBlockGeneric encrypts one 16-byte block; dst and src are at least
// 16 bytes long.
func encryptBlockGeneric(ks *[132]uint32, dst, src []byte) {
	a := binary.LittleEndian.Uint32(src[0:4])
	b := binary.LittleEndian.Uint32(src[4:8])
	c := binary.LittleEndian.Uint32(src[8:12])
	d := binary.LittleEndian.Uint32(src[12:16])
	a, b, c, d = encryptWords(ks, a, b, c, d)
	binary.LittleEndian.PutUint32(dst[0:4], a)
	binary.LittleEndian.PutUint32(dst[4:8], b)
	binary.LittleEndian.PutUint32(dst[8:12], c)
	binary.LittleEndian.PutUint32(dst[12:16], d)
}

// decryptBlockGeneric decrypts one 16-byte block; dst and src are at least
// 16 bytes long.
func decryptBlockGeneric(ks *[132]uint32, dst, src []byte) {
	a := binary.LittleEndian.Uint32(src[0:4])
	b := binary.LittleEndian.Uint32(src[4:8])
	c := binary.LittleEndian.Uint32(src[8:12])
	d := binary.LittleEndian.Uint32(src[12:16])
	a, b, c, d = decryptWords(ks, a, b, c, d)
	binary.LittleEndian.PutUint32(dst[0:4], a)
	binary.LittleEndian.PutUint32(dst[4:8], b)
	binary.LittleEndian.PutUint32(dst[8:12], c)
	binary.LittleEndian.PutUint32(dst[12:16], d)
}

// encryptWords runs the 32 rounds on one block held in four words.
func encryptWords(ks *[132]uint32, a, b, c, d uint32) (uint32, uint32, uint32, uint32) {
	for r := 0; r < 32; r += 8 {
		// One bounds check per eight rounds instead of one per key word.
		k := (*[32]uint32)(ks[4*r : 4*r+32])
		a, b, c, d = sb0(a^k[0], b^k[1], c^k[2], d^k[3])
		a, b, c, d = lt(a, b, c, d)
		a, b, c, d = sb1(a^k[4], b^k[5], c^k[6], d^k[7])
		a, b, c, d = lt(a, b, c, d)
		a, b, c, d = sb2(a^k[8], b^k[9], c^k[10], d^k[11])
		a, b, c, d = lt(a, b, c, d)
		a, b, c, d = sb3(a^k[12], b^k[13], c^k[14], d^k[15])
		a, b, c, d = lt(a, b, c, d)
		a, b, c, d = sb4(a^k[16], b^k[17], c^k[18], d^k[19])
		a, b, c, d = lt(a, b, c, d)
		a, b, c, d = sb5(a^k[20], b^k[21], c^k[22], d^k[23])
		a, b, c, d = lt(a, b, c, d)
		a, b, c, d = sb6(a^k[24], b^k[25], c^k[26], d^k[27])
		a, b, c, d = lt(a, b, c, d)
		a, b, c, d = sb7(a^k[28], b^k[29], c^k[30], d^k[31])
		if r == 24 {
			// The last round replaces the linear transformation by
			// a final key addition.
			break
		}
		a, b, c, d = lt(a, b, c, d)
	}
	return a ^ ks[128], b ^ ks[129], c ^ ks[130], d ^ ks[131]
}

// decryptWords inverts encryptWords.
func decryptWords(ks *[132]uint32, a, b, c, d uint32) (uint32, uint32, uint32, uint32) {
	a, b, c, d = a^ks[128], b^ks[129], c^ks[130], d^ks[131]
	for r := 24; r >= 0; r -= 8 {
		k := (*[32]uint32)(ks[4*r : 4*r+32])
		if r != 24 {
			a, b, c, d = ltInv(a, b, c, d)
		}
		a, b, c, d = sb7Inv(a, b, c, d)
		a, b, c, d = ltInv(a^k[28], b^k[29], c^k[30], d^k[31])
		a, b, c, d = sb6Inv(a, b, c, d)
		a, b, c, d = ltInv(a^k[24], b^k[25], c^k[26], d^k[27])
		a, b, c, d = sb5Inv(a, b, c, d)
		a, b, c, d = ltInv(a^k[20], b^k[21], c^k[22], d^k[23])
		a, b, c, d = sb4Inv(a, b, c, d)
		a, b, c, d = ltInv(a^k[16], b^k[17], c^k[18], d^k[19])
		a, b, c, d = sb3Inv(a, b, c, d)
		a, b, c, d = ltInv(a^k[12], b^k[13], c^k[14], d^k[15])
		a, b, c, d = sb2Inv(a, b, c, d)
		a, b, c, d = ltInv(a^k[8], b^k[9], c^k[10], d^k[11])
		a, b, c, d = sb1Inv(a, b, c, d)
		a, b, c, d = ltInv(a^k[4], b^k[5], c^k[6], d^k[7])
		a, b, c, d = sb0Inv(a, b, c, d)
		a, b, c, d = a^k[0], b^k[1], c^k[2], d^k[3]
	}
	return a, b, c, d
}
