// Command _asm generates serpent_amd64.s, the SSE2, AVX2 and AVX-512
// multi-block kernels of package serpent and its AVX-512 single-block
// kernel (the AVX-512 code is in avx512.go, its S-boxes in ternary.go).
//
// The S-box sequences are not repeated here: the generator parses
// ../sbox.go, the portable implementation, and translates each of its
// statements into one vector instruction (two for SSE2 when the destination
// is not the first source). The vectors hold word j of 4 (XMM) or 8 (YMM)
// blocks, so the bitsliced code runs unchanged on every lane. Several
// register sets are interleaved while enough blocks remain (two for SSE2,
// three for AVX2), which gives the core independent dependency chains, as
// in Kivilinna's 16-way AVX2 code in the Linux kernel
// (arch/x86/crypto/serpent-avx2-asm_64.S). Three YMM sets use 15 registers;
// the last one takes the round-key words in turn, and NOT reads its
// all-ones operand from memory.
package main

// The purego tag lets the generator build (it imports the package so that
// go.mod records the dependency) even when serpent_amd64.s is missing or stale.
//go:generate go run -tags purego . -out ../serpent_amd64.s -pkg serpent

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"log"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"

	_ "github.com/tsdescramble/tsdescramble/serpent"
)

func main() {
	Package("github.com/tsdescramble/tsdescramble/serpent")
	ConstraintExpr("gc,!purego")
	sboxes := parseSBoxes("../sbox.go")

	// All ones, for NOT when no register is left to hold it.
	ones := GLOBL("ones", RODATA|NOPTR)
	for i := range 4 {
		DATA(8*i, U64(^uint64(0)))
	}
	sse2 := &sseISA{}
	avx2 := &avxISA{ones: ones}
	kernelFunc("encryptBlocksSSE2", sse2, sboxes, true)
	kernelFunc("decryptBlocksSSE2", sse2, sboxes, false)
	kernelFunc("encryptBlocksAVX2", avx2, sboxes, true)
	kernelFunc("decryptBlocksAVX2", avx2, sboxes, false)
	// One block is a dependency chain: S-boxes of depth 2. Many blocks are
	// bound by instruction count: S-boxes of the fewest operations.
	shallow := ternarySBoxes(sboxes, 2)
	small := ternarySBoxes(sboxes, 99)
	singleFunc("encryptBlockAVX512", shallow, true)
	singleFunc("decryptBlockAVX512", shallow, false)
	blocksFunc("encryptBlocksAVX512", small, true)
	blocksFunc("decryptBlocksAVX512", small, false)
	Generate()
}

// ---- S-box programs parsed from ../sbox.go ----

type opKind int

const (
	opXor opKind = iota
	opAnd
	opOr
	opNot  // dst = ^s1
	opCopy // dst = s1
)

// stmt is dst = s1 op s2 over the S-box variables a, b, c, d, t (0..4).
type stmt struct {
	op          opKind
	dst, s1, s2 int
}

// sbox is one parsed S-box: its statements and, for each output word, the
// variable that holds it at the end.
type sbox struct {
	prog []stmt
	out  [4]int
}

var varIndex = map[string]int{"a": 0, "b": 1, "c": 2, "d": 3, "t": 4}

func ident(e ast.Expr) int {
	id, ok := e.(*ast.Ident)
	if !ok {
		log.Fatalf("sbox.go: expected a variable, got %T", e)
	}
	i, ok := varIndex[id.Name]
	if !ok {
		log.Fatalf("sbox.go: unknown variable %s", id.Name)
	}
	return i
}

