package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// The AVX-512 kernels keep every block in ZMM registers for all eight
// rounds and do the whole round function in vector lanes, the 64×64-bit
// product and its reduction included: where the AVX2 kernels spend about
// twenty scalar instructions per block and round on MULQ and the carry
// masks, eight lanes here share each instruction. A group is eight blocks,
// one ZMM register of left halves and one of right halves.

// avx512Consts are the values every round of an AVX-512 kernel reads,
// loaded into registers once per call, and the round key registers.
type avx512Consts struct {
	ifma    bool          // the kernel multiplies with IFMA (see mulAddModIFMA)
	m52     VecVirtual    // 2^52-1 in each lane, for the IFMA kernels
	rt      [4]VecVirtual // RT, sixteen entries per register
	m32     VecVirtual    // 0x00000000ffffffff in each lane
	c13     VecVirtual    // 13 in each lane
	kc, kd  VecVirtual    // KC (low dword) and KD in each lane
	oddDW   OpmaskVirtual // the high dword of each lane
	bswap   VecVirtual    // VPSHUFB pattern reversing the bytes of each lane
	a, aHi  VecVirtual    // a of the round (aHi: a>>32 in the low dword)
	bLo, bH VecVirtual    // b&0xffffffff and b>>32 of the round
}

// bswapMask is the VPSHUFB pattern that reverses the bytes of each 64-bit
// lane of a 128-bit lane: the blocks are big-endian.
func bswapMask() Mem {
	m := GLOBL("bswapQwords", RODATA|NOPTR)
	DATA(0, U64(0x0001020304050607))
	DATA(8, U64(0x08090a0b0c0d0e0f))
	return m
}

// ternImm returns the VPTERNLOGQ immediate of f, where a is the destination
// operand (the last in Go syntax), b the middle one and c the first.
func ternImm(f func(a, b, c bool) bool) U8 {
	var imm U8
	for i := 0; i < 8; i++ {
		if f(i&4 != 0, i&2 != 0, i&1 != 0) {
			imm |= 1 << i
		}
	}
	return imm
}

