package csa

// keyPerm is the 64-bit permutation of the block cipher key schedule:
// bit i of one key row (bit 0 = most significant bit of byte 0) moves to
// bit keyPerm[i]-1 of the next row.
// Constants from ETR 289 as published in TSDuck
// (src/libtsduck/crypto/tsDVBCSA2.cpp, key_perm).
var keyPerm = [64]byte{
	0x12, 0x24, 0x09, 0x07, 0x2A, 0x31, 0x1D, 0x15,
	0x1C, 0x36, 0x3E, 0x32, 0x13, 0x21, 0x3B, 0x40,
	0x18, 0x14, 0x25, 0x27, 0x02, 0x35, 0x1B, 0x01,
	0x22, 0x04, 0x0D, 0x0E, 0x39, 0x28, 0x1A, 0x29,
	0x33, 0x23, 0x34, 0x0C, 0x16, 0x30, 0x1E, 0x3A,
	0x2D, 0x1F, 0x08, 0x19, 0x17, 0x2F, 0x3D, 0x11,
	0x3C, 0x05, 0x38, 0x2B, 0x0B, 0x06, 0x0A, 0x2C,
	0x20, 0x3F, 0x2E, 0x0F, 0x03, 0x26, 0x10, 0x37,
}

// blockKeyRows returns the seven 8-byte rows of the block key schedule:
// rows[6] is the control word and rows[i] is keyPerm applied to rows[i+1].
func blockKeyRows(cw [CWSize]byte) (rows [7][8]byte) {
	rows[6] = cw
	for i := 5; i >= 0; i-- {
		src := &rows[i+1]
		dst := &rows[i]
		for j := 0; j < 64; j++ {
			if src[j/8]>>(7-j%8)&1 != 0 {
				to := int(keyPerm[j]) - 1
				dst[to/8] |= 0x80 >> (to % 8)
			}
		}
	}
	return rows
}

// scheduleBlockKey returns the 56 round keys in encryption order: round key
// 8*i+j is byte j of row i XORed with the row number i. Decryption uses them
// from the last to the first.
func scheduleBlockKey(cw [CWSize]byte) (kk [56]byte) {
	rows := blockKeyRows(cw)
	for i := range rows {
		for j := range rows[i] {
			kk[8*i+j] = rows[i][j] ^ byte(i)
		}
	}
	return kk
}

// streamKeyBits returns the stream cipher's initial register contents as
// broadcast words. The stream cipher loads the control word as 16 nibbles,
// high nibble first: nibbles 0..7 go to A1..A8 and nibbles 8..15 to B1..B8.
// Element 4*n+b is all ones if bit b of nibble n is set.
func streamKeyBits(cw [CWSize]byte) (bits [64]uint64) {
	for n := 0; n < 16; n++ {
		nib := cw[n/2] >> 4
		if n%2 == 1 {
			nib = cw[n/2] & 0x0f
		}
		for b := 0; b < 4; b++ {
			bits[4*n+b] = -uint64(nib >> b & 1)
		}
	}
	return bits
}