func parseSBoxes(path string) map[string]sbox {
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
	if err != nil {
		log.Fatal(err)
	}
	m := map[string]sbox{}
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok {
			continue
		}
		var sb sbox
		for _, s := range fn.Body.List {
			switch s := s.(type) {
			case *ast.AssignStmt:
				dst := ident(s.Lhs[0])
				switch s.Tok {
				case token.XOR_ASSIGN:
					sb.prog = append(sb.prog, stmt{opXor, dst, dst, ident(s.Rhs[0])})
				case token.AND_ASSIGN:
					sb.prog = append(sb.prog, stmt{opAnd, dst, dst, ident(s.Rhs[0])})
				case token.OR_ASSIGN:
					sb.prog = append(sb.prog, stmt{opOr, dst, dst, ident(s.Rhs[0])})
				case token.ASSIGN, token.DEFINE:
					if u, ok := s.Rhs[0].(*ast.UnaryExpr); ok && u.Op == token.XOR {
						sb.prog = append(sb.prog, stmt{opNot, dst, ident(u.X), -1})
					} else {
						sb.prog = append(sb.prog, stmt{opCopy, dst, ident(s.Rhs[0]), -1})
					}
				default:
					log.Fatalf("sbox.go: %s: unsupported assignment %s", fn.Name.Name, s.Tok)
				}
			case *ast.ReturnStmt:
				seen := map[int]bool{}
				for i, r := range s.Results {
					sb.out[i] = ident(r)
					seen[sb.out[i]] = true
				}
				if len(s.Results) != 4 || len(seen) != 4 {
					log.Fatalf("sbox.go: %s: return must name four distinct variables", fn.Name.Name)
				}
			default:
				log.Fatalf("sbox.go: %s: unsupported statement %T", fn.Name.Name, s)
			}
		}
		m[fn.Name.Name] = sbox{prog: fuse(sb.prog), out: sb.out}
	}
	if len(m) != 16 {
		log.Fatalf("sbox.go: found %d S-boxes, want 16", len(m))
	}
	return m
}

// fuse turns "x = y" followed by "x op= z" (or "x = ^x") into the
// three-operand x = y op z, which AVX encodes as one instruction.
func fuse(p []stmt) []stmt {
	var out []stmt
	for i := 0; i < len(p); i++ {
		s := p[i]
		if s.op == opCopy && i+1 < len(p) {
			n := p[i+1]
			if n.dst == s.dst && n.s1 == s.dst && n.s2 != s.dst {
				n.s1 = s.s1
				out = append(out, n)
				i++
				continue
			}
		}
		out = append(out, s)
	}
	return out
}

// ---- instruction sets ----

// isa emits vector instructions for one register width.
type isa interface {
	name() string
	bytes() int                            // bytes per register: 4 words of 16 or 32 bytes
	reg(i int) VecPhysical                 // vector register i (0..15)
	op3(k opKind, dst, s1, s2 VecPhysical) // dst = s1 op s2; opNot, opCopy use s1 only
	shift(left bool, n int, dst, src VecPhysical)
	unpack(high, qword bool, dst, s1, s2 VecPhysical) // interleave low/high dwords/qwords of s1, s2
	load(dst VecPhysical, m Mem)
	store(m Mem, src VecPhysical)
	loadKey(k [4]VecPhysical, m Mem) // broadcast the four words at m into k
	begin()                          // prepare the all-ones register
	end()
}

// Register use with one or two sets: 0-4 and 5-9 hold the sets (four words
// and one temporary each), 10-13 the broadcast round key, 14 scratch, 15 all
// ones. With three AVX2 sets, 0-14 hold the sets and 15 one key word.
const (
	regKey     = 10
	regScratch = 14
	regOnes    = 15
)

type sseISA struct{}

func (sseISA) name() string { return "SSE2" }
func (sseISA) bytes() int   { return 16 }
func (sseISA) reg(i int) VecPhysical {
	return []VecPhysical{X0, X1, X2, X3, X4, X5, X6, X7, X8, X9, X10, X11, X12, X13, X14, X15}[i]
}

func (s sseISA) op3(k opKind, dst, s1, s2 VecPhysical) {
	// Two-operand SSE: dst must be the first source; the logical operations
	// commute, so a destination equal to the second source works too.
	switch {
	case k == opCopy || k == opNot:
		if dst != s1 {
			MOVO(s1, dst)
		}
		if k == opNot {
			PXOR(s.reg(regOnes), dst)
		}
		return
	case dst == s1:
	case dst == s2:
		s1, s2 = s2, s1
	default:
		MOVO(s1, dst)
	}
	switch k {
	case opXor:
		PXOR(s2, dst)
	case opAnd:
		PAND(s2, dst)
	case opOr:
		POR(s2, dst)
	}
}