// kernelAVX512 emits cryptBlocks<8*groups>AVX512 (or, with ifma,
// cryptBlocks<8*groups>AVX512IFMA), which runs the eight rounds keyed by rk
// on each chunk of 8*groups blocks of src into dst. The groups of a chunk do
// not depend on one another, so the out-of-order core overlaps their long
// chains of multiplications and table selections.
func kernelAVX512(groups int, ifma bool, bswap, kcv, kdv Mem) {
	n := 8 * groups
	name := fmt.Sprintf("cryptBlocks%dAVX512", n)
	sig := "func(rk *schedule, dst, src []byte)"
	if ifma {
		name += "IFMA"
		sig = "func(rk *ifmaSchedule, dst, src []byte)"
	}
	TEXT(name, NOSPLIT, sig)
	Doc(
		fmt.Sprintf("%s runs the eight rounds keyed by rk on each chunk of %d blocks", name, n),
		fmt.Sprintf("of src and writes them to the same place in dst: len(src)/%d chunks;", 16*n),
		"the rest of src is left to the caller. dst must be at least as long as",
		"src and may be src itself.",
	)
	rkBase := Load(Param("rk"), GP64())
	dst := Load(Param("dst").Base(), GP64())
	src := Load(Param("src").Base(), GP64())
	chunks := Load(Param("src").Len(), GP64())
	SHRQ(U8(bitsOf(16*n)), chunks)
	JZ(LabelRef(name + "Done"))

	var c avx512Consts
	for i := range c.rt {
		c.rt[i] = ZMM()
		VMOVDQU32(NewDataAddr(Symbol{Name: "·rt"}, 64*i), c.rt[i])
	}
	c.kc, c.kd, c.c13, c.m32 = ZMM(), ZMM(), ZMM(), ZMM()
	VPBROADCASTQ(kcv, c.kc)
	VPBROADCASTQ(kdv, c.kd)
	tmp := GP64()
	MOVQ(U64(13), tmp)
	VPBROADCASTQ(tmp, c.c13)
	MOVL(U32(0xffffffff), tmp.As32())
	VPBROADCASTQ(tmp, c.m32)
	c.oddDW = K()
	MOVL(U32(0xaaaa), tmp.As32())
	KMOVW(tmp.As32(), c.oddDW)
	c.bswap = ZMM()
	VBROADCASTI32X4(bswap, c.bswap)
	c.ifma = ifma
	if ifma {
		c.m52 = ZMM()
		MOVQ(U64(1<<52-1), tmp)
		VPBROADCASTQ(tmp, c.m52)
	} else {
		c.a, c.aHi, c.bLo, c.bH = ZMM(), ZMM(), ZMM(), ZMM()
	}

	Label(name + "Chunk")
	Comment("Load the chunk: the left halves of a group in one register, the right halves in another.")
	l, r := make([]VecVirtual, groups), make([]VecVirtual, groups)
	for g := 0; g < groups; g++ {
		x, y := ZMM(), ZMM()
		VMOVDQU64(Mem{Base: src, Disp: 128 * g}, x)
		VMOVDQU64(Mem{Base: src, Disp: 128*g + 64}, y)
		VPSHUFB(c.bswap, x, x)
		VPSHUFB(c.bswap, y, y)
		// Lanes 2i and 2i+1 of each 128-bit lane of x and y are the halves
		// of one block; the unpacks gather the left and the right halves in
		// the same lane order, which the unpacks of the store undo.
		l[g], r[g] = ZMM(), ZMM()
		VPUNPCKLQDQ(y, x, l[g])
		VPUNPCKHQDQ(y, x, r[g])
	}

	rk := GP64()
	MOVQ(rkBase, rk)
	count := GP64()
	MOVQ(U64(4), count)
	Label(name + "Loop")
	Comment("Two rounds per pass: the halves swap roles without moves.")
	step := 16 // bytes of round key per round
	if ifma {
		step = 48
	}
	roundAVX512(rk, 0, l, r, &c)
	roundAVX512(rk, step, r, l, &c)
	ADDQ(U8(2*step), rk)
	DECQ(count)
	JNZ(LabelRef(name + "Loop"))

	Comment("Store R9|R8 of each block.")
	for g := 0; g < groups; g++ {
		x, y := ZMM(), ZMM()
		VPUNPCKLQDQ(l[g], r[g], x)
		VPUNPCKHQDQ(l[g], r[g], y)
		VPSHUFB(c.bswap, x, x)
		VPSHUFB(c.bswap, y, y)
		VMOVDQU64(x, Mem{Base: dst, Disp: 128 * g})
		VMOVDQU64(y, Mem{Base: dst, Disp: 128*g + 64})
	}
	ADDQ(U32(16*n), src)
	ADDQ(U32(16*n), dst)
	DECQ(chunks)
	JNZ(LabelRef(name + "Chunk"))
	VZEROUPPER()
	Label(name + "Done")
	RET()
}

// bitsOf returns log2(n) for a power of two n.
func bitsOf(n int) int {
	b := 0
	for 1<<b < n {
		b++
	}
	if 1<<b != n {
		panic("not a power of two")
	}
	return b
}

// roundAVX512 emits one Feistel round, l ^= RF(a,b)(r), for every group,
// with the round key at off(rk): (a, b), or the six words of an ifmaRound.
func roundAVX512(rk Register, off int, l, r []VecVirtual, c *avx512Consts) {
	Comment(fmt.Sprintf("Round with the key at %d(rk).", off))
	if c.ifma {
		key := Mem{Base: rk, Disp: off}
		for g := range l {
			v := mulAddModIFMA(r[g], key, c)
			cpAVX512(v, c)
			VPXORQ(v, l[g], l[g])
		}
		return
	}
	VPBROADCASTQ(Mem{Base: rk, Disp: off}, c.a)
	// VPMULUDQ reads the low dword of each lane only: the high dword of a
	// broadcast from the middle of a is never used.
	VPBROADCASTD(Mem{Base: rk, Disp: off + 4}, c.aHi)
	VPBROADCASTQ(Mem{Base: rk, Disp: off + 8}, c.bH)
	VPANDQ(c.m32, c.bH, c.bLo)
	VPSRLQ(U8(32), c.bH, c.bH)
	for g := range l {
		v := mulAddModAVX512(r[g], c)
		cpAVX512(v, c)
		VPXORQ(v, l[g], l[g])
	}
}

