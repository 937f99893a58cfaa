package csa

import (
	"encoding/binary"
	"math/bits"
)

// DecryptPrefix writes to dst the first len(dst) bytes of payload descrambled
// with control word cw: the bytes [Key.Decrypt] would leave in
// payload[:len(dst)] with the key [NewKey] makes of cw. payload is not
// changed, and it may have any length, as with [Key.Decrypt]; len(dst) must
// not exceed len(payload), and dst must not overlap payload.
//
// It is meant for trying many control words on one payload, as key
// synchronisation does when it looks for the control word that turns the
// start of a PES packet into a valid header. It computes only what the
// first len(dst) bytes depend on: the stream cipher's initialisation, its
// keystream as far as dst reaches, and one block decryption per 8 bytes of
// dst; the rest of the payload is not read. It builds no [Key] (none of its
// bitsliced key material) and does not allocate, so a call with a short dst
// costs a small fraction of [NewKey] and a full [Key.Decrypt]. A caller can
// reject most control words with a short dst first (the start code 00 00 01
// needs only 3 bytes) and ask for more bytes only of those that pass.
func DecryptPrefix(cw *[CWSize]byte, payload []byte, dst []byte) {
	m := len(dst)
	if m > len(payload) {
		panic("csa: DecryptPrefix: dst longer than payload")
	}
	full := len(payload) / 8 * 8
	if full == 0 || m == 0 {
		copy(dst, payload) // shorter than one block: clear by definition
		return
	}
	var kk [56]byte
	prefixBlockKey(cw, &kk)
	var s prefixStream
	s.init(cw, (*[8]byte)(payload))

	// P_i = D(C'_i) ^ C'_{i+1}, with C'_n = 0 after the last full block, and
	// C'_{i+1} is block i+1 with the keystream removed. The stream cipher
	// produces its bytes in order, so each block is deciphered as far as dst
	// needs: in full where it is the input of the next block decryption, only
	// up to len(dst) where it is the last one XORed in.
	lim := min(m, full)
	cur := [8]byte(payload[:8])
	for t := 0; t < lim; t += 8 {
		d := cur
		prefixBlockDecrypt(&kk, &d)
		out := dst[t:min(t+8, lim)]
		if t+8 >= full {
			copy(out, d[:])
			break
		}
		next := payload[t+8 : t+16]
		want := 8
		if t+8 >= lim {
			want = lim - t
		}
		for j := 0; j < want; j++ {
			cur[j] = next[j] ^ s.keystreamByte()
		}
		for j := range out {
			out[j] = d[j] ^ cur[j]
		}
	}
	// The residue after the last full block has only the stream cipher. The
	// loop above has consumed the keystream of blocks 1..n-1 (it ran to the
	// last block because m > full), so the next keystream byte is the
	// residue's first.
	for q := full; q < m; q++ {
		dst[q] = payload[q] ^ s.keystreamByte()
	}
}

// prefixStream is the stream cipher of scalar.go in a form that does the same
// work in fewer operations: the shift registers are packed into words, the
// S-box inputs gathered by table lookups, and the data-dependent choices made
// without branches, which a random state would mispredict half the time. The
// reference streamState stays as written for reading against the
// specification; tests hold the two to the same keystream.
type prefixStream struct {
	// a and b hold A1..A10 and B1..B10: nibble k in bits 4(k-1) to 4(k-1)+3.
	a, b                   uint64
	x, y, z, d, e, f, p, q uint32
	r                      uint32
}

// regMask keeps the ten nibbles of a shift register.
const regMask = 1<<40 - 1

// init loads the control word (A1..A8 from bytes 0-3 and B1..B8 from bytes
// 4-7, high nibble first) and feeds the 8-byte IV through 32 rounds, as
// streamState.init does.
func (s *prefixStream) init(cw *[CWSize]byte, iv *[8]byte) {
	*s = prefixStream{}
	for i := 0; i < 4; i++ {
		s.a |= uint64(cw[i]>>4)<<(8*i) | uint64(cw[i]&0x0f)<<(8*i+4)
		s.b |= uint64(cw[4+i]>>4)<<(8*i) | uint64(cw[4+i]&0x0f)<<(8*i+4)
	}
	for _, v := range iv {
		hi, lo := uint32(v>>4), uint32(v&0x0f)
		s.clock(true, hi, lo)
		s.clock(true, lo, hi)
		s.clock(true, hi, lo)
		s.clock(true, lo, hi)
	}
}