func (sseISA) shift(left bool, n int, dst, src VecPhysical) {
	if dst != src {
		MOVO(src, dst)
	}
	if left {
		PSLLL(U8(n), dst)
	} else {
		PSRLL(U8(n), dst)
	}
}

func (sseISA) unpack(high, qword bool, dst, s1, s2 VecPhysical) {
	if dst == s2 {
		log.Fatal("unpack: destination is the second source")
	}
	if dst != s1 {
		MOVO(s1, dst)
	}
	switch {
	case !high && !qword:
		PUNPCKLLQ(s2, dst)
	case high && !qword:
		PUNPCKHLQ(s2, dst)
	case !high && qword:
		PUNPCKLQDQ(s2, dst)
	default:
		PUNPCKHQDQ(s2, dst)
	}
}

func (sseISA) load(dst VecPhysical, m Mem)  { MOVOU(m, dst) }
func (sseISA) store(m Mem, src VecPhysical) { MOVOU(src, m) }

func (s sseISA) loadKey(k [4]VecPhysical, m Mem) {
	// No broadcast from memory before AVX: load the four words once and
	// spread each over a register.
	t := s.reg(regScratch)
	MOVOU(m, t)
	for j, imm := range []uint8{0x00, 0x55, 0xaa, 0xff} {
		PSHUFD(U8(imm), t, k[j])
	}
}

func (s sseISA) begin() { PCMPEQL(s.reg(regOnes), s.reg(regOnes)) }
func (sseISA) end()     {}

type avxISA struct {
	ones      Mem  // all-ones constant in memory
	onesInMem bool // NOT reads ones from memory: register 15 is in use
}

func (avxISA) name() string { return "AVX2" }
func (avxISA) bytes() int   { return 32 }
func (avxISA) reg(i int) VecPhysical {
	return []VecPhysical{Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7, Y8, Y9, Y10, Y11, Y12, Y13, Y14, Y15}[i]
}

func (a *avxISA) op3(k opKind, dst, s1, s2 VecPhysical) {
	switch k {
	case opCopy:
		VMOVDQA(s1, dst)
	case opNot:
		if a.onesInMem {
			VPXOR(a.ones, s1, dst)
		} else {
			VPXOR(a.reg(regOnes), s1, dst)
		}
	case opXor:
		VPXOR(s2, s1, dst)
	case opAnd:
		VPAND(s2, s1, dst)
	case opOr:
		VPOR(s2, s1, dst)
	}
}

func (avxISA) shift(left bool, n int, dst, src VecPhysical) {
	switch {
	case left && n == 1:
		// x+x is x<<1 on an adder, which leaves the shift units free.
		VPADDD(src, src, dst)
	case left:
		VPSLLD(U8(n), src, dst)
	default:
		VPSRLD(U8(n), src, dst)
	}
}

func (avxISA) unpack(high, qword bool, dst, s1, s2 VecPhysical) {
	switch {
	case !high && !qword:
		VPUNPCKLDQ(s2, s1, dst)
	case high && !qword:
		VPUNPCKHDQ(s2, s1, dst)
	case !high && qword:
		VPUNPCKLQDQ(s2, s1, dst)
	default:
		VPUNPCKHQDQ(s2, s1, dst)
	}
}

func (avxISA) load(dst VecPhysical, m Mem)  { VMOVDQU(m, dst) }
func (avxISA) store(m Mem, src VecPhysical) { VMOVDQU(src, m) }

func (avxISA) loadKey(k [4]VecPhysical, m Mem) {
	for j := range k {
		VPBROADCASTD(m.Offset(4*j), k[j])
	}
}

func (a avxISA) begin() { VPCMPEQD(a.reg(regOnes), a.reg(regOnes), a.reg(regOnes)) }
func (avxISA) end()     { VZEROUPPER() }

// ---- the kernel ----

// set is one register set: x[j] holds word j of every block, t is free.
// The S-boxes leave their results in permuted registers; the generator
// follows the permutation instead of moving data.
type set struct {
	x [4]VecPhysical
	t VecPhysical
}

type gen struct {
	oneKeyReg bool // three sets: registers 0-14 hold the sets
	v         isa
	sboxes    map[string]sbox
	sets      []*set
	ks        Register
	key       [4]VecPhysical
}