// mulAddModAVX512 returns a vector of ((a*x + b) mod (2^64+13)) mod 2^64
// for the eight lanes of x, by the steps of mulAddMod in ../generic.go.
func mulAddModAVX512(x VecVirtual, c *avx512Consts) VecVirtual {
	Comment("a*x + b from four 32×32-bit products.")
	xHi := ZMM()
	VPSRLQ(U8(32), x, xHi)
	p00, p01, p10, p11 := ZMM(), ZMM(), ZMM(), ZMM()
	VPMULUDQ(x, c.a, p00)
	VPMULUDQ(xHi, c.a, p01)
	VPMULUDQ(x, c.aHi, p10)
	VPMULUDQ(xHi, c.aHi, p11)
	// Adding a 32-bit word to a 32×32-bit product cannot overflow 64 bits,
	// nor adding two: (2^32-1)^2 + 2*(2^32-1) = 2^64-1. So b goes in
	// without carries: its low word into p00, its high word into p01.
	VPADDQ(c.bLo, p00, p00)
	mid, t := ZMM(), ZMM()
	VPADDQ(c.bH, p01, mid)
	VPSRLQ(U8(32), p00, t)
	VPADDQ(t, mid, mid) // bits 32.. of the sum, up to 2^64-1
	VPANDQ(c.m32, mid, t)
	VPADDQ(t, p10, p10) // bits 32.. once more, with p10 in
	lo, hi := ZMM(), ZMM()
	VPSLLQ(U8(32), p10, lo)
	VPTERNLOGQ(ternImm(func(a, b, c bool) bool { return a || b && c }), c.m32, p00, lo)
	VPSRLQ(U8(32), mid, t)
	VPADDQ(t, p11, hi)
	VPSRLQ(U8(32), p10, t)
	VPADDQ(t, hi, hi)

	Comment("Reduce hi*2^64 + lo modulo 2^64+13.")
	// mh*2^64 + ml = 13*hi = q1*2^32 + q0 with q0, q1 < 2^36.
	q0, q1 := ZMM(), ZMM()
	VPMULUDQ(hi, c.c13, q0)
	VPSRLQ(U8(32), hi, q1)
	VPMULUDQ(q1, c.c13, q1)
	ml, mh := ZMM(), ZMM()
	VPSLLQ(U8(32), q1, ml)
	VPADDQ(q0, ml, ml)
	VPSRLQ(U8(32), q0, mh)
	VPADDQ(q1, mh, mh)
	VPSRLQ(U8(32), mh, mh)
	// u = lo - ml + 13*mh, with its borrow and carry as masks.
	borrow, carry := K(), K()
	VPCMPUQ(U8(1), ml, lo, borrow) // lo < ml
	u := lo
	VPSUBQ(ml, lo, u)
	VPMULUDQ(mh, c.c13, mh)
	VPADDQ(mh, u, u)
	VPCMPUQ(U8(1), mh, u, carry) // the sum wrapped
	// neg: borrow without carry, add p. over: carry without borrow, and
	// u >= 13, subtract p. The mask of the compare keeps only its lanes.
	neg, over := K(), K()
	KANDNB(borrow, carry, neg)
	KANDNB(carry, borrow, over)
	VPCMPUQ(U8(5), c.c13, u, over, over) // u >= 13 where over
	VPADDQ(c.c13, u, neg, u)
	VPSUBQ(c.c13, u, over, u)
	return u
}

