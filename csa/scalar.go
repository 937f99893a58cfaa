package csa

// This file is the reference implementation: one payload at a time, written
// to be read next to the specification rather than to be fast. The bitsliced
// engines are tested against it.

// blockSbox is the 8-bit S-box of the block cipher.
// Constants from ETR 289 as published in TSDuck
// (src/libtsduck/crypto/tsDVBCSA2.cpp, block_sbox).
var blockSbox = [256]byte{
	0x3A, 0xEA, 0x68, 0xFE, 0x33, 0xE9, 0x88, 0x1A, 0x83, 0xCF, 0xE1, 0x7F, 0xBA, 0xE2, 0x38, 0x12,
	0xE8, 0x27, 0x61, 0x95, 0x0C, 0x36, 0xE5, 0x70, 0xA2, 0x06, 0x82, 0x7C, 0x17, 0xA3, 0x26, 0x49,
	0xBE, 0x7A, 0x6D, 0x47, 0xC1, 0x51, 0x8F, 0xF3, 0xCC, 0x5B, 0x67, 0xBD, 0xCD, 0x18, 0x08, 0xC9,
	0xFF, 0x69, 0xEF, 0x03, 0x4E, 0x48, 0x4A, 0x84, 0x3F, 0xB4, 0x10, 0x04, 0xDC, 0xF5, 0x5C, 0xC6,
	0x16, 0xAB, 0xAC, 0x4C, 0xF1, 0x6A, 0x2F, 0x3C, 0x3B, 0xD4, 0xD5, 0x94, 0xD0, 0xC4, 0x63, 0x62,
	0x71, 0xA1, 0xF9, 0x4F, 0x2E, 0xAA, 0xC5, 0x56, 0xE3, 0x39, 0x93, 0xCE, 0x65, 0x64, 0xE4, 0x58,
	0x6C, 0x19, 0x42, 0x79, 0xDD, 0xEE, 0x96, 0xF6, 0x8A, 0xEC, 0x1E, 0x85, 0x53, 0x45, 0xDE, 0xBB,
	0x7E, 0x0A, 0x9A, 0x13, 0x2A, 0x9D, 0xC2, 0x5E, 0x5A, 0x1F, 0x32, 0x35, 0x9C, 0xA8, 0x73, 0x30,
	0x29, 0x3D, 0xE7, 0x92, 0x87, 0x1B, 0x2B, 0x4B, 0xA5, 0x57, 0x97, 0x40, 0x15, 0xE6, 0xBC, 0x0E,
	0xEB, 0xC3, 0x34, 0x2D, 0xB8, 0x44, 0x25, 0xA4, 0x1C, 0xC7, 0x23, 0xED, 0x90, 0x6E, 0x50, 0x00,
	0x99, 0x9E, 0x4D, 0xD9, 0xDA, 0x8D, 0x6F, 0x5F, 0x3E, 0xD7, 0x21, 0x74, 0x86, 0xDF, 0x6B, 0x05,
	0x8E, 0x5D, 0x37, 0x11, 0xD2, 0x28, 0x75, 0xD6, 0xA7, 0x77, 0x24, 0xBF, 0xF0, 0xB0, 0x02, 0xB7,
	0xF8, 0xFC, 0x81, 0x09, 0xB1, 0x01, 0x76, 0x91, 0x7D, 0x0F, 0xC8, 0xA0, 0xF2, 0xCB, 0x78, 0x60,
	0xD1, 0xF7, 0xE0, 0xB5, 0x98, 0x22, 0xB3, 0x20, 0x1D, 0xA6, 0xDB, 0x7B, 0x59, 0x9F, 0xAE, 0x31,
	0xFB, 0xD3, 0xB6, 0xCA, 0x43, 0x72, 0x07, 0xF4, 0xD8, 0x41, 0x14, 0x55, 0x0D, 0x54, 0x8B, 0xB9,
	0xAD, 0x46, 0x0B, 0xAF, 0x80, 0x52, 0x2C, 0xFA, 0x8C, 0x89, 0x66, 0xFD, 0xB2, 0xA9, 0x9B, 0xC0,
}

// blockPerm permutes the bits of an S-box output: bit 0 goes to bit 1,
// 1 to 7, 2 to 5, 3 to 4, 4 to 2, 5 to 6, 6 to 0 and 7 to 3 (ETR 289; the
// same mapping as TSDuck's block_perm table).
func blockPerm(x byte) byte {
	return (x&0x01)<<1 | (x&0x02)<<6 | (x&0x04)<<3 | (x&0x08)<<1 |
		(x&0x10)>>2 | (x&0x20)<<1 | (x&0x40)>>6 | (x&0x80)>>4
}

// blockDecrypt deciphers one 8-byte block with the round keys kk.
func blockDecrypt(kk *[56]byte, blk *[8]byte) {
	r1, r2, r3, r4, r5, r6, r7, r8 := blk[0], blk[1], blk[2], blk[3], blk[4], blk[5], blk[6], blk[7]
	for i := 55; i >= 0; i-- {
		s := blockSbox[kk[i]^r7]
		t := r8 ^ s
		r1, r2, r3, r4, r5, r6, r7, r8 = t, r1, r2^t, r3^t, r4^t, r5, r6^blockPerm(s), r7
	}
	*blk = [8]byte{r1, r2, r3, r4, r5, r6, r7, r8}
}

