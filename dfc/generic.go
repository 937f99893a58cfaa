package dfc

import (
	"encoding/binary"
	"math/bits"
)

// This file holds the portable implementation: the arithmetic of the round
// function, the key schedule and the block loops. It is always compiled; it is
// what other architectures and the purego build run, and the reference the
// assembly is tested against.

// mulAddMod returns ((a*x + b) mod (2^64+13)) mod 2^64, the first half of the
// round function RF. It has no branch: every case of the reduction is folded
// in with masks built from carry bits.
func mulAddMod(a, x, b uint64) uint64 {
	hi, lo := bits.Mul64(a, x)
	lo, c := bits.Add64(lo, b, 0)
	hi += c // no overflow: a*x + b <= (2^64-1)^2 + 2^64-1 = 2^128 - 2^64

	// Write v = hi*2^64 + lo. Since 2^64 = -13 (mod p), v = lo - 13*hi.
	// 13*hi = mh*2^64 + ml with mh <= 12, and the same identity again gives
	// v = lo - ml + 13*mh (mod p).
	mh, ml := bits.Mul64(hi, 13)
	s, borrow := bits.Sub64(lo, ml, 0)
	u, carry := bits.Add64(s, 13*mh, 0)

	// t = lo - ml + 13*mh = u + (carry-borrow)*2^64 lies in (-2^64, 2^64+156),
	// so at most one multiple of p is missing or in excess:
	//   carry-borrow = -1: t < 0, so t+p = u+13 (mod 2^64) is the residue;
	//   carry-borrow =  0: t = u < p is the residue;
	//   carry-borrow = +1: t = 2^64+u with u < 156; t-p = u-13 when u >= 13,
	//                      otherwise t < p and t mod 2^64 = u.
	_, below13 := bits.Sub64(u, 13, 0)
	neg := borrow &^ carry
	over := carry &^ borrow &^ below13
	return u + (13 & -neg) - (13 & -over)
}

// rtPlanes holds RT rearranged for a lookup without a secret index:
// byte j of rtPlanes[g][p] is byte p (p = 0 least significant) of rt[8*g+j].
var rtPlanes = func() (t [8][4]uint64) {
	for i, v := range rt {
		for p := range 4 {
			t[i/8][p] |= uint64(byte(v>>(8*p))) << (8 * (i % 8))
		}
	}
	return t
}()

// rtSelect returns rt[i] for i < 64 without using i as a memory index: every
// entry of the table is read, and the wanted one is kept by masks and shifts.
// A table lookup indexed by data would leak the index through the cache.
func rtSelect(i uint32) uint32 {
	g := uint64(i >> 3)
	var s0, s1, s2, s3 uint64
	for k := range rtPlanes {
		// m is all ones when g == k and zero otherwise: (g^k)-1 has its top
		// bit set only when g^k is zero, since g^k < 8.
		m := uint64(int64((g^uint64(k))-1) >> 63)
		w := &rtPlanes[k]
		s0 |= w[0] & m
		s1 |= w[1] & m
		s2 |= w[2] & m
		s3 |= w[3] & m
	}
	sh := (i & 7) * 8
	return uint32(byte(s0>>sh)) | uint32(byte(s1>>sh))<<8 |
		uint32(byte(s2>>sh))<<16 | uint32(byte(s3>>sh))<<24
}

// cp is the confusion permutation CP of the specification.
func cp(y uint64) uint64 {
	yl, yr := uint32(y>>32), uint32(y)
	return (uint64(yr^rtSelect(yl>>26))<<32 | uint64(yl^kc)) + kd
}

// rf is the round function RF_(a,b)(x) = CP(((a*x + b) mod (2^64+13)) mod 2^64).
func rf(a, b, x uint64) uint64 {
	return cp(mulAddMod(a, x, b))
}

// feistel runs the Feistel network of DFC over the round keys ks on the
// halves l|r and returns the output halves in order, final swap included.
// It serves both the block cipher (8 rounds) and the function EF of the key
// schedule (4 rounds).
func feistel(ks [][2]uint64, l, r uint64) (uint64, uint64) {
	for _, k := range ks {
		l, r = r, l^rf(k[0], k[1], r)
	}
	return r, l
}

