package main

import "fmt"

// This file holds the one description of the stream cipher round (ETR
// 289), as a straight-line program over the bit-planes of the state, and
// of the block cipher round, as its XOR network. The Go kernel
// (gosrc.go), the AVX2 kernel (asm.go) and the AVX-512 kernel
// (stream512.go) are emitted from these descriptions; only the S-boxes are
// realised per target, from the circuits of synth.go and ternlog.go.

// A loc names one bit-plane the stream round reads or writes.
type loc struct {
	reg    byte // 'A', 'B': nibble n of the window; 'X', 'Y', 'Z', 'D', 'E', 'F'; 'p', 'q', 'r'; 'a', 'b': IV nibbles into A, B; 'k': keystream bits
	n, bit int
}

func (l loc) String() string { return fmt.Sprintf("%c[%d][%d]", l.reg, l.n, l.bit) }

func locA(n, bit int) loc { return loc{reg: 'A', n: n, bit: bit} }
func locB(n, bit int) loc { return loc{reg: 'B', n: n, bit: bit} }
func locS(reg byte, bit int) loc {
	return loc{reg: reg, bit: bit}
}

// Kinds of round instructions besides the gate ops of synth.go (opAnd,
// opOr, opXor, opAndNot).
const (
	insLoad  = 100 + iota // value = the plane at
	insStore              // the plane at = value a
	insSbox               // the seven S-boxes: X, Y, Z, p, q from the taps of A
)

// An ins is one instruction of a round program; the value of an
// instruction is named by its index.
type ins struct {
	kind int
	a, b int // operands of gate ops; a is the stored value of insStore
	at   loc
}

// A roundProg is a straight-line round program. Every load reads the plane
// as it was when the round began: no plane is stored between a load and
// its last use (check enforces it), so targets may load lazily, fold loads
// into memory operands and fuse gates.
type roundProg struct {
	ins  []ins
	uses [][]int // uses[v]: the instructions reading value v
}

func (p *roundProg) add(i ins) int {
	p.ins = append(p.ins, i)
	return len(p.ins) - 1
}

func (p *roundProg) ld(l loc) int          { return p.add(ins{kind: insLoad, at: l}) }
func (p *roundProg) st(l loc, v int)       { p.add(ins{kind: insStore, a: v, at: l}) }
func (p *roundProg) gate(op, a, b int) int { return p.add(ins{kind: op, a: a, b: b}) }
func (p *roundProg) xor(a, b int) int      { return p.gate(opXor, a, b) }
func (p *roundProg) and(a, b int) int      { return p.gate(opAnd, a, b) }
func (p *roundProg) or(a, b int) int       { return p.gate(opOr, a, b) }

// xors returns the XOR of vs, left to right.
func (p *roundProg) xors(vs ...int) int {
	v := vs[0]
	for _, w := range vs[1:] {
		v = p.xor(v, w)
	}
	return v
}

// isGate reports whether kind is a two-input gate.
func isGate(kind int) bool { return kind < insLoad }

// finish computes the uses and checks that no plane is written between a
// load and a use of the value loaded, nor written twice.
func (p *roundProg) finish() *roundProg {
	p.uses = make([][]int, len(p.ins))
	for i, in := range p.ins {
		switch {
		case isGate(in.kind):
			p.uses[in.a] = append(p.uses[in.a], i)
			p.uses[in.b] = append(p.uses[in.b], i)
		case in.kind == insStore:
			p.uses[in.a] = append(p.uses[in.a], i)
		}
	}
	written := map[loc]int{}
	for i, in := range p.ins {
		if in.kind == insStore {
			if _, ok := written[in.at]; ok {
				panic("round program writes " + in.at.String() + " twice")
			}
			written[in.at] = i
		}
	}
	// The S-boxes write X, Y, Z, p and q after everything else.
	for i, in := range p.ins {
		if in.kind != insLoad {
			continue
		}
		last := p.lastUse(i)
		if w, ok := written[in.at]; ok && w > i && w < last {
			panic(fmt.Sprintf("round program loads %v at %d, writes it at %d and uses the load at %d", in.at, i, w, last))
		}
		if in.at.reg == 'X' || in.at.reg == 'Y' || in.at.reg == 'Z' || in.at.reg == 'p' || in.at.reg == 'q' {
			if s := p.sboxAt(); s >= 0 && s < last {
				panic("round program uses " + in.at.String() + " after the S-boxes")
			}
		}
	}
	return p
}

// lastUse is the last instruction that may read value v: its users, and
// for a user a target may fuse into its own single user, that one's, and
// so on. A value with several users or stored is computed where it stands.
func (p *roundProg) lastUse(v int) int {
	last := v
	for _, u := range p.uses[v] {
		if p.fusible(u) {
			last = max(last, p.lastUse(u))
		} else {
			last = max(last, u)
		}
	}
	return last
}

// fusible reports whether value v is a gate a target may compute inside
// its one user.
func (p *roundProg) fusible(v int) bool {
	return isGate(p.ins[v].kind) && len(p.uses[v]) == 1 && isGate(p.ins[p.uses[v][0]].kind)
}

