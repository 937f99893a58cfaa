package serpent

import "encoding/binary"

// The multi-block generic path runs two blocks through the rounds side by
// side. A single block is one long dependency chain (each S-box and linear
// transformation waits for the previous one); interleaving two independent
// chains lets a superscalar core fill its idle execution units. Two is the
// most that stays (nearly) in the general-purpose registers of common 64-bit
// targets: eight state words plus temporaries and the key pointer.

// encryptBlocksGeneric encrypts len(src)/16 independent blocks; len(src) is
// a multiple of 16 and len(dst) >= len(src).
func encryptBlocksGeneric(ks *[132]uint32, dst, src []byte) {
	for len(src) >= 2*BlockSize {
		encrypt2Generic(ks, dst[:2*BlockSize], src[:2*BlockSize])
		dst, src = dst[2*BlockSize:], src[2*BlockSize:]
	}
	if len(src) > 0 {
		encryptBlockGeneric(ks, dst, src)
	}
}

// decryptBlocksGeneric decrypts len(src)/16 independent blocks; len(src) is
// a multiple of 16 and len(dst) >= len(src).
func decryptBlocksGeneric(ks *[132]uint32, dst, src []byte) {
	for len(src) >= 2*BlockSize {
		decrypt2Generic(ks, dst[:2*BlockSize], src[:2*BlockSize])
		dst, src = dst[2*BlockSize:], src[2*BlockSize:]
	}
	if len(src) > 0 {
		decryptBlockGeneric(ks, dst, src)
	}
}

// encrypt2Generic encrypts the two blocks of src[:32] into dst[:32].
func encrypt2Generic(ks *[132]uint32, dst, src []byte) {
	_, _ = dst[31], src[31] // one bounds check for both blocks
	a0 := binary.LittleEndian.Uint32(src[0:])
	b0 := binary.LittleEndian.Uint32(src[4:])
	c0 := binary.LittleEndian.Uint32(src[8:])
	d0 := binary.LittleEndian.Uint32(src[12:])
	a1 := binary.LittleEndian.Uint32(src[16:])
	b1 := binary.LittleEndian.Uint32(src[20:])
	c1 := binary.LittleEndian.Uint32(src[24:])
	d1 := binary.LittleEndian.Uint32(src[28:])
	for r := 0; r < 32; r += 8 {
		k := (*[32]uint32)(ks[4*r : 4*r+32])
		a0, b0, c0, d0 = sb0(a0^k[0], b0^k[1], c0^k[2], d0^k[3])
		a1, b1, c1, d1 = sb0(a1^k[0], b1^k[1], c1^k[2], d1^k[3])
		a0, b0, c0, d0 = lt(a0, b0, c0, d0)
		a1, b1, c1, d1 = lt(a1, b1, c1, d1)
		a0, b0, c0, d0 = sb1(a0^k[4], b0^k[5], c0^k[6], d0^k[7])
		a1, b1, c1, d1 = sb1(a1^k[4], b1^k[5], c1^k[6], d1^k[7])
		a0, b0, c0, d0 = lt(a0, b0, c0, d0)
		a1, b1, c1, d1 = lt(a1, b1, c1, d1)
		a0, b0, c0, d0 = sb2(a0^k[8], b0^k[9], c0^k[10], d0^k[11])
		a1, b1, c1, d1 = sb2(a1^k[8], b1^k[9], c1^k[10], d1^k[11])
		a0, b0, c0, d0 = lt(a0, b0, c0, d0)
		a1, b1, c1, d1 = lt(a1, b1, c1, d1)
		a0, b0, c0, d0 = sb3(a0^k[12], b0^k[13], c0^k[14], d0^k[15])
		a1, b1, c1, d1 = sb3(a1^k[12], b1^k[13], c1^k[14], d1^k[15])
		a0, b0, c0, d0 = lt(a0, b0, c0, d0)
		a1, b1, c1, d1 = lt(a1, b1, c1, d1)
		a0, b0, c0, d0 = sb4(a0^k[16], b0^k[17], c0^k[18], d0^k[19])
		a1, b1, c1, d1 = sb4(a1^k[16], b1^k[17], c1^k[18], d1^k[19])
		a0, b0, c0, d0 = lt(a0, b0, c0, d0)
		a1, b1, c1, d1 = lt(a1, b1, c1, d1)
		a0, b0, c0, d0 = sb5(a0^k[20], b0^k[21], c0^k[22], d0^k[23])
		a1, b1, c1, d1 = sb5(a1^k[20], b1^k[21], c1^k[22], d1^k[23])
		a0, b0, c0, d0 = lt(a0, b0, c0, d0)
		a1, b1, c1, d1 = lt(a1, b1, c1, d1)
		a0, b0, c0, d0 = sb6(a0^k[24], b0^k[25], c0^k[26], d0^k[27])
		a1, b1, c1, d1 = sb6(a1^k[24], b1^k[25], c1^k[26], d1^k[27])
		a0, b0, c0, d0 = lt(a0, b0, c0, d0)
		a1, b1, c1, d1 = lt(a1, b1, c1, d1)
		a0, b0, c0, d0 = sb7(a0^k[28], b0^k[29], c0^k[30], d0^k[31])
		a1, b1, c1, d1 = sb7(a1^k[28], b1^k[29], c1^k[30], d1^k[31])
		if r == 24 {
			break
		}
		a0, b0, c0, d0 = lt(a0, b0, c0, d0)
		a1, b1, c1, d1 = lt(a1, b1, c1, d1)
	}
	a0, b0, c0, d0 = a0^ks[128], b0^ks[129], c0^ks[130], d0^ks[131]
	a1, b1, c1, d1 = a1^ks[128], b1^ks[129], c1^ks[130], d1^ks[131]
	binary.LittleEndian.PutUint32(dst[0:], a0)
	binary.LittleEndian.PutUint32(dst[4:], b0)
	binary.LittleEndian.PutUint32(dst[8:], c0)
	binary.LittleEndian.PutUint32(dst[12:], d0)
	binary.LittleEndian.PutUint32(dst[16:], a1)
	binary.LittleEndian.PutUint32(dst[20:], b1)
	binary.LittleEndian.PutUint32(dst[24:], c1)
	binary.LittleEndian.PutUint32(dst[28:], d1)
}

