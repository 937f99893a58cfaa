package main

// This file emits the NEON kernels of package csa for arm64
// (csa_arm64.s) as text in Go's arm64 assembler syntax, since avo targets
// amd64 only. The stream rounds are emitted from the same description as
// every other kernel's (streamRoundProg in round.go) and the stream S-boxes
// from the same circuits (synth.go); the block rounds walk blockRoundOf.
// A NEON register holds 128 bits: one bit-plane of 128 lanes for the
// stream cipher, one byte of 16 lanes for the byte-sliced block cipher.
//
// Go's arm64 assembler (Go 1.26) has VEOR, VAND, VORR, VBIF, VBIT, VTBL,
// VTBX, VTRN1/2, VUZP1/2, VZIP1/2, VSLI, VSRI, VLD1R and VLD4/VST4, but
// neither BIC, ORN nor NOT on vectors. Those three are emitted as WORD
// with their encodings from the Arm Architecture Reference Manual for
// A-profile architecture (DDI 0487), section C7.2, "BIC (vector,
// register)", "ORN (vector)" and "NOT" (in the Advanced SIMD three same
// and two-register miscellaneous encoding groups), with Q = 1 for 128
// bits; go tool objdump shows them as VBIC, VORN and VMVN.

import (
	"bytes"
	"fmt"
	"os"
	"slices"
	"strings"
)

const (
	neonBytes  = 16            // bytes in a NEON register: one plane of 128 lanes
	neonNibble = 4 * neonBytes // the four planes of a nibble of A or B
	neonMaxReg = 32            // V0..V31
	neonBlockG = 2             // 16-lane groups the block kernel interleaves
	neonTabPrm = 256           // offset in neonTables of the two permutation nibble tables
)

// neonAsm accumulates the text of csa_arm64.s.
type neonAsm struct{ buf bytes.Buffer }

func (a *neonAsm) ins(mnemonic string, operands ...string) {
	if len(operands) == 0 {
		fmt.Fprintf(&a.buf, "\t%s\n", mnemonic)
		return
	}
	fmt.Fprintf(&a.buf, "\t%s\t%s\n", mnemonic, strings.Join(operands, ", "))
}

func (a *neonAsm) comment(lines ...string) {
	for _, l := range lines {
		fmt.Fprintf(&a.buf, "\t// %s\n", l)
	}
}

func (a *neonAsm) label(name string) { fmt.Fprintf(&a.buf, "\n%s:\n", name) }

// text declares a function whose Go declaration is sig and whose
// arguments take argBytes bytes; doc lines go above it.
func (a *neonAsm) text(name, sig string, argBytes int, doc ...string) {
	fmt.Fprintf(&a.buf, "\n// func %s%s\n", name, strings.TrimPrefix(sig, "func"))
	for _, d := range doc {
		fmt.Fprintf(&a.buf, "// %s\n", d)
	}
	fmt.Fprintf(&a.buf, "TEXT ·%s(SB), NOSPLIT, $0-%d\n", name, argBytes)
}

// vreg is a NEON register.
type vreg int

func (v vreg) B() string           { return fmt.Sprintf("V%d.B16", int(v)) }
func (v vreg) D() string           { return fmt.Sprintf("V%d.D2", int(v)) }
func (v vreg) F() string           { return fmt.Sprintf("F%d", int(v)) }
func (v vreg) arr(t string) string { return fmt.Sprintf("V%d.%s", int(v), t) }

// list returns the register list of n consecutive registers from v.
func (v vreg) list(n int) string {
	var rs []string
	for i := range n {
		rs = append(rs, vreg((int(v)+i)%neonMaxReg).B())
	}
	return "[" + strings.Join(rs, ", ") + "]"
}

// mem is an address: an offset from a general register.
type mem struct {
	base string
	off  int
}

func (m mem) String() string { return fmt.Sprintf("%d(%s)", m.off, m.base) }

func (a *neonAsm) load(m mem, v vreg)  { a.ins("FMOVQ", m.String(), v.F()) }
func (a *neonAsm) store(v vreg, m mem) { a.ins("FMOVQ", v.F(), m.String()) }

// bic emits d = n &^ m.
func (a *neonAsm) bic(n, m, d vreg) {
	a.ins("WORD", fmt.Sprintf("$0x%08x", 0x4e601c00|int(m)<<16|int(n)<<5|int(d))+
		fmt.Sprintf("\t// BIC V%d.16B, V%d.16B, V%d.16B: V%d = V%d &^ V%d", d, n, m, d, n, m))
}

