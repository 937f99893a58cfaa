package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// Layout of the AVX2 stream cipher state (type stream256 in
// csa_amd64.go): one 32-byte bit-plane per state bit, 256 lanes.
const (
	ymmBytes  = 32
	ringLen   = 42 // nibbles per shift register ring
	ringTop   = 32
	stateA    = 0
	stateB    = stateA + ringLen*4
	stateX    = stateB + ringLen*4
	stateY    = stateX + 4
	stateZ    = stateY + 4
	stateD    = stateZ + 4
	stateE    = stateD + 4
	stateF    = stateE + 4
	stateP    = stateF + 4
	stateQ    = stateP + 1
	stateR    = stateQ + 1
	nibble    = 4 * ymmBytes
	bRelToA   = (stateB - stateA) * ymmBytes
	planeSize = ymmBytes
)

// extraTaps are the bits of register B XORed into D: extraTaps[b] for bit
// b of D, {n, bit} being bit bit of nibble B[n] (ETR 289).
var extraTaps = [4][4][2]int{
	0: {{9, 2}, {6, 3}, {3, 1}, {8, 0}},
	1: {{5, 3}, {8, 2}, {4, 0}, {5, 1}},
	2: {{6, 0}, {8, 1}, {3, 3}, {4, 2}},
	3: {{3, 0}, {6, 1}, {7, 2}, {9, 3}},
}

// sboxState maps the S-box destinations of sboxDest to state planes.
var sboxState = map[string]int{
	"x[0]": stateX, "x[1]": stateX + 1, "x[2]": stateX + 2, "x[3]": stateX + 3,
	"y[0]": stateY, "y[1]": stateY + 1, "y[2]": stateY + 2, "y[3]": stateY + 3,
	"z[0]": stateZ, "z[1]": stateZ + 1, "z[2]": stateZ + 2, "z[3]": stateZ + 3,
	"p": stateP, "q": stateQ,
}

// streamRound addresses the state of round u (0..3) of the keystream byte a
// stream kernel's loop is on.
type streamRound struct {
	u        int
	aN, bN   func(n, b int) Mem // bit b of nibble A[n], B[n] in this round's window
	inA, inB func(b int) Mem    // the IV nibbles this round feeds into A and B
	io       func(plane int) Mem
}

// streamKernelFrame emits what the AVX2 and AVX-512 stream kernels share:
// the declaration, the loop over 8 bytes of 4 rounds each (round emits one
// round), and the move of the register windows back to the top of the
// rings; mov is the kernel's vector move.
func streamKernelFrame(name, arg, isa string, init bool, mov func(src, dst Op), round func(r streamRound, abs func(int) Mem)) {
	TEXT(name, NOSPLIT, fmt.Sprintf("func(s *stream256, %s *[64][4]uint64)", arg))
	Pragma("noescape")
	if init {
		Doc(name + " runs the 32 initialisation rounds of the stream cipher on 256 lanes" + isa + ".")
	} else {
		Doc(name + " runs 32 rounds of the stream cipher on 256 lanes" + isa + " and writes 8 keystream bytes as bit-planes.")
	}
	st := Load(Param("s"), GP64())
	io := Load(Param(arg), GP64())
	win := GP64() // &A[window] for the first round of the current byte
	LEAQ(Mem{Base: st, Disp: (stateA + (ringTop-1)*4) * ymmBytes}, win)
	cnt := GP64()
	MOVQ(U32(8), cnt)
	abs := func(idx int) Mem { return Mem{Base: st, Disp: idx * ymmBytes} }

	Label(name + "_byte")
	for u := 0; u < 4; u++ {
		Comment(fmt.Sprintf("Round %d of this byte.", u))
		r := streamRound{
			u:  u,
			aN: func(n, b int) Mem { return Mem{Base: win, Disp: (n-u)*nibble + b*ymmBytes} },
			bN: func(n, b int) Mem { return Mem{Base: win, Disp: bRelToA + (n-u)*nibble + b*ymmBytes} },
			io: func(plane int) Mem { return Mem{Base: io, Disp: plane * planeSize} },
		}
		// IV nibbles: planes 8k..8k+3 are the low nibble of byte k, 8k+4.. the high.
		hiIn := func(b int) Mem { return r.io(4 + b) }
		loIn := func(b int) Mem { return r.io(b) }
		r.inA, r.inB = hiIn, loIn
		if u%2 == 1 {
			r.inA, r.inB = loIn, hiIn
		}
		round(r, abs)
	}
	SUBQ(U32(4*nibble), win)
	ADDQ(U32(8*planeSize), io)
	DECQ(cnt)
	JNZ(LabelRef(name + "_byte"))

	Comment("Move the register windows back to the top of the rings.")
	for _, base := range []int{stateA, stateB} {
		for i := 0; i < 40; i++ {
			y := YMM()
			mov(abs(base+i), y)
			mov(y, abs(base+ringTop*4+i))
		}
	}
	VZEROUPPER()
	RET()
}

