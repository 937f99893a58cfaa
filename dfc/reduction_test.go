package dfc

import (
	"bytes"
	"encoding/binary"
	"math/big"
	"math/bits"
	"math/rand/v2"
	"testing"
)

// The reduction modulo p = 2^64+13 in mulAddMod (and in the assembly) sees
// v = a*x + b as hi*2^64 + lo and computes t = lo - ml + 13*mh, where
// mh*2^64 + ml = 13*hi. It then adds p (t < 0), subtracts p (t >= p), keeps
// a residue in 2^64..p-1 that wraps to 0..12, or changes nothing. The middle
// two cases need lo - ml within 156 of 2^64 and happen about once in 2^60
// random inputs, so the tests aim at them.

var (
	two64 = new(big.Int).Lsh(big.NewInt(1), 64)
	bigP  = new(big.Int).Add(two64, big.NewInt(13))
)

// The cases, as reductionCase names them. The last is t in 0..2^64-1 reached
// with both a borrow from lo - ml and a carry from adding 13*mh, which the
// masks must also get right.
var reductionCases = []string{"add p", "subtract p", "residue above 2^64", "none", "none after borrow and carry"}

// reductionCase classifies v = a*x + b (v < 2^128) by the correction the
// reduction makes, computed with math/big from the definition above.
func reductionCase(v *big.Int) string {
	hi, lo := new(big.Int).QuoRem(v, two64, new(big.Int))
	mh, ml := new(big.Int).QuoRem(new(big.Int).Mul(hi, big.NewInt(13)), two64, new(big.Int))
	t := new(big.Int).Sub(lo, ml)
	t.Add(t, new(big.Int).Mul(mh, big.NewInt(13)))
	switch {
	case t.Sign() < 0:
		return "add p"
	case t.Cmp(bigP) >= 0:
		return "subtract p"
	case t.Cmp(two64) >= 0:
		return "residue above 2^64"
	case lo.Cmp(ml) < 0: // 0 <= t < 2^64 after a borrow: adding 13*mh carried
		return "none after borrow and carry"
	}
	return "none"
}

// reductionTargets returns values v < 2^127 for every case: for m = 1..12,
// hi = ceil(m*2^64/13) makes ml = 13*hi - m*2^64 tiny and mh = m, and lo
// just below 2^64 then pushes t past 2^64 or past p. Values next to
// multiples of p and to 2^64 are added for the other cases.
func reductionTargets() []*big.Int {
	var vs []*big.Int
	for m := int64(1); m <= 12; m++ {
		hi := new(big.Int).Mul(big.NewInt(m), two64)
		hi.Add(hi, big.NewInt(12))
		hi.Quo(hi, big.NewInt(13))
		ml := new(big.Int).Sub(new(big.Int).Mul(hi, big.NewInt(13)), new(big.Int).Mul(big.NewInt(m), two64))
		// lo = 2^64 - 13m + ml + d gives t = 2^64 + d.
		for d := int64(-2); d < 13*m; d++ {
			lo := new(big.Int).Sub(two64, big.NewInt(13*m-d))
			lo.Add(lo, ml)
			if lo.Sign() < 0 || lo.Cmp(two64) >= 0 {
				continue
			}
			vs = append(vs, new(big.Int).Add(new(big.Int).Lsh(hi, 64), lo))
		}
	}
	for _, k := range []uint64{1, 2, 1 << 20, 1<<62 + 12345} {
		base := new(big.Int).Mul(new(big.Int).SetUint64(k), bigP)
		for _, d := range []int64{-14, -13, -1, 0, 1, 12, 13, 14} {
			vs = append(vs, new(big.Int).Add(base, big.NewInt(d)), new(big.Int).Add(base, new(big.Int).Add(two64, big.NewInt(d))))
		}
	}
	return vs
}

// aimAt returns a, x and b with a*x + b = v: with a >= 2^63 above v>>64,
// x = v/a and b = v mod a fit in 64 bits.
func aimAt(rng *rand.Rand, v *big.Int) (a, x, b uint64) {
	hi := new(big.Int).Rsh(v, 64).Uint64()
	for a <= hi || a < 1<<63 {
		a = rng.Uint64() | 1<<63
	}
	q, r := new(big.Int).QuoRem(v, new(big.Int).SetUint64(a), new(big.Int))
	return a, q.Uint64(), r.Uint64()
}