func (p *roundProg) sboxAt() int {
	for i, in := range p.ins {
		if in.kind == insSbox {
			return i
		}
	}
	return -1
}

// streamRoundProg describes one round of the stream cipher: the
// initialisation round when init is set (IV nibbles fed into A and B, no
// keystream), the keystream round otherwise (two keystream bits: 'k' bit 1
// the high one, bit 0 the low one). Register windows: A[n] and B[n] for
// n = 1..10 are A1..A10 and B1..B10; the new A1 and B1 go to A[0], B[0].
func streamRoundProg(init bool) *roundProg {
	p := &roundProg{}
	// T1: the new A1 = A10 ^ X (^ D ^ IV nibble while initialising).
	for i := range 4 {
		v := p.xor(p.ld(locA(10, i)), p.ld(locS('X', i)))
		if init {
			v = p.xors(v, p.ld(locS('D', i)), p.ld(locS('a', i)))
		}
		p.st(locA(0, i), v)
	}
	// T2: the new B1 = B7 ^ B10 ^ Y (^ IV nibble), rotated left by one bit
	// where p is set.
	var nb [4]int
	for i := range 4 {
		nb[i] = p.xors(p.ld(locB(7, i)), p.ld(locB(10, i)), p.ld(locS('Y', i)))
		if init {
			nb[i] = p.xor(nb[i], p.ld(locS('b', i)))
		}
	}
	rot := p.ld(locS('p', 0))
	for i := range 4 {
		p.st(locB(0, i), p.xor(nb[i], p.and(rot, p.xor(nb[i], nb[(i+3)%4]))))
	}
	// T3: D = E ^ Z ^ extra, extra being a 4x4 XOR over register B.
	// T4: if q is set, F = Z + E + r with the carry out to r, else F = E;
	// E takes the old F.
	q, c := p.ld(locS('q', 0)), p.ld(locS('r', 0))
	var d [4]int
	for i := range 4 {
		z, e := p.ld(locS('Z', i)), p.ld(locS('E', i))
		t := extraTaps[i]
		d[i] = p.xors(e, z, p.ld(locB(t[0][0], t[0][1])), p.ld(locB(t[1][0], t[1][1])),
			p.ld(locB(t[2][0], t[2][1])), p.ld(locB(t[3][0], t[3][1])))
		p.st(locS('D', i), d[i])
		f := p.xor(e, p.and(q, p.xor(c, z)))
		c = p.or(p.and(z, e), p.and(c, p.xor(z, e)))
		if i == 3 {
			// r takes the last carry where q is set, before E is
			// written: a target may compute the carry as late as here.
			r := p.ld(locS('r', 0))
			p.st(locS('r', 0), p.xor(r, p.and(q, p.xor(c, r))))
		}
		p.st(locS('E', i), p.ld(locS('F', i)))
		p.st(locS('F', i), f)
	}
	if !init {
		p.st(locS('k', 1), p.xor(d[3], d[2]))
		p.st(locS('k', 0), p.xor(d[1], d[0]))
	}
	// The seven S-boxes overwrite X, Y, Z, p and q last.
	p.add(ins{kind: insSbox})
	return p.finish()
}

// A blockRound is the XOR network of one round of the block cipher on its
// registers R1..R8: the S-box input is R[in] XOR the round key; then
// steps run in order, each XORing a source into a register, the sources
// being registers, the S-box output s (blockS) or its bit permutation p
// (blockP); then the registers are renamed, new Rm being old R[next[m]].
type blockRound struct {
	in    int
	steps [][2]int // {destination, source}
	next  [9]int
	// keysBackward: round n uses key byte 55-n instead of n.
	keysBackward bool
}

const (
	blockS = 9
	blockP = 10
)

// blockRoundOf holds the rounds of the block cipher (ETR 289; libdvbcsa's
// dvbcsa_block_decrypt and _encrypt have the same network). Deciphering:
// t = R8^s, R1' = t, R2' = R1, R3' = R2^t, R4' = R3^t, R5' = R4^t,
// R6' = R5, R7' = R6^p, R8' = R7. Enciphering is its inverse.
var blockRoundOf = map[bool]blockRound{
	true: {
		in:           7,
		steps:        [][2]int{{8, blockS}, {2, 8}, {3, 8}, {4, 8}, {6, blockP}},
		next:         [9]int{0, 8, 1, 2, 3, 4, 5, 6, 7},
		keysBackward: true,
	},
	false: {
		in:    8,
		steps: [][2]int{{3, 1}, {4, 1}, {5, 1}, {7, blockP}, {1, blockS}},
		next:  [9]int{0, 2, 3, 4, 5, 6, 7, 8, 1},
	},
}

// rotation returns the renaming of the round as a rotation of the ring of
// eight registers: new Rm is old R(m-1+shift mod 8)+1.
func (b blockRound) rotation() int {
	shift := (b.next[1] - 1 + 8) % 8
	for m := 1; m <= 8; m++ {
		if b.next[m] != (m-1+shift)%8+1 {
			panic("block round renaming is not a rotation")
		}
	}
	return shift
}