// expandKey computes the round keys of key (at most 32 bytes) into enc, and
// the same keys in reverse order into dec.
func expandKey(key []byte, enc, dec *schedule) {
	// Pad the key to 256 bits with the first bytes of KS.
	var pk [32]byte
	n := copy(pk[:], key)
	copy(pk[n:], ks[:])
	w := func(j int) uint64 { // PK_j, 1 <= j <= 8
		return uint64(binary.BigEndian.Uint32(pk[4*(j-1):]))
	}

	// The two 4-round key sets OK and EK.
	var ok, ek [4][2]uint64
	ok[0] = [2]uint64{w(1)<<32 | w(8), w(5)<<32 | w(4)}
	ek[0] = [2]uint64{w(2)<<32 | w(7), w(6)<<32 | w(3)}
	for i := 1; i < 4; i++ {
		ok[i] = [2]uint64{ok[0][0] ^ ka[i-1], ok[0][1] ^ kb[i-1]}
		ek[i] = [2]uint64{ek[0][0] ^ ka[i-1], ek[0][1] ^ kb[i-1]}
	}

	// RK_0 = 0; RK_i = EF(RK_(i-1)) keyed by OK for odd i and by EK for even i.
	var a, b uint64
	for i := range enc {
		if i%2 == 0 { // enc[i] is RK_(i+1): odd round numbers use OK
			a, b = feistel(ok[:], a, b)
		} else {
			a, b = feistel(ek[:], a, b)
		}
		enc[i] = [2]uint64{a, b}
		dec[len(dec)-1-i] = enc[i]
	}
}

// cryptBlockGeneric runs the 8 rounds keyed by rk on the block src into dst.
// Encryption and decryption differ only in the order of rk.
func cryptBlockGeneric(rk *schedule, dst, src []byte) {
	in, out := (*[BlockSize]byte)(src), (*[BlockSize]byte)(dst)
	l := binary.BigEndian.Uint64(in[0:8])
	r := binary.BigEndian.Uint64(in[8:16])
	for i := range rk {
		l, r = r, l^rf(rk[i][0], rk[i][1], r)
	}
	// The output is R9|R8: the halves swap at the end.
	binary.BigEndian.PutUint64(out[0:8], r)
	binary.BigEndian.PutUint64(out[8:16], l)
}

// cryptBlocksGeneric is cryptBlockGeneric over len(src)/BlockSize blocks. It
// runs four blocks at a time in one loop so that their multiplications and
// table selections, which do not depend on one another, overlap in the CPU.
func cryptBlocksGeneric(rk *schedule, dst, src []byte) {
	for len(src) >= 4*BlockSize && len(dst) >= 4*BlockSize {
		s := (*[4 * BlockSize]byte)(src)
		l0 := binary.BigEndian.Uint64(s[0:])
		r0 := binary.BigEndian.Uint64(s[8:])
		l1 := binary.BigEndian.Uint64(s[16:])
		r1 := binary.BigEndian.Uint64(s[24:])
		l2 := binary.BigEndian.Uint64(s[32:])
		r2 := binary.BigEndian.Uint64(s[40:])
		l3 := binary.BigEndian.Uint64(s[48:])
		r3 := binary.BigEndian.Uint64(s[56:])
		for i := range rk {
			a, b := rk[i][0], rk[i][1]
			l0, r0 = r0, l0^rf(a, b, r0)
			l1, r1 = r1, l1^rf(a, b, r1)
			l2, r2 = r2, l2^rf(a, b, r2)
			l3, r3 = r3, l3^rf(a, b, r3)
		}
		d := (*[4 * BlockSize]byte)(dst)
		binary.BigEndian.PutUint64(d[0:], r0)
		binary.BigEndian.PutUint64(d[8:], l0)
		binary.BigEndian.PutUint64(d[16:], r1)
		binary.BigEndian.PutUint64(d[24:], l1)
		binary.BigEndian.PutUint64(d[32:], r2)
		binary.BigEndian.PutUint64(d[40:], l2)
		binary.BigEndian.PutUint64(d[48:], r3)
		binary.BigEndian.PutUint64(d[56:], l3)
		src, dst = src[4*BlockSize:], dst[4*BlockSize:]
	}
	for len(src) >= BlockSize && len(dst) >= BlockSize {
		cryptBlockGeneric(rk, dst, src)
		src, dst = src[BlockSize:], dst[BlockSize:]
	}
}
