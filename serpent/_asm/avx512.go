package main

// The AVX-512 kernels: a single-block one on XMM registers and a 16-block
// one on ZMM registers. Both are written as straight-line programs of
// values (no loop: 32 rounds fully unrolled), then given registers by a
// linear scan over the 32 vector registers. VPTERNLOGD overwrites its
// first operand, so the allocator gives it an operand whose value dies
// there, reordering the operands and permuting the immediate to match, and
// copies only when all three live on. Every instruction has an EVEX form,
// since the registers include X16-X31 / Z16-Z31.

import (
	"fmt"
	"log"
	"slices"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

type nodeKind int

const (
	nLoad   nodeKind = iota // value = mem (a 32-bit word for XMM, 64 bytes for ZMM)
	nStore                  // mem = args[0]
	nTern                   // VPTERNLOGD imm over args, or args[0], args[1] and the broadcast mem
	nRol                    // rotate left by n
	nShl                    // shift left by n
	nXorKey                 // args[0] ^ broadcast mem
	nUnpack                 // unpack n (0: low dwords, 1: high dwords, 2: low qwords, 3: high qwords) of args[0], args[1]
)

type node struct {
	kind nodeKind
	imm  uint8
	n    int
	args []int
	mem  Mem
}

// prog is a straight-line vector program; values are node indices.
type prog struct {
	nodes []node
	zmm   bool
}

func (p *prog) add(n node) int {
	p.nodes = append(p.nodes, n)
	return len(p.nodes) - 1
}

func (p *prog) load(m Mem) int          { return p.add(node{kind: nLoad, mem: m}) }
func (p *prog) store(m Mem, v int)      { p.add(node{kind: nStore, mem: m, args: []int{v}}) }
func (p *prog) rol(v, n int) int        { return p.add(node{kind: nRol, n: n & 31, args: []int{v}}) }
func (p *prog) shl(v, n int) int        { return p.add(node{kind: nShl, n: n, args: []int{v}}) }
func (p *prog) xorKey(v int, m Mem) int { return p.add(node{kind: nXorKey, mem: m, args: []int{v}}) }
func (p *prog) xor3(a, b, c int) int {
	return p.add(node{kind: nTern, imm: 0x96, args: []int{a, b, c}})
}
func (p *prog) tern(imm uint8, a, b, c int) int {
	return p.add(node{kind: nTern, imm: imm, args: []int{a, b, c}})
}
func (p *prog) unpack(k, a, b int) int { return p.add(node{kind: nUnpack, n: k, args: []int{a, b}}) }

// sbox applies a ternary circuit to the four words x.
func (p *prog) sbox(c ternCircuit, x [4]int) [4]int {
	v := append([]int{}, x[:]...)
	for _, op := range c.ops {
		v = append(v, p.tern(op.imm, v[op.a], v[op.b], v[op.c]))
	}
	return [4]int{v[c.out[0]], v[c.out[1]], v[c.out[2]], v[c.out[3]]}
}

// lt is the linear transformation: six rotations, two shifts and four
// three-way XORs.
func (p *prog) lt(x [4]int) [4]int {
	a := p.rol(x[0], 13)
	c := p.rol(x[2], 3)
	b := p.xor3(x[1], a, c)
	d := p.xor3(x[3], c, p.shl(a, 3))
	b = p.rol(b, 1)
	d = p.rol(d, 7)
	a = p.xor3(a, b, d)
	c = p.xor3(c, d, p.shl(b, 7))
	return [4]int{p.rol(a, 5), b, p.rol(c, 22), d}
}

func (p *prog) ltInv(x [4]int) [4]int {
	c := p.rol(x[2], -22)
	a := p.rol(x[0], -5)
	b, d := x[1], x[3]
	c = p.xor3(c, d, p.shl(b, 7))
	a = p.xor3(a, b, d)
	d = p.rol(d, -7)
	b = p.rol(b, -1)
	d = p.xor3(d, c, p.shl(a, 3))
	b = p.xor3(b, a, c)
	return [4]int{p.rol(a, -13), b, p.rol(c, -3), d}
}

func (p *prog) addKey(x [4]int, kp Register, i int) [4]int {
	for j := range x {
		x[j] = p.xorKey(x[j], Mem{Base: kp, Disp: 16*i + 4*j})
	}
	return x
}

// ltKey is lt followed by the addition of round key i, adjusted as in
// Cipher.foldKeys (words 0 and 2 rotated right by 5 and 22): the key words
// enter beside the early operands of the XOR chains, off the critical path.
func (p *prog) ltKey(x [4]int, kp Register, i int) [4]int {
	k := func(j int) Mem { return Mem{Base: kp, Disp: 16*i + 4*j} }
	a := p.rol(x[0], 13)
	c := p.rol(x[2], 3)
	b := p.rol(p.xor3(x[1], a, c), 1)
	d := p.rol(p.xor3(x[3], c, p.shl(a, 3)), 7)
	a = p.rol(p.xor3(p.xorKey(a, k(0)), b, d), 5)
	c = p.rol(p.xor3(p.xorKey(c, k(2)), d, p.shl(b, 7)), 22)
	return [4]int{a, p.xorKey(b, k(1)), c, p.xorKey(d, k(3))}
}

// ltInvKey is the addition of round key i followed by ltInv, with the key
// as adjusted by Cipher.foldKeys.
func (p *prog) ltInvKey(x [4]int, kp Register, i int) [4]int {
	k := func(j int) Mem { return Mem{Base: kp, Disp: 16*i + 4*j} }
	a, b, c, d := x[0], x[1], x[2], x[3]
	c = p.xor3(p.xorKey(d, k(2)), p.shl(b, 7), p.rol(c, -22))
	a = p.xor3(p.rol(a, -5), b, d)
	d = p.xor3(p.xorKey(p.rol(d, -7), k(3)), p.shl(a, 3), c)
	b = p.xor3(p.xorKey(p.rol(b, -1), k(1)), a, c)
	return [4]int{p.xorKey(p.rol(a, -13), k(0)), b, p.rol(c, -3), d}
}

// transpose turns four registers of whole blocks into four registers of
// words, 4x4 dwords in each 128-bit lane, and back (it is its own inverse).
func (p *prog) transpose(r [4]int) [4]int {
	t0 := p.unpack(0, r[0], r[1])
	t1 := p.unpack(1, r[0], r[1])
	t2 := p.unpack(0, r[2], r[3])
	t3 := p.unpack(1, r[2], r[3])
	return [4]int{p.unpack(2, t0, t2), p.unpack(3, t0, t2), p.unpack(2, t1, t3), p.unpack(3, t1, t3)}
}

// ---- register allocation and emission ----

// permute reorders a ternary operation's operands: operand k of the result
// is operand perm[k] of the original.
func permute(imm uint8, perm [3]int) uint8 {
	var out uint8
	for idx := range 8 {
		var orig [3]int
		for k := range 3 {
			orig[perm[k]] = idx >> (2 - k) & 1
		}
		if imm>>(orig[0]<<2|orig[1]<<1|orig[2])&1 != 0 {
			out |= 1 << idx
		}
	}
	return out
}

func (p *prog) vreg(i int) VecPhysical {
	if p.zmm {
		return []VecPhysical{Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7, Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15,
			Z16, Z17, Z18, Z19, Z20, Z21, Z22, Z23, Z24, Z25, Z26, Z27, Z28, Z29, Z30, Z31}[i]
	}
	return []VecPhysical{X0, X1, X2, X3, X4, X5, X6, X7, X8, X9, X10, X11, X12, X13, X14, X15,
		X16, X17, X18, X19, X20, X21, X22, X23, X24, X25, X26, X27, X28, X29, X30, X31}[i]
}

// emit allocates registers and writes the instructions. It returns the
// number of registers used at most, and of copies inserted.
func (p *prog) emit() (peak, copies int) {
	last := make([]int, len(p.nodes))
	for i := range last {
		last[i] = -1
	}
	for i, n := range p.nodes {
		for _, a := range n.args {
			last[a] = i
		}
	}
	reg := make([]int, len(p.nodes))
	var free [32]bool
	for i := range free {
		free[i] = true
	}
	used := 0
	alloc := func() int {
		for i := range free {
			if free[i] {
				free[i] = false
				used++
				peak = max(peak, used)
				return i
			}
		}
		log.Fatal("out of vector registers")
		return 0
	}
	release := func(r int) {
		free[r] = true
		used--
	}
	// dying releases the registers of the operands whose last use is node i.
	dying := func(i int, skip int) {
		seen := map[int]bool{}
		for _, a := range p.nodes[i].args {
			if last[a] == i && a != skip && !seen[a] {
				seen[a] = true
				release(reg[a])
			}
		}
	}
	// ready estimates when each value is computed, at one cycle per
	// instruction, so that a copy takes the operand that is ready first,
	// off the critical path.
	ready := make([]int, len(p.nodes))
	for i, n := range p.nodes {
		for _, a := range n.args {
			ready[i] = max(ready[i], ready[a]+1)
		}
	}
	for i, n := range p.nodes {
		r := func(v int) VecPhysical { return p.vreg(reg[v]) }
		switch n.kind {
		case nStore:
			if p.zmm {
				VMOVDQU32(r(n.args[0]), n.mem)
			} else {
				VMOVD(r(n.args[0]), n.mem)
			}
			dying(i, -1)
			continue
		case nTern:
			args := n.args
			nreg := 3
			if len(args) == 2 {
				nreg = 2 // the third operand is the broadcast memory operand
			}
			// Choose a register operand that dies here as the destination.
			dst := -1
			for k := range nreg {
				if last[args[k]] == i {
					dst = k
					break
				}
			}
			cp := dst < 0
			if cp {
				dst = 0
				for k := range nreg {
					if ready[args[k]] < ready[args[dst]] {
						dst = k
					}
				}
			}
			imm := n.imm
			perm := [3]int{0, 1, 2}
			if dst > 0 {
				perm[dst] = 0
				perm[0] = dst
				if nreg == 2 {
					imm = permute(imm, perm)
					args = []int{args[1], args[0]}
				} else {
					imm = permute(imm, perm)
					args = []int{args[perm[0]], args[perm[1]], args[perm[2]]}
				}
			}
			var out int
			if cp {
				out = alloc()
				VMOVDQA32(r(args[0]), p.vreg(out))
				copies++
				dying(i, -1)
			} else {
				out = reg[args[0]]
				dying(i, args[0])
			}
			if nreg == 2 {
				VPTERNLOGD_BCST(U8(imm), n.mem, r(args[1]), p.vreg(out))
			} else {
				VPTERNLOGD(U8(imm), r(args[2]), r(args[1]), p.vreg(out))
			}
			reg[i] = out
		default:
			dying(i, -1)
			out := alloc()
			reg[i] = out
			d := p.vreg(out)
			switch n.kind {
			case nLoad:
				if p.zmm {
					VMOVDQU32(n.mem, d)
				} else {
					VMOVD(n.mem, d)
				}
			case nRol:
				VPROLD(U8(n.n), r(n.args[0]), d)
			case nShl:
				VPSLLD(U8(n.n), r(n.args[0]), d)
			case nXorKey:
				VPXORD_BCST(n.mem, r(n.args[0]), d)
			case nUnpack:
				s1, s2 := r(n.args[0]), r(n.args[1])
				switch n.n {
				case 0:
					VPUNPCKLDQ(s2, s1, d)
				case 1:
					VPUNPCKHDQ(s2, s1, d)
				case 2:
					VPUNPCKLQDQ(s2, s1, d)
				case 3:
					VPUNPCKHQDQ(s2, s1, d)
				}
			}
		}
		if last[i] < 0 {
			release(reg[i])
		}
	}
	depth := 0
	for _, r := range ready {
		depth = max(depth, r)
	}
	Comment(fmt.Sprintf("Longest dependency chain: %d instructions.", depth))
	return peak, copies
}

// ---- the kernels ----

// singleFunc emits the one-block kernel: the block's four words each sit
// in lane 0 of an XMM register, so a round is the S-box (depth 2) and the
// linear transformation with the next round key folded in (depth 6 for
// encryption, 4 for decryption). The round keys are those of Cipher.foldKeys.
func singleFunc(name string, sb map[string]ternCircuit, enc bool) {
	TEXT(name, NOSPLIT, "func(k *[132]uint32, dst, src *[16]byte)")
	dir := "decrypts"
	if enc {
		dir = "encrypts"
	}
	Comment(fmt.Sprintf("%s %s one block with AVX-512VL: VPTERNLOGD S-boxes of depth 2, VPROLD rotations.", name, dir))
	k := Load(Param("k"), GP64())
	dst := Load(Param("dst"), GP64())
	src := Load(Param("src"), GP64())
	p := &prog{}
	var x [4]int
	for j := range x {
		x[j] = p.load(Mem{Base: src, Disp: 4 * j})
	}
	if enc {
		x = p.addKey(x, k, 0)
		for r := range 32 {
			x = p.sbox(sb[fmt.Sprintf("sb%d", r%8)], x)
			if r < 31 {
				x = p.ltKey(x, k, r+1)
			} else {
				x = p.addKey(x, k, 32)
			}
		}
	} else {
		x = p.addKey(x, k, 32)
		for r := 31; r >= 0; r-- {
			x = p.sbox(sb[fmt.Sprintf("sb%dInv", r%8)], x)
			if r > 0 {
				x = p.ltInvKey(x, k, r)
			} else {
				x = p.addKey(x, k, 0)
			}
		}
	}
	for j := range x {
		p.store(Mem{Base: dst, Disp: 4 * j}, x[j])
	}
	cycles := p.schedule()
	Comment(fmt.Sprintf("Scheduled for %d cycles on three vector ports.", cycles))
	peak, copies := p.emit()
	Comment(fmt.Sprintf("%d vector registers, %d copies.", peak, copies))
	RET()
}

// blocksFunc emits the 16-block kernel: like the AVX2 one with ZMM
// registers (4 blocks per register, words transposed within each 128-bit
// lane), VPROLD rotations, VPTERNLOGD S-boxes of the fewest operations and
// three-way XORs. Two register sets run interleaved while 32 blocks
// remain. len(src) is a multiple of 256.
func blocksFunc(name string, sb map[string]ternCircuit, enc bool) {
	TEXT(name, NOSPLIT, "func(ks *[132]uint32, dst, src []byte)")
	dir := "decrypts"
	if enc {
		dir = "encrypts"
	}
	Comment(fmt.Sprintf("%s %s len(src)/16 independent blocks with AVX-512, 16 per register set;", name, dir),
		"len(src) is a multiple of 256.")
	ks := Load(Param("ks"), GP64())
	dst := Load(Param("dst").Base(), GP64())
	src := Load(Param("src").Base(), GP64())
	n := Load(Param("src").Len(), GP64())

	pass := func(sets int) {
		p := &prog{zmm: true}
		xs := make([][4]int, sets)
		for s := range xs {
			var r [4]int
			for j := range r {
				r[j] = p.load(Mem{Base: src, Disp: 64 * (4*s + j)})
			}
			xs[s] = p.transpose(r)
		}
		each := func(f func(x [4]int) [4]int) {
			for s := range xs {
				xs[s] = f(xs[s])
			}
		}
		if enc {
			each(func(x [4]int) [4]int { return p.addKey(x, ks, 0) })
			for r := range 32 {
				each(func(x [4]int) [4]int { return p.sbox(sb[fmt.Sprintf("sb%d", r%8)], x) })
				if r < 31 {
					each(p.lt)
				}
				each(func(x [4]int) [4]int { return p.addKey(x, ks, r+1) })
			}
		} else {
			each(func(x [4]int) [4]int { return p.addKey(x, ks, 32) })
			for r := 31; r >= 0; r-- {
				each(func(x [4]int) [4]int { return p.sbox(sb[fmt.Sprintf("sb%dInv", r%8)], x) })
				each(func(x [4]int) [4]int { return p.addKey(x, ks, r) })
				if r > 0 {
					each(p.ltInv)
				}
			}
		}
		for s := range xs {
			r := p.transpose(xs[s])
			for j := range r {
				p.store(Mem{Base: dst, Disp: 64 * (4*s + j)}, r[j])
			}
		}
		peak, copies := p.emit()
		Comment(fmt.Sprintf("%d vector registers, %d copies.", peak, copies))
	}

	Label(name + "_two")
	CMPQ(n, U32(512))
	JB(LabelRef(name + "_one"))
	Comment("Two register sets, 32 blocks.")
	pass(2)
	ADDQ(U32(512), src)
	ADDQ(U32(512), dst)
	SUBQ(U32(512), n)
	JMP(LabelRef(name + "_two"))

	Label(name + "_one")
	TESTQ(n, n)
	JZ(LabelRef(name + "_done"))
	Comment("One register set, 16 blocks.")
	pass(1)

	Label(name + "_done")
	VZEROUPPER()
	RET()
}

// schedule reorders the program as a list schedule on a model of the
// vector units (three ports, rotations and shifts on two of them, one
// cycle a value), taking first the operations with the longest chains
// behind them. Out-of-order cores issue the oldest ready operation first,
// so with the critical path early in program order it is not held up by
// operations that have time to spare. It returns the cycles the model
// takes. Decryption gains from the reordering and encryption neither gains
// nor loses. The kernels still take well over the cycles the model counts,
// so the model serves to order the operations, not to predict their time.
func (p *prog) schedule() int {
	n := len(p.nodes)
	height := make([]int, n)
	for i := n - 1; i >= 0; i-- {
		for _, a := range p.nodes[i].args {
			height[a] = max(height[a], height[i]+1)
		}
	}
	pending := make([]int, n)
	users := make([][]int, n)
	for i, nd := range p.nodes {
		for _, a := range nd.args {
			users[a] = append(users[a], i)
			pending[i]++
		}
	}
	readyAt := make([]int, n)
	done := make([]bool, n)
	order := make([]int, 0, n)
	cycle := 0
	for len(order) < n {
		alu, shifts := 0, 0
		for {
			// The ready operation with the longest chain behind it.
			pick := -1
			for i := range n {
				if done[i] || pending[i] > 0 || readyAt[i] > cycle {
					continue
				}
				k := p.nodes[i].kind
				free := k == nLoad || k == nStore
				if !free && (alu == 3 || (k == nRol || k == nShl) && shifts == 2) {
					continue
				}
				if pick < 0 || height[i] > height[pick] {
					pick = i
				}
			}
			if pick < 0 {
				break
			}
			switch p.nodes[pick].kind {
			case nRol, nShl:
				alu++
				shifts++
			case nTern, nXorKey, nUnpack:
				alu++
			}
			done[pick] = true
			order = append(order, pick)
			for _, u := range users[pick] {
				pending[u]--
				readyAt[u] = max(readyAt[u], cycle+1)
			}
		}
		cycle++
	}
	pos := make([]int, n)
	for newIdx, old := range order {
		pos[old] = newIdx
	}
	nodes := make([]node, n)
	for newIdx, old := range order {
		nd := p.nodes[old]
		nd.args = slices.Clone(nd.args)
		for k, a := range nd.args {
			nd.args[k] = pos[a]
		}
		nodes[newIdx] = nd
	}
	p.nodes = nodes
	return cycle
}
