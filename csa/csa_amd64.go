//go:build amd64 && gc && !purego

package csa

import (
	"encoding/binary"
	"fmt"
	"sync"
	"time"

	"golang.org/x/sys/cpu"
)

// useAVX2 selects the AVX2 kernels for 128 and 256 lanes, and useAVX512 the
// AVX-512 block and stream ciphers instead; tests clear them to check the
// dispatch.
var (
	useAVX2   = cpuHasAVX2()
	useAVX512 = cpuHasAVX512()
)

// cpuHasAVX2 reports whether the CPU and the operating system support AVX2.
func cpuHasAVX2() bool { return cpu.X86.HasAVX2 }

// cpuHasAVX512 reports whether the CPU and the operating system support the
// AVX-512 subsets of the AVX-512 kernels: F, BW and VBMI for the block
// cipher, VL for the stream cipher on YMM registers (x/sys/cpu clears them
// when the operating system does not save the ZMM state).
func cpuHasAVX512() bool {
	x := &cpu.X86
	return x.HasAVX2 && x.HasAVX512F && x.HasAVX512BW && x.HasAVX512VL && x.HasAVX512VBMI
}

// stream256 is the stream cipher state of 256 lanes for the AVX2 and
// AVX-512 kernels, one 32-byte bit-plane per element. Its layout is fixed
// by the generator (csa/_asm/asm.go): rings A and B of 42 nibbles, then X,
// Y, Z, D, E, F and p, q, r.
type stream256 [stream256Len][4]uint64

const (
	stream256Ring = 42
	stream256B    = stream256Ring * 4
	stream256Len  = 2*stream256Ring*4 + 6*4 + 3
)

// avx2Tables holds the constants of the AVX2 block cipher S-box (see
// blockKernel in csa/_asm/asm.go), each row 32 bytes: 16 telescoped S-box
// nibble tables, 16 subtrahends, the bit permutation of the low and of the
// high nibble, the 0x0f mask, and the two VPSHUFB masks that turn two
// 8-byte blocks into eight byte pairs and back; then swapMasks 1, 2, 4, 8,
// 16 and 32 for the bit transposes; then the 16 rows of the S-box (row i:
// the entries of high nibble i) for the blend-tree S-box (sboxBlendAVX2).
type avx2Tables [59][32]byte

var avx2Tab = func() (t avx2Tables) {
	for i := range 16 {
		for lo := range 16 {
			v := blockSbox[16*i+lo]
			if i != 0 && i != 8 {
				v ^= blockSbox[16*(i-1)+lo]
			}
			t[i][lo], t[i][16+lo] = v, v
		}
		for j := range 32 {
			t[16+i][j] = byte(16 * i)
		}
	}
	for n := range 16 {
		t[32][n], t[32][16+n] = blockPerm(byte(n)), blockPerm(byte(n))
		t[33][n], t[33][16+n] = blockPerm(byte(n<<4)), blockPerm(byte(n<<4))
	}
	for j := range 32 {
		t[34][j] = 0x0f
	}
	for half := 0; half < 32; half += 16 {
		for j := range 8 {
			for m := range 2 {
				t[35][half+2*j+m] = byte(8*m + j)
				t[36][half+8*m+j] = byte(2*j + m)
			}
		}
	}
	for i, j := range []int{1, 2, 4, 8, 16, 32} {
		for q := range 4 {
			binary.LittleEndian.PutUint64(t[37+i][8*q:], swapMasks[j])
		}
	}
	for i := range 16 {
		for lo := range 16 {
			t[43+i][lo], t[43+i][16+lo] = blockSbox[16*i+lo], blockSbox[16*i+lo]
		}
	}
	return t
}()

// vbmiTables holds the constants of the AVX-512 VBMI block cipher (see
// blockKernelVBMI in csa/_asm/asm.go), each row 64 bytes: the S-box, the
// S-box followed by the bit permutation, the VPERMB index of an 8×8 byte
// transpose, and the VPERMI2Q indexes of two steps of an 8×8 transpose of
// 64-bit words.
type vbmiTables [13][64]byte

var vbmiTab = func() (t vbmiTables) {
	for x := range 256 {
		s := blockSbox[x]
		t[x/64][x%64] = s
		t[4+x/64][x%64] = blockPerm(s)
	}
	for j := range 8 {
		for i := range 8 {
			t[8][8*j+i] = byte(8*i + j)
		}
	}
	// Step b swaps word p of register k+b (p with bit b clear) with word
	// p+b of register k; VPERMI2Q indexes 8 and up name the second register.
	for step, b := range []int{2, 4} {
		for p := range 8 {
			lo, hi := p, p^b
			if p&b != 0 {
				lo, hi = 8+(p^b), 8+p
			}
			t[9+2*step][8*p] = byte(lo)
			t[10+2*step][8*p] = byte(hi)
		}
	}
	return t
}()