func TestReductionTargets(t *testing.T) {
	seen := map[string]int{}
	for _, v := range reductionTargets() {
		seen[reductionCase(v)]++
	}
	for _, c := range reductionCases {
		if seen[c] == 0 {
			t.Errorf("no target for the case %q", c)
		}
	}
	t.Logf("targets per case: %v", seen)
}

// aimLayout places the aimed block: position pos of an input of blocks
// blocks.
type aimLayout struct{ blocks, pos int }

// aimLayouts returns every position in inputs of 32 blocks (the 32-lane
// AVX-512 kernels), 16 blocks (the 16-lane kernels), 8 blocks (the 8-lane
// kernels) and 3 blocks (a padded group).
func aimLayouts() []aimLayout {
	var layouts []aimLayout
	for _, n := range []int{32, 16, 8, 3} {
		for pos := range n {
			layouts = append(layouts, aimLayout{n, pos})
		}
	}
	return layouts
}

// aimedBlocksAgree builds a cipher with random round keys but (a, b) in the
// given round (0 or 1) and random blocks but one, which meets RF_(a,b) with
// input x in that round, and reports whether EncryptBlocks agrees with the
// single-block code on all of them.
func aimedBlocksAgree(rng *rand.Rand, a, x, b uint64, round int, lay aimLayout) bool {
	var c Cipher
	for r := range c.enc {
		c.enc[r] = [2]uint64{rng.Uint64(), rng.Uint64()}
	}
	c.enc[round] = [2]uint64{a, b}
	splitIFMA(&c.enc, &c.encIFMA)
	src := randomBlocks(rng, lay.blocks)
	blk := src[lay.pos*BlockSize : (lay.pos+1)*BlockSize]
	if round == 0 {
		binary.BigEndian.PutUint64(blk[8:], x) // R1
	} else {
		// R2 = R0 ^ RF1(R1): choose R0 so that R2 = x.
		r1 := binary.BigEndian.Uint64(blk[8:])
		binary.BigEndian.PutUint64(blk[:8], x^rf(c.enc[0][0], c.enc[0][1], r1))
	}
	want, got := make([]byte, len(src)), make([]byte, len(src))
	for j := 0; j < len(src); j += BlockSize {
		cryptBlockGeneric(&c.enc, want[j:], src[j:])
	}
	c.EncryptBlocks(got, src)
	return bytes.Equal(got, want)
}

// TestReductionInBlocks makes round 1 or round 2 of a cipher with a chosen
// schedule meet every target, with the block in every position of
// aimLayouts, and checks each multi-block path against the single-block
// code.
func TestReductionInBlocks(t *testing.T) {
	layouts := aimLayouts()
	forEachImplementation(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(15, 16))
		targets := reductionTargets()
		for i := range 2 * len(layouts) * len(targets) {
			// Each target meets round 1 and round 2 (the two copies of the
			// round in the assembly loop) in every layout.
			v, round, lay := targets[i/(2*len(layouts))], i%2, layouts[(i/2)%len(layouts)]
			a, x, b := aimAt(rng, v)
			if !aimedBlocksAgree(rng, a, x, b, round, lay) {
				t.Fatalf("target %#x (%s) in round %d, block %d of %d: multi-block differs from single-block",
					v, reductionCase(v), round+1, lay.pos, lay.blocks)
			}
		}
	})
}

// ifmaSum returns the sum a*xl + a'*xh + b that the IFMA kernels reduce, as
// hi*2^64 + lo, from the round split by splitIFMA.
func ifmaSum(a, b, x uint64) (hi, lo uint64) {
	var s schedule
	var sp ifmaSchedule
	s[0] = [2]uint64{a, b}
	splitIFMA(&s, &sp)
	r := sp[0]
	ap, apTop := r[2]|r[3]<<52, r[3]>>12 // a' = apTop*2^64 + ap
	h1, l1 := bits.Mul64(a, x&0xffffffff)
	h2, l2 := bits.Mul64(ap, x>>32)
	h2 += apTop * (x >> 32)
	lo, c := bits.Add64(l1, l2, 0)
	hi = h1 + h2 + c
	lo, c = bits.Add64(lo, b, 0)
	return hi + c, lo
}