// decrypt2Generic decrypts the two blocks of src[:32] into dst[:32].
func decrypt2Generic(ks *[132]uint32, dst, src []byte) {
	_, _ = dst[31], src[31] // one bounds check for both blocks
	a0 := binary.LittleEndian.Uint32(src[0:])
	b0 := binary.LittleEndian.Uint32(src[4:])
	c0 := binary.LittleEndian.Uint32(src[8:])
	d0 := binary.LittleEndian.Uint32(src[12:])
	a1 := binary.LittleEndian.Uint32(src[16:])
	b1 := binary.LittleEndian.Uint32(src[20:])
	c1 := binary.LittleEndian.Uint32(src[24:])
	d1 := binary.LittleEndian.Uint32(src[28:])
	a0, b0, c0, d0 = a0^ks[128], b0^ks[129], c0^ks[130], d0^ks[131]
	a1, b1, c1, d1 = a1^ks[128], b1^ks[129], c1^ks[130], d1^ks[131]
	for r := 24; r >= 0; r -= 8 {
		k := (*[32]uint32)(ks[4*r : 4*r+32])
		if r != 24 {
			a0, b0, c0, d0 = ltInv(a0, b0, c0, d0)
			a1, b1, c1, d1 = ltInv(a1, b1, c1, d1)
		}
		a0, b0, c0, d0 = sb7Inv(a0, b0, c0, d0)
		a1, b1, c1, d1 = sb7Inv(a1, b1, c1, d1)
		a0, b0, c0, d0 = ltInv(a0^k[28], b0^k[29], c0^k[30], d0^k[31])
		a1, b1, c1, d1 = ltInv(a1^k[28], b1^k[29], c1^k[30], d1^k[31])
		a0, b0, c0, d0 = sb6Inv(a0, b0, c0, d0)
		a1, b1, c1, d1 = sb6Inv(a1, b1, c1, d1)
		a0, b0, c0, d0 = ltInv(a0^k[24], b0^k[25], c0^k[26], d0^k[27])
		a1, b1, c1, d1 = ltInv(a1^k[24], b1^k[25], c1^k[26], d1^k[27])
		a0, b0, c0, d0 = sb5Inv(a0, b0, c0, d0)
		a1, b1, c1, d1 = sb5Inv(a1, b1, c1, d1)
		a0, b0, c0, d0 = ltInv(a0^k[20], b0^k[21], c0^k[22], d0^k[23])
		a1, b1, c1, d1 = ltInv(a1^k[20], b1^k[21], c1^k[22], d1^k[23])
		a0, b0, c0, d0 = sb4Inv(a0, b0, c0, d0)
		a1, b1, c1, d1 = sb4Inv(a1, b1, c1, d1)
		a0, b0, c0, d0 = ltInv(a0^k[16], b0^k[17], c0^k[18], d0^k[19])
		a1, b1, c1, d1 = ltInv(a1^k[16], b1^k[17], c1^k[18], d1^k[19])
		a0, b0, c0, d0 = sb3Inv(a0, b0, c0, d0)
		a1, b1, c1, d1 = sb3Inv(a1, b1, c1, d1)
		a0, b0, c0, d0 = ltInv(a0^k[12], b0^k[13], c0^k[14], d0^k[15])
		a1, b1, c1, d1 = ltInv(a1^k[12], b1^k[13], c1^k[14], d1^k[15])
		a0, b0, c0, d0 = sb2Inv(a0, b0, c0, d0)
		a1, b1, c1, d1 = sb2Inv(a1, b1, c1, d1)
		a0, b0, c0, d0 = ltInv(a0^k[8], b0^k[9], c0^k[10], d0^k[11])
		a1, b1, c1, d1 = ltInv(a1^k[8], b1^k[9], c1^k[10], d1^k[11])
		a0, b0, c0, d0 = sb1Inv(a0, b0, c0, d0)
		a1, b1, c1, d1 = sb1Inv(a1, b1, c1, d1)
		a0, b0, c0, d0 = ltInv(a0^k[4], b0^k[5], c0^k[6], d0^k[7])
		a1, b1, c1, d1 = ltInv(a1^k[4], b1^k[5], c1^k[6], d1^k[7])
		a0, b0, c0, d0 = sb0Inv(a0, b0, c0, d0)
		a1, b1, c1, d1 = sb0Inv(a1, b1, c1, d1)
		a0, b0, c0, d0 = a0^k[0], b0^k[1], c0^k[2], d0^k[3]
		a1, b1, c1, d1 = a1^k[0], b1^k[1], c1^k[2], d1^k[3]
	}
	binary.LittleEndian.PutUint32(dst[0:], a0)
	binary.LittleEndian.PutUint32(dst[4:], b0)
	binary.LittleEndian.PutUint32(dst[8:], c0)
	binary.LittleEndian.PutUint32(dst[12:], d0)
	binary.LittleEndian.PutUint32(dst[16:], a1)
	binary.LittleEndian.PutUint32(dst[20:], b1)
	binary.LittleEndian.PutUint32(dst[24:], c1)
	binary.LittleEndian.PutUint32(dst[28:], d1)
}
