package serpent

// The eight Serpent S-boxes and their inverses as bitsliced boolean
// sequences: bit j of a, b, c and d (a is the least significant) forms the
// 4-bit input of the j-th S-box application, so one call substitutes 32
// nibbles with no table lookup and no data-dependent branch.
//
// The instruction sequences are those published by Dag Arne Osvik in
// "Speeding up Serpent" (Third AES Candidate Conference, 2000), in the
// operation order of randombit/botan src/lib/block/serpent/serpent_sbox.h
// (SBoxE0..E7, SBoxD0..D7). Each uses one temporary t and leaves its result
// in a permutation of the five variables; the return statement undoes that
// permutation, which costs nothing once inlined.
//
// These functions are the single source of the sequences: the assembly
// generator in _asm parses this file and translates each statement into a
// vector instruction, so every statement must keep one of the forms
// x op= y (op in ^ & |), x = ^x, x = y, t := y, and the final return must
// name four distinct variables.

func sb0(a, b, c, d uint32) (uint32, uint32, uint32, uint32) {
	d ^= a
	t := b
	b &= d
	t ^= c
	b ^= a
	a |= d
	a ^= t
	t ^= d
	d ^= c
	c |= b
	c ^= t
	t = ^t
	t |= b
	b ^= d
	b ^= t
	d |= a
	b ^= d
	t ^= d
	return b, t, c, a
}

func sb1(a, b, c, d uint32) (uint32, uint32, uint32, uint32) {
	a = ^a
	c = ^c
	t := a
	a &= b
	c ^= a
	a |= d
	d ^= c
	b ^= a
	a ^= t
	t |= b
	b ^= d
	c |= a
	c &= t
	a ^= b
	b &= c
	b ^= a
	a &= c
	t ^= a
	return c, t, d, b
}

func sb2(a, b, c, d uint32) (uint32, uint32, uint32, uint32) {
	t := a
	a &= c
	a ^= d
	c ^= b
	c ^= a
	d |= t
	d ^= b
	t ^= c
	b = d
	d |= t
	d ^= a
	a &= b
	t ^= a
	b ^= d
	b ^= t
	t = ^t
	return c, d, b, t
}

func sb3(a, b, c, d uint32) (uint32, uint32, uint32, uint32) {
	t := a
	a |= d
	d ^= b
	b &= t
	t ^= c
	c ^= d
	d &= a
	t |= b
	d ^= t
	a ^= b
	t &= a
	b ^= d
	t ^= c
	b |= a
	b ^= c
	a ^= d
	c = b
	c |= d
	a ^= c
	return a, b, d, t
}

func sb4(a, b, c, d uint32) (uint32, uint32, uint32, uint32) {
	b ^= d
	d = ^d
	c ^= d
	d ^= a
	t := b
	b &= d
	b ^= c
	t ^= d
	a ^= t
	c &= t
	c ^= a
	a &= b
	d ^= a
	t |= b
	t ^= a
	a |= d
	a ^= c
	c &= d
	a = ^a
	t ^= c
	return b, t, a, d
}

func sb5(a, b, c, d uint32) (uint32, uint32, uint32, uint32) {
	a ^= b
	b ^= d
	d = ^d
	t := b
	b &= a
	c ^= d
	b ^= c
	c |= t
	t ^= d
	d &= b
	d ^= a
	t ^= b
	t ^= c
	c ^= a
	a &= d
	c = ^c
	a ^= t
	t |= d
	t ^= c
	return b, d, a, t
}

func sb6(a, b, c, d uint32) (uint32, uint32, uint32, uint32) {
	c = ^c
	t := d
	d &= a
	a ^= t
	d ^= c
	c |= t
	b ^= d
	c ^= a
	a |= b
	c ^= b
	t ^= a
	a |= d
	a ^= c
	t ^= d
	t ^= a
	d = ^d
	c &= t
	d ^= c
	return a, b, t, d
}

