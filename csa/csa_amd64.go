//go:build amd64 && gc && !purego

package csa

import (
	"encoding/binary"

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

// avx2Stream is the stream cipher state of 256 lanes for the AVX2 kernels,
// one 32-byte bit-plane per element. Its layout is fixed by the generator
// (csa/_asm/asm.go): rings A and B of 42 nibbles, then X, Y, Z, D, E, F
// and p, q, r.
type avx2Stream [avx2StreamLen][4]uint64

const (
	avx2RingLen   = 42
	avx2StateB    = avx2RingLen * 4
	avx2StreamLen = 2*avx2RingLen*4 + 6*4 + 3
)

// avx2Tables holds the constants of the AVX2 block cipher S-box (see
// blockKernel in csa/_asm/asm.go), each row 32 bytes: 16 telescoped S-box
// nibble tables, 16 subtrahends, the bit permutation of the low and of the
// high nibble, the 0x0f mask, and the two VPSHUFB masks that turn two
// 8-byte blocks into eight byte pairs and back; then swapMasks 1, 2, 4, 8,
// 16 and 32 for the bit transposes.
type avx2Tables [43][32]byte

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
func streamInitAVX512(s *avx2Stream, iv *[64][4]uint64)

//go:noescape
func streamGenAVX512(s *avx2Stream, out *[64][4]uint64)

//go:noescape
func streamInitAVX2(s *avx2Stream, iv *[64][4]uint64)

//go:noescape
func streamGenAVX2(s *avx2Stream, out *[64][4]uint64)

//go:noescape
func lanesToPlanesAVX2(col *[256]uint64, planes *[64][4]uint64, tab *avx2Tables)

//go:noescape
func planesToLanesXorAVX2(planes *[64][4]uint64, col *[256]uint64, tab *avx2Tables)

//go:noescape
func blockDecryptAVX2(in, out *[256]uint64, kb *[56]uint64, tab *avx2Tables, groups int)

//go:noescape
func blockEncryptAVX2(in, out *[256]uint64, kb *[56]uint64, tab *avx2Tables, groups int)

// asmEngine runs up to 256 lanes with the AVX2 kernels.
type asmEngine struct {
	st     avx2Stream
	planes [64][4]uint64
	in     [256]uint64
	out    [256]uint64
}

// streamXOR initialises the stream cipher of every lane with its column 0
// and XORs the keystream into columns 1 and up.
func (e *asmEngine) streamXOR(k *Key, b *batch, avx512 bool) {
	e.st = avx2Stream{}
	for n := range 8 {
		for bit := range 4 {
			e.st[(ringTop+n)*4+bit] = [4]uint64{
				k.bsStream[4*n+bit], k.bsStream[4*n+bit], k.bsStream[4*n+bit], k.bsStream[4*n+bit],
			}
			e.st[avx2StateB+(ringTop+n)*4+bit] = [4]uint64{
				k.bsStream[32+4*n+bit], k.bsStream[32+4*n+bit], k.bsStream[32+4*n+bit], k.bsStream[32+4*n+bit],
			}
		}
	}
	lanesToPlanesAVX2(&b.blocks[0], &e.planes, &avx2Tab)
	if avx512 {
		streamInitAVX512(&e.st, &e.planes)
	} else {
		streamInitAVX2(&e.st, &e.planes)
	}
	for c := 1; c < b.cols; c++ {
		if avx512 {
			streamGenAVX512(&e.st, &e.planes)
		} else {
			streamGenAVX2(&e.st, &e.planes)
		}
		planesToLanesXorAVX2(&e.planes, &b.blocks[c], &avx2Tab)
	}
}

// decrypt descrambles the lanes of b: stream cipher first, then the block
// cipher column by column, 32 lanes per YMM register, or 64 per ZMM
// register with avx512. It writes the payloads itself: the full blocks
// column by column, then the residues.
func (e *asmEngine) decrypt(k *Key, b *batch, avx512 bool) {
	e.streamXOR(k, b, avx512)
	for c := range b.maxFull {
		if avx512 {
			blockDecryptVBMI(&b.blocks[c], &e.out, &k.bsBlock, &vbmiTab, (b.n+127)/128)
		} else {
			blockDecryptAVX2(&b.blocks[c], &e.out, &k.bsBlock, &avx2Tab, (b.n+31)/32)
		}
		b.storeDecrypted(c, &e.out)
	}
	b.storeResidues()
}

// encrypt scrambles the lanes of b: the block cipher from the last column
// to the first, then the stream cipher.
func (e *asmEngine) encrypt(k *Key, b *batch, avx512 bool) {
	for c := b.maxFull - 1; c >= 0; c-- {
		b.chainToEncrypt(c, &e.in)
		if avx512 {
			blockEncryptVBMI(&e.in, &e.out, &k.bsBlock, &vbmiTab, (b.n+127)/128)
		} else {
			blockEncryptAVX2(&e.in, &e.out, &k.bsBlock, &avx2Tab, (b.n+31)/32)
		}
		b.storeEncrypted(c, &e.out)
	}
	e.streamXOR(k, b, avx512)
}

// bestLanes is the default width: 256 lanes with AVX2, else the fastest
// portable kernel per payload.
func bestLanes() int {
	if useAVX2 {
		return 256
	}
	return 64
}

// implFor picks the kernel for a lane count.
func implFor(lanes int) (engineImpl, bool) {
	switch lanes {
	case 32:
		return implGeneric32, true
	case 128, 256:
		// At 128 lanes the AVX2 kernels run half full: the stream cipher
		// costs the same as at 256, the block cipher half. That is still
		// far faster per payload than the portable kernel.
		if useAVX2 && useAVX512 {
			return implAVX512, true
		}
		if useAVX2 {
			return implAVX2, true
		}
		return implGeneric64, true
	case 64:
		return implGeneric64, true
	}
	return 0, false
}