func (g *gen) op(k opKind, dst, s1, s2 VecPhysical) { g.v.op3(k, dst, s1, s2) }

// transpose turns four registers of whole blocks into four registers of
// words (and back: it is its own inverse), 4x4 dwords in each 128-bit lane.
func (g *gen) transpose(s *set) {
	r0, r1, r2, r3, t := s.x[0], s.x[1], s.x[2], s.x[3], s.t
	g.v.unpack(false, false, t, r0, r1)  // r0.0 r1.0 r0.1 r1.1
	g.v.unpack(true, false, r0, r0, r1)  // r0.2 r1.2 r0.3 r1.3
	g.v.unpack(false, false, r1, r2, r3) // r2.0 r3.0 r2.1 r3.1
	g.v.unpack(true, false, r2, r2, r3)  // r2.2 r3.2 r2.3 r3.3
	g.v.unpack(false, true, r3, t, r1)   // column 0
	g.v.unpack(true, true, t, t, r1)     // column 1
	g.v.unpack(false, true, r1, r0, r2)  // column 2
	g.v.unpack(true, true, r0, r0, r2)   // column 3
	s.x, s.t = [4]VecPhysical{r3, t, r1, r0}, r2
}

// load reads set i's blocks: register j gets bytes j*w..j*w+w of the set,
// that is block j for XMM and blocks 2j, 2j+1 for YMM. The block order
// inside the registers does not matter, since store undoes it.
func (g *gen) load(src Register) {
	w := g.v.bytes()
	for i, s := range g.sets {
		for j := range 4 {
			g.v.load(s.x[j], Mem{Base: src, Disp: (4*i + j) * w})
		}
	}
	for _, s := range g.sets {
		g.transpose(s)
	}
}

func (g *gen) store(dst Register) {
	w := g.v.bytes()
	for _, s := range g.sets {
		g.transpose(s)
	}
	for i, s := range g.sets {
		for j := range 4 {
			g.v.store(Mem{Base: dst, Disp: (4*i + j) * w}, s.x[j])
		}
	}
}

// addKey XORs round key i, counted from the key pointer kp, into every set.
func (g *gen) addKey(kp Register, i int) {
	if g.oneKeyReg {
		// Three sets leave one register: broadcast one word at a time.
		k := g.v.reg(15)
		for j := range 4 {
			VPBROADCASTD(Mem{Base: kp, Disp: 16*i + 4*j}, k)
			for _, s := range g.sets {
				g.op(opXor, s.x[j], s.x[j], k)
			}
		}
		return
	}
	g.v.loadKey(g.key, Mem{Base: kp, Disp: 16 * i})
	for j := range 4 {
		for _, s := range g.sets {
			g.op(opXor, s.x[j], s.x[j], g.key[j])
		}
	}
}

func (g *gen) sbox(name string) {
	sb := g.sboxes[name]
	regs := make([][5]VecPhysical, len(g.sets))
	for i, s := range g.sets {
		regs[i] = [5]VecPhysical{s.x[0], s.x[1], s.x[2], s.x[3], s.t}
	}
	for _, st := range sb.prog {
		for i := range g.sets {
			r := regs[i]
			var s2 VecPhysical
			if st.s2 >= 0 {
				s2 = r[st.s2]
			}
			g.op(st.op, r[st.dst], r[st.s1], s2)
		}
	}
	for i, s := range g.sets {
		r := regs[i]
		used := map[VecPhysical]bool{}
		for j := range 4 {
			s.x[j] = r[sb.out[j]]
			used[s.x[j]] = true
		}
		for _, x := range r {
			if !used[x] {
				s.t = x
			}
		}
	}
}

// each emits f for every set, so the sets' instructions alternate.
func (g *gen) each(f func(s *set)) {
	for _, s := range g.sets {
		f(s)
	}
}

func (g *gen) rotl(n int) func(x, t VecPhysical) {
	return func(x, t VecPhysical) {
		g.v.shift(true, n, t, x)
		g.v.shift(false, 32-n, x, x)
		g.op(opOr, x, x, t)
	}
}