// orn emits d = n | ^m.
func (a *neonAsm) orn(n, m, d vreg) {
	a.ins("WORD", fmt.Sprintf("$0x%08x", 0x4ee01c00|int(m)<<16|int(n)<<5|int(d))+
		fmt.Sprintf("\t// ORN V%d.16B, V%d.16B, V%d.16B: V%d = V%d | ^V%d", d, n, m, d, n, m))
}

// not emits d = ^n.
func (a *neonAsm) not(n, d vreg) {
	a.ins("WORD", fmt.Sprintf("$0x%08x", 0x6e205800|int(n)<<5|int(d))+
		fmt.Sprintf("\t// NOT V%d.16B, V%d.16B", d, n))
}

// gate emits d = op(x, y) for the gate ops of synth.go.
func (a *neonAsm) gate(op int, x, y, d vreg) {
	switch op {
	case opAnd:
		a.ins("VAND", y.B(), x.B(), d.B())
	case opOr:
		a.ins("VORR", y.B(), x.B(), d.B())
	case opXor:
		a.ins("VEOR", y.B(), x.B(), d.B())
	case opAndNot:
		a.bic(x, y, d)
	case opOrNot:
		a.orn(x, y, d)
	default:
		panic("no NEON instruction for gate op")
	}
}

// vregFile allocates NEON registers, lowest free first.
type vregFile struct{ used [neonMaxReg]bool }

func (f *vregFile) get() vreg {
	for i, u := range f.used {
		if !u {
			f.used[i] = true
			return vreg(i)
		}
	}
	panic("NEON kernel: out of vector registers")
}

func (f *vregFile) put(v vreg) {
	if !f.used[v] {
		panic(fmt.Sprintf("NEON kernel: V%d freed twice", v))
	}
	f.used[v] = false
}

func (f *vregFile) inUse() (n int) {
	for _, u := range f.used {
		if u {
			n++
		}
	}
	return n
}

// Registers of the stream kernels: R0 the state's X and after (stateX),
// R1 the IV or keystream planes of the byte the loop is on, R2 and R3 the
// windows of A and B for its first round. Each is near the planes it
// reaches, so that a pair of neighbouring planes loads or stores with one
// LDP or STP, whose offsets span -1024..1008.
const (
	neonRegState = "R0"
	neonRegIO    = "R1"
	neonRegA     = "R2"
	neonRegB     = "R3"
)

// neonStreamPlane returns the address of a plane in round u (0..3) of the
// byte a stream kernel's loop is on.
func neonStreamPlane(l loc, u int) mem {
	io := func(plane int) mem { return mem{neonRegIO, plane * neonBytes} }
	// IV planes 8k..8k+3 are the low nibble of byte k, 8k+4.. the high;
	// even rounds feed the high nibble into A, odd ones the low.
	hi := u%2 == 0
	switch l.reg {
	case 'A':
		return mem{neonRegA, (l.n-u)*neonNibble + l.bit*neonBytes}
	case 'B':
		return mem{neonRegB, (l.n-u)*neonNibble + l.bit*neonBytes}
	case 'a':
		if hi {
			return io(4 + l.bit)
		}
		return io(l.bit)
	case 'b':
		if hi {
			return io(l.bit)
		}
		return io(4 + l.bit)
	case 'k':
		return io(6 + l.bit - 2*u)
	}
	base := map[byte]int{'X': stateX, 'Y': stateY, 'Z': stateZ, 'D': stateD, 'E': stateE, 'F': stateF, 'p': stateP, 'q': stateQ, 'r': stateR}
	b, ok := base[l.reg]
	if !ok {
		panic("no plane for " + l.String())
	}
	return mem{neonRegState, (b - stateX + l.bit) * neonBytes}
}

// Kinds of instructions of the NEON stream program besides those of
// round.go: NOT and OR-NOT, and a NOT folded into its users.
const (
	opNot   = 10 // ^a
	opOrNot = 11 // a | ^b
	insNop  = 200
)