// blockEncrypt enciphers one 8-byte block with the round keys kk; it undoes
// blockDecrypt round by round.
func blockEncrypt(kk *[56]byte, blk *[8]byte) {
	r1, r2, r3, r4, r5, r6, r7, r8 := blk[0], blk[1], blk[2], blk[3], blk[4], blk[5], blk[6], blk[7]
	for i := 0; i < 56; i++ {
		s := blockSbox[kk[i]^r8]
		r1, r2, r3, r4, r5, r6, r7, r8 = r2, r3^r1, r4^r1, r5^r1, r6, r7^blockPerm(s), r8, r1^s
	}
	*blk = [8]byte{r1, r2, r3, r4, r5, r6, r7, r8}
}

// The seven 5-to-2-bit S-boxes of the stream cipher.
// Constants from ETR 289 as published in TSDuck
// (src/libtsduck/crypto/tsDVBCSA2.cpp, sbox1..sbox7).
var streamSbox = [7][32]byte{
	{2, 0, 1, 1, 2, 3, 3, 0, 3, 2, 2, 0, 1, 1, 0, 3, 0, 3, 3, 0, 2, 2, 1, 1, 2, 2, 0, 3, 1, 1, 3, 0},
	{3, 1, 0, 2, 2, 3, 3, 0, 1, 3, 2, 1, 0, 0, 1, 2, 3, 1, 0, 3, 3, 2, 0, 2, 0, 0, 1, 2, 2, 1, 3, 1},
	{2, 0, 1, 2, 2, 3, 3, 1, 1, 1, 0, 3, 3, 0, 2, 0, 1, 3, 0, 1, 3, 0, 2, 2, 2, 0, 1, 2, 0, 3, 3, 1},
	{3, 1, 2, 3, 0, 2, 1, 2, 1, 2, 0, 1, 3, 0, 0, 3, 1, 0, 3, 1, 2, 3, 0, 3, 0, 3, 2, 0, 1, 2, 2, 1},
	{2, 0, 0, 1, 3, 2, 3, 2, 0, 1, 3, 3, 1, 0, 2, 1, 2, 3, 2, 0, 0, 3, 1, 1, 1, 0, 3, 2, 3, 1, 0, 2},
	{0, 1, 2, 3, 1, 2, 2, 0, 0, 1, 3, 0, 2, 3, 1, 3, 2, 3, 0, 2, 3, 0, 1, 1, 2, 1, 1, 2, 0, 3, 3, 0},
	{0, 3, 2, 2, 3, 0, 0, 1, 3, 0, 1, 3, 1, 2, 2, 1, 1, 0, 3, 3, 0, 1, 1, 2, 2, 3, 1, 0, 2, 3, 0, 2},
}

// streamSboxTaps lists, for each stream S-box, its five input bits from the
// first nine nibbles of register A, most significant input first: {n, b} is
// bit b of A[n] (A[1] is the newest nibble). From ETR 289, same taps as
// TSDuck's StreamCipher::cipher.
var streamSboxTaps = [7][5][2]uint8{
	{{4, 0}, {1, 2}, {6, 1}, {7, 3}, {9, 0}},
	{{2, 1}, {3, 2}, {6, 3}, {7, 0}, {9, 1}},
	{{1, 3}, {2, 0}, {5, 1}, {5, 3}, {6, 2}},
	{{3, 3}, {1, 1}, {2, 3}, {4, 2}, {8, 0}},
	{{5, 2}, {4, 3}, {6, 0}, {8, 1}, {9, 2}},
	{{3, 1}, {4, 1}, {5, 0}, {7, 2}, {9, 3}},
	{{2, 2}, {3, 0}, {7, 1}, {8, 2}, {8, 3}},
}

// streamState is the 107-bit state of the stream cipher: two shift
// registers of ten nibbles, four nibble registers of the combiner, and the
// bits p, q (from S-box 7) and the adder carry r.
type streamState struct {
	a, b    [11]byte // a[1]..a[10], b[1]..b[10]; index 0 unused so that indices match ETR 289
	x, y, z byte
	d, e, f byte
	p, q, r byte
}

// newStreamState loads the control word: its first four bytes fill A1..A8
// and its last four B1..B8, high nibble first.
func newStreamState(cw *[CWSize]byte) streamState {
	var s streamState
	for i := 0; i < 4; i++ {
		s.a[2*i+1], s.a[2*i+2] = cw[i]>>4, cw[i]&0x0f
		s.b[2*i+1], s.b[2*i+2] = cw[4+i]>>4, cw[4+i]&0x0f
	}
	return s
}