// mulAddModIFMA returns a vector of ((a*x + b) mod (2^64+13)) mod 2^64 for
// the eight lanes of x with 52-bit multiply-adds, from the words of an
// ifmaRound at key (../ifma.go describes them). With x = xh*2^32 + xl,
//
//	a*x + b = a*xl + (a*2^32)*xh + b = a*xl + a'*xh + b (mod p)
//
// and the right side is below 2^98, so its high word h (above 2^64) is
// below 2^34: 13*h fits in a word, and the reduction needs one subtraction
// and one correction instead of the two of mulAddMod.
func mulAddModIFMA(x VecVirtual, key Mem, c *avx512Consts) VecVirtual {
	Comment("a*xl + a'*xh + b in 52-bit limbs: s0 + s1*2^52.")
	word := func(i int) Mem { return key.Offset(8 * i) }
	xl, xh := ZMM(), ZMM()
	VPANDQ(c.m32, x, xl)
	VPSRLQ(U8(32), x, xh)
	s0, s1 := ZMM(), ZMM()
	VPBROADCASTQ(word(ifmaB0), s0)
	VPBROADCASTQ(word(ifmaB1), s1)
	// The multiply-adds read bits 0..51 of each operand: xl and xh are
	// below 2^32, a0 and a'0 below 2^52, a1 and a'1 below 2^13.
	VPMADD52LUQ_BCST(word(ifmaA0), xl, s0)
	VPMADD52LUQ_BCST(word(ifmaP0), xh, s0)
	VPMADD52HUQ_BCST(word(ifmaA0), xl, s1)
	VPMADD52LUQ_BCST(word(ifmaA1), xl, s1)
	VPMADD52HUQ_BCST(word(ifmaP0), xh, s1)
	VPMADD52LUQ_BCST(word(ifmaP1), xh, s1)
	// s0 < 3*2^52 and s1 < 2^46: carry s0 into s1, then split at 2^64.
	t := ZMM()
	VPSRLQ(U8(52), s0, t)
	VPADDQ(t, s1, s1)
	lo, hi := ZMM(), ZMM()
	VPSLLQ(U8(52), s1, lo)
	VPTERNLOGQ(ternImm(func(a, b, c bool) bool { return a || b && c }), c.m52, s0, lo)
	VPSRLQ(U8(12), s1, hi)

	Comment("Reduce: lo - 13*hi, plus p if negative.")
	// 13*hi < 2^38: the low half of a 52-bit product is all of it.
	m := ZMM()
	VPXORQ(m, m, m)
	VPMADD52LUQ(c.c13, hi, m)
	// lo - 13*hi lies in (-2^38, 2^64). Adding p to a negative value leaves
	// a residue in (2^64-2^38, p): modulo 2^64, the difference plus 13.
	borrow := K()
	VPCMPUQ(U8(1), m, lo, borrow) // lo < 13*hi
	VPSUBQ(m, lo, lo)
	VPADDQ(c.c13, lo, borrow, lo)
	return lo
}

// cpAVX512 replaces the eight values in v by their images under CP.
func cpAVX512(v VecVirtual, c *avx512Consts) {
	Comment("CP: RT[yl >> 26], two two-table permutes and a blend on bit 5.")
	// v>>26 leaves yl>>26 in the high dword of each lane; VPERMI2D reads
	// bits 0..4 of it and puts the entry in the same dword. The low dword
	// selects an entry too, which is discarded.
	lo, hi := ZMM(), ZMM()
	VPSRLQ(U8(26), v, lo)
	VMOVDQA64(lo, hi)
	VPERMI2D(c.rt[1], c.rt[0], lo)
	VPERMI2D(c.rt[3], c.rt[2], hi)
	top := K()
	VPMOVQ2M(v, top) // bit 63 of v is bit 5 of the index
	VPBLENDMQ(hi, lo, top, lo)
	Comment("CP: ((yr ^ RT) << 32 | (yl ^ KC)) + KD.")
	VPROLQ(U8(32), v, v)
	VPXORD(lo, v, c.oddDW, v)
	VPXORQ(c.kc, v, v)
	VPADDQ(c.kd, v, v)
}