// keystreamByte returns the next keystream byte: four rounds, most
// significant bits first.
func (s *prefixStream) keystreamByte() byte {
	v := s.clock(false, 0, 0)
	v = v<<2 | s.clock(false, 0, 0)
	v = v<<2 | s.clock(false, 0, 0)
	v = v<<2 | s.clock(false, 0, 0)
	return byte(v)
}

// clock advances the state by one round and returns two keystream bits; it
// is streamState.clock step for step.
func (s *prefixStream) clock(init bool, inA, inB uint32) uint32 {
	a, b := s.a, s.b

	// The seven S-box inputs, 5 bits each, gathered from A1..A9 at once.
	t := &prefixTaps
	in := t[0][a&15] | t[1][a>>4&15] | t[2][a>>8&15] | t[3][a>>12&15] | t[4][a>>16&15] |
		t[5][a>>20&15] | t[6][a>>24&15] | t[7][a>>28&15] | t[8][a>>32&15]
	o := &prefixSboxOut
	sb := o[0][in&31] | o[1][in>>5&31] | o[2][in>>10&31] | o[3][in>>15&31] |
		o[4][in>>20&31] | o[5][in>>25&31] | o[6][in>>30&31]

	// The 4x4 XOR of register B: each bit of the extra nibble is the parity
	// of four bits of B.
	extra := uint32(bits.OnesCount64(b&prefixExtra[3])&1)<<3 |
		uint32(bits.OnesCount64(b&prefixExtra[2])&1)<<2 |
		uint32(bits.OnesCount64(b&prefixExtra[1])&1)<<1 |
		uint32(bits.OnesCount64(b&prefixExtra[0])&1)

	nextA := uint32(a>>36) ^ s.x
	nextB := uint32(b>>24&15) ^ uint32(b>>36) ^ s.y
	if init {
		nextA ^= s.d ^ inA
		nextB ^= inB
	}
	pm := -s.p // all ones when p is set
	nextB ^= (nextB ^ (nextB<<1|nextB>>3)&15) & pm

	d := s.e ^ s.z ^ extra
	qm := -s.q
	sum := s.z + s.e + s.r
	s.r = sum>>4&qm | s.r&^qm
	s.e, s.f = s.f, sum&15&qm|s.e&^qm
	s.d = d

	s.a = (a<<4 | uint64(nextA)) & regMask
	s.b = (b<<4 | uint64(nextB)) & regMask
	s.x, s.y, s.z = sb&15, sb>>4&15, sb>>8&15
	s.p, s.q = sb>>12&1, sb>>13&1

	dd := d ^ d>>1
	return dd>>1&2 | dd&1
}

// prefixTaps[n][v] places the bits of nibble A(n+1) = v at the S-box input
// bits they feed: bits 5i to 5i+4 of the result are the input of S-box i,
// most significant tap first, as in streamSboxTaps.
var prefixTaps = func() (t [9][16]uint64) {
	for i, taps := range &streamSboxTaps {
		for k, tap := range taps {
			n, bit := tap[0]-1, tap[1]
			for v := range 16 {
				if v>>bit&1 != 0 {
					t[n][v] |= 1 << (5*i + 4 - k)
				}
			}
		}
	}
	return t
}()