//go:noescape
func blockDecryptVBMI(in, out *[256]uint64, kb *[56]uint64, tab *vbmiTables, pairs int)

//go:noescape
func blockEncryptVBMI(in, out *[256]uint64, kb *[56]uint64, tab *vbmiTables, pairs int)

//go:noescape
func streamInitAVX512(s *stream256, iv *[64][4]uint64)

//go:noescape
func streamGenAVX512(s *stream256, out *[64][4]uint64)

//go:noescape
func streamInitAVX2(s *stream256, iv *[64][4]uint64)

//go:noescape
func streamGenAVX2(s *stream256, out *[64][4]uint64)

//go:noescape
func lanesToPlanesAVX2(col *[256]uint64, planes *[64][4]uint64, tab *avx2Tables)

//go:noescape
func planesToLanesXorAVX2(planes *[64][4]uint64, col *[256]uint64, tab *avx2Tables)

//go:noescape
func lanesToPlanesDirectAVX2(ptrs *[256]uintptr, off int, col *[256]uint64, planes *[64][4]uint64, tab *avx2Tables)

//go:noescape
func planesToLanesXorDirectAVX2(planes *[64][4]uint64, ptrs *[256]uintptr, off int, col *[256]uint64, tab *avx2Tables)

//go:noescape
func storeDecryptedAVX2(out, next *[256]uint64, full *[256]uint8, ptrs *[256]uintptr, c int, quads int)

//go:noescape
func chainToEncryptAVX2(ptrs *[256]uintptr, next *[256]uint64, full *[256]uint8, c int, col, in *[256]uint64, quads int)

//go:noescape
func mergeEncryptedAVX2(out *[256]uint64, full *[256]uint8, c int, col *[256]uint64, quads int)

//go:noescape
func storeColumnAVX2(col *[256]uint64, ptrs *[256]uintptr, c int, quads int)

//go:noescape
func blockDecryptAVX2(in, out *[256]uint64, kb *[56]uint64, tab *avx2Tables, pairs int)

//go:noescape
func blockEncryptAVX2(in, out *[256]uint64, kb *[56]uint64, tab *avx2Tables, pairs int)

//go:noescape
func blockDecryptAVX2Blend(in, out *[256]uint64, kb *[56]uint64, tab *avx2Tables, quads int)

//go:noescape
func blockEncryptAVX2Blend(in, out *[256]uint64, kb *[56]uint64, tab *avx2Tables, quads int)

// The AVX2 block cipher has two S-box methods (csa/_asm/asm.go): 16
// VPSHUFB lookups of telescoped nibble tables XORed together, or 16
// VPSHUFB lookups of the S-box rows joined by 15 VPBLENDVB. Which is faster
// depends on the CPU (VPBLENDVB is one µop on AMD Zen, two or three on
// Intel cores), so the AVX2 kernel measures both on first use and keeps
// the faster for the process.
const (
	sboxNibble = iota
	sboxBlend
)

var sboxNames = [...]string{sboxNibble: "nibble tables", sboxBlend: "blend tree"}

// avx2BlockDecrypt and avx2BlockEncrypt run the AVX2 block cipher with an
// S-box method on the first n lanes of in: the nibble-table kernels 64 at
// a time (two groups of 32 lanes interleaved), the blend-tree kernels 128
// (four groups), so up to 127 lanes past n are computed too.
func avx2BlockDecrypt(method int, in, out *[256]uint64, kb *[56]uint64, n int) {
	if method == sboxBlend {
		blockDecryptAVX2Blend(in, out, kb, &avx2Tab, (n+127)/128)
	} else {
		blockDecryptAVX2(in, out, kb, &avx2Tab, (n+63)/64)
	}
}

func avx2BlockEncrypt(method int, in, out *[256]uint64, kb *[56]uint64, n int) {
	if method == sboxBlend {
		blockEncryptAVX2Blend(in, out, kb, &avx2Tab, (n+127)/128)
	} else {
		blockEncryptAVX2(in, out, kb, &avx2Tab, (n+63)/64)
	}
}

// sboxChoice is the S-box method the AVX2 kernel runs on this CPU, and why.
type sboxChoice struct {
	method int
	why    string
}

// avx2Sbox measures the S-box methods once per process, on first use.
var avx2Sbox = sync.OnceValue(func() sboxChoice { return chooseSbox(measureSbox) })

