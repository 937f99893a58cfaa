// Command _asm generates ../aesblocks_amd64.s, the AES-NI kernels of package
// aesblocks. Run it with go generate in this directory.
//
// The multi-block kernels cipher independent blocks (ECB-like), which is
// what the CBC encryption of many payloads at once needs: one block of each
// payload per call. AESENC has a latency of several cycles but issues every
// cycle or half cycle, so a single chain of rounds leaves the unit mostly
// idle; eight blocks per pass, each round key applied to all eight before
// the next, keep it busy. Eight blocks and one round-key register leave
// enough XMM registers to hold the first and last round keys for the whole
// call.
package main

// The purego tag builds package aesblocks without the assembly this program
// writes, so a missing or stale aesblocks_amd64.s cannot stop the
// regeneration.
//go:generate go run -tags purego . -out ../aesblocks_amd64.s

import (
	"fmt"

	// Package aesblocks is imported so that go.mod records the dependency;
	// avo reads the signatures of the stubs in ../aesblocks_amd64.go.
	_ "github.com/tsdescramble/tsdescramble/internal/aesblocks"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

func main() {
	Package("github.com/tsdescramble/tsdescramble/internal/aesblocks")
	ConstraintExpr("amd64,gc,!purego")

	kernel("encryptBlocksAESNI", false)
	kernel("decryptBlocksAESNI", true)
	subWord()
	invMixColumns()
	Generate()
}

// ops are the round instructions of one direction.
type ops struct {
	round, last func(mx, x Op)
}

// kernel emits name, which enciphers (or deciphers) the len(src)/16
// independent blocks of src into dst with nr rounds (10, 12 or 14) and the
// round keys at xk: eight blocks per pass, then four, then one at a time.
func kernel(name string, decrypt bool) {
	TEXT(name, NOSPLIT, "func(nr int, xk *uint32, dst, src []byte)")
	dir := "encrypts"
	o := ops{AESENC, AESENCLAST}
	if decrypt {
		dir = "decrypts"
		o = ops{AESDEC, AESDECLAST}
	}
	Doc(
		fmt.Sprintf("%s %s the len(src)/16 independent blocks of src into dst", name, dir),
		"with nr rounds and the nr+1 round keys at xk (in the order they are applied);",
		"len(src) is a multiple of 16 and len(dst) >= len(src).",
	)
	nr := Load(Param("nr"), GP64())
	xk := Load(Param("xk"), GP64())
	dst := Load(Param("dst").Base(), GP64())
	src := Load(Param("src").Base(), GP64())
	n := Load(Param("src").Len(), GP64())

	// The first and last round keys stay in registers for the whole call.
	// The middle ones are read from memory once per round of each pass; the
	// read is one load per eight AESENC and costs nothing next to them.
	first, last, key := X9, X10, X8
	MOVOU(Mem{Base: xk}, first)
	// p points nr-10 round keys past xk, so that the last ten rounds, common
	// to every key size, read their keys at fixed offsets from p, and the
	// two or four extra rounds of AES-192 and AES-256 at offsets below.
	p := GP64()
	LEAQ(Mem{Base: xk, Index: nr, Scale: 8, Disp: -160}, p)
	LEAQ(Mem{Base: p, Index: nr, Scale: 8}, p)
	MOVOU(Mem{Base: p, Disp: 160}, last)

	blocks := []VecPhysical{X0, X1, X2, X3, X4, X5, X6, X7}
	pass := func(label string, k int) {
		b := blocks[:k]
		Comment(fmt.Sprintf("%d blocks.", k))
		for i, x := range b {
			MOVOU(Mem{Base: src, Disp: 16 * i}, x)
		}
		for _, x := range b {
			PXOR(first, x)
		}
		rounds := func(disp int) {
			MOVOU(Mem{Base: p, Disp: disp}, key)
			for _, x := range b {
				o.round(key, x)
			}
		}
		// The branch depends only on the key size and is always predicted.
		CMPQ(nr, U8(12))
		JB(LabelRef(label + "_r10"))
		JE(LabelRef(label + "_r12"))
		rounds(-48)
		rounds(-32)
		Label(label + "_r12")
		rounds(-16)
		rounds(0)
		Label(label + "_r10")
		for r := 1; r <= 9; r++ {
			rounds(16 * r)
		}
		for _, x := range b {
			o.last(last, x)
		}
		for i, x := range b {
			MOVOU(x, Mem{Base: dst, Disp: 16 * i})
		}
		ADDQ(U32(16*k), src)
		ADDQ(U32(16*k), dst)
		SUBQ(U32(16*k), n)
	}

	Label(name + "_loop8")
	CMPQ(n, U32(128))
	JB(LabelRef(name + "_tail4"))
	pass(name+"_8", 8)
	JMP(LabelRef(name + "_loop8"))

	// Of the 1..7 blocks left, four go together, then one at a time: the
	// single-block latency chain is paid at most three times per call.
	Label(name + "_tail4")
	CMPQ(n, U8(64))
	JB(LabelRef(name + "_tail1"))
	pass(name+"_4", 4)

	Label(name + "_tail1")
	TESTQ(n, n)
	JZ(LabelRef(name + "_done"))
	pass(name+"_1", 1)
	JMP(LabelRef(name + "_tail1"))

	Label(name + "_done")
	RET()
}

// subWord emits subWord, the S-box applied to each byte of a key-schedule
// word, through AESKEYGENASSIST: the S-box of the AES unit takes the same
// time for every input, unlike a table lookup in memory.
func subWord() {
	TEXT("subWord", NOSPLIT, "func(w uint32) uint32")
	Doc("subWord returns w with the AES S-box applied to each of its bytes.")
	// Load zero-extends w, so the 64-bit move below copies w alone.
	w := GP32()
	Load(Param("w"), w)
	x, y := XMM(), XMM()
	MOVQ(w.As64(), x)
	// AESKEYGENASSIST puts SubWord of dword 1 of its source into dword 0 of
	// the result; broadcasting w puts it in dword 1.
	PSHUFD(U8(0), x, x)
	AESKEYGENASSIST(U8(0), x, y)
	MOVQ(y, w.As64())
	Store(w, ReturnIndex(0))
	RET()
}

// invMixColumns emits invMixColumns, which turns an encryption round key
// into the matching round key of the equivalent inverse cipher (FIPS-197
// 5.3.5).
func invMixColumns() {
	TEXT("invMixColumns", NOSPLIT, "func(dst, src *[4]uint32)")
	Doc("invMixColumns sets dst to InvMixColumns(src) with AESIMC.")
	dst := Load(Param("dst"), GP64())
	src := Load(Param("src"), GP64())
	x := XMM()
	// MOVOU first: AESIMC with a memory operand faults unless the key is
	// 16-byte aligned, which Go does not promise for the schedule.
	MOVOU(Mem{Base: src}, x)
	AESIMC(x, x)
	MOVOU(x, Mem{Base: dst})
	RET()
}
