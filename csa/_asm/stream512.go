package main

import (
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
// The state layout (stream256) is the same, so the two kernels mix.
func streamKernelAVX512(circuits [7]ternCircuit, init bool) {
	name, arg := "streamGenAVX512", "out"
	if init {
		name, arg = "streamInitAVX512", "iv"
	}
	load := func(m Mem) VecVirtual {
		y := YMM()
		VMOVDQU64(m, y)
		return y
	}
	streamKernelFrame(name, arg, " with AVX-512VL", init, func(src, dst Op) { VMOVDQU64(src, dst) }, func(rd streamRound, abs func(int) Mem) {
		// T1: the new A1.
		for b := 0; b < 4; b++ {
			v := load(rd.aN(10, b))
			if init {
				ternInto(v, xor3, load(abs(stateX+b)), abs(stateD+b))
				VPXORQ(rd.inA(b), v, v)
			} else {
				VPXORQ(abs(stateX+b), v, v)
			}
			VMOVDQU64(v, rd.aN(0, b))
		}
		// T2: the new B1, rotated left by one bit where p is set.
		var nb [4]VecVirtual
		for b := 0; b < 4; b++ {
			nb[b] = load(rd.bN(7, b))
			ternInto(nb[b], xor3, load(rd.bN(10, b)), abs(stateY+b))
			if init {
				VPXORQ(rd.inB(b), nb[b], nb[b])
			}
		}
		p := load(abs(stateP))
		for b := 0; b < 4; b++ {
			VMOVDQU64(ternlog(immMux, p, nb[(b+3)%4], nb[b]), rd.bN(0, b))
		}
		// T3: D = E ^ Z ^ extra, extra being a 4x4 XOR over B.
		var d [4]VecVirtual
		for b := 0; b < 4; b++ {
			t := extraTaps[b]
			d[b] = load(abs(stateE + b))
			ternInto(d[b], xor3, load(abs(stateZ+b)), rd.bN(t[0][0], t[0][1]))
			ternInto(d[b], xor3, load(rd.bN(t[1][0], t[1][1])), rd.bN(t[2][0], t[2][1]))
			VPXORQ(rd.bN(t[3][0], t[3][1]), d[b], d[b])
			VMOVDQU64(d[b], abs(stateD+b))
		}
		if !init {
			hi, lo := YMM(), YMM()
			VPXORQ(d[3], d[2], hi)
			VPXORQ(d[1], d[0], lo)
			VMOVDQU64(hi, rd.io(7-2*rd.u))
			VMOVDQU64(lo, rd.io(6-2*rd.u))
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
				vals[i] = load(rd.aN(tap[0], tap[1]))
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
	})
}