// sboxLoc is the plane of an S-box destination of sboxDest.
func sboxLoc(dest string) loc {
	if dest == "p" || dest == "q" {
		return locS(dest[0], 0)
	}
	var reg byte
	var bit int
	if _, err := fmt.Sscanf(dest, "%c[%d]", &reg, &bit); err != nil {
		panic(err)
	}
	return locS(reg-'a'+'A', bit)
}

// neonStreamProg returns the stream round program of round.go with the
// seven S-box circuits of synth.go written out in place of its insSbox:
// loads of their taps of A, their gates (an XOR with all ones being a
// NOT), stores of their outputs. A plane loaded again with no store to it
// in between keeps its first load. A NOT whose every user can take its
// operand inverted (AND as BIC, OR as ORN, BIC as AND) is folded into them.
func neonStreamProg(init bool, circuits [7]circuit) *roundProg {
	base := streamRoundProg(init)
	p := &roundProg{}
	loaded := map[loc]int{}
	ld := func(l loc) int {
		if v, ok := loaded[l]; ok {
			return v
		}
		v := p.ld(l)
		loaded[l] = v
		return v
	}
	st := func(l loc, v int) {
		delete(loaded, l)
		p.st(l, v)
	}
	val := make([]int, len(base.ins))
	for i, in := range base.ins {
		switch {
		case in.kind == insLoad:
			val[i] = ld(in.at)
		case isGate(in.kind):
			val[i] = p.gate(in.kind, val[in.a], val[in.b])
		case in.kind == insStore:
			st(in.at, val[in.a])
		case in.kind == insSbox:
			for s, circ := range circuits {
				vals := map[int]int{}
				for v := range numInputs {
					tap := streamSboxTaps[s][4-v]
					vals[v] = ld(locA(tap[0], tap[1]))
				}
				for gi, g := range circ.gates {
					x, y := g.a, g.b
					switch {
					case x == onesValue || y == onesValue:
						if g.op != opXor {
							panic("only XOR with all ones is expected")
						}
						if x == onesValue {
							x = y
						}
						vals[firstGate+gi] = p.add(ins{kind: opNot, a: vals[x], b: vals[x]})
					default:
						vals[firstGate+gi] = p.gate(g.op, vals[x], vals[y])
					}
				}
				st(sboxLoc(sboxDest[s][0]), vals[circ.hi])
				st(sboxLoc(sboxDest[s][1]), vals[circ.lo])
			}
		}
	}
	neonUses(p)
	for n, in := range p.ins {
		if in.kind != opNot {
			continue
		}
		foldable := len(p.uses[n]) > 0
		for _, u := range p.uses[n] {
			g := p.ins[u]
			switch {
			case g.kind == opAnd || g.kind == opOr:
			case g.kind == opAndNot && g.b == n && g.a != n:
			default:
				foldable = false
			}
		}
		if !foldable {
			continue
		}
		for _, u := range p.uses[n] {
			g := &p.ins[u]
			other := g.a
			if other == n {
				other = g.b
			}
			switch g.kind {
			case opAnd: // other & ^x
				*g = ins{kind: opAndNot, a: other, b: in.a}
			case opOr: // other | ^x
				*g = ins{kind: opOrNot, a: other, b: in.a}
			case opAndNot: // other &^ ^x
				*g = ins{kind: opAnd, a: other, b: in.a}
			}
		}
		p.ins[n] = ins{kind: insNop}
	}
	neonUses(p)
	return p
}

// neonUses computes p.uses for a NEON stream program.
func neonUses(p *roundProg) {
	p.uses = make([][]int, len(p.ins))
	for i, in := range p.ins {
		switch {
		case in.kind == opNot || in.kind == insStore:
			p.uses[in.a] = append(p.uses[in.a], i)
		case isGate(in.kind):
			p.uses[in.a] = append(p.uses[in.a], i)
			if in.b != in.a {
				p.uses[in.b] = append(p.uses[in.b], i)
			}
		}
	}
}

// neonPairWindow bounds how far ahead, in instructions of the program, a
// load is made early or a store waits to pair with a neighbouring plane's:
// a value held longer would take a register for too long.
const neonPairWindow = 128

