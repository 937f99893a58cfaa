//go:build gc && !purego

package dfc

import (
	"encoding/binary"

	"golang.org/x/sys/cpu"
)

// supportsAVX2 reports whether the CPU can run the assembly multi-block
// path: AVX2 for the vector half of the round function, BMI1 and BMI2 (ANDN,
// MULX) for the scalar half.
var supportsAVX2 = cpu.X86.HasAVX2 && cpu.X86.HasBMI1 && cpu.X86.HasBMI2

// useAVX2 selects the assembly multi-block path; tests clear it to run the
// generic code on the same machine.
var useAVX2 = supportsAVX2

// supportsAVX512 reports whether the CPU can run the AVX-512 kernels:
// AVX-512F for the arithmetic, the permutes and the masked operations, DQ
// for VPMOVQ2M and the byte-wide mask logic (KANDNB), BW for VPSHUFB on ZMM
// registers. (cpu.X86.HasAVX512F is false where the OS does not save the
// ZMM state.)
var supportsAVX512 = cpu.X86.HasAVX512F && cpu.X86.HasAVX512DQ && cpu.X86.HasAVX512BW

// useAVX512 selects the AVX-512 kernels, ahead of AVX2; tests clear it to
// run the AVX2 or the generic path on the same machine.
var useAVX512 = supportsAVX512

// supportsAVX512IFMA reports whether the CPU can run the AVX-512 kernels
// that multiply with IFMA (VPMADD52LUQ, VPMADD52HUQ), which need fewer
// instructions for the product and its reduction.
var supportsAVX512IFMA = supportsAVX512 && cpu.X86.HasAVX512IFMA

// useAVX512IFMA selects the IFMA kernels, ahead of the other AVX-512 ones.
var useAVX512IFMA = supportsAVX512IFMA

// minBlocksAVX512 is the smallest call the AVX-512 kernels take: one block
// goes to the generic code whatever the CPU (see cryptBlocksAVX2). From two
// blocks on, the 8-lane AVX-512 kernels, padded like the AVX2 ones, take
// less than half the time of the 8-lane AVX2 kernel.
const minBlocksAVX512 = 2

// cryptBlocks8AVX2 and cryptBlocks16AVX2 are implemented in dfc_amd64.s,
// which the program in _asm generates (cd _asm && go generate).
//
//go:noescape
func cryptBlocks8AVX2(rk *schedule, s *[16]uint64)

//go:noescape
func cryptBlocks16AVX2(rk *schedule, s *[32]uint64)

// cryptBlocks8AVX512, cryptBlocks16AVX512 and cryptBlocks32AVX512 take the
// blocks in place in src and dst, in chunks of 8, 16 or 32 blocks, and
// ignore a shorter rest (dfc_amd64.s, from _asm/avx512.go).
//
//go:noescape
func cryptBlocks8AVX512(rk *schedule, dst, src []byte)

//go:noescape
func cryptBlocks16AVX512(rk *schedule, dst, src []byte)

//go:noescape
func cryptBlocks32AVX512(rk *schedule, dst, src []byte)

// cryptBlocks8AVX512IFMA, cryptBlocks16AVX512IFMA and cryptBlocks32AVX512IFMA
// are their counterparts that multiply with IFMA, keyed by the split rounds.
//
//go:noescape
func cryptBlocks8AVX512IFMA(rk *ifmaSchedule, dst, src []byte)

//go:noescape
func cryptBlocks16AVX512IFMA(rk *ifmaSchedule, dst, src []byte)

//go:noescape
func cryptBlocks32AVX512IFMA(rk *ifmaSchedule, dst, src []byte)

// cryptBlock stays generic: one block cannot use the lanes of the kernel.
func cryptBlock(rk *schedule, dst, src []byte) { cryptBlockGeneric(rk, dst, src) }