// measureSbox returns the time of 32 block cipher calls on a synthetic
// column of 256 lanes with an S-box method: about 0.1 ms.
func measureSbox(method int) time.Duration {
	var in, out [256]uint64
	for l := range in {
		in[l] = uint64(l) * 0x9e3779b97f4a7c15
	}
	k, _ := NewKey([]byte{0x11, 0x22, 0x33, 0x66, 0x44, 0x55, 0x66, 0xff})
	start := time.Now()
	for range 32 {
		avx2BlockDecrypt(method, &in, &out, &k.bsBlock, 256)
		in[0] ^= out[255] // a dependency between calls
	}
	return time.Since(start)
}

// chooseSbox times each method with measure, alternately, a few times,
// and keeps the fastest time of each, which is the least disturbed by
// whatever else the machine runs; ties keep the nibble tables.
func chooseSbox(measure func(method int) time.Duration) sboxChoice {
	best := [len(sboxNames)]time.Duration{}
	for trial := range 7 {
		for m := range best {
			if d := measure(m); trial == 0 || d < best[m] {
				best[m] = d
			}
		}
	}
	c := sboxChoice{method: sboxNibble}
	if best[sboxBlend] < best[sboxNibble] {
		c.method = sboxBlend
	}
	other := 1 - c.method
	c.why = fmt.Sprintf("block S-box: %s, measured %.2f× as fast as the %s on this CPU",
		sboxNames[c.method], float64(best[other])/float64(best[c.method]), sboxNames[other])
	return c
}

// ymmKernel holds the functions common to the AVX2 and AVX-512 kernels:
// the stream cipher state of 256 lanes, one YMM bit-plane per state bit,
// and the transposes between lanes and planes. The two kernels differ in
// their stream rounds and block ciphers.
type ymmKernel struct {
	st     stream256
	planes [64][4]uint64
}

// wipe zeroes the stream state and planes, which hold the key and
// keystream of the last batch; the block ciphers keep nothing between
// calls but their output.
func (x *ymmKernel) wipe() { *x = ymmKernel{} }

// reset loads the key into the stream state: A1..A8 and B1..B8 from the
// control word, every other bit zero.
func (x *ymmKernel) reset(k *Key) {
	x.st = stream256{}
	for n := range 8 {
		for bit := range 4 {
			a, b := k.bsStream[4*n+bit], k.bsStream[32+4*n+bit]
			x.st[(ringTop+n)*4+bit] = [4]uint64{a, a, a, a}
			x.st[stream256B+(ringTop+n)*4+bit] = [4]uint64{b, b, b, b}
		}
	}
}

// The column functions of directFuncs, shared by the AVX2 and AVX-512
// kernels, run four lanes at a time.

func (x *ymmKernel) storeDecrypted(out, next []uint64, full []uint8, ptrs []uintptr, c, n int) {
	storeDecryptedAVX2((*[256]uint64)(out), (*[256]uint64)(next), (*[256]uint8)(full), (*[256]uintptr)(ptrs), c, (n+3)/4)
}

func (x *ymmKernel) chainToEncrypt(ptrs []uintptr, next []uint64, full []uint8, c int, col, in []uint64, n int) {
	chainToEncryptAVX2((*[256]uintptr)(ptrs), (*[256]uint64)(next), (*[256]uint8)(full), c, (*[256]uint64)(col), (*[256]uint64)(in), (n+3)/4)
}

func (x *ymmKernel) mergeEncrypted(out []uint64, full []uint8, c int, col []uint64, n int) {
	mergeEncryptedAVX2((*[256]uint64)(out), (*[256]uint8)(full), c, (*[256]uint64)(col), (n+3)/4)
}

func (x *ymmKernel) storeColumn(col []uint64, ptrs []uintptr, c, n int) {
	storeColumnAVX2((*[256]uint64)(col), (*[256]uintptr)(ptrs), c, (n+3)/4)
}

// avx2Kernel is the AVX2 kernel: 256 lanes per stream cipher pass, 32
// lanes per YMM register in the block cipher, whose S-box method is
// chosen per CPU (avx2Sbox).
type avx2Kernel struct {
	ymmKernel
	sbox int
}

func newAVX2Kernel(int) kernelFuncs { return &avx2Kernel{sbox: avx2Sbox().method} }

func (x *avx2Kernel) streamInit(k *Key, iv []uint64) {
	x.reset(k)
	lanesToPlanesAVX2((*[256]uint64)(iv), &x.planes, &avx2Tab)
	streamInitAVX2(&x.st, &x.planes)
}

