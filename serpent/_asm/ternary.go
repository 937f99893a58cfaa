package main

// This file turns the S-boxes of ../sbox.go into VPTERNLOGD operations for
// the AVX-512 kernels. Bit i of the four words goes through the same 4-bit
// S-box, so each output word is one boolean function of the four input
// words, applied bitwise; a function of at most three values is one
// VPTERNLOGD. The truth tables come from running the parsed instruction
// sequences (the same source as the SSE2 and AVX2 kernels) on all 16
// inputs, and every circuit is checked exhaustively before use.

import (
	"fmt"
	"log"
	"slices"
)

// In a 16-bit truth table, bit i is the value for the S-box input i, whose
// bit j is input word j.
var var4 = [4]uint16{0xaaaa, 0xcccc, 0xf0f0, 0xff00}

// truthTables runs an S-box program on all 16 inputs at once.
func truthTables(sb sbox) [4]uint16 {
	var v [5]uint16
	copy(v[:], var4[:])
	for _, s := range sb.prog {
		switch s.op {
		case opXor:
			v[s.dst] = v[s.s1] ^ v[s.s2]
		case opAnd:
			v[s.dst] = v[s.s1] & v[s.s2]
		case opOr:
			v[s.dst] = v[s.s1] | v[s.s2]
		case opNot:
			v[s.dst] = ^v[s.s1]
		case opCopy:
			v[s.dst] = v[s.s1]
		}
	}
	var out [4]uint16
	for j := range out {
		out[j] = v[sb.out[j]]
	}
	// A bijection on 4 bits: the 16 outputs must all differ.
	seen := map[int]bool{}
	for i := range 16 {
		x := 0
		for j := range 4 {
			x |= int(out[j]>>i&1) << j
		}
		seen[x] = true
	}
	if len(seen) != 16 {
		log.Fatal("S-box program is not a permutation")
	}
	return out
}

// ternOp is one VPTERNLOGD: value = imm[a<<2 | b<<1 | c] bitwise, operands
// indexing the values of a circuit (0..3 the input words).
type ternOp struct {
	imm     uint8
	a, b, c int
}

// ternCircuit computes the four output words of one S-box.
type ternCircuit struct {
	ops []ternOp
	out [4]int
}

// fit returns the immediate that makes f a function of p, q, r on the
// inputs in care, if there is one.
func fit(f, care, p, q, r uint16) (uint8, bool) {
	var imm, seen uint8
	for i := range 16 {
		if care>>i&1 == 0 {
			continue
		}
		k := (p>>i&1)<<2 | (q>>i&1)<<1 | r>>i&1
		bit := uint8(f >> i & 1)
		if seen>>k&1 != 0 && imm>>k&1 != bit {
			return 0, false
		}
		seen |= 1 << k
		imm |= bit << k
	}
	return imm, true
}

// apply evaluates a ternary operation on truth tables.
func apply(imm uint8, p, q, r uint16) (f uint16) {
	for i := range 16 {
		k := (p>>i&1)<<2 | (q>>i&1)<<1 | r>>i&1
		f |= uint16(imm>>k&1) << i
	}
	return f
}

type circuitBuilder struct {
	tts   []uint16
	depth []int
	ops   []ternOp
}

func (b *circuitBuilder) add(imm uint8, x, y, z int) int {
	b.ops = append(b.ops, ternOp{imm, x, y, z})
	b.tts = append(b.tts, apply(imm, b.tts[x], b.tts[y], b.tts[z]))
	b.depth = append(b.depth, 1+max(b.depth[x], b.depth[y], b.depth[z]))
	return len(b.tts) - 1
}

// triples lists every choice of three of the n values (repetition allowed
// when n < 3 is impossible here: there are always four inputs).
func triples(n int) [][3]int {
	var t [][3]int
	for x := 0; x < n; x++ {
		for y := x + 1; y < n; y++ {
			for z := y + 1; z < n; z++ {
				t = append(t, [3]int{x, y, z})
			}
		}
	}
	return t
}

// option is a way to compute one output: one operation, or an
// intermediate value g (two operations).
type option struct {
	cost, depth int
	g, h        ternOp // intermediates: g when cost is 2, g and h when 3
	f           ternOp // operands: g is -1, h is -2
}