func sb7(a, b, c, d uint32) (uint32, uint32, uint32, uint32) {
	t := b
	b |= c
	b ^= d
	t ^= c
	c ^= b
	d |= t
	d &= a
	t ^= c
	d ^= b
	b |= t
	b ^= a
	a |= t
	a ^= c
	b ^= t
	c ^= b
	b &= a
	b ^= t
	c = ^c
	c |= a
	t ^= c
	return t, d, b, a
}

func sb0Inv(a, b, c, d uint32) (uint32, uint32, uint32, uint32) {
	c = ^c
	t := b
	b |= a
	t = ^t
	b ^= c
	c |= t
	b ^= d
	a ^= t
	c ^= a
	a &= d
	t ^= a
	a |= b
	a ^= c
	d ^= t
	c ^= b
	d ^= a
	d ^= b
	c &= d
	t ^= c
	return a, t, b, d
}

func sb1Inv(a, b, c, d uint32) (uint32, uint32, uint32, uint32) {
	t := b
	b ^= d
	d &= b
	t ^= c
	d ^= a
	a |= b
	c ^= d
	a ^= t
	a |= c
	b ^= d
	a ^= b
	b |= d
	b ^= a
	t = ^t
	t ^= b
	b |= a
	b ^= a
	b |= t
	d ^= b
	return t, a, d, c
}

func sb2Inv(a, b, c, d uint32) (uint32, uint32, uint32, uint32) {
	c ^= d
	d ^= a
	t := d
	d &= c
	d ^= b
	b |= c
	b ^= t
	t &= d
	c ^= d
	t &= a
	t ^= c
	c &= b
	c |= a
	d = ^d
	c ^= d
	a ^= d
	a &= b
	d ^= t
	d ^= a
	return b, t, c, d
}

func sb3Inv(a, b, c, d uint32) (uint32, uint32, uint32, uint32) {
	t := c
	c ^= b
	a ^= c
	t &= c
	t ^= a
	a &= b
	b ^= d
	d |= t
	c ^= d
	a ^= d
	b ^= t
	d &= c
	d ^= b
	b ^= a
	b |= c
	a ^= d
	b ^= t
	a ^= b
	return c, b, d, a
}

func sb4Inv(a, b, c, d uint32) (uint32, uint32, uint32, uint32) {
	t := c
	c &= d
	c ^= b
	b |= d
	b &= a
	t ^= c
	t ^= b
	b &= c
	a = ^a
	d ^= t
	b ^= d
	d &= a
	d ^= c
	a ^= b
	c &= a
	d ^= a
	c ^= t
	c |= d
	d ^= a
	c ^= b
	return a, d, c, t
}

func sb5Inv(a, b, c, d uint32) (uint32, uint32, uint32, uint32) {
	b = ^b
	t := d
	c ^= b
	d |= a
	d ^= c
	c |= b
	c &= a
	t ^= d
	c ^= t
	t |= a
	t ^= b
	b &= c
	b ^= d
	t ^= c
	d &= t
	t ^= b
	d ^= t
	t = ^t
	d ^= a
	return b, t, d, c
}

func sb6Inv(a, b, c, d uint32) (uint32, uint32, uint32, uint32) {
	a ^= c
	t := c
	c &= a
	t ^= d
	c = ^c
	d ^= b
	c ^= d
	t |= a
	a ^= c
	d ^= t
	t ^= b
	b &= d
	b ^= a
	a ^= d
	a |= c
	d ^= b
	t ^= a
	return b, c, t, d
}

func sb7Inv(a, b, c, d uint32) (uint32, uint32, uint32, uint32) {
	t := c
	c ^= a
	a &= d
	t |= d
	c = ^c
	d ^= b
	b |= a
	a ^= c
	c &= t
	d &= t
	b ^= c
	c ^= a
	a |= c
	t ^= b
	a ^= d
	d ^= t
	t |= a
	d ^= c
	t ^= c
	return d, a, b, t
}