func (x *avx2Kernel) streamXOR(col []uint64) {
	streamGenAVX2(&x.st, &x.planes)
	planesToLanesXorAVX2(&x.planes, (*[256]uint64)(col), &avx2Tab)
}

func (x *avx2Kernel) streamInitFrom(k *Key, ptrs []uintptr, iv []uint64) {
	x.reset(k)
	lanesToPlanesDirectAVX2((*[256]uintptr)(ptrs), 0, (*[256]uint64)(iv), &x.planes, &avx2Tab)
	streamInitAVX2(&x.st, &x.planes)
}

func (x *avx2Kernel) streamXORFrom(ptrs []uintptr, off int, col []uint64) {
	streamGenAVX2(&x.st, &x.planes)
	planesToLanesXorDirectAVX2(&x.planes, (*[256]uintptr)(ptrs), off, (*[256]uint64)(col), &avx2Tab)
}

func (x *avx2Kernel) blockDecrypt(k *Key, in, out []uint64, n int) {
	avx2BlockDecrypt(x.sbox, (*[256]uint64)(in), (*[256]uint64)(out), &k.bsBlock, n)
}

func (x *avx2Kernel) blockEncrypt(k *Key, in, out []uint64, n int) {
	avx2BlockEncrypt(x.sbox, (*[256]uint64)(in), (*[256]uint64)(out), &k.bsBlock, n)
}

// avx512Kernel is the AVX-512 kernel: the stream cipher on YMM registers
// with AVX-512VL ternary logic, the block cipher 64 lanes per ZMM register
// with VBMI byte permutes, two registers at a time.
type avx512Kernel struct{ ymmKernel }

func newAVX512Kernel(int) kernelFuncs { return new(avx512Kernel) }

func (x *avx512Kernel) streamInit(k *Key, iv []uint64) {
	x.reset(k)
	lanesToPlanesAVX2((*[256]uint64)(iv), &x.planes, &avx2Tab)
	streamInitAVX512(&x.st, &x.planes)
}

func (x *avx512Kernel) streamXOR(col []uint64) {
	streamGenAVX512(&x.st, &x.planes)
	planesToLanesXorAVX2(&x.planes, (*[256]uint64)(col), &avx2Tab)
}

func (x *avx512Kernel) streamInitFrom(k *Key, ptrs []uintptr, iv []uint64) {
	x.reset(k)
	lanesToPlanesDirectAVX2((*[256]uintptr)(ptrs), 0, (*[256]uint64)(iv), &x.planes, &avx2Tab)
	streamInitAVX512(&x.st, &x.planes)
}

func (x *avx512Kernel) streamXORFrom(ptrs []uintptr, off int, col []uint64) {
	streamGenAVX512(&x.st, &x.planes)
	planesToLanesXorDirectAVX2(&x.planes, (*[256]uintptr)(ptrs), off, (*[256]uint64)(col), &avx2Tab)
}

func (x *avx512Kernel) blockDecrypt(k *Key, in, out []uint64, n int) {
	blockDecryptVBMI((*[256]uint64)(in), (*[256]uint64)(out), &k.bsBlock, &vbmiTab, (n+127)/128)
}

func (x *avx512Kernel) blockEncrypt(k *Key, in, out []uint64, n int) {
	blockEncryptVBMI((*[256]uint64)(in), (*[256]uint64)(out), &k.bsBlock, &vbmiTab, (n+127)/128)
}

// The SIMD kernels serve 128 and 256 lanes. At 128 lanes they run half
// full: the stream cipher costs the same as at 256, the block cipher half.
// That is still far faster per payload than the portable kernel.
func init() {
	avx2 := func() bool { return useAVX2 }
	avx512 := func() bool { return useAVX2 && useAVX512 }
	choice := func() string { return avx2Sbox().why }
	register(&kernel{id: "avx2_128", name: "AVX2", lanes: 128, word: 256, rank: 2, supported: avx2, newFuncs: newAVX2Kernel, choice: choice})
	register(&kernel{id: "avx2_256", name: "AVX2", lanes: 256, word: 256, rank: 3, supported: avx2, newFuncs: newAVX2Kernel, choice: choice})
	register(&kernel{id: "avx512vbmi_128", name: "AVX-512", lanes: 128, word: 256, rank: 4, supported: avx512, newFuncs: newAVX512Kernel})
	register(&kernel{id: "avx512vbmi_256", name: "AVX-512", lanes: 256, word: 256, rank: 5, supported: avx512, newFuncs: newAVX512Kernel})
}