// emitRoundNEON emits a NEON stream program, one instruction per gate.
// A load is made where its value is first needed, and a register is freed
// after its value's last use, so that the 32 registers suffice without
// spilling; round.go's check makes the late loads read the planes as the
// round began. A load takes the plane beside it along (LDP) when that one
// is loaded soon after and nothing stores to it in between; a store waits
// for the store of the plane beside it (STP) when that comes soon and
// nothing loads its own plane in between.
func emitRoundNEON(a *neonAsm, p *roundProg, addr func(loc) mem) {
	var regs vregFile
	reg := map[int]vreg{}
	last := make([]int, len(p.ins))
	for v, us := range p.uses {
		for _, u := range us {
			last[v] = max(last[v], u)
		}
	}
	firstUse := func(v int) int { return p.uses[v][0] }
	// The stores waiting for their neighbour's, in program order (a
	// slice, not a map, so that the output does not change from run to
	// run).
	type waiting struct {
		at loc
		v  int
	}
	var pending []waiting
	isPending := func(l loc) bool {
		return slices.ContainsFunc(pending, func(w waiting) bool { return w.at == l })
	}
	held := map[int]int{} // value → stores of it waiting
	at := func(i int) mem { return addr(p.ins[i].at) }
	beside := func(m, n mem) bool { return m.base == n.base && (n.off == m.off+neonBytes || n.off == m.off-neonBytes) }
	storesBetween := func(l loc, from, to int) bool {
		for j := from + 1; j < to; j++ {
			if p.ins[j].kind == insStore && p.ins[j].at == l {
				return true
			}
		}
		return false
	}
	free := func(v int) {
		if held[v] == 0 {
			regs.put(reg[v])
			delete(reg, v)
		}
	}
	// operand returns the register of value v at instruction i, loading v
	// (and a neighbour) if it is not loaded yet.
	operand := func(i, v int) vreg {
		if r, ok := reg[v]; ok {
			return r
		}
		if p.ins[v].kind != insLoad {
			panic(fmt.Sprintf("NEON round: value %d used before it is computed", v))
		}
		if isPending(p.ins[v].at) {
			panic("NEON round: load of a plane whose store waits")
		}
		m := at(v)
		partner := -1
		for w, in := range p.ins {
			if in.kind != insLoad || w == v || len(p.uses[w]) == 0 {
				continue
			}
			if _, ok := reg[w]; ok || !beside(m, at(w)) || firstUse(w) <= i || firstUse(w) > i+neonPairWindow {
				continue
			}
			if isPending(in.at) || storesBetween(in.at, i, w) {
				continue
			}
			if partner < 0 || firstUse(w) < firstUse(partner) {
				partner = w
			}
		}
		r := regs.get()
		reg[v] = r
		if partner < 0 {
			a.load(m, r)
			return r
		}
		r2 := regs.get()
		reg[partner] = r2
		lo, hi := r, r2
		if at(partner).off < m.off {
			lo, hi, m = r2, r, at(partner)
		}
		a.ins("FLDPQ", m.String(), fmt.Sprintf("(%s, %s)", lo.F(), hi.F()))
		return r
	}
	release := func(i int, vs ...int) {
		for j, v := range vs {
			if j > 0 && v == vs[0] {
				continue
			}
			if last[v] == i {
				free(v)
			}
		}
	}
	for i, in := range p.ins {
		switch {
		case in.kind == insNop:
		case in.kind == insStore:
			r := operand(i, in.a)
			m := at(i)
			// A store of the plane beside it waiting for this one?
			done := false
			for k, pw := range pending {
				l, w := pw.at, pw.v
				n := addr(l)
				if !beside(m, n) {
					continue
				}
				lo, hi, base := r, reg[w], m
				if n.off < m.off {
					lo, hi, base = reg[w], r, n
				}
				a.ins("FSTPQ", fmt.Sprintf("(%s, %s)", lo.F(), hi.F()), base.String())
				pending = slices.Delete(pending, k, k+1)
				held[w]--
				if last[w] < i {
					free(w)
				}
				done = true
				break
			}
			if !done {
				// Wait for a store of the plane beside it, if one comes
				// soon and nothing loads this plane in between.
				wait := false
				for j := i + 1; j < len(p.ins) && j <= i+neonPairWindow; j++ {
					q := p.ins[j]
					if q.kind == insLoad && q.at == in.at {
						break
					}
					if q.kind == insStore && beside(m, at(j)) {
						wait = true
						break
					}
				}
				if wait {
					pending = append(pending, waiting{in.at, in.a})
					held[in.a]++
				} else {
					a.store(r, m)
				}
			}
			release(i, in.a)
		case in.kind == opNot:
			x := operand(i, in.a)
			release(i, in.a)
			d := regs.get()
			a.not(x, d)
			reg[i] = d
		case isGate(in.kind):
			x, y := operand(i, in.a), operand(i, in.b)
			release(i, in.a, in.b)
			d := regs.get()
			a.gate(in.kind, x, y, d)
			reg[i] = d
		}
	}
	// Stores whose neighbour's store paired with another.
	for _, pw := range pending {
		l, w := pw.at, pw.v
		a.store(reg[w], addr(l))
		held[w]--
		free(w)
	}
	if regs.inUse() != 0 {
		panic("NEON round: values left in registers")
	}
}

