package csa

import "math/bits"

// Transposes between the per-lane layout (one uint64 per lane and 8-byte
// block, byte i of the block in bits 8i..8i+7) and the sliced layouts of the
// kernels. They work on integer values only, so they are correct whatever
// the byte order of the machine.

// swapMasks[j] selects the bits b with b&j == 0, for j = 1, 2, 4, ..., 32.
var swapMasks = [33]uint64{
	1:  0x5555555555555555,
	2:  0x3333333333333333,
	4:  0x0f0f0f0f0f0f0f0f,
	8:  0x00ff00ff00ff00ff,
	16: 0x0000ffff0000ffff,
	32: 0x00000000ffffffff,
}

// transposeSquare transposes the n×n bit matrix m in place, n being the
// width of W: bit l of m[k] moves to bit k of m[l]. Each step swaps the
// off-diagonal blocks of size j: the high columns of row k with the low
// columns of row k+j.
func transposeSquare[W word](m []W) {
	n := len(m)
	for j := n / 2; j > 0; j /= 2 {
		mask := W(swapMasks[j])
		for k := 0; k < n; k = (k + j + 1) &^ j {
			t := ((m[k] >> j) ^ m[k+j]) & mask
			m[k+j] ^= t
			m[k] ^= t << j
		}
	}
}

// transpose64 is transposeSquare for 64 lanes, unrolled per step so that
// every index is checked once at compile time.
func transpose64(m *[64]uint64) {
	swapStep64(m, 32, swapMasks[32])
	swapStep64(m, 16, swapMasks[16])
	swapStep64(m, 8, swapMasks[8])
	swapStep64(m, 4, swapMasks[4])
	swapStep64(m, 2, swapMasks[2])
	swapStep64(m, 1, swapMasks[1])
}

func swapStep64(m *[64]uint64, j uint, mask uint64) {
	for k := uint(0); k < 64; k = (k + j + 1) &^ j {
		a, b := &m[k&63], &m[(k+j)&63]
		t := ((*a >> j) ^ *b) & mask
		*b ^= t
		*a ^= t << j
	}
}

// laneBits is the width of W.
func laneBits[W word]() int {
	return bits.OnesCount64(uint64(^W(0)))
}

// lanesToPlanes turns the blocks v of the lanes of W (len(v) = width of W)
// into 64 bit-planes: bit l of planes[k] is bit k of v[l].
func lanesToPlanes[W word](v []uint64, planes *[64]W) {
	if p, ok := any(planes).(*[64]uint64); ok {
		copy(p[:], v[:64])
		transpose64(p)
		return
	}
	n := laneBits[W]()
	v = v[:n]
	for h := 0; h < 64; h += n {
		m := planes[h : h+n]
		for l := range m {
			m[l] = W(v[l] >> h)
		}
		transposeSquare(m)
	}
}

// planesToLanes is the inverse of lanesToPlanes; it overwrites planes.
func planesToLanes[W word](planes *[64]W, v []uint64) {
	if p, ok := any(planes).(*[64]uint64); ok {
		transpose64(p)
		copy(v[:64], p[:])
		return
	}
	n := laneBits[W]()
	v = v[:n]
	for h := 0; h < 64; h += n {
		m := planes[h : h+n]
		transposeSquare(m)
		if h == 0 {
			for l := range m {
				v[l] = uint64(m[l])
			}
		} else {
			for l := range m {
				v[l] |= uint64(m[l]) << h
			}
		}
	}
}

// transposeBytes8 transposes the 8×8 byte matrix m in place: byte j of
// m[i] moves to byte i of m[j]. It turns the blocks of eight lanes into the
// byte-sliced rows of the block cipher and back.
func transposeBytes8(m *[8]uint64) {
	// The three swap steps of transposeSquare, on bytes and unrolled: the
	// loop form kept the masks and pair indexes out of registers.
	swap := func(a, b *uint64, shift uint, mask uint64) {
		t := (*a>>shift ^ *b) & mask
		*b ^= t
		*a ^= t << shift
	}
	const m32, m16, m8 = 0x00000000ffffffff, 0x0000ffff0000ffff, 0x00ff00ff00ff00ff
	swap(&m[0], &m[4], 32, m32)
	swap(&m[1], &m[5], 32, m32)
	swap(&m[2], &m[6], 32, m32)
	swap(&m[3], &m[7], 32, m32)
	swap(&m[0], &m[2], 16, m16)
	swap(&m[1], &m[3], 16, m16)
	swap(&m[4], &m[6], 16, m16)
	swap(&m[5], &m[7], 16, m16)
	swap(&m[0], &m[1], 8, m8)
	swap(&m[2], &m[3], 8, m8)
	swap(&m[4], &m[5], 8, m8)
	swap(&m[6], &m[7], 8, m8)
}