// streamKernel emits the 32 rounds of the stream cipher for 256 lanes:
// initialisation with IV bit-planes when init is set, keystream generation
// otherwise. The round is emitted from its description, streamRoundProg in
// round.go, from which the Go kernel's rounds are emitted too.
func streamKernel(circuits [7]circuit, init bool) {
	name, arg := "streamGenAVX2", "out"
	if init {
		name, arg = "streamInitAVX2", "iv"
	}
	load := func(m Mem) VecVirtual {
		y := YMM()
		VMOVDQU(m, y)
		return y
	}
	prog := streamRoundProg(init)
	streamKernelFrame(name, arg, "", init, func(src, dst Op) { VMOVDQU(src, dst) }, func(rd streamRound, abs func(int) Mem) {
		emitRoundAVX2(prog, func(l loc) Mem { return rd.planeMem(l, abs) }, func() { streamSboxesAVX2(circuits, rd, abs, load) })
	})
}

// streamSboxesAVX2 emits the seven S-box circuits of the AVX2 stream
// kernel: the next X, Y, Z, p and q from the taps of A.
func streamSboxesAVX2(circuits [7]circuit, rd streamRound, abs func(int) Mem, load func(Mem) VecVirtual) {
	for s, circ := range circuits {
		vals := map[int]Op{}
		for i := 0; i < numInputs; i++ {
			tap := streamSboxTaps[s][4-i]
			vals[i] = load(rd.aN(tap[0], tap[1]))
		}
		var ones VecVirtual
		for gi, g := range circ.gates {
			out := YMM()
			x, y := g.a, g.b
			if x == onesValue || y == onesValue {
				if g.op != opXor {
					panic("only XOR with all ones is expected")
				}
				if ones == nil {
					ones = YMM()
					VPCMPEQB(ones, ones, ones)
				}
				if x == onesValue {
					x, y = y, x
				}
				VPXOR(ones, vals[x], out)
			} else {
				switch g.op {
				case opAnd:
					VPAND(vals[y], vals[x], out)
				case opOr:
					VPOR(vals[y], vals[x], out)
				case opXor:
					VPXOR(vals[y], vals[x], out)
				case opAndNot: // x &^ y = ^y & x
					VPANDN(vals[x], vals[y], out)
				}
			}
			vals[firstGate+gi] = out
		}
		VMOVDQU(vals[circ.hi], abs(sboxState[sboxDest[s][0]]))
		VMOVDQU(vals[circ.lo], abs(sboxState[sboxDest[s][1]]))
	}
}

// Offsets in avx2Tables (csa_amd64.go), in 32-byte rows.
const (
	tabSbox   = 0  // 16 rows: telescoped S-box nibble tables D_i
	tabSub    = 16 // 16 rows: bytes 16*i
	tabPermLo = 32 // perm of the low nibble
	tabPermHi = 33 // perm of the high nibble (already shifted)
	tabLow4   = 34 // 0x0f in every byte
	// VPSHUFB masks: two 8-byte lanes per 128 bits to 16-bit pairs of
	// same-index bytes, and back.
	tabToPairs   = 35
	tabFromPairs = 36
	// 37..42: swap masks (tabSwapMask); then 16 rows: S-box row i (the
	// entries of high nibble i) in both 128-bit halves.
	tabBlendRows = 43
)

// transposeWords8 transposes, within each 128-bit half, the 8×8 matrix of
// 16-bit words held in a: word j of a[k] becomes word k of the result j.
// With one 16-bit pair of lanes per word, result j holds byte j of all 32
// lanes (in a fixed lane order); applied twice, it is the identity.
func transposeWords8(a [8]VecVirtual) [8]VecVirtual {
	var b, c, d [8]VecVirtual
	for i := 0; i < 8; i += 2 {
		b[i], b[i+1] = YMM(), YMM()
		VPUNPCKLWD(a[i+1], a[i], b[i])
		VPUNPCKHWD(a[i+1], a[i], b[i+1])
	}
	// c0,c1 from b0,b2; c2,c3 from b1,b3; c4,c5 from b4,b6; c6,c7 from b5,b7.
	for _, p := range [4][3]int{{0, 2, 0}, {1, 3, 2}, {4, 6, 4}, {5, 7, 6}} {
		c[p[2]], c[p[2]+1] = YMM(), YMM()
		VPUNPCKLDQ(b[p[1]], b[p[0]], c[p[2]])
		VPUNPCKHDQ(b[p[1]], b[p[0]], c[p[2]+1])
	}
	// d(2i), d(2i+1) from c(i), c(i+4).
	for i := 0; i < 4; i++ {
		d[2*i], d[2*i+1] = YMM(), YMM()
		VPUNPCKLQDQ(c[i+4], c[i], d[2*i])
		VPUNPCKHQDQ(c[i+4], c[i], d[2*i+1])
	}
	return d
}

// blockKernelHeader declares a block kernel, named for its direction and
// isa, and loads its arguments; count names the last one, the number of
// lane groups of the given width.
func blockKernelHeader(isa, tabType, count string, width int, decrypt bool) (name string, src, dst, kbase, tab, n Register) {
	name, verb := "blockEncrypt"+isa, " enciphers"
	if decrypt {
		name, verb = "blockDecrypt"+isa, " deciphers"
	}
	TEXT(name, NOSPLIT, fmt.Sprintf("func(in, out *[256]uint64, kb *[56]uint64, tab *%s, %s int)", tabType, count))
	Pragma("noescape")
	Doc(fmt.Sprintf("%s%s the blocks in[l] of %s×%d lanes into out[l].", name, verb, count, width))
	src = Load(Param("in"), GP64())
	dst = Load(Param("out"), GP64())
	kbase = Load(Param("kb"), GP64())
	tab = Load(Param("tab"), GP64())
	n = Load(Param(count), GP64())
	return name, src, dst, kbase, tab, n
}