func (g *gen) rot(j, n int) {
	if n < 0 {
		n += 32
	}
	r := g.rotl(n)
	g.each(func(s *set) { r(s.x[j], s.t) })
}

// lt is the linear transformation; the temporary is the set's free register.
func (g *gen) lt() {
	g.rot(0, 13)
	g.rot(2, 3)
	g.each(func(s *set) { g.op(opXor, s.x[1], s.x[1], s.x[0]) })
	g.each(func(s *set) { g.v.shift(true, 3, s.t, s.x[0]) })
	g.each(func(s *set) { g.op(opXor, s.x[1], s.x[1], s.x[2]) })
	g.each(func(s *set) { g.op(opXor, s.x[3], s.x[3], s.x[2]) })
	g.each(func(s *set) { g.op(opXor, s.x[3], s.x[3], s.t) })
	g.rot(1, 1)
	g.rot(3, 7)
	g.each(func(s *set) { g.op(opXor, s.x[0], s.x[0], s.x[1]) })
	g.each(func(s *set) { g.v.shift(true, 7, s.t, s.x[1]) })
	g.each(func(s *set) { g.op(opXor, s.x[0], s.x[0], s.x[3]) })
	g.each(func(s *set) { g.op(opXor, s.x[2], s.x[2], s.x[3]) })
	g.each(func(s *set) { g.op(opXor, s.x[2], s.x[2], s.t) })
	g.rot(0, 5)
	g.rot(2, 22)
}

func (g *gen) ltInv() {
	g.rot(2, -22)
	g.rot(0, -5)
	g.each(func(s *set) { g.v.shift(true, 7, s.t, s.x[1]) })
	g.each(func(s *set) { g.op(opXor, s.x[2], s.x[2], s.x[3]) })
	g.each(func(s *set) { g.op(opXor, s.x[0], s.x[0], s.x[1]) })
	g.each(func(s *set) { g.op(opXor, s.x[2], s.x[2], s.t) })
	g.each(func(s *set) { g.op(opXor, s.x[0], s.x[0], s.x[3]) })
	g.rot(3, -7)
	g.rot(1, -1)
	g.each(func(s *set) { g.v.shift(true, 3, s.t, s.x[0]) })
	g.each(func(s *set) { g.op(opXor, s.x[3], s.x[3], s.x[2]) })
	g.each(func(s *set) { g.op(opXor, s.x[1], s.x[1], s.x[0]) })
	g.each(func(s *set) { g.op(opXor, s.x[3], s.x[3], s.t) })
	g.each(func(s *set) { g.op(opXor, s.x[1], s.x[1], s.x[2]) })
	g.rot(2, -3)
	g.rot(0, -13)
}

// fixup emits register moves that bring every set back to the register
// assignment saved in want, so that a loop iteration ends where it began.
// Each set's free register makes a permutation solvable with plain moves.
func (g *gen) fixup(want []set) {
	for i, s := range g.sets {
		cur := [5]VecPhysical{s.x[0], s.x[1], s.x[2], s.x[3], s.t}
		tgt := [5]VecPhysical{want[i].x[0], want[i].x[1], want[i].x[2], want[i].x[3], want[i].t}
		for cur != tgt {
			free := cur[4]
			j := -1
			for k := range 4 {
				if tgt[k] == free {
					j = k
				}
			}
			if j < 0 { // the free register is already in place: break a cycle
				for k := range 4 {
					if cur[k] != tgt[k] {
						j = k
						break
					}
				}
			}
			g.op(opCopy, free, cur[j], cur[j])
			cur[4], cur[j] = cur[j], free
		}
		s.x = [4]VecPhysical{cur[0], cur[1], cur[2], cur[3]}
		s.t = cur[4]
	}
}

func (g *gen) snapshot() []set {
	var s []set
	for _, x := range g.sets {
		s = append(s, *x)
	}
	return s
}

