package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// immOf returns the VPTERNLOGQ immediate of f(a, b, c), a being the
// destination operand (bit 2 of the table index).
func immOf(f func(a, b, c bool) bool) U8 {
	var imm uint8
	for i := range 8 {
		if f(i&4 != 0, i&2 != 0, i&1 != 0) {
			imm |= 1 << i
		}
	}
	return U8(imm)
}

// immMux selects: a ? b : c.
var immMux = immOf(func(a, b, c bool) bool {
	if a {
		return b
	}
	return c
})

// ternlog returns a new register holding f(a, b, c) for the immediate imm;
// c may be a memory operand.
func ternlog(imm U8, a, b VecVirtual, c Op) VecVirtual {
	r := YMM()
	VMOVDQU64(a, r)
	VPTERNLOGQ(imm, c, b, r)
	return r
}

// ternInto sets d to f(d, x, y); y may be a memory operand. Working in
// place where the old d is no longer needed saves the copy ternlog makes,
// and the kernel is bound by instruction count rather than by execution
// ports.
func ternInto(d VecVirtual, f func(d, x, y bool) bool, x VecVirtual, y Op) {
	VPTERNLOGQ(immOf(f), y, x, d)
}

func xor3(a, b, c bool) bool { return a != b != c }

// permuteImm returns the immediate of the same function with the operands
// reordered so that operand i of the original comes first (i = 0, 1, 2 for
// a, b, c), the other two keeping their order.
func permuteImm(imm uint8, i int) uint8 {
	var out uint8
	for k := range 8 {
		v := [3]int{k >> 2 & 1, k >> 1 & 1, k & 1}
		// new operands: (orig i, then the other two in order)
		var order []int
		order = append(order, i)
		for j := range 3 {
			if j != i {
				order = append(order, j)
			}
		}
		var nk int
		for pos, j := range order {
			nk |= v[j] << (2 - pos)
		}
		out |= (imm >> k & 1) << nk
	}
	return out
}