// blockRounds emits the 56 rounds as 7 passes of 8 unrolled ones; round
// gets the round's number in the pass and the address of its key byte (kb
// holds each one broadcast over 8 bytes), walked backwards to decrypt.
func blockRounds(name string, kbase Register, decrypt bool, round func(u int, key Mem)) {
	kp := GP64()
	backward := blockRoundOf[decrypt].keysBackward
	if backward {
		LEAQ(Mem{Base: kbase, Disp: 55 * 8}, kp)
	} else {
		MOVQ(kbase, kp)
	}
	cnt := GP64()
	MOVQ(U32(7), cnt)
	Label(name + "_rounds")
	for u := 0; u < 8; u++ {
		if backward {
			round(u, Mem{Base: kp, Disp: -8 * u})
		} else {
			round(u, Mem{Base: kp, Disp: 8 * u})
		}
	}
	if backward {
		SUBQ(U8(64), kp)
	} else {
		ADDQ(U8(64), kp)
	}
	DECQ(cnt)
	JNZ(LabelRef(name + "_rounds"))
}

// blockRoundXors emits the XOR network of one block cipher round (the
// description blockRoundOf in round.go) once the S-box output s and its bit
// permutation p are known, and renames R[1..8] for the next round; xor is
// VPXOR or its EVEX form.
func blockRoundXors(R *[9]VecVirtual, s, p VecVirtual, decrypt bool, xor func(a, b, dst Op)) {
	br := blockRoundOf[decrypt]
	src := func(i int) VecVirtual {
		switch i {
		case blockS:
			return s
		case blockP:
			return p
		}
		return R[i]
	}
	for _, st := range br.steps {
		xor(src(st[1]), R[st[0]], R[st[0]])
	}
	var next [9]VecVirtual
	for m := 1; m <= 8; m++ {
		next[m] = R[br.next[m]]
	}
	*R = next
}

// AVX2 block cipher S-box methods: which is faster depends on the CPU
// (VPBLENDVB is one µop on AMD Zen, two or three on Intel cores), so csa
// builds both and measures them at start-up.
const (
	sboxNibble = iota // 16 VPSHUFB of telescoped tables, selected by x-16i
	sboxBlend         // 16 VPSHUFB of the S-box rows, a tree of 15 VPBLENDVB
)

// blockGroups is the number of 32-lane groups the AVX2 block cipher runs
// together with each S-box method. The blend tree keeps fewer values live
// than the nibble tables, so four groups' rounds interleave without spills
// and fill the vector pipes better; the nibble tables run slower with four
// than with two, and eight groups of either run slower still (the unrolled
// rounds no longer fit the processor's decoded-instruction cache).
var blockGroups = [...]int{sboxNibble: 2, sboxBlend: 4}

