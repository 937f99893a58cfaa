package main

// This file derives boolean circuits for the seven 5-to-2-bit stream cipher
// S-boxes. Each output bit is split on one input variable into two 4-input
// cofactors, and every 4-input function gets an optimal formula from an
// exhaustive search over AND, OR, XOR and AND-NOT. Intermediate results are
// shared by truth table, so the two outputs of an S-box reuse each other's
// terms. The result is checked exhaustively against the tables before use.

import (
	"fmt"
	"math"
)

// Gate operations. opAndNot computes a &^ b.
const (
	opAnd = iota
	opOr
	opXor
	opAndNot
)

var opNames = [...]string{"&", "|", "^", "&^"}

// gate is one two-input operation; operands index the circuit's values:
// 0..4 are the inputs x0..x4 (x4 = first tap), 5 is all ones, then gates.
type gate struct {
	op   int
	a, b int
}

// circuit computes the two output bits (hi = bit 1, lo = bit 0) of one S-box.
type circuit struct {
	gates  []gate
	hi, lo int
}

const (
	numInputs = 5
	onesValue = 5
	firstGate = 6
)

func apply[T uint32 | uint64](op int, a, b T) T {
	switch op {
	case opAnd:
		return a & b
	case opOr:
		return a | b
	case opXor:
		return a ^ b
	}
	return a &^ b
}

// formula4 is the optimal-formula table over four variables.
type formula4 struct {
	cost  [1 << 16]uint8
	op    [1 << 16]int8 // -1: leaf
	a, b  [1 << 16]uint16
	found int
}

var var4 = [4]uint16{0xAAAA, 0xCCCC, 0xF0F0, 0xFF00}

func newFormula4(maxCost int) *formula4 {
	f := new(formula4)
	for i := range f.cost {
		f.cost[i] = math.MaxUint8
	}
	levels := [][]uint16{nil}
	for _, v := range append(var4[:], 0xFFFF) {
		f.cost[v], f.op[v] = 0, -1
		levels[0] = append(levels[0], v)
		f.found++
	}
	for c := 1; c <= maxCost && f.found < 1<<16; c++ {
		var lvl []uint16
		for i := 0; i <= c-1; i++ {
			for _, x := range levels[i] {
				for _, y := range levels[c-1-i] {
					for op := 0; op < 4; op++ {
						if op != opAndNot && i > c-1-i {
							continue // symmetric ops: each pair once
						}
						t := uint16(apply(op, uint32(x), uint32(y)))
						if f.cost[t] == math.MaxUint8 {
							f.cost[t], f.op[t], f.a[t], f.b[t] = uint8(c), int8(op), x, y
							lvl = append(lvl, t)
							f.found++
						}
					}
				}
			}
		}
		levels = append(levels, lvl)
	}
	return f
}

// builder emits gates with sharing by 5-variable truth table.
type builder struct {
	gates []gate
	byTT  map[uint32]int
}

var var5 = [5]uint32{0xAAAAAAAA, 0xCCCCCCCC, 0xF0F0F0F0, 0xFF00FF00, 0xFFFF0000}

func newBuilder() *builder {
	b := &builder{byTT: map[uint32]int{}}
	for i, v := range var5 {
		b.byTT[v] = i
	}
	b.byTT[0xFFFFFFFF] = onesValue
	return b
}

func (b *builder) tt(v int) uint32 {
	if v < numInputs {
		return var5[v]
	}
	if v == onesValue {
		return 0xFFFFFFFF
	}
	g := b.gates[v-firstGate]
	return apply(g.op, b.tt(g.a), b.tt(g.b))
}

func (b *builder) emit(op, x, y int) int {
	t := apply(op, b.tt(x), b.tt(y))
	if v, ok := b.byTT[t]; ok {
		return v
	}
	b.gates = append(b.gates, gate{op, x, y})
	v := firstGate + len(b.gates) - 1
	b.byTT[t] = v
	return v
}

