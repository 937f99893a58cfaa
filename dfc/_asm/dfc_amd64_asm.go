// This program generates ../dfc_amd64.s, the multi-block paths of package
// dfc: AVX2 with BMI2 (this file) and AVX-512 (avx512.go). Run it with go
// generate in this directory.
package main

// The purego tag builds package dfc without the assembly this program writes,
// so a missing or stale dfc_amd64.s cannot stop the regeneration.
//go:generate go run -tags purego . -out ../dfc_amd64.s

import (
	"fmt"

	// Package dfc is imported for its types (avo reads the signature of the
	// stub in dfc_amd64.go); the import keeps it in this module's go.mod.
	_ "github.com/tsdescramble/tsdescramble/dfc"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// The constants KC and KD of the confusion permutation CP, from the
// specification (EES bits 2112..2143 and 2048..2111); they must equal kc and
// kd in ../consts.go, which the tests of package dfc check through the
// known-answer vectors. The table RT is not copied: the code reads the
// package variable rt.
const (
	kc = 0xeb64749a
	kd = 0x86d1bf275b9b241d
)

// The words of an ifmaRound in ../ifma.go, by index.
const (
	ifmaA0 = iota
	ifmaA1
	ifmaP0
	ifmaP1
	ifmaB0
	ifmaB1
)

func main() {
	Package("github.com/tsdescramble/tsdescramble/dfc")
	ConstraintExpr("amd64,gc,!purego")

	// KC and KD in each 64-bit lane of a YMM operand.
	kcv := GLOBL("kcLanes", RODATA|NOPTR)
	for i := 0; i < 4; i++ {
		DATA(8*i, U64(kc))
	}
	kdv := GLOBL("kdLanes", RODATA|NOPTR)
	for i := 0; i < 4; i++ {
		DATA(8*i, U64(kd))
	}

	kernel(1, kcv, kdv)
	kernel(2, kcv, kdv)

	bswap := bswapMask()
	for _, ifma := range []bool{false, true} {
		for _, groups := range []int{1, 2, 4} {
			kernelAVX512(groups, ifma, bswap, kcv, kdv)
		}
	}
	Generate()
}

// kernel emits cryptBlocks<8*groups>AVX2, which runs the eight rounds on
// 8*groups blocks. Each group of eight blocks has its own state in memory;
// the groups do not depend on one another, so the multiplications of one
// group can run while the table selection of another waits for its inputs.
func kernel(groups int, kcv, kdv Mem) {
	n := 8 * groups
	name := fmt.Sprintf("cryptBlocks%dAVX2", n)
	TEXT(name, NOSPLIT, fmt.Sprintf("func(rk *schedule, s *[%d]uint64)", 2*n))
	Doc(
		fmt.Sprintf("%s runs the eight rounds keyed by rk on %d blocks at once.", name, n),
		"For each group of eight blocks, s holds their left halves, then their",
		"right halves; on return it holds R8 of each block, then R9.",
	)
	rk := Load(Param("rk"), GP64())
	s := Mem{Base: Load(Param("s"), GP64())}
	thirteen := GP64()
	MOVQ(U64(13), thirteen)

	count := GP64()
	MOVQ(U64(4), count)
	loop := name + "Loop"
	Label(loop)
	Comment("Two rounds per pass: the halves swap roles without moves.")
	round(rk, 0, s, groups, 0, 64, thirteen, kcv, kdv)
	round(rk, 16, s, groups, 64, 0, thirteen, kcv, kdv)
	ADDQ(U8(32), rk)
	DECQ(count)
	JNZ(LabelRef(loop))
	VZEROUPPER()
	RET()
}

// round emits one Feistel round, l ^= RF(a,b)(r), for every group, with the
// round key (a, b) at off(rk). The halves l and r of group g are the eight
// 64-bit words at 128*g+lOff(s) and 128*g+rOff(s).
func round(rk Register, off int, s Mem, groups, lOff, rOff int, thirteen GPVirtual, kcv, kdv Mem) {
	Comment(fmt.Sprintf("Round with the key at %d(rk).", off))
	a, b := GP64(), GP64()
	MOVQ(Mem{Base: rk, Disp: off}, a)
	MOVQ(Mem{Base: rk, Disp: off + 8}, b)

	// v[g] holds the values (a*r + b) mod (2^64+13) mod 2^64 of group g. The
	// vector half of group g-1 is emitted after the scalar half of group g,
	// which keeps at most two groups of values in registers.
	v := make([][2]VecVirtual, groups)
	for g := range v {
		v[g] = [2]VecVirtual{YMM(), YMM()}
		hiHalf := XMM()
		for j := 0; j < 8; j++ {
			mulAddMod(a, s.Offset(128*g+rOff+8*j), b, thirteen)
			u := RAX
			dst := v[g][j/4].AsX()
			if j%4 >= 2 {
				dst = hiHalf
			}
			if j%2 == 0 {
				VMOVQ(u, dst)
			} else {
				VPINSRQ(Imm(1), u, dst, dst)
			}
			if j%4 == 3 {
				VINSERTI128(Imm(1), hiHalf, v[g][j/4], v[g][j/4])
			}
		}
		if g > 0 {
			finish(v[g-1], s, 128*(g-1)+lOff, kcv, kdv)
		}
	}
	finish(v[groups-1], s, 128*(groups-1)+lOff, kcv, kdv)
}

// finish applies CP to the eight values in v and XORs the results into the
// eight left halves at lOff(s).
func finish(v [2]VecVirtual, s Mem, lOff int, kcv, kdv Mem) {
	cp(v, kcv, kdv)
	for h := 0; h < 2; h++ {
		l := s.Offset(lOff + 32*h)
		VPXOR(l, v[h], v[h])
		VMOVDQU(v[h], l)
	}
}

// cp replaces the eight values in v by their images under CP.
func cp(v [2]VecVirtual, kcv, kdv Mem) {
	Comment("CP: RT[yl >> 26] for eight lanes, selected in registers.")
	// Lane j of v[0] keeps its table index in dword 2j of idx, lane j of v[1]
	// in dword 2j+1; VPERMD reads the low three bits of each dword.
	idx, tmp := YMM(), YMM()
	VPSRLQ(Imm(58), v[0], idx)
	VPSRLQ(Imm(58), v[1], tmp)
	VPSLLQ(Imm(32), tmp, tmp)
	VPOR(tmp, idx, idx)
	// One VPERMD per group of eight entries, then a tree of blends on index
	// bits 3, 4 and 5, each moved into the sign bit that VBLENDVPS tests.
	sel := func(g int) VecVirtual {
		d := YMM()
		VPERMD(NewDataAddr(Symbol{Name: "·rt"}, 32*g), idx, d)
		return d
	}
	blend := func(bit int, lo, hi VecVirtual) VecVirtual {
		m := YMM()
		VPSLLD(Imm(uint64(31-bit)), idx, m)
		VBLENDVPS(m, hi, lo, lo)
		return lo
	}
	// The tree is walked depth first to keep few registers live.
	half := func(h int) VecVirtual { // entries 32h..32h+31
		e := blend(3, sel(4*h), sel(4*h+1))
		return blend(4, e, blend(3, sel(4*h+2), sel(4*h+3)))
	}
	w := blend(5, half(0), half(1))

	Comment("CP: ((yr ^ RT) << 32 | (yl ^ KC)) + KD.")
	for h := 0; h < 2; h++ {
		sv := w
		if h == 1 {
			sv = YMM()
			VPSRLQ(Imm(32), w, sv)
		}
		lo, hi := YMM(), YMM()
		VPXOR(sv, v[h], lo) // the high dword is discarded by the shift
		VPSLLQ(Imm(32), lo, lo)
		VPSRLQ(Imm(32), v[h], hi)
		VPXOR(kcv, hi, hi)
		VPOR(hi, lo, lo)
		VPADDQ(kdv, lo, v[h])
	}
}

// mulAddMod emits ((a*x + b) mod (2^64+13)) mod 2^64, without branches, by
// the steps of mulAddMod in ../generic.go (which explains them); only the
// mask below is found another way. The result is left in RAX, which the next
// MULQ overwrites: the caller moves it out first.
func mulAddMod(a Register, x Mem, b Register, thirteen Register) {
	MOVQ(a, RAX)
	MULQ(x) // RDX:RAX = a*x
	ADDQ(b, RAX)
	ADCQ(Imm(0), RDX) // hi:lo = a*x + b
	mh, ml := GP64(), GP64()
	MULXQ(thirteen, ml, mh) // mh:ml = 13*hi
	SUBQ(ml, RAX)           // s = lo - ml
	// ml is no longer needed: SBB of a register with itself turns the
	// borrow into a mask, and so for the carry with mh below.
	borrow, carry := ml, mh
	SBBQ(borrow, borrow) // borrow = -(lo < ml)
	m13 := GP64()
	IMUL3Q(Imm(13), mh, m13)
	ADDQ(m13, RAX)     // u = s + 13*mh
	SBBQ(carry, carry) // carry = -(overflow)
	// below = -(u < 13), taken from the sign of u-13. That is only right for
	// u < 2^63, but below matters only when the sum carried without a
	// borrow, and then u < 156.
	below := GP64()
	LEAQ(Mem{Base: RAX, Disp: -13}, below)
	SARQ(U8(63), below)
	neg, over := GP64(), GP64()
	ANDNQ(borrow, carry, neg)  // neg = borrow &^ carry
	ANDNQ(carry, borrow, over) // over = carry &^ borrow
	ANDNQ(over, below, over)   // over &^= below
	ANDQ(Imm(13), neg)
	ANDQ(I32(-13), over)
	ORQ(over, neg)
	ADDQ(neg, RAX)
}