// blockKernel emits the byte-sliced block cipher for 32 lanes per YMM
// register, with the S-box computed by method (sboxNibble or sboxBlend).
// A round of one group is a chain of dependent instructions, too short to
// keep the processor busy, and the 16 YMM registers do not hold the eight
// cipher registers of two groups besides the S-box's: so blockGroups groups
// run their rounds interleaved, their cipher registers kept between rounds
// in the groups' rows of out, which the round's loads and stores reach
// from the store buffer. Renaming the registers after a round renames the
// rows, which after eight rounds are back in place.
func blockKernel(decrypt bool, method int) {
	groups := blockGroups[method]
	isa, count := "AVX2", "pairs"
	if method == sboxBlend {
		isa, count = "AVX2Blend", "quads"
	}
	name, src, dst, kbase, tab, n := blockKernelHeader(isa, "avx2Tables", count, 32*groups, decrypt)
	tb := func(row int) Mem { return Mem{Base: tab, Disp: row * ymmBytes} }
	row := func(i int) Mem { return Mem{Base: dst, Disp: i * ymmBytes} }
	// slot[g][m] is the row of out holding R[m] of group g.
	slot := make([][9]int, groups)
	for g := range slot {
		for m := 1; m <= 8; m++ {
			slot[g][m] = 8*g + m - 1
		}
	}

	Label(name + "_groups")
	Comment("Byte-slice each group of 32 lanes: R[j+1] gets byte j of every lane.")
	for g := range groups {
		var in [8]VecVirtual
		for k := range in {
			in[k] = YMM()
			VMOVDQU(Mem{Base: src, Disp: (8*g + k) * ymmBytes}, in[k])
			VPSHUFB(tb(tabToPairs), in[k], in[k])
		}
		rows := transposeWords8(in)
		for m := 1; m <= 8; m++ {
			VMOVDQU(rows[m-1], row(slot[g][m]))
		}
	}
	br := blockRoundOf[decrypt]
	blockRounds(name, kbase, decrypt, func(u int, key Mem) {
		k := YMM()
		VPBROADCASTQ(key, k)
		for g := range groups {
			x := YMM()
			VPXOR(row(slot[g][br.in]), k, x)
			var s VecVirtual
			if method == sboxBlend {
				s = sboxBlendAVX2(x, tb)
			} else {
				s = sboxNibbleAVX2(x, tb)
			}
			// Bit permutation of s, one nibble at a time.
			lo, hi := YMM(), YMM()
			VPAND(tb(tabLow4), s, lo)
			VPSRLW(U8(4), s, hi)
			VPAND(tb(tabLow4), hi, hi)
			pl, ph := YMM(), YMM()
			VMOVDQU(tb(tabPermLo), pl)
			VPSHUFB(lo, pl, pl)
			VMOVDQU(tb(tabPermHi), ph)
			VPSHUFB(hi, ph, ph)
			VPOR(pl, ph, pl) // pl = perm(s)
			// The round's XOR network on the rows, each read once and
			// written back once.
			vals := map[int]VecVirtual{blockS: s, blockP: pl}
			reg := func(m int) VecVirtual {
				if v, ok := vals[m]; ok {
					return v
				}
				v := YMM()
				VMOVDQU(row(slot[g][m]), v)
				vals[m] = v
				return v
			}
			for _, st := range br.steps {
				d := reg(st[0])
				VPXOR(reg(st[1]), d, d)
			}
			for _, st := range br.steps {
				VMOVDQU(vals[st[0]], row(slot[g][st[0]]))
			}
			var next [9]int
			for m := 1; m <= 8; m++ {
				next[m] = slot[g][br.next[m]]
			}
			slot[g] = next
		}
	})
	Comment("Back to one block per lane.")
	for g := range groups {
		var rs [8]VecVirtual
		for m := 1; m <= 8; m++ {
			rs[m-1] = YMM()
			VMOVDQU(row(slot[g][m]), rs[m-1])
		}
		blocks := transposeWords8(rs)
		for k, y := range blocks {
			VPSHUFB(tb(tabFromPairs), y, y)
			VMOVDQU(y, Mem{Base: dst, Disp: (8*g + k) * ymmBytes})
		}
	}
	ADDQ(U32(8*groups*ymmBytes), src)
	ADDQ(U32(8*groups*ymmBytes), dst)
	DECQ(n)
	JNZ(LabelRef(name + "_groups"))
	VZEROUPPER()
	RET()
}

// sboxNibbleAVX2 returns the S-box of the bytes of x as 16 VPSHUFB nibble
// lookups: x-16i selects table i in lanes whose high nibble is i, because
// VPSHUFB zeroes lanes whose index has bit 7 set; tables are XOR-telescoped
// so that every table up to the lane's own accumulates to the right entry,
// and the two halves (high nibble below or above 8) are blended on bit 7 of
// x. The lookups are XORed in a tree per half to keep the dependency chain
// short.
func sboxNibbleAVX2(x VecVirtual, tb func(int) Mem) VecVirtual {
	var acc [2]VecVirtual
	for h := 0; h < 2; h++ {
		var t [8]VecVirtual
		for j := 0; j < 8; j++ {
			i := 8*h + j
			t[j] = YMM()
			VMOVDQU(tb(tabSbox+i), t[j])
			if i == 0 {
				VPSHUFB(x, t[j], t[j])
				continue
			}
			xi := YMM()
			VPSUBB(tb(tabSub+i), x, xi)
			VPSHUFB(xi, t[j], t[j])
			if j%2 == 1 {
				VPXOR(t[j], t[j-1], t[j-1])
			}
		}
		VPXOR(t[2], t[0], t[0])
		VPXOR(t[6], t[4], t[4])
		VPXOR(t[4], t[0], t[0])
		acc[h] = t[0]
	}
	s := YMM()
	VPBLENDVB(x, acc[1], acc[0], s)
	return s
}

// sboxBlendAVX2 returns the S-box of the bytes of x as 16 VPSHUFB lookups
// of the S-box rows (row i: the entries of high nibble i) by the low
// nibble, joined by a tree of 15 VPBLENDVB on the high nibble's bits. The
// leaves pair rows i and i+8 on bit 7 of x itself, the next level blends
// on bit 6 (x shifted left by one, kept), the two above on bits 5 and 4
// (shifted where needed): with the eight cipher registers, the tree fits
// the 16 YMM registers.
func sboxBlendAVX2(x VecVirtual, tb func(int) Mem) VecVirtual {
	lo := YMM()
	VPAND(tb(tabLow4), x, lo)
	m6 := YMM()
	VPSLLW(U8(1), x, m6)
	// bitOf[level]: the value of the high nibble bit a level splits on;
	// level 3 (the leaves' pairs) splits on bit 7.
	// tree(level, row) blends the rows whose high nibble agrees with row on
	// the bits below 1<<level; level l splits on bit 4+l of x.
	var tree func(level, row int) VecVirtual
	tree = func(level, row int) VecVirtual {
		if level == 4 {
			t := YMM()
			VMOVDQU(tb(tabBlendRows+row), t)
			VPSHUFB(lo, t, t)
			return t
		}
		bit := 1 << level // of the high nibble: bit 4+level of x
		a, b := tree(level+1, row), tree(level+1, row|bit)
		var mask VecVirtual
		switch level {
		case 3:
			mask = x
		case 2:
			mask = m6
		default:
			mask = YMM()
			VPSLLW(U8(3-level), x, mask)
		}
		VPBLENDVB(mask, b, a, a) // a = b where the bit is set
		return a
	}
	return tree(0, 0)
}