func cryptBlocks(rk *schedule, rx *ifmaSchedule, dst, src []byte) {
	if len(src) >= minBlocksAVX512*BlockSize {
		switch {
		case useAVX512IFMA:
			cryptBlocksAVX512(rk, rx, dst, src)
			return
		case useAVX512:
			cryptBlocksAVX512(rk, nil, dst, src)
			return
		}
	}
	if useAVX2 {
		cryptBlocksAVX2(rk, dst, src)
		return
	}
	cryptBlocksGeneric(rk, dst, src)
}

// cryptBlocksAVX2 feeds the assembly kernels sixteen blocks at a time, then
// eight. A last group of two to seven blocks runs through the kernel too,
// padded with zero blocks whose output is dropped: the kernel takes the same
// time for any number of lanes, a little more than the generic code takes
// for one block, so a single last block is left to the generic code.
func cryptBlocksAVX2(rk *schedule, dst, src []byte) {
	for len(src) >= 16*BlockSize && len(dst) >= 16*BlockSize {
		var s [32]uint64
		load(s[:16], src[:8*BlockSize])
		load(s[16:], src[8*BlockSize:16*BlockSize])
		cryptBlocks16AVX2(rk, &s)
		store(dst[:8*BlockSize], s[:16])
		store(dst[8*BlockSize:16*BlockSize], s[16:])
		src, dst = src[16*BlockSize:], dst[16*BlockSize:]
	}
	for len(src) > BlockSize {
		var buf [8 * BlockSize]byte
		n := copy(buf[:], src)
		var s [16]uint64
		load(s[:], buf[:])
		cryptBlocks8AVX2(rk, &s)
		store(buf[:], s[:])
		copy(dst, buf[:n])
		src, dst = src[n:], dst[n:]
	}
	if len(src) == BlockSize {
		cryptBlockGeneric(rk, dst, src)
	}
}

// cryptBlocksAVX512 runs the 32-block kernel over as much of src as it can
// take, then one call of the 16-block and one of the 8-block kernel, and
// pads a last group of two to seven blocks with zero blocks as
// cryptBlocksAVX2 does; a single last block goes to the generic code. The
// IFMA kernels run when rx is not nil.
func cryptBlocksAVX512(rk *schedule, rx *ifmaSchedule, dst, src []byte) {
	kernel := func(size int, dst, src []byte) {
		switch {
		case rx != nil && size == 32:
			cryptBlocks32AVX512IFMA(rx, dst, src)
		case rx != nil && size == 16:
			cryptBlocks16AVX512IFMA(rx, dst, src)
		case rx != nil:
			cryptBlocks8AVX512IFMA(rx, dst, src)
		case size == 32:
			cryptBlocks32AVX512(rk, dst, src)
		case size == 16:
			cryptBlocks16AVX512(rk, dst, src)
		default:
			cryptBlocks8AVX512(rk, dst, src)
		}
	}
	for _, size := range [...]int{32, 16, 8} {
		n := len(src) / (size * BlockSize) * (size * BlockSize)
		if n == 0 {
			continue
		}
		kernel(size, dst[:n], src[:n])
		src, dst = src[n:], dst[n:]
	}
	switch {
	case len(src) > BlockSize:
		var buf [8 * BlockSize]byte
		n := copy(buf[:], src)
		kernel(8, buf[:], buf[:])
		copy(dst, buf[:n])
	case len(src) == BlockSize:
		cryptBlockGeneric(rk, dst, src)
	}
}

// load converts eight blocks into the layout of the kernels: the eight left
// halves, then the eight right halves.
func load(s []uint64, src []byte) {
	st, in := (*[16]uint64)(s), (*[8 * BlockSize]byte)(src)
	for j := range 8 {
		st[j] = binary.BigEndian.Uint64(in[16*j:])
		st[8+j] = binary.BigEndian.Uint64(in[16*j+8:])
	}
}

// store writes eight blocks from the layout of the kernels. The halves swap:
// the output is R9|R8.
func store(dst []byte, s []uint64) {
	out, st := (*[8 * BlockSize]byte)(dst), (*[16]uint64)(s)
	for j := range 8 {
		binary.BigEndian.PutUint64(out[16*j:], st[8+j])
		binary.BigEndian.PutUint64(out[16*j+8:], st[j])
	}
}