// kernel emits one pass over len(g.sets) register sets of blocks. The 32
// rounds run as four iterations of an eight-round body (one of each S-box),
// which keeps the code small enough for the decoded-instruction caches.
func (g *gen) kernel(enc bool, dst, src Register, label string) {
	g.load(src)
	kp := GP64()
	if enc {
		MOVQ(g.ks, kp)
		start := g.snapshot()
		Label(label + "_rounds")
		for i := range 8 {
			g.addKey(kp, i)
			g.sbox(fmt.Sprintf("sb%d", i))
			if i < 7 {
				g.lt()
			}
		}
		ADDQ(U32(8*16), kp)
		end := GP64()
		LEAQ(Mem{Base: g.ks, Disp: 32 * 16}, end)
		CMPQ(kp, end)
		JAE(LabelRef(label + "_last"))
		last := g.snapshot()
		g.lt()
		g.fixup(start)
		JMP(LabelRef(label + "_rounds"))
		Label(label + "_last")
		for i := range g.sets {
			*g.sets[i] = last[i]
		}
		g.addKey(kp, 0) // kp points at round key 32
	} else {
		g.addKey(g.ks, 32)
		LEAQ(Mem{Base: g.ks, Disp: 24 * 16}, kp)
		start := g.snapshot()
		Label(label + "_rounds")
		for i := 7; i >= 0; i-- {
			g.sbox(fmt.Sprintf("sb%dInv", i))
			g.addKey(kp, i)
			if i > 0 {
				g.ltInv()
			}
		}
		CMPQ(kp, g.ks)
		JE(LabelRef(label + "_last"))
		SUBQ(U32(8*16), kp)
		last := g.snapshot()
		g.ltInv()
		g.fixup(start)
		JMP(LabelRef(label + "_rounds"))
		Label(label + "_last")
		for i := range g.sets {
			*g.sets[i] = last[i]
		}
	}
	g.store(dst)
}

func kernelFunc(name string, v isa, sboxes map[string]sbox, enc bool) {
	TEXT(name, NOSPLIT, "func(ks *[132]uint32, dst, src []byte)")
	dir := "decrypts"
	if enc {
		dir = "encrypts"
	}
	group := 4 * v.bytes() // bytes per register set
	Comment(fmt.Sprintf("%s %s len(src)/16 independent blocks with %s, %d per register set;",
		name, dir, v.name(), group/16), fmt.Sprintf("len(src) is a multiple of %d.", group))
	ks := Load(Param("ks"), GP64())
	dst := Load(Param("dst").Base(), GP64())
	src := Load(Param("src").Base(), GP64())
	n := Load(Param("src").Len(), GP64())

	newSet := func(i int) *set {
		return &set{x: [4]VecPhysical{v.reg(5 * i), v.reg(5*i + 1), v.reg(5*i + 2), v.reg(5*i + 3)}, t: v.reg(5*i + 4)}
	}
	g := &gen{v: v, sboxes: sboxes, ks: ks}
	for j := range 4 {
		g.key[j] = v.reg(regKey + j)
	}

	if a, ok := v.(*avxISA); ok {
		Label(name + "_three")
		CMPQ(n, U32(3*group))
		JB(LabelRef(name + "_two"))
		Comment(fmt.Sprintf("Three register sets, %d blocks.", 3*group/16))
		g.sets = []*set{newSet(0), newSet(1), newSet(2)}
		a.onesInMem, g.oneKeyReg = true, true
		g.kernel(enc, dst, src, name+"_three")
		a.onesInMem, g.oneKeyReg = false, false
		ADDQ(U32(3*group), src)
		ADDQ(U32(3*group), dst)
		SUBQ(U32(3*group), n)
		JMP(LabelRef(name + "_three"))
	}

	Label(name + "_two")
	v.begin()
	CMPQ(n, U32(2*group))
	JB(LabelRef(name + "_one"))
	Comment(fmt.Sprintf("Two register sets, %d blocks.", 2*group/16))
	g.sets = []*set{newSet(0), newSet(1)}
	g.kernel(enc, dst, src, name+"_two")
	ADDQ(U32(2*group), src)
	ADDQ(U32(2*group), dst)
	SUBQ(U32(2*group), n)
	JMP(LabelRef(name + "_two"))

	Label(name + "_one")
	TESTQ(n, n)
	JZ(LabelRef(name + "_done"))
	Comment(fmt.Sprintf("One register set, %d blocks.", group/16))
	g.sets = []*set{newSet(0)}
	g.kernel(enc, dst, src, name+"_one")

	Label(name + "_done")
	v.end()
	RET()
}