// neonStreamKernel emits the 32 rounds of the stream cipher for 128 lanes:
// initialisation with IV bit-planes when init is set, keystream generation
// otherwise. The state (stream128 in csa_arm64.go) has the layout of the
// AVX2 kernels' with 16-byte planes.
func neonStreamKernel(a *neonAsm, circuits [7]circuit, init bool) {
	name, arg := "streamGenNEON", "out"
	doc := name + " runs 32 rounds of the stream cipher on 128 lanes and writes 8 keystream bytes as bit-planes."
	if init {
		name, arg = "streamInitNEON", "iv"
		doc = name + " runs the 32 initialisation rounds of the stream cipher on 128 lanes."
	}
	a.text(name, fmt.Sprintf("func(s *stream128, %s *[64][2]uint64)", arg), 16, doc)
	a.ins("MOVD", "s+0(FP)", "R4")
	a.ins("MOVD", arg+"+8(FP)", neonRegIO)
	a.ins("ADD", fmt.Sprintf("$%d", (stateA+(ringTop-1)*4)*neonBytes), "R4", neonRegA)
	a.ins("ADD", fmt.Sprintf("$%d", (stateB-stateA)*neonBytes), neonRegA, neonRegB)
	a.ins("ADD", fmt.Sprintf("$%d", stateX*neonBytes), "R4", neonRegState)
	a.ins("MOVD", "$8", "R5")
	a.label(name + "_byte")
	prog := neonStreamProg(init, circuits)
	for u := range 4 {
		a.comment(fmt.Sprintf("Round %d of this byte.", u))
		emitRoundNEON(a, prog, func(l loc) mem { return neonStreamPlane(l, u) })
	}
	a.ins("SUB", fmt.Sprintf("$%d", 4*neonNibble), neonRegA)
	a.ins("SUB", fmt.Sprintf("$%d", 4*neonNibble), neonRegB)
	a.ins("ADD", fmt.Sprintf("$%d", 8*neonBytes), neonRegIO)
	a.ins("SUBS", "$1", "R5")
	a.ins("BNE", name+"_byte")

	a.comment("Move the register windows back to the top of the rings.")
	for _, base := range []int{stateA, stateB} {
		a.ins("ADD", fmt.Sprintf("$%d", base*neonBytes), "R4", "R6")
		a.ins("ADD", fmt.Sprintf("$%d", ringTop*4*neonBytes), "R6", "R7")
		for i := 0; i < 40; i += 2 {
			r := vreg(i % 16)
			a.ins("FLDPQ", mem{"R6", i * neonBytes}.String(), fmt.Sprintf("(%s, %s)", r.F(), (r+1).F()))
			a.ins("FSTPQ", fmt.Sprintf("(%s, %s)", r.F(), (r+1).F()), mem{"R7", i * neonBytes}.String())
		}
	}
	a.ins("RET")
}