// clock advances the state by one round and returns two keystream bits.
// During initialisation, init is set and inA, inB are the IV nibbles fed
// into the two shift registers (D is then fed back into A as well).
func (s *streamState) clock(init bool, inA, inB byte) byte {
	var sb [7]byte
	for i, taps := range &streamSboxTaps {
		var in byte
		for _, t := range taps {
			in = in<<1 | s.a[t[0]]>>t[1]&1
		}
		sb[i] = streamSbox[i][in]
	}

	// A 4x4 XOR of register B gives the extra nibble of T3.
	bb := &s.b
	extra := (bb[3]&1<<3^bb[6]&2<<2^bb[7]&4<<1^bb[9]&8)&8 |
		(bb[6]&1<<2^bb[8]&2<<1^bb[3]&8>>1^bb[4]&4)&4 |
		(bb[5]&8>>2^bb[8]&4>>1^bb[4]&1<<1^bb[5]&2)&2 |
		(bb[9]&4>>2^bb[6]&8>>3^bb[3]&2>>1^bb[8]&1)&1

	// T1 and T2: the feedback of the two shift registers.
	nextA := s.a[10] ^ s.x
	nextB := s.b[7] ^ s.b[10] ^ s.y
	if init {
		nextA ^= s.d ^ inA
		nextB ^= inB
	}
	if s.p != 0 {
		nextB = (nextB<<1 | nextB>>3) & 0x0f
	}

	// T3 and T4: the combiner. F takes Z+E+r (with carry r) when q is set.
	s.d = s.e ^ s.z ^ extra
	nextE := s.f
	if s.q != 0 {
		sum := s.z + s.e + s.r
		s.r = sum >> 4 & 1
		s.f = sum & 0x0f
	} else {
		s.f = s.e
	}
	s.e = nextE

	copy(s.a[2:], s.a[1:10])
	copy(s.b[2:], s.b[1:10])
	s.a[1], s.b[1] = nextA, nextB

	s.x = (sb[3]&1)<<3 | (sb[2]&1)<<2 | sb[1]&2 | sb[0]>>1&1
	s.y = (sb[5]&1)<<3 | (sb[4]&1)<<2 | sb[3]&2 | sb[2]>>1&1
	s.z = (sb[1]&1)<<3 | (sb[0]&1)<<2 | sb[5]&2 | sb[4]>>1&1
	s.p = sb[6] >> 1 & 1
	s.q = sb[6] & 1

	dd := s.d ^ s.d>>1
	return dd>>1&2 | dd&1
}

// init feeds the 8-byte IV through 32 rounds, four per byte; the nibbles of
// each byte alternate between the two shift registers.
func (s *streamState) init(iv []byte) {
	for _, v := range iv[:8] {
		hi, lo := v>>4, v&0x0f
		s.clock(true, hi, lo)
		s.clock(true, lo, hi)
		s.clock(true, hi, lo)
		s.clock(true, lo, hi)
	}
}

// keystream returns the next 8 keystream bytes, four rounds per byte, most
// significant bits first.
func (s *streamState) keystream() (out [8]byte) {
	for i := range out {
		var v byte
		for j := 0; j < 4; j++ {
			v = v<<2 | s.clock(false, 0, 0)
		}
		out[i] = v
	}
	return out
}

// decryptScalar descrambles p in place: the stream cipher, initialised with
// the first scrambled block, is removed from every byte after it, then the
// full blocks are deciphered in reverse CBC with a zero IV after the last.
func decryptScalar(k *Key, p []byte) {
	n := len(p) / 8
	if n == 0 {
		return // shorter than one block: clear by definition
	}
	streamXOR(&k.cw, p)
	// p now holds the block cipher's output chain: C'_0..C'_{n-1}.
	// P_i = D(C'_i) ^ C'_{i+1}, with C'_n = 0.
	for i := 0; i < n; i++ {
		blk := [8]byte(p[8*i : 8*i+8])
		blockDecrypt(&k.kk, &blk)
		if i+1 < n {
			for j := range blk {
				blk[j] ^= p[8*(i+1)+j]
			}
		}
		copy(p[8*i:], blk[:])
	}
}

// streamXOR initialises the stream cipher with the first block of p and
// XORs its keystream into the bytes after it.
func streamXOR(cw *[CWSize]byte, p []byte) {
	s := newStreamState(cw)
	s.init(p)
	for i := 8; i < len(p); i += 8 {
		ks := s.keystream()
		for j := 0; j < 8 && i+j < len(p); j++ {
			p[i+j] ^= ks[j]
		}
	}
}

// encryptScalar scrambles p in place; it reverses decryptScalar step by step.
func encryptScalar(k *Key, p []byte) {
	n := len(p) / 8
	if n == 0 {
		return
	}
	// C'_i = E(P_i ^ C'_{i+1}) from the last block back, C'_n = 0.
	var next [8]byte
	for i := n - 1; i >= 0; i-- {
		blk := [8]byte(p[8*i : 8*i+8])
		for j := range blk {
			blk[j] ^= next[j]
		}
		blockEncrypt(&k.kk, &blk)
		copy(p[8*i:], blk[:])
		next = blk
	}
	streamXOR(&k.cw, p)
}