// prefixSboxOut[i][v] is what output streamSbox[i][v] contributes to the
// next x (bits 0-3), y (4-7), z (8-11), p (12) and q (13). Each of those bits
// comes from one S-box output bit, so the contributions of the seven S-boxes
// combine by OR.
var prefixSboxOut = func() (t [7][32]uint32) {
	for i := range streamSbox {
		for v := range 32 {
			var sb [7]byte
			sb[i] = streamSbox[i][v]
			x := (sb[3]&1)<<3 | (sb[2]&1)<<2 | sb[1]&2 | sb[0]>>1&1
			y := (sb[5]&1)<<3 | (sb[4]&1)<<2 | sb[3]&2 | sb[2]>>1&1
			z := (sb[1]&1)<<3 | (sb[0]&1)<<2 | sb[5]&2 | sb[4]>>1&1
			p, q := sb[6]>>1&1, sb[6]&1
			t[i][v] = uint32(x) | uint32(y)<<4 | uint32(z)<<8 | uint32(p)<<12 | uint32(q)<<13
		}
	}
	return t
}()

// prefixExtra[j] selects the four bits of register B whose parity is bit j
// of the extra nibble of streamState.clock.
var prefixExtra = func() [4]uint64 {
	bit := func(n, j int) uint64 { return 1 << (4*(n-1) + j) } // bit j of B(n)
	return [4]uint64{
		bit(9, 2) | bit(6, 3) | bit(3, 1) | bit(8, 0),
		bit(5, 3) | bit(8, 2) | bit(4, 0) | bit(5, 1),
		bit(6, 0) | bit(8, 1) | bit(3, 3) | bit(4, 2),
		bit(3, 0) | bit(6, 1) | bit(7, 2) | bit(9, 3),
	}
}()

// prefixBlockKey writes the 56 round keys of cw to kk, the same as
// scheduleBlockKey: row 6 is the control word, row i is keyPerm applied to
// row i+1, and round key 8i+j is byte j of row i XORed with i. The rows are
// 64-bit words, most significant byte first, and each permutation is
// sixteen nibble lookups rather than 64 single-bit moves.
func prefixBlockKey(cw *[CWSize]byte, kk *[56]byte) {
	t := &prefixKeyPerm
	row := binary.BigEndian.Uint64(cw[:])
	binary.BigEndian.PutUint64(kk[48:], row^6*0x0101010101010101)
	for i := 5; i >= 0; i-- {
		var next uint64
		for q := range 16 {
			next |= t[q][row>>(60-4*q)&15]
		}
		row = next
		binary.BigEndian.PutUint64(kk[8*i:], row^uint64(i)*0x0101010101010101)
	}
}

// prefixKeyPerm[q][v] is keyPerm applied to a row whose only set bits are
// nibble q = v (nibble 0 is the high nibble of byte 0), as a word whose
// most significant byte is byte 0 of the row.
var prefixKeyPerm = func() (t [16][16]uint64) {
	for q := range 16 {
		for v := range 16 {
			for b := range 4 {
				if v>>(3-b)&1 != 0 {
					to := int(keyPerm[4*q+b]) - 1
					t[q][v] |= 1 << (63 - to)
				}
			}
		}
	}
	return t
}()

// prefixBlockDecrypt deciphers one block like blockDecrypt, with the eight
// registers R1..R8 in the bytes of one word (R1 in the low byte). A round
// then moves every register along with one shift, and one lookup gives the
// S-box output s (low byte) and its bit permutation (byte 6, where it is
// XORed into the new R7): R1 takes t = R8^s, and R3, R4 and R5 are XORed
// with t, by multiplication since t is one byte.
func prefixBlockDecrypt(kk *[56]byte, blk *[8]byte) {
	const spread = 1 | 1<<16 | 1<<24 | 1<<32 // bytes 0, 2, 3 and 4
	tab := &prefixBlockSbox
	r := binary.LittleEndian.Uint64(blk[:])
	for i := 55; i >= 0; i-- {
		v := tab[kk[i]^byte(r>>48)]
		t := r>>56 ^ v&0xff
		r = r<<8 ^ t*spread ^ v&^0xff
	}
	binary.LittleEndian.PutUint64(blk[:], r)
}

// prefixBlockSbox[x] holds blockSbox[x] in its low byte and its bit
// permutation in byte 6.
var prefixBlockSbox = func() (t [256]uint64) {
	for x := range 256 {
		s := blockSbox[x]
		t[x] = uint64(s) | uint64(blockPerm(s))<<48
	}
	return t
}()