// writeAsm generates csa_amd64.s through avo's command line (-out).
func writeAsm(circuits [7]circuit) {
	Package("github.com/tsdescramble/tsdescramble/csa")
	ConstraintExpr("amd64,gc,!purego")
	streamKernel(circuits, true)
	streamKernel(circuits, false)
	blockKernel(true, sboxNibble)
	blockKernel(false, sboxNibble)
	blockKernel(true, sboxBlend)
	blockKernel(false, sboxBlend)
	blockKernelVBMI(true)
	blockKernelVBMI(false)
	tc := synthesizeTern()
	streamKernelAVX512(tc, true)
	streamKernelAVX512(tc, false)
	transposeKernel(false, false)
	transposeKernel(true, false)
	transposeKernel(false, true)
	transposeKernel(true, true)
	columnKernels()
	Generate()
}

// Rows of avx2Tables holding swapMasks[j] in every 64-bit element, for
// j = 1, 2, 4, 8, 16, 32.
const tabSwapMask = 37

// swapStep is one step of a 64×64 bit-matrix transpose on four matrices at
// once (one per 64-bit element): it swaps the high j columns of row a with
// the low j columns of row b.
func swapStep(a, b VecVirtual, j int, tab Register) {
	shift := map[int]int{1: 0, 2: 1, 4: 2, 8: 3, 16: 4, 32: 5}[j]
	t := YMM()
	VPSRLQ(U8(j), a, t)
	VPXOR(b, t, t)
	VPAND(Mem{Base: tab, Disp: (tabSwapMask + shift) * ymmBytes}, t, t)
	VPXOR(t, b, b)
	VPSLLQ(U8(j), t, t)
	VPXOR(t, a, a)
}

// transpose4x4 transposes the 4×4 matrix of 64-bit elements in m.
func transpose4x4(m [4]VecVirtual) [4]VecVirtual {
	t0, t1, t2, t3 := YMM(), YMM(), YMM(), YMM()
	VPUNPCKLQDQ(m[1], m[0], t0)
	VPUNPCKHQDQ(m[1], m[0], t1)
	VPUNPCKLQDQ(m[3], m[2], t2)
	VPUNPCKHQDQ(m[3], m[2], t3)
	var v [4]VecVirtual
	for i := range v {
		v[i] = YMM()
	}
	VPERM2I128(U8(0x20), t2, t0, v[0])
	VPERM2I128(U8(0x20), t3, t1, v[1])
	VPERM2I128(U8(0x31), t2, t0, v[2])
	VPERM2I128(U8(0x31), t3, t1, v[3])
	return v
}