// ifmaTargets returns inputs (a, x, b) around the one correction of the IFMA
// kernels: with hi*2^64 + lo = a*xl + a'*xh + b, lo just below, at and just
// above 13*hi (below, p is added), and lo in 0..13. It reports how many
// fall below.
func ifmaTargets(rng *rand.Rand) (triples [][3]uint64, below int) {
	for range 24 {
		a, x := rng.Uint64(), rng.Uint64()
		hi0, lo0 := ifmaSum(a, 0, x)
		// b = d - lo0 makes lo = d, and carries into hi exactly when
		// lo0 + b wraps, that is when d < lo0.
		for _, d := range []uint64{0, 1, 12, 13, 14, 13*hi0 - 1, 13 * hi0, 13*hi0 + 1, 13*hi0 + 12, 13*hi0 + 13, 13*hi0 + 14, 13*hi0 + 26} {
			b := d - lo0
			hi, lo := ifmaSum(a, b, x)
			if lo < 13*hi {
				below++
			}
			triples = append(triples, [3]uint64{a, x, b})
		}
	}
	return triples, below
}

// TestIFMAReductionInBlocks aims at the correction of the IFMA kernels as
// TestReductionInBlocks aims at the cases of mulAddMod: random inputs need
// it about once in 2^26 multiplications.
func TestIFMAReductionInBlocks(t *testing.T) {
	layouts := aimLayouts()
	forEachImplementation(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(19, 20))
		targets, below := ifmaTargets(rng)
		if below < len(targets)/4 || below > len(targets)*3/4 {
			t.Fatalf("%d of %d targets need the correction", below, len(targets))
		}
		for i := range 2 * len(layouts) * len(targets) {
			v, round, lay := targets[i/(2*len(layouts))], i%2, layouts[(i/2)%len(layouts)]
			if !aimedBlocksAgree(rng, v[0], v[1], v[2], round, lay) {
				t.Fatalf("a=%#x x=%#x b=%#x in round %d, block %d of %d: multi-block differs from single-block",
					v[0], v[1], v[2], round+1, lay.pos, lay.blocks)
			}
		}
	})
}

// TestSplitIFMA checks the split round keys against their definition with
// math/big, for keys where a*2^32 - 13*(a>>32) is negative (p added) and
// where adding p carries into bit 64, then at random.
func TestSplitIFMA(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	var as []uint64
	// a = ah*2^32 + al with al*2^32 - 13*ah in -13..-1: the carry case.
	for al := uint64(0); al < 13; al++ {
		for j := uint64(1); j <= 13; j++ {
			if (al<<32+j)%13 == 0 {
				as = append(as, (al<<32+j)/13<<32|al)
			}
		}
	}
	carries := len(as)
	as = append(as, 0, 1, 1<<32-1, 1<<32, 1<<63, 1<<64-1, 0xffffffff00000000)
	for range 1000 {
		as = append(as, rng.Uint64(), rng.Uint64()&0xffffffff00000003)
	}
	if carries == 0 {
		t.Fatal("no key for the carry case")
	}
	mask := new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 52), big.NewInt(1))
	for _, a := range as {
		b := rng.Uint64()
		var s schedule
		var sp ifmaSchedule
		for i := range s {
			s[i] = [2]uint64{a, b}
		}
		splitIFMA(&s, &sp)
		r := sp[7]
		join := func(lo, hi uint64) *big.Int {
			return new(big.Int).Add(new(big.Int).SetUint64(lo), new(big.Int).Lsh(new(big.Int).SetUint64(hi), 52))
		}
		wantP := new(big.Int).Lsh(new(big.Int).SetUint64(a), 32)
		wantP.Mod(wantP, bigP)
		switch {
		case join(r[0], r[1]).Cmp(new(big.Int).SetUint64(a)) != 0 || r[0] > mask.Uint64() || r[1] >= 1<<12:
			t.Fatalf("a=%#x: a0, a1 = %#x, %#x", a, r[0], r[1])
		case join(r[2], r[3]).Cmp(wantP) != 0 || r[2] > mask.Uint64() || r[3] >= 1<<13:
			t.Fatalf("a=%#x: p0, p1 = %#x, %#x, want a*2^32 mod p = %#x", a, r[2], r[3], wantP)
		case join(r[4], r[5]).Cmp(new(big.Int).SetUint64(b)) != 0 || r[4] > mask.Uint64() || r[5] >= 1<<12:
			t.Fatalf("b=%#x: b0, b1 = %#x, %#x", b, r[4], r[5])
		}
	}
	t.Logf("%d keys, %d with a carry into bit 64", len(as), carries)
}
