package dfc

import "math/bits"

// An ifmaRound is a round key (a, b) as the AVX-512 IFMA kernels use it, in
// pieces their 52-bit multiply-adds take whole:
//
//	a  = a0 + a1*2^52                                  (a1 < 2^12)
//	a' = p0 + p1*2^52, a' = a*2^32 mod (2^64+13) < 2^65 (p1 < 2^13)
//	b  = b0 + b1*2^52                                  (b1 < 2^12)
//
// in the order a0, a1, p0, p1, b0, b1 (the generator in _asm reads them by
// that order). With x split into 32-bit halves xh:xl, the kernels compute
// a*xl + a'*xh + b, which is a*x + b modulo 2^64+13 and below 2^98.
type ifmaRound [6]uint64

// ifmaSchedule holds the eight rounds of a schedule as ifmaRounds.
type ifmaSchedule [8]ifmaRound

// mask52 keeps the low 52 bits of a word.
const mask52 = 1<<52 - 1

// splitIFMA fills out with the rounds of rk. It has no branch on the key:
// a' is reduced with a mask, as in mulAddMod.
func splitIFMA(rk *schedule, out *ifmaSchedule) {
	for i, k := range rk {
		a, b := k[0], k[1]
		// a*2^32 = (a>>32)*2^64 + a<<32 = a<<32 - 13*(a>>32) (mod p), and
		// 13*(a>>32) < 2^36. A negative difference gets p added: it wraps
		// to d = difference + 2^64, and the 13 of p may carry to bit 64.
		d, borrow := bits.Sub64(a<<32, 13*(a>>32), 0)
		d, carry := bits.Add64(d, 13&-borrow, 0)
		out[i] = ifmaRound{a & mask52, a >> 52, d & mask52, d>>52 | carry<<12, b & mask52, b >> 52}
	}
}
