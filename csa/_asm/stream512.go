package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// ternlog returns a new register holding f(a, b, c) for the immediate imm;
// c may be a memory operand.
func ternlog(imm U8, a, b VecVirtual, c Op) VecVirtual {
	r := YMM()
	VMOVDQU64(a, r)
	VPTERNLOGQ(imm, c, b, r)
	return r
}

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

// streamKernelAVX512 emits the same round program as streamKernel with the
// AVX-512VL forms of the instructions on YMM registers: three-input
// VPTERNLOGQ operations merge the round's XOR chains, multiplexers and
// carry (emitRoundAVX512) and the S-box gates (86 operations for the seven
// S-boxes instead of 141 gates), and the 32 vector registers keep the S-box
// inputs from spilling.
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
	prog := streamRoundProg(init)
	streamKernelFrame(name, arg, " with AVX-512VL", init, func(src, dst Op) { VMOVDQU64(src, dst) }, func(rd streamRound, abs func(int) Mem) {
		emitRoundAVX512(prog, func(l loc) Mem { return rd.planeMem(l, abs) }, func() { streamSboxesAVX512(circuits, rd, abs, load) })
	})
}

// streamSboxesAVX512 emits the seven S-box ternary circuits of the
// AVX-512 stream kernel: the next X, Y, Z, p and q from the taps of A.
func streamSboxesAVX512(circuits [7]ternCircuit, rd streamRound, abs func(int) Mem, load func(Mem) VecVirtual) {
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
}