// options finds the cheapest ways to compute f from the values so far,
// shallowest first: one operation if f is a function of three existing
// values, else two, where the second combines the first with two existing
// values. The first operation must equal f or its complement on each class
// of inputs that the two other operands leave undecided.
func (b *circuitBuilder) options(f uint16, maxDepth int) []option {
	n := len(b.tts)
	for i, t := range b.tts {
		if t == f {
			return []option{{cost: 0, f: ternOp{a: i}}}
		}
	}
	var opts []option
	for _, t := range triples(n) {
		if imm, ok := fit(f, 0xffff, b.tts[t[0]], b.tts[t[1]], b.tts[t[2]]); ok {
			d := 1 + max(b.depth[t[0]], b.depth[t[1]], b.depth[t[2]])
			if d > maxDepth {
				continue
			}
			opts = append(opts, option{cost: 1, depth: d, f: ternOp{imm, t[0], t[1], t[2]}})
		}
	}
	if len(opts) > 0 {
		return opts
	}
	for u := 0; u < n; u++ {
		for v := u + 1; v < n; v++ {
			var classes []uint16
			var care uint16
			for k := range 4 {
				var m uint16
				for i := range 16 {
					if int(b.tts[u]>>i&1)<<1|int(b.tts[v]>>i&1) == k {
						m |= 1 << i
					}
				}
				if f&m != 0 && f&m != m { // f not constant on the class
					classes = append(classes, m)
					care |= m
				}
			}
			for signs := range 1 << len(classes) {
				g := f & care
				for k, m := range classes {
					if signs>>k&1 != 0 {
						g ^= m
					}
				}
				for _, t := range triples(n) {
					imm, ok := fit(g, care, b.tts[t[0]], b.tts[t[1]], b.tts[t[2]])
					if !ok {
						continue
					}
					full := apply(imm, b.tts[t[0]], b.tts[t[1]], b.tts[t[2]])
					imm2, ok := fit(f, 0xffff, full, b.tts[u], b.tts[v])
					if !ok {
						log.Fatal("two-operation split does not fit")
					}
					dg := 1 + max(b.depth[t[0]], b.depth[t[1]], b.depth[t[2]])
					d := 1 + max(dg, b.depth[u], b.depth[v])
					if d > maxDepth {
						continue
					}
					opts = append(opts, option{cost: 2, depth: d,
						g: ternOp{imm, t[0], t[1], t[2]}, f: ternOp{imm2, -1, u, v}})
				}
			}
		}
	}
	if len(opts) > 0 {
		return opts
	}
	// Shannon expansion on one input v: the two cofactors are functions of
	// the other three inputs, and a multiplexer on v picks one.
	for v := range 4 {
		var o [3]int
		k := 0
		for i := range 4 {
			if i != v {
				o[k] = i
				k++
			}
		}
		imm1, ok1 := fit(f, var4[v], var4[o[0]], var4[o[1]], var4[o[2]])
		imm0, ok0 := fit(f, ^var4[v], var4[o[0]], var4[o[1]], var4[o[2]])
		if !ok1 || !ok0 {
			log.Fatal("cofactor is not a function of three inputs")
		}
		opts = append(opts, option{cost: 3, depth: 2,
			g: ternOp{imm1, o[0], o[1], o[2]}, h: ternOp{imm0, o[0], o[1], o[2]},
			f: ternOp{0xca, v, -1, -2}}) // v ? g : h
	}
	return opts
}

// best picks the shallowest option; ties go to the first found.
func best(opts []option) option {
	return slices.MinFunc(opts, func(x, y option) int { return x.depth - y.depth })
}

// synthesize finds a circuit of depth at most maxDepth (at least 2) for
// the output truth tables tts: for every
// order of the outputs, each output takes its cheapest, then shallowest
// option given the values computed before it (earlier outputs and their
// intermediates included). The circuit with the fewest operations wins,
// then the shallowest.
func synthesize(tts [4]uint16, maxDepth int) ternCircuit {
	var bestC ternCircuit
	bestOps, bestDepth := -1, 0
	for _, order := range permutations4() {
		b := &circuitBuilder{tts: var4[:], depth: make([]int, 4)}
		b.tts = slices.Clone(b.tts)
		var out [4]int
		for _, j := range order {
			o := best(b.options(tts[j], maxDepth))
			switch o.cost {
			case 0:
				out[j] = o.f.a
			case 1:
				out[j] = b.add(o.f.imm, o.f.a, o.f.b, o.f.c)
			case 2:
				g := b.add(o.g.imm, o.g.a, o.g.b, o.g.c)
				out[j] = b.add(o.f.imm, g, o.f.b, o.f.c)
			case 3:
				g := b.add(o.g.imm, o.g.a, o.g.b, o.g.c)
				h := b.add(o.h.imm, o.h.a, o.h.b, o.h.c)
				out[j] = b.add(o.f.imm, o.f.a, g, h)
			}
		}
		depth := 0
		for _, o := range out {
			depth = max(depth, b.depth[o])
		}
		if bestOps < 0 || len(b.ops) < bestOps || len(b.ops) == bestOps && depth < bestDepth {
			bestC = ternCircuit{ops: b.ops, out: out}
			bestOps, bestDepth = len(b.ops), depth
		}
	}
	check(bestC, tts)
	return bestC
}

// check evaluates the circuit on all 16 inputs independently of the
// search's bookkeeping.
func check(c ternCircuit, tts [4]uint16) {
	for x := range 16 {
		v := make([]int, 4, 4+len(c.ops))
		for j := range 4 {
			v[j] = x >> j & 1
		}
		for _, op := range c.ops {
			v = append(v, int(op.imm>>(v[op.a]<<2|v[op.b]<<1|v[op.c])&1))
		}
		for j := range 4 {
			if v[c.out[j]] != int(tts[j]>>x&1) {
				panic(fmt.Sprintf("ternary S-box circuit wrong for input %d, output %d", x, j))
			}
		}
	}
}

func permutations4() [][4]int {
	var out [][4]int
	for a := range 4 {
		for b := range 4 {
			for c := range 4 {
				for d := range 4 {
					if a != b && a != c && a != d && b != c && b != d && c != d {
						out = append(out, [4]int{a, b, c, d})
					}
				}
			}
		}
	}
	return out
}

// circuitDepth is the length of the longest chain of operations.
func circuitDepth(c ternCircuit) int {
	d := make([]int, 4, 4+len(c.ops))
	for _, op := range c.ops {
		d = append(d, 1+max(d[op.a], d[op.b], d[op.c]))
	}
	m := 0
	for _, o := range c.out {
		m = max(m, d[o])
	}
	return m
}

// ternarySBoxes synthesizes the circuit of every S-box and inverse, with
// at most maxDepth operations in a chain.
func ternarySBoxes(sboxes map[string]sbox, maxDepth int) map[string]ternCircuit {
	m := map[string]ternCircuit{}
	for name, sb := range sboxes {
		m[name] = synthesize(truthTables(sb), maxDepth)
	}
	return m
}