// streamKernelAVX512 emits the same computation as streamKernel with the
// AVX-512VL forms of the instructions on YMM registers: three-input
// VPTERNLOGQ operations merge the XOR chains, multiplexers, the carry and
// the S-box gates (86 operations for the seven S-boxes instead of 141
// gates), and the 32 vector registers keep the S-box inputs from spilling.
// The state layout (avx2Stream) is the same, so the two kernels mix.
func streamKernelAVX512(circuits [7]ternCircuit, init bool) {
	name, arg := "streamGenAVX512", "out"
	if init {
		name, arg = "streamInitAVX512", "iv"
	}
	TEXT(name, NOSPLIT, fmt.Sprintf("func(s *avx2Stream, %s *[64][4]uint64)", arg))
	Pragma("noescape")
	if init {
		Doc(name + " runs the 32 initialisation rounds of the stream cipher on 256 lanes with AVX-512VL.")
	} else {
		Doc(name + " runs 32 rounds of the stream cipher on 256 lanes with AVX-512VL and writes 8 keystream bytes as bit-planes.")
	}
	st := Load(Param("s"), GP64())
	io := Load(Param(arg), GP64())
	win := GP64()
	LEAQ(Mem{Base: st, Disp: (stateA + (ringTop-1)*4) * ymmBytes}, win)
	cnt := GP64()
	MOVQ(U32(8), cnt)

	abs := func(idx int) Mem { return Mem{Base: st, Disp: idx * ymmBytes} }
	load := func(m Mem) VecVirtual {
		y := YMM()
		VMOVDQU64(m, y)
		return y
	}

	Label(name + "_byte")
	for u := 0; u < 4; u++ {
		Comment(fmt.Sprintf("Round %d of this byte.", u))
		aN := func(n, b int) Mem { return Mem{Base: win, Disp: (n-u)*nibble + b*ymmBytes} }
		bN := func(n, b int) Mem { return Mem{Base: win, Disp: bRelToA + (n-u)*nibble + b*ymmBytes} }
		hiIn := func(b int) Mem { return Mem{Base: io, Disp: (4 + b) * planeSize} }
		loIn := func(b int) Mem { return Mem{Base: io, Disp: b * planeSize} }
		inA, inB := hiIn, loIn
		if u%2 == 1 {
			inA, inB = loIn, hiIn
		}

		// T1: the new A1.
		for b := 0; b < 4; b++ {
			v := load(aN(10, b))
			if init {
				ternInto(v, xor3, load(abs(stateX+b)), abs(stateD+b))
				VPXORQ(inA(b), v, v)
			} else {
				VPXORQ(abs(stateX+b), v, v)
			}
			VMOVDQU64(v, aN(0, b))
		}
		// T2: the new B1, rotated left by one bit where p is set.
		var nb [4]VecVirtual
		for b := 0; b < 4; b++ {
			nb[b] = load(bN(7, b))
			ternInto(nb[b], xor3, load(bN(10, b)), abs(stateY+b))
			if init {
				VPXORQ(inB(b), nb[b], nb[b])
			}
		}
		p := load(abs(stateP))
		for b := 0; b < 4; b++ {
			VMOVDQU64(ternlog(immMux, p, nb[(b+3)%4], nb[b]), bN(0, b))
		}
		// T3: D = E ^ Z ^ extra, extra being a 4x4 XOR over B.
		var d [4]VecVirtual
		for b := 0; b < 4; b++ {
			t := extraTaps[b]
			d[b] = load(abs(stateE + b))
			ternInto(d[b], xor3, load(abs(stateZ+b)), bN(t[0][0], t[0][1]))
			ternInto(d[b], xor3, load(bN(t[1][0], t[1][1])), bN(t[2][0], t[2][1]))
			VPXORQ(bN(t[3][0], t[3][1]), d[b], d[b])
			VMOVDQU64(d[b], abs(stateD+b))
		}
		if !init {
			hi, lo := YMM(), YMM()
			VPXORQ(d[3], d[2], hi)
			VPXORQ(d[1], d[0], lo)
			VMOVDQU64(hi, Mem{Base: io, Disp: (7 - 2*u) * planeSize})
			VMOVDQU64(lo, Mem{Base: io, Disp: (6 - 2*u) * planeSize})
		}
		// T4: F = q ? Z+E+r : E, with the carry out in r; E takes the old F.
		q := load(abs(stateQ))
		c := load(abs(stateR))
		for b := 0; b < 4; b++ {
			z, e := load(abs(stateZ+b)), load(abs(stateE+b))
			VMOVDQU64(load(abs(stateF+b)), abs(stateE+b))
			cz := YMM()
			VPXORQ(c, z, cz)
			ternInto(cz, func(cz, e, q bool) bool { return e != (q && cz) }, e, q)
			VMOVDQU64(cz, abs(stateF+b))
			ternInto(c, func(c, z, e bool) bool { return c && z || c && e || z && e }, z, e)
		}
		ternInto(c, func(c, q, r bool) bool { // q ? c : r
			if q {
				return c
			}
			return r
		}, q, abs(stateR))
		VMOVDQU64(c, abs(stateR))

		// The seven S-boxes: the next X, Y, Z, p and q.
		for s, circ := range circuits {
			vals := map[int]VecVirtual{}
			for i := 0; i < numInputs; i++ {
				tap := streamSboxTaps[s][4-i]
				vals[i] = load(aN(tap[0], tap[1]))
			}
			// The last op using each value, so that an op can overwrite
			// an operand nothing reads afterwards.
			lastUse := map[int]int{circ.hi: len(circ.ops), circ.lo: len(circ.ops)}
			for i, op := range circ.ops {
				for _, v := range []int{op.a, op.b, op.c} {
					lastUse[v] = max(lastUse[v], i)
				}
			}
			for i, op := range circ.ops {
				operands := [3]int{op.a, op.b, op.c}
				done := false
				for j, v := range operands {
					if lastUse[v] != i || operands[(j+1)%3] == v || operands[(j+2)%3] == v {
						continue
					}
					var rest []int
					for k, w := range operands {
						if k != j {
							rest = append(rest, w)
						}
					}
					VPTERNLOGQ(U8(permuteImm(op.imm, j)), vals[rest[1]], vals[rest[0]], vals[v])
					vals[numInputs+i] = vals[v]
					done = true
					break
				}
				if !done {
					vals[numInputs+i] = ternlog(U8(op.imm), vals[op.a], vals[op.b], vals[op.c])
				}
			}
			VMOVDQU64(vals[circ.hi], abs(sboxState[sboxDest[s][0]]))
			VMOVDQU64(vals[circ.lo], abs(sboxState[sboxDest[s][1]]))
		}
	}
	SUBQ(U32(4*nibble), win)
	ADDQ(U32(8*planeSize), io)
	DECQ(cnt)
	JNZ(LabelRef(name + "_byte"))

	Comment("Move the register windows back to the top of the rings.")
	for _, base := range []int{stateA, stateB} {
		for i := 0; i < 40; i++ {
			VMOVDQU64(load(abs(base+i)), abs(base+ringTop*4+i))
		}
	}
	VZEROUPPER()
	RET()
}