// neonTranspose emits the steps of a 64×64 bit-matrix transpose on two
// matrices at once, one per 64-bit element, over the rows m (registers,
// renamed as the steps go): step j swaps the high j columns of row k with
// the low j columns of row k+j, for the row distances dist (1, 2 or 4
// rows of m) and shifts j = dist*unit. Steps of 8 bits and more are TRN1
// and TRN2 on elements of j bits (two instructions a pair); step 4 is SLI
// and SRI on bytes (three); steps 2 and 1 shift both rows and insert
// under a mask with BIF and BIT (four). masks[j] holds swapMasks[j] in
// every byte for j = 1, 2.
func neonTranspose(a *neonAsm, regs *vregFile, m []vreg, unit int, masks map[int]vreg) {
	for _, dist := range []int{4, 2, 1} {
		j := dist * unit
		for k := range m {
			if k&dist != 0 {
				continue
			}
			x, y := m[k], m[k+dist]
			switch j {
			case 32, 16, 8:
				elem := map[int]string{32: "S4", 16: "H8", 8: "B16"}[j]
				t := regs.get()
				a.ins("VTRN1", y.arr(elem), x.arr(elem), t.arr(elem))
				a.ins("VTRN2", y.arr(elem), x.arr(elem), y.arr(elem))
				regs.put(x)
				m[k] = t
			case 4:
				t := regs.get()
				a.ins("VMOV", x.B(), t.B())
				a.ins("VSLI", "$4", y.B(), x.B()) // x = y<<4 | x&0x0f
				a.ins("VSRI", "$4", t.B(), y.B()) // y = x>>4 | y&0xf0
				regs.put(t)
			case 2, 1:
				hi, lo := regs.get(), regs.get()
				a.ins("VUSHR", fmt.Sprintf("$%d", j), x.D(), hi.D())
				a.ins("VSHL", fmt.Sprintf("$%d", j), y.D(), lo.D())
				a.ins("VBIF", masks[j].B(), lo.B(), x.B()) // x = x&mask | lo&^mask
				a.ins("VBIT", masks[j].B(), hi.B(), y.B()) // y = y&^mask | hi&mask
				regs.put(hi)
				regs.put(lo)
			default:
				panic("no transpose step")
			}
		}
	}
}

// neonTransposeKernel emits the transposes between the 64-bit values of
// 128 lanes and the 64 bit-planes of the stream cipher. Which bit of a
// plane holds which lane is the kernel's to choose, as every lane runs the
// same cipher: bit m of element q holds lane 2m+q, so that the 16 bytes of
// row m (lanes 2m and 2m+1) load as one register. Two 64×64 transposes
// then run side by side, one per 64-bit element, in two passes of 16
// registers: the steps of 1, 2 and 4 bits on groups of eight consecutive
// rows, those of 8, 16 and 32 on rows eight apart (the steps commute).
// Going to lanes, the result is XORed into col.
func neonTransposeKernel(a *neonAsm, toLanes bool) {
	if toLanes {
		a.text("planesToLanesXorNEON", "func(planes *[64][2]uint64, col *[128]uint64)", 16,
			"planesToLanesXorNEON transposes the 64 bit-planes of 128 lanes and XORs lane l's",
			"64-bit value into col[l]. It overwrites planes.")
		a.ins("MOVD", "planes+0(FP)", "R1")
		a.ins("MOVD", "col+8(FP)", "R0")
	} else {
		a.text("lanesToPlanesNEON", "func(col *[128]uint64, planes *[64][2]uint64)", 16,
			"lanesToPlanesNEON transposes the 64-bit values of 128 lanes into 64 bit-planes.")
		a.ins("MOVD", "col+0(FP)", "R0")
		a.ins("MOVD", "planes+8(FP)", "R1")
	}
	var regs vregFile
	masks := map[int]vreg{1: regs.get(), 2: regs.get()}
	a.ins("VMOVI", "$0x55", masks[1].B())
	a.ins("VMOVI", "$0x33", masks[2].B())
	row := func(base string, k int) mem { return mem{base, k * neonBytes} }
	pair := func(x, y vreg) string { return fmt.Sprintf("(%s, %s)", x.F(), y.F()) }

	// far: rows k0+8i and k0+1+8i of planes, for i = 0..7, in place.
	far := func() {
		for k0 := 0; k0 < 8; k0 += 2 {
			var even, odd []vreg
			for i := range 8 {
				x, y := regs.get(), regs.get()
				a.ins("FLDPQ", row("R1", k0+8*i).String(), pair(x, y))
				even, odd = append(even, x), append(odd, y)
			}
			neonTranspose(a, &regs, even, 8, masks)
			neonTranspose(a, &regs, odd, 8, masks)
			for i := range 8 {
				a.ins("FSTPQ", pair(even[i], odd[i]), row("R1", k0+8*i).String())
				regs.put(even[i])
				regs.put(odd[i])
			}
		}
	}
	// near: rows 16h..16h+15 from src, in two groups of eight, to dst,
	// XORed into dst with xor set.
	near := func(src, dst string, xor bool) {
		for h := range 4 {
			m := make([]vreg, 16)
			for i := 0; i < 16; i += 2 {
				m[i], m[i+1] = regs.get(), regs.get()
				a.ins("FLDPQ", row(src, 16*h+i).String(), pair(m[i], m[i+1]))
			}
			neonTranspose(a, &regs, m[:8], 1, masks)
			neonTranspose(a, &regs, m[8:], 1, masks)
			for i := 0; i < 16; i += 2 {
				if xor {
					x, y := regs.get(), regs.get()
					a.ins("FLDPQ", row(dst, 16*h+i).String(), pair(x, y))
					a.ins("VEOR", x.B(), m[i].B(), m[i].B())
					a.ins("VEOR", y.B(), m[i+1].B(), m[i+1].B())
					regs.put(x)
					regs.put(y)
				}
				a.ins("FSTPQ", pair(m[i], m[i+1]), row(dst, 16*h+i).String())
				regs.put(m[i])
				regs.put(m[i+1])
			}
		}
	}
	if toLanes {
		a.comment("Steps of 32, 16 and 8 bits, in place.")
		far()
		a.comment("Steps of 4, 2 and 1 bits, XORed into the lanes.")
		near("R1", "R0", true)
	} else {
		a.comment("Steps of 4, 2 and 1 bits, from the lanes to the planes.")
		near("R0", "R1", false)
		a.comment("Steps of 32, 16 and 8 bits, in place.")
		far()
	}
	a.ins("RET")
}