// transposeKernel emits the transposes between 256 lanes of one 8-byte
// column and the 64 bit-planes of the stream cipher: plane k holds bit k of
// every lane, lane 64q+l in bit l of element q. The 64×64 transposes of the
// four quarters run side by side, one per 64-bit element; steps 32, 16 and
// 8 swap among rows k, k+8, ..., k+56 and steps 4, 2 and 1 among eight
// consecutive rows, so each pass keeps eight rows in registers.
//
// With direct set, the lanes' blocks are read from the payloads instead of
// from col: the block of lane l at byte offset off of the address ptrs[l]
// (see transposeGather). Going to planes, the blocks read are also written
// to col, for the block cipher; going to lanes, col gets the blocks read
// XORed with the planes.
func transposeKernel(toLanes, direct bool) {
	suffix := "AVX2"
	if direct {
		suffix = "DirectAVX2"
	}
	var name string
	switch {
	case toLanes && direct:
		name = "planesToLanesXor" + suffix
		TEXT(name, NOSPLIT, "func(planes *[64][4]uint64, ptrs *[256]uintptr, off int, col *[256]uint64, tab *avx2Tables)")
		Doc(name+" transposes the 64 bit-planes of 256 lanes, XORs lane l's 64-bit value",
			"with the 8 bytes at ptrs[l]+off and writes the result to col[l]. It overwrites planes.")
	case toLanes:
		name = "planesToLanesXor" + suffix
		TEXT(name, NOSPLIT, "func(planes *[64][4]uint64, col *[256]uint64, tab *avx2Tables)")
		Doc(name+" transposes the 64 bit-planes of 256 lanes and XORs lane l's", "64-bit value into col[l]. It overwrites planes.")
	case direct:
		name = "lanesToPlanes" + suffix
		TEXT(name, NOSPLIT, "func(ptrs *[256]uintptr, off int, col *[256]uint64, planes *[64][4]uint64, tab *avx2Tables)")
		Doc(name+" reads the 8 bytes at ptrs[l]+off of each of 256 lanes, writes them",
			"to col[l] and transposes them into 64 bit-planes.")
	default:
		name = "lanesToPlanes" + suffix
		TEXT(name, NOSPLIT, "func(col *[256]uint64, planes *[64][4]uint64, tab *avx2Tables)")
		Doc(name + " transposes the 64-bit values of 256 lanes into 64 bit-planes.")
	}
	Pragma("noescape")
	var planes, col, ptrs, off Register
	if toLanes {
		planes = Load(Param("planes"), GP64())
	}
	if direct {
		ptrs, off = Load(Param("ptrs"), GP64()), Load(Param("off"), GP64())
	}
	col = Load(Param("col"), GP64())
	if !toLanes {
		planes = Load(Param("planes"), GP64())
	}
	tab := Load(Param("tab"), GP64())
	plane := func(k int) Mem { return Mem{Base: planes, Disp: k * ymmBytes} }
	lane := func(l int) Mem { return Mem{Base: col, Disp: l * 8} } // 4 lanes from l

	farSteps := func() { // steps 32, 16, 8 over rows k0, k0+8, ..., k0+56
		for k0 := 0; k0 < 8; k0++ {
			var m [8]VecVirtual
			for i := range m {
				m[i] = YMM()
				VMOVDQU(plane(k0+8*i), m[i])
			}
			for _, j := range []int{4, 2, 1} { // in units of 8 rows
				for i := 0; i < 8; i++ {
					if i&j == 0 {
						swapStep(m[i], m[i+j], 8*j, tab)
					}
				}
			}
			for i := range m {
				VMOVDQU(m[i], plane(k0+8*i))
			}
		}
	}
	nearSteps := func(m [8]VecVirtual) {
		for _, j := range []int{4, 2, 1} {
			for i := 0; i < 8; i++ {
				if i&j == 0 {
					swapStep(m[i], m[i+j], j, tab)
				}
			}
		}
	}

	if toLanes {
		farSteps()
		for b := 0; b < 8; b++ {
			var m [8]VecVirtual
			for i := range m {
				m[i] = YMM()
				VMOVDQU(plane(8*b+i), m[i])
			}
			nearSteps(m)
			// Rows 8b..8b+7 now hold lanes 64q+8b+i; regroup four rows at a
			// time so that each register holds four consecutive lanes.
			for h := 0; h < 2; h++ {
				v := transpose4x4([4]VecVirtual{m[4*h], m[4*h+1], m[4*h+2], m[4*h+3]})
				for q := range v {
					l := 64*q + 8*b + 4*h
					if direct {
						VPXOR(transposeGather(ptrs, off, l), v[q], v[q])
					} else {
						VPXOR(lane(l), v[q], v[q])
					}
					VMOVDQU(v[q], lane(l))
				}
			}
		}
	} else {
		for b := 0; b < 8; b++ {
			var m [8]VecVirtual
			for h := 0; h < 2; h++ {
				var v [4]VecVirtual
				for q := range v {
					l := 64*q + 8*b + 4*h
					if direct {
						v[q] = transposeGather(ptrs, off, l)
						VMOVDQU(v[q], lane(l))
					} else {
						v[q] = YMM()
						VMOVDQU(lane(l), v[q])
					}
				}
				r := transpose4x4(v)
				copy(m[4*h:], r[:])
			}
			nearSteps(m)
			for i := range m {
				VMOVDQU(m[i], plane(8*b+i))
			}
		}
		farSteps()
	}
	VZEROUPPER()
	RET()
}

// transposeGather returns the 8-byte blocks of lanes l..l+3 in one YMM
// register, lane l+i's from byte offset off of the address ptrs[l+i]: two
// scalar loads and an insert per 128-bit half. (VPGATHERQQ measured no
// faster on AMD Zen 5, and gathers are slow on earlier Zen cores.)
func transposeGather(ptrs, off Register, l int) VecVirtual {
	var half [2]VecVirtual
	for h := range half {
		half[h] = XMM()
		p0, p1 := GP64(), GP64()
		MOVQ(Mem{Base: ptrs, Disp: 8 * (l + 2*h)}, p0)
		MOVQ(Mem{Base: ptrs, Disp: 8 * (l + 2*h + 1)}, p1)
		VMOVQ(Mem{Base: p0, Index: off, Scale: 1}, half[h])
		VPINSRQ(U8(1), Mem{Base: p1, Index: off, Scale: 1}, half[h], half[h])
	}
	y := YMM()
	VINSERTI128(U8(1), half[1], half[0].AsY(), y)
	return y
}

// transposeScatter writes the four 64-bit lanes of v to byte offset off of
// the addresses ptrs[0..3].
func transposeScatter(v VecVirtual, ptrs, off Register) {
	for h := range 2 {
		x := v.AsX()
		if h == 1 {
			x = XMM()
			VEXTRACTI128(U8(1), v, x)
		}
		p0, p1 := GP64(), GP64()
		MOVQ(Mem{Base: ptrs, Disp: 16 * h}, p0)
		MOVQ(Mem{Base: ptrs, Disp: 16*h + 8}, p1)
		VMOVQ(x, Mem{Base: p0, Index: off, Scale: 1})
		VPEXTRQ(U8(1), x, Mem{Base: p1, Index: off, Scale: 1})
	}
}

