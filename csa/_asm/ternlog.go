package main

// This file turns the stream S-boxes into three-input VPTERNLOGQ
// operations for the AVX-512 stream kernel: each output bit is split by
// Shannon expansion on one input into 4-input cofactors, each of those on
// another input into 3-input functions, which are one VPTERNLOGQ each (or
// free when a single input or a constant), and every split is a
// VPTERNLOGQ multiplexer that can take a free operand directly.

import "fmt"

// tern is one VPTERNLOGQ: out[i] = imm[a[i]<<2 | b[i]<<1 | c[i]], operands
// indexing the values of a ternCircuit.
type tern struct {
	imm     uint8
	a, b, c int
}

// ternCircuit computes the two outputs of one S-box; values 0..4 are the
// inputs x0..x4 (x4 = first tap), ternary ops follow.
type ternCircuit struct {
	ops    []tern
	hi, lo int
}

type ternBuilder struct {
	ops  []tern
	tts  []uint32
	byTT map[uint32]int
}

func newTernBuilder() *ternBuilder {
	b := &ternBuilder{byTT: map[uint32]int{}}
	for i, v := range var5 {
		b.tts = append(b.tts, v)
		b.byTT[v] = i
	}
	return b
}

// support returns the inputs t depends on, as a bit set.
func support(t uint32) (s int) {
	for v := range 5 {
		if g0, g1 := cofactors(t, v); g0 != g1 {
			s |= 1 << v
		}
	}
	return s
}

func popcount(s int) (n int) {
	for ; s != 0; s &= s - 1 {
		n++
	}
	return n
}

// free reports whether t needs no operation: it is a constant or one input,
// possibly inverted; operand then gives a value t is a function of.
func free(t uint32) (operand int, ok bool) {
	s := support(t)
	switch popcount(s) {
	case 0:
		return 0, true
	case 1:
		for v := range 5 {
			if s == 1<<v {
				return v, true
			}
		}
	}
	return 0, false
}

// emit returns a value computing t as a VPTERNLOGQ of the values a, b, c,
// of which t must be a function.
func (b *ternBuilder) emit(t uint32, x, y, z int) int {
	if v, ok := b.byTT[t]; ok {
		return v
	}
	var imm uint8
	var seen uint8
	for i := range 32 {
		k := (b.tts[x]>>i&1)<<2 | (b.tts[y]>>i&1)<<1 | b.tts[z]>>i&1
		bit := uint8(t >> i & 1)
		if seen>>k&1 != 0 && imm>>k&1 != bit {
			panic(fmt.Sprintf("%#08x is not a function of values %d, %d, %d", t, x, y, z))
		}
		seen |= 1 << k
		imm |= bit << k
	}
	b.ops = append(b.ops, tern{imm, x, y, z})
	b.tts = append(b.tts, t)
	b.byTT[t] = len(b.tts) - 1
	return len(b.tts) - 1
}

// operand returns a value t is a function of, emitting operations as
// needed: free functions give their input, 3-input functions one op,
// others a Shannon split on the best variable.
func (b *ternBuilder) operand(t uint32) int {
	if v, ok := b.byTT[t]; ok {
		return v
	}
	if v, ok := free(t); ok {
		return v
	}
	s := support(t)
	if popcount(s) <= 3 {
		var in []int
		for v := range 5 {
			if s>>v&1 != 0 {
				in = append(in, v)
			}
		}
		for len(in) < 3 {
			in = append(in, in[0])
		}
		return b.emit(t, in[0], in[1], in[2])
	}
	bestV, bestCost := -1, 0
	for v := range 5 {
		if s>>v&1 == 0 {
			continue
		}
		g0, g1 := cofactors(t, v)
		c := ternCost(expand4(g0, v)) + ternCost(expand4(g1, v)) + 1
		if bestV < 0 || c < bestCost {
			bestV, bestCost = v, c
		}
	}
	g0, g1 := cofactors(t, bestV)
	return b.emit(t, bestV, b.operand(expand4(g1, bestV)), b.operand(expand4(g0, bestV)))
}

// ternCost estimates the ops operand would emit for t, without sharing.
func ternCost(t uint32) int {
	if _, ok := free(t); ok {
		return 0
	}
	s := support(t)
	if popcount(s) <= 3 {
		return 1
	}
	best := -1
	for v := range 5 {
		if s>>v&1 == 0 {
			continue
		}
		g0, g1 := cofactors(t, v)
		if c := ternCost(expand4(g0, v)) + ternCost(expand4(g1, v)) + 1; best < 0 || c < best {
			best = c
		}
	}
	return best
}

// output returns a value equal to t (not merely a function of it).
func (b *ternBuilder) output(t uint32) int {
	v := b.operand(t)
	if b.tts[v] == t {
		return v
	}
	return b.emit(t, v, v, v)
}

// synthesizeTern returns a checked ternary circuit for every stream S-box.
func synthesizeTern() [7]ternCircuit {
	var out [7]ternCircuit
	for s, table := range streamSbox {
		hiTT, loTT := truthTables(table)
		b := newTernBuilder()
		hi := b.output(hiTT)
		lo := b.output(loTT)
		out[s] = ternCircuit{ops: b.ops, hi: hi, lo: lo}
		for i := range 32 { // exhaustive check before use
			if byte(b.tts[hi]>>i&1<<1|b.tts[lo]>>i&1) != table[i] {
				panic(fmt.Sprintf("S-box %d ternary circuit wrong at input %d", s+1, i))
			}
		}
	}
	return out
}