// neonBlockKernel emits the byte-sliced block cipher for 16 lanes per
// register: the S-box as table lookups, TBL on the first 64 entries and
// TBX on each next 64 with the index lowered by 64 (TBX leaves lanes whose
// index is out of range as they are), the bit permutation as two 16-entry
// TBL lookups of the S-box output's nibbles. Seven instructions for the
// S-box and five for the permutation, against the block S-box circuit's
// 829 gates on bitsliced lanes (blocksynth.go) for 128 lanes, where the
// lookups take 8 × 12: the circuit loses by far.
//
// Two groups of 16 lanes run their rounds interleaved, as one group's
// round is a chain of dependent lookups; their 16 cipher registers and the
// temporaries leave no room for the 16 registers of the whole S-box, so
// each quarter of it is loaded (one LD1 of four registers) once per round
// for both groups. Loading a group's 16 blocks is two LD4, which split
// each lane's bytes four ways, and eight UZP1/UZP2; storing is the
// reverse (ZIP1/ZIP2, ST4).
func neonBlockKernel(a *neonAsm, decrypt bool) {
	name, verb := "blockEncryptNEON", " enciphers"
	if decrypt {
		name, verb = "blockDecryptNEON", " deciphers"
	}
	a.text(name, "func(in, out *[128]uint64, kb *[56]uint64, tab *neonTables, pairs int)", 40,
		fmt.Sprintf("%s%s the blocks in[l] of pairs×32 lanes into out[l].", name, verb))
	a.ins("MOVD", "in+0(FP)", "R0")
	a.ins("MOVD", "out+8(FP)", "R1")
	a.ins("MOVD", "kb+16(FP)", "R2")
	a.ins("MOVD", "tab+24(FP)", "R3")
	a.ins("MOVD", "pairs+32(FP)", "R4")

	// Registers: V0-V3 a quarter of the S-box (or blocks being loaded or
	// stored), V4 and V5 the permutation of the low and the high nibble,
	// V6 0x0f, V7 64 in every byte, V8 the round key; group g's R1..R8
	// from V9+11g, its index, S-box output and temporary after them.
	const (
		quarter = vreg(0)
		permLo  = vreg(4)
		permHi  = vreg(5)
		low4    = vreg(6)
		sub64   = vreg(7)
		key     = vreg(8)
		spill   = vreg(28) // V28-V31: the second four blocks being loaded or stored
	)
	var R [neonBlockG][9]vreg
	var x, s, t [neonBlockG]vreg
	for g := range neonBlockG {
		for m := 1; m <= 8; m++ {
			R[g][m] = vreg(9 + 11*g + m - 1)
		}
		x[g], s[g], t[g] = vreg(17+11*g), vreg(18+11*g), vreg(19+11*g)
	}
	a.ins("ADD", "$64", "R3", "R6")
	a.ins("ADD", "$128", "R3", "R7")
	a.ins("ADD", "$192", "R3", "R8")
	a.ins("FLDPQ", mem{"R3", neonTabPrm}.String(), fmt.Sprintf("(%s, %s)", permLo.F(), permHi.F()))
	a.ins("VMOVI", "$0x0f", low4.B())
	a.ins("VMOVI", "$64", sub64.B())
	br := blockRoundOf[decrypt]
	if br.keysBackward {
		a.ins("MOVD", "$-8", "R5")
	} else {
		a.ins("MOVD", "$8", "R5")
	}

	a.label(name + "_pair")
	a.comment("Byte-slice 2×16 lanes: R[g][j+1] gets byte j of every lane of group g.")
	for g := range neonBlockG {
		a.ins("VLD4.P", "64(R0)", quarter.list(4))
		a.ins("VLD4.P", "64(R0)", spill.list(4))
		for i := range 4 {
			a.ins("VUZP1", (spill + vreg(i)).B(), (quarter + vreg(i)).B(), R[g][i+1].B())
			a.ins("VUZP2", (spill + vreg(i)).B(), (quarter + vreg(i)).B(), R[g][i+5].B())
		}
	}
	if br.keysBackward {
		a.ins("ADD", "$440", "R2", "R10") // &kb[55]
	} else {
		a.ins("MOVD", "R2", "R10")
	}
	a.ins("MOVD", "$7", "R11")
	a.label(name + "_rounds")
	for u := range 8 {
		a.comment(fmt.Sprintf("Round %d of 8.", u))
		a.ins("VLD1R.P", "(R10)(R5)", "["+key.B()+"]")
		for q, p := range []string{"R3", "R6", "R7", "R8"} {
			a.ins("VLD1", "("+p+")", quarter.list(4))
			for g := range neonBlockG {
				if q == 0 {
					a.ins("VEOR", key.B(), R[g][br.in].B(), x[g].B())
					a.ins("VTBL", x[g].B(), quarter.list(4), s[g].B())
				} else {
					a.ins("VSUB", sub64.B(), x[g].B(), x[g].B())
					a.ins("VTBX", x[g].B(), quarter.list(4), s[g].B())
				}
			}
		}
		for g := range neonBlockG {
			// p = perm(s) in x.
			a.ins("VAND", low4.B(), s[g].B(), x[g].B())
			a.ins("VUSHR", "$4", s[g].B(), t[g].B())
			a.ins("VTBL", x[g].B(), permLo.list(1), x[g].B())
			a.ins("VTBL", t[g].B(), permHi.list(1), t[g].B())
			a.ins("VORR", t[g].B(), x[g].B(), x[g].B())
			src := func(i int) vreg {
				switch i {
				case blockS:
					return s[g]
				case blockP:
					return x[g]
				}
				return R[g][i]
			}
			for _, st := range br.steps {
				a.ins("VEOR", src(st[1]).B(), R[g][st[0]].B(), R[g][st[0]].B())
			}
			var next [9]vreg
			for m := 1; m <= 8; m++ {
				next[m] = R[g][br.next[m]]
			}
			R[g] = next
		}
	}
	a.ins("SUBS", "$1", "R11")
	a.ins("BNE", name+"_rounds")
	a.comment("Back to one block per lane.")
	for g := range neonBlockG {
		for i := range 4 {
			a.ins("VZIP1", R[g][i+5].B(), R[g][i+1].B(), (quarter + vreg(i)).B())
			a.ins("VZIP2", R[g][i+5].B(), R[g][i+1].B(), (spill + vreg(i)).B())
		}
		a.ins("VST4.P", quarter.list(4), "64(R1)")
		a.ins("VST4.P", spill.list(4), "64(R1)")
	}
	a.ins("SUBS", "$1", "R4")
	a.ins("BNE", name+"_pair")
	a.ins("RET")
}

// writeNEON writes csa_arm64.s.
func writeNEON(path string, circuits [7]circuit) error {
	a := &neonAsm{}
	a.buf.WriteString(`// Code generated by csa/_asm (go generate in csa/_asm). DO NOT EDIT.

//go:build arm64 && gc && !purego

#include "textflag.h"
`)
	neonStreamKernel(a, circuits, true)
	neonStreamKernel(a, circuits, false)
	neonTransposeKernel(a, false)
	neonTransposeKernel(a, true)
	neonBlockKernel(a, true)
	neonBlockKernel(a, false)
	return os.WriteFile(path, a.buf.Bytes(), 0o644)
}