// columnSetup loads c and returns the column's byte offset 8c and, if
// bias is not nil, c+*bias broadcast to four lanes, for fullMask.
func columnSetup(bias *int) (off Register, lim VecVirtual) {
	c := Load(Param("c"), GP64())
	if bias != nil {
		cb := GP64()
		LEAQ(Mem{Base: c, Disp: *bias}, cb)
		lim = YMM()
		VMOVQ(cb, lim.AsX())
		VPBROADCASTQ(lim.AsX(), lim)
	}
	off = GP64()
	MOVQ(c, off)
	SHLQ(U8(3), off)
	return off, lim
}

// fullMask returns, for the four lanes at full, all ones where full[l] >
// lim.
func fullMask(full Register, lim VecVirtual) VecVirtual {
	f := YMM()
	VPMOVZXBQ(Mem{Base: full}, f)
	VPCMPGTQ(lim, f, f)
	return f
}

// columnLoop emits the loop over quads groups of four lanes: body, then
// the pointers advanced by four lanes (lanes by 32 bytes, full, if not
// nil, by 4).
func columnLoop(name string, body func(), lanes []Register, full Register) {
	n := Load(Param("quads"), GP64())
	Label(name + "_quad")
	body()
	for _, r := range lanes {
		ADDQ(U8(32), r)
	}
	if full != nil {
		ADDQ(U8(4), full)
	}
	DECQ(n)
	JNZ(LabelRef(name + "_quad"))
	VZEROUPPER()
	RET()
}

// columnKernels emits the kernels that carry the block cipher's CBC chain
// between its columns and the payloads, for the engine's direct path
// (directFuncs in csa/engine.go). Lanes are read and written at ptrs[l]+8c,
// every lane of the quads groups of four: the engine points lanes without
// a full block c at scratch space.
func columnKernels() {
	one, zero := 1, 0

	TEXT("storeDecryptedAVX2", NOSPLIT, "func(out, next *[256]uint64, full *[256]uint8, ptrs *[256]uintptr, c int, quads int)")
	Pragma("noescape")
	Doc("storeDecryptedAVX2 writes out[l] ^ next[l] (out[l] alone where full[l] <= c+1)",
		"to the 8 bytes at ptrs[l]+8c, for the lanes of quads groups of four.")
	out, next := Load(Param("out"), GP64()), Load(Param("next"), GP64())
	full, ptrs := Load(Param("full"), GP64()), Load(Param("ptrs"), GP64())
	off, lim := columnSetup(&one)
	columnLoop("storeDecryptedAVX2", func() {
		m := fullMask(full, lim)
		VPAND(Mem{Base: next}, m, m)
		VPXOR(Mem{Base: out}, m, m)
		transposeScatter(m, ptrs, off)
	}, []Register{out, next, ptrs}, full)

	TEXT("chainToEncryptAVX2", NOSPLIT, "func(ptrs *[256]uintptr, next *[256]uint64, full *[256]uint8, c int, col, in *[256]uint64, quads int)")
	Pragma("noescape")
	Doc("chainToEncryptAVX2 reads the 8 bytes at ptrs[l]+8c into col[l] and writes to in[l]",
		"the block cipher input of column c: col[l] ^ next[l], or col[l] alone where",
		"full[l] <= c+1, for the lanes of quads groups of four.")
	ptrs, next, full = Load(Param("ptrs"), GP64()), Load(Param("next"), GP64()), Load(Param("full"), GP64())
	col, in := Load(Param("col"), GP64()), Load(Param("in"), GP64())
	off, lim = columnSetup(&one)
	columnLoop("chainToEncryptAVX2", func() {
		raw := transposeGather(ptrs, off, 0)
		VMOVDQU(raw, Mem{Base: col})
		m := fullMask(full, lim)
		VPAND(Mem{Base: next}, m, m)
		VPXOR(raw, m, m)
		VMOVDQU(m, Mem{Base: in})
	}, []Register{ptrs, next, col, in}, full)

	TEXT("mergeEncryptedAVX2", NOSPLIT, "func(out *[256]uint64, full *[256]uint8, c int, col *[256]uint64, quads int)")
	Pragma("noescape")
	Doc("mergeEncryptedAVX2 sets col[l] to out[l] where full[l] > c, for the lanes of quads",
		"groups of four.")
	out, full, col = Load(Param("out"), GP64()), Load(Param("full"), GP64()), Load(Param("col"), GP64())
	_, lim = columnSetup(&zero)
	columnLoop("mergeEncryptedAVX2", func() {
		m := fullMask(full, lim)
		v := YMM()
		VMOVDQU(Mem{Base: col}, v)
		VPBLENDVB(m, Mem{Base: out}, v, v)
		VMOVDQU(v, Mem{Base: col})
	}, []Register{out, col}, full)

	TEXT("storeColumnAVX2", NOSPLIT, "func(col *[256]uint64, ptrs *[256]uintptr, c int, quads int)")
	Pragma("noescape")
	Doc("storeColumnAVX2 writes col[l] to the 8 bytes at ptrs[l]+8c, for the lanes of quads",
		"groups of four.")
	col, ptrs = Load(Param("col"), GP64()), Load(Param("ptrs"), GP64())
	off, _ = columnSetup(nil)
	columnLoop("storeColumnAVX2", func() {
		v := YMM()
		VMOVDQU(Mem{Base: col}, v)
		transposeScatter(v, ptrs, off)
	}, []Register{col, ptrs}, nil)
}