// expand4 maps a 4-variable truth table over the inputs other than split
// to a 5-variable one.
func expand4(t4 uint16, split int) uint32 {
	var t uint32
	for i := 0; i < 32; i++ {
		j, k := 0, 0
		for v := 0; v < 5; v++ {
			if v == split {
				continue
			}
			j |= (i >> v & 1) << k
			k++
		}
		t |= uint32(t4>>j&1) << i
	}
	return t
}

// build4 emits the optimal formula of t4 (over the inputs other than split).
func (b *builder) build4(f *formula4, t4 uint16, split int) int {
	if v, ok := b.byTT[expand4(t4, split)]; ok {
		return v
	}
	if f.op[t4] < 0 {
		panic("leaf not predefined")
	}
	x := b.build4(f, f.a[t4], split)
	y := b.build4(f, f.b[t4], split)
	return b.emit(int(f.op[t4]), x, y)
}

// cofactors returns f with variable v fixed at 0 and at 1, as 4-variable tables.
func cofactors(f uint32, v int) (g0, g1 uint16) {
	k := 0
	for i := 0; i < 32; i++ {
		if i>>v&1 != 0 {
			continue
		}
		g0 |= uint16(f>>i&1) << k
		g1 |= uint16(f>>(i|1<<v)&1) << k
		k++
	}
	return g0, g1
}

// build5 emits f split on variable v using the cheapest of the Davio and
// Shannon forms.
func (b *builder) build5(f *formula4, t uint32, v int) int {
	if w, ok := b.byTT[t]; ok {
		return w
	}
	g0, g1 := cofactors(t, v)
	d := g0 ^ g1
	switch {
	case d == 0:
		return b.build4(f, g0, v)
	case d == 0xFFFF:
		return b.emit(opXor, b.build4(f, g0, v), v)
	}
	c0, c1, cd := int(f.cost[g0]), int(f.cost[g1]), int(f.cost[d])
	switch best := min(c0+cd, c1+cd, c0+c1+1); best {
	case c0 + cd: // g0 ^ (x & d)
		return b.emit(opXor, b.build4(f, g0, v), b.emit(opAnd, b.build4(f, d, v), v))
	case c1 + cd: // g1 ^ (d &^ x)
		return b.emit(opXor, b.build4(f, g1, v), b.emit(opAndNot, b.build4(f, d, v), v))
	default: // (g0 &^ x) | (g1 & x)
		return b.emit(opOr, b.emit(opAndNot, b.build4(f, g0, v), v), b.emit(opAnd, b.build4(f, g1, v), v))
	}
}

// truthTables returns the truth tables of the high and low output bits of
// a stream S-box over its five inputs.
func truthTables(table [32]byte) (hi, lo uint32) {
	for i, v := range table {
		hi |= uint32(v>>1&1) << i
		lo |= uint32(v&1) << i
	}
	return hi, lo
}

// synthesize returns a checked circuit for every stream S-box.
func synthesize() [7]circuit {
	f := newFormula4(12)
	var out [7]circuit
	for s, table := range streamSbox {
		hiTT, loTT := truthTables(table)
		best := -1
		for vh := 0; vh < 5; vh++ {
			for vl := 0; vl < 5; vl++ {
				for order := 0; order < 2; order++ {
					b := newBuilder()
					var hi, lo int
					if order == 0 {
						hi = b.build5(f, hiTT, vh)
						lo = b.build5(f, loTT, vl)
					} else {
						lo = b.build5(f, loTT, vl)
						hi = b.build5(f, hiTT, vh)
					}
					if best < 0 || len(b.gates) < best {
						best = len(b.gates)
						out[s] = circuit{gates: b.gates, hi: hi, lo: lo}
					}
				}
			}
		}
		check(s, out[s])
	}
	return out
}

// check evaluates c on all 32 inputs against the S-box table.
func check(s int, c circuit) {
	b := &builder{gates: c.gates}
	for i := 0; i < 32; i++ {
		hi, lo := b.tt(c.hi)>>i&1, b.tt(c.lo)>>i&1
		if byte(hi<<1|lo) != streamSbox[s][i] {
			panic(fmt.Sprintf("S-box %d circuit wrong at input %d", s+1, i))
		}
	}
}
