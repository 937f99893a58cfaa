package main

import (
	"fmt"
	"slices"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// This file emits the stream round program of round.go as assembly: with
// AVX2 one instruction per gate, with AVX-512VL gates fused into
// three-input VPTERNLOGQ operations. Loads are made where a value is first
// needed, or folded into the instruction as a memory operand when the
// value has one use, which round.go's check makes safe.

// planeMem returns the address of a plane in round rd of a stream kernel.
func (rd streamRound) planeMem(l loc, abs func(int) Mem) Mem {
	switch l.reg {
	case 'A':
		return rd.aN(l.n, l.bit)
	case 'B':
		return rd.bN(l.n, l.bit)
	case 'a':
		return rd.inA(l.bit)
	case 'b':
		return rd.inB(l.bit)
	case 'k':
		return rd.io(6 + l.bit - 2*rd.u)
	}
	base := map[byte]int{'X': stateX, 'Y': stateY, 'Z': stateZ, 'D': stateD, 'E': stateE, 'F': stateF, 'p': stateP, 'q': stateQ, 'r': stateR}
	b, ok := base[l.reg]
	if !ok {
		panic("no plane for " + l.String())
	}
	return abs(b + l.bit)
}

// roundEmitter holds what the emitters share: where each value is, and
// which planes have been written.
type roundEmitter struct {
	p       *roundProg
	mem     func(loc) Mem
	mov     func(src, dst Op)
	reg     map[int]VecVirtual
	written map[loc]bool
}

func newRoundEmitter(p *roundProg, mem func(loc) Mem, mov func(src, dst Op)) *roundEmitter {
	return &roundEmitter{p: p, mem: mem, mov: mov, reg: map[int]VecVirtual{}, written: map[loc]bool{}}
}

// unloaded reports whether v is a load not yet made.
func (e *roundEmitter) unloaded(v int) bool {
	_, ok := e.reg[v]
	return !ok && e.p.ins[v].kind == insLoad
}

// loadMem returns the address of load v, checking that its plane still
// holds the value the round began with.
func (e *roundEmitter) loadMem(v int) Mem {
	at := e.p.ins[v].at
	if e.written[at] {
		panic("round emitter reads " + at.String() + " after writing it")
	}
	return e.mem(at)
}

// operand returns value v as an operand: in a register, or, if memOK and
// v is a load with no other use, as its address.
func (e *roundEmitter) operand(v int, memOK bool) Op {
	if r, ok := e.reg[v]; ok {
		return r
	}
	if e.p.ins[v].kind != insLoad {
		panic(fmt.Sprintf("round emitter: value %d used before it is computed", v))
	}
	m := e.loadMem(v)
	if memOK && len(e.p.uses[v]) == 1 {
		return m
	}
	y := YMM()
	e.mov(m, y)
	e.reg[v] = y
	return y
}

func (e *roundEmitter) store(in ins) {
	e.mov(e.operand(in.a, false), e.mem(in.at))
	e.written[in.at] = true
}

// gateSet is the instructions of one instruction set for the two-input
// gates: out = op(a, b), where andNot computes ^a & b.
type gateSet struct{ and, or, xor, andNot func(a, b, out Op) }

var (
	avx2Gates = gateSet{
		and:    func(a, b, out Op) { VPAND(a, b, out) },
		or:     func(a, b, out Op) { VPOR(a, b, out) },
		xor:    func(a, b, out Op) { VPXOR(a, b, out) },
		andNot: func(a, b, out Op) { VPANDN(a, b, out) },
	}
	avx512Gates = gateSet{
		and:    func(a, b, out Op) { VPANDQ(a, b, out) },
		or:     func(a, b, out Op) { VPORQ(a, b, out) },
		xor:    func(a, b, out Op) { VPXORQ(a, b, out) },
		andNot: func(a, b, out Op) { VPANDNQ(a, b, out) },
	}
)

// gate emits gate i, in, as one instruction of set g into a new register.
// Only the first source may be an address: a load with no other use goes
// there, so the commutative gates swap their operands to put it there.
func (e *roundEmitter) gate(i int, in ins, g gateSet) {
	x, y := in.a, in.b
	out := YMM()
	if in.kind == opAndNot { // x &^ y = ^y & x
		g.andNot(e.operand(x, true), e.operand(y, false), out)
	} else {
		if e.unloaded(x) && !e.unloaded(y) {
			x, y = y, x
		}
		a, b := e.operand(y, true), e.operand(x, false)
		switch in.kind {
		case opAnd:
			g.and(a, b, out)
		case opOr:
			g.or(a, b, out)
		case opXor:
			g.xor(a, b, out)
		}
	}
	e.reg[i] = out
}

// emitRoundAVX2 emits round program p with AVX2 instructions, one per
// gate; sboxes emits the S-boxes.
func emitRoundAVX2(p *roundProg, mem func(loc) Mem, sboxes func()) {
	e := newRoundEmitter(p, mem, func(src, dst Op) { VMOVDQU(src, dst) })
	for i, in := range p.ins {
		switch {
		case isGate(in.kind):
			e.gate(i, in, avx2Gates)
		case in.kind == insStore:
			e.store(in)
		case in.kind == insSbox:
			sboxes()
		}
	}
}

// fusedGate is a gate as a function of at most three leaf values: tt is
// its truth table, leaf j being bit 2-j of the table index.
type fusedGate struct {
	leaves []int
	tt     uint8
}

func leafGate(v int) fusedGate { return fusedGate{leaves: []int{v}, tt: 0xf0} }

// eval returns f at the leaf values val.
func (f fusedGate) eval(val func(v int) bool) bool {
	idx := 0
	for j, l := range f.leaves {
		if val(l) {
			idx |= 1 << (2 - j)
		}
	}
	return f.tt>>idx&1 != 0
}

// compose returns op(a, b) over the union of their leaves, and false if
// that has more than three.
func compose(op int, a, b fusedGate) (fusedGate, bool) {
	u := slices.Clone(a.leaves)
	for _, l := range b.leaves {
		if !slices.Contains(u, l) {
			u = append(u, l)
		}
	}
	if len(u) > 3 {
		return fusedGate{}, false
	}
	f := fusedGate{leaves: u}
	for k := range 8 {
		val := func(v int) bool { return k>>(2-slices.Index(u, v))&1 != 0 }
		x, y := a.eval(val), b.eval(val)
		var r bool
		switch op {
		case opAnd:
			r = x && y
		case opOr:
			r = x || y
		case opXor:
			r = x != y
		case opAndNot:
			r = x && !y
		}
		if r {
			f.tt |= 1 << k
		}
	}
	return f, true
}

// emitRoundAVX512 emits round program p with AVX-512VL instructions on YMM
// registers: every gate a target may fuse (round.go's fusible) is merged
// into the gate that uses it while the two together read at most three
// values, and each remaining gate is one VPTERNLOGQ, or one two-operand
// instruction when it reads its two inputs directly.
func emitRoundAVX512(p *roundProg, mem func(loc) Mem, sboxes func()) {
	e := newRoundEmitter(p, mem, func(src, dst Op) { VMOVDQU64(src, dst) })
	fused := map[int]fusedGate{}
	computed := map[int]bool{} // gates computed on their own
	operandOf := func(v int) fusedGate {
		if isGate(p.ins[v].kind) && !computed[v] {
			return fused[v]
		}
		return leafGate(v)
	}
	for i, in := range p.ins {
		if !isGate(in.kind) {
			continue
		}
		for {
			f, ok := compose(in.kind, operandOf(in.a), operandOf(in.b))
			if ok {
				fused[i] = f
				break
			}
			// Compute the wider operand on its own and try again.
			w := in.a
			if len(operandOf(in.b).leaves) > len(operandOf(in.a).leaves) {
				w = in.b
			}
			computed[w] = true
		}
		if !p.fusible(i) {
			computed[i] = true
		}
	}
	// root[v] is the gate whose instruction computes v; lastRoot[v] the
	// last instruction that reads v.
	root := make([]int, len(p.ins))
	for i := len(p.ins) - 1; i >= 0; i-- {
		root[i] = i
		if isGate(p.ins[i].kind) && !computed[i] {
			root[i] = root[p.uses[i][0]]
		}
	}
	lastRoot := make([]int, len(p.ins))
	for v, us := range p.uses {
		for _, u := range us {
			lastRoot[v] = max(lastRoot[v], root[u])
		}
	}

	emit := func(i int) {
		in, f := p.ins[i], fused[i]
		if slices.Equal(f.leaves, []int{in.a, in.b}) || slices.Equal(f.leaves, []int{in.b, in.a}) {
			e.gate(i, in, avx512Gates)
			return
		}
		if len(f.leaves) < 2 {
			panic("fused gate of one value")
		}
		// The destination: a register nothing reads after this, else a
		// load made for it, else a copy. The memory operand: a load with
		// no other use.
		dst := -1
		for _, l := range f.leaves {
			if _, ok := e.reg[l]; ok && lastRoot[l] == i {
				dst = l
				break
			}
		}
		if dst < 0 {
			for _, l := range f.leaves {
				if e.unloaded(l) && len(p.uses[l]) == 1 {
					dst = l
					break
				}
			}
		}
		var d VecVirtual
		switch {
		case dst < 0:
			dst = f.leaves[0]
			d = YMM()
			VMOVDQU64(e.operand(dst, false), d)
		case e.unloaded(dst):
			d = YMM()
			VMOVDQU64(e.loadMem(dst), d)
		default:
			d = e.reg[dst]
		}
		var rest []int
		for _, l := range f.leaves {
			if l != dst {
				rest = append(rest, l)
			}
		}
		if len(rest) == 2 && e.unloaded(rest[0]) && len(p.uses[rest[0]]) == 1 {
			rest[0], rest[1] = rest[1], rest[0]
		}
		b := rest[0]
		c := rest[len(rest)-1]
		opB := e.operand(b, false)
		opC := opB
		if c != b {
			opC = e.operand(c, true)
		}
		var imm uint8
		for k := range 8 {
			va, vb, vc := k>>2&1 != 0, k>>1&1 != 0, k&1 != 0
			if b == c && vb != vc {
				continue
			}
			val := func(v int) bool {
				switch v {
				case dst:
					return va
				case b:
					return vb
				}
				return vc
			}
			if f.eval(val) {
				imm |= 1 << k
			}
		}
		VPTERNLOGQ(U8(imm), opC, opB, d)
		if e.reg[dst] == d {
			delete(e.reg, dst) // computed in place: dst is not read again
		}
		e.reg[i] = d
	}

	for i, in := range p.ins {
		switch {
		case isGate(in.kind):
			if computed[i] {
				emit(i)
			}
		case in.kind == insStore:
			e.store(in)
		case in.kind == insSbox:
			sboxes()
		}
	}
}