// Rows of vbmiTables (csa_amd64.go), 64 bytes each.
const (
	zmmBytes      = 64
	vtabSbox      = 0  // 4 rows: the S-box
	vtabPermSbox  = 4  // 4 rows: blockPerm of the S-box
	vtabByteT     = 8  // VPERMB index of the 8×8 byte transpose in each 64-bit row of 8 blocks
	vtabQwordSwap = 9  // VPERMI2Q indexes: swap steps 2 and 4, low then high result
	vtabRows      = 13 // rows in all
)

// transposeQwords8 transposes the 8×8 matrix of 64-bit words in a: word j
// of a[k] becomes word k of a[j]. Each of the three steps swaps the
// off-diagonal blocks of size b (1, 2, 4) between pairs of registers.
func transposeQwords8(a *[8]VecVirtual, tab Register) {
	for step, b := range []int{1, 2, 4} {
		for k := range 8 {
			if k&b != 0 {
				continue
			}
			lo, hi := ZMM(), ZMM()
			if b == 1 {
				VPUNPCKLQDQ(a[k|b], a[k], lo)
				VPUNPCKHQDQ(a[k|b], a[k], hi)
			} else {
				row := vtabQwordSwap + 2*(step-1)
				VMOVDQU64(Mem{Base: tab, Disp: row * zmmBytes}, lo)
				VPERMI2Q(a[k|b], a[k], lo)
				VMOVDQU64(Mem{Base: tab, Disp: (row + 1) * zmmBytes}, hi)
				VPERMI2Q(a[k|b], a[k], hi)
			}
			a[k], a[k|b] = lo, hi
		}
	}
}

// blockKernelVBMI emits the byte-sliced block cipher for 64 lanes per ZMM
// register with AVX-512 VBMI: the same rounds as blockKernel, but each
// 256-entry lookup (the S-box, and the S-box followed by the bit
// permutation) is two VPERMI2B lookups of 128 entries blended on bit 7 of
// the index, instead of sixteen nibble lookups. Two groups of 64 lanes run
// interleaved, as a round of one group is a chain of dependent
// instructions too short to keep the processor busy.
func blockKernelVBMI(decrypt bool) {
	name, src, dst, kbase, tab, pairs := blockKernelHeader("VBMI", "vbmiTables", "pairs", 128, decrypt)
	row := func(r int) Mem { return Mem{Base: tab, Disp: r * zmmBytes} }
	// The first table of each VPERMI2B pair stays in a register, the
	// second is read from memory: 32 registers do not hold all eight.
	var sbox, psbox [2]VecVirtual
	for i := range 2 {
		sbox[i], psbox[i] = ZMM(), ZMM()
		VMOVDQU64(row(vtabSbox+2*i), sbox[i])
		VMOVDQU64(row(vtabPermSbox+2*i), psbox[i])
	}
	// lookup returns t[x] for a 256-entry table (rows first..first+3); hi
	// has bit 7 of each byte of x.
	lookup := func(t [2]VecVirtual, first int, x VecVirtual, hi OpmaskVirtual) VecVirtual {
		a, b := ZMM(), ZMM()
		VMOVDQU64(x, a)
		VPERMI2B(row(first+1), t[0], a)
		VMOVDQU64(x, b)
		VPERMI2B(row(first+3), t[1], b)
		VMOVDQU8(b, hi, a) // a = b where bit 7 of x is set
		return a
	}

	Label(name + "_pair")
	Comment("Byte-slice 2×64 lanes: R[g][j+1] gets byte j of every lane of group g.")
	var R [2][9]VecVirtual // R[g][1..8]
	for g := range 2 {
		bt := ZMM()
		VMOVDQU64(row(vtabByteT), bt)
		var m [8]VecVirtual
		for k := range m {
			m[k] = ZMM()
			VPERMB(Mem{Base: src, Disp: (8*g + k) * zmmBytes}, bt, m[k])
		}
		transposeQwords8(&m, tab)
		copy(R[g][1:], m[:])
	}
	blockRounds(name, kbase, decrypt, func(u int, key Mem) {
		for g := range 2 {
			x := ZMM()
			VPBROADCASTQ(key, x)
			VPXORQ(R[g][blockRoundOf[decrypt].in], x, x)
			hi := K()
			VPMOVB2M(x, hi)
			s := lookup(sbox, vtabSbox, x, hi)
			p := lookup(psbox, vtabPermSbox, x, hi)
			blockRoundXors(&R[g], s, p, decrypt, func(a, b, d Op) { VPXORQ(a, b, d) })
		}
	})
	Comment("Back to one block per lane.")
	for g := range 2 {
		var m [8]VecVirtual
		copy(m[:], R[g][1:])
		transposeQwords8(&m, tab)
		bt := ZMM()
		VMOVDQU64(row(vtabByteT), bt)
		for k, z := range m {
			VPERMB(z, bt, z)
			VMOVDQU64(z, Mem{Base: dst, Disp: (8*g + k) * zmmBytes})
		}
	}
	ADDQ(U32(16*zmmBytes), src)
	ADDQ(U32(16*zmmBytes), dst)
	DECQ(pairs)
	JNZ(LabelRef(name + "_pair"))
	VZEROUPPER()
	RET()
}
