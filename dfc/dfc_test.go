package dfc

import (
	"bytes"
	"errors"
	"fmt"
	"math/big"
	"math/rand/v2"
	"sync"
	"testing"
)

// newTestCipher returns the *Cipher for key, failing the test on an error.
func newTestCipher(t testing.TB, key []byte) *Cipher {
	t.Helper()
	c, err := NewCipher(key)
	if err != nil {
		t.Fatalf("NewCipher(%d bytes): %v", len(key), err)
	}
	return c
}

func TestKeySizes(t *testing.T) {
	for n := 0; n <= maxKeySize; n++ {
		c, err := NewCipher(make([]byte, n))
		if err != nil || c == nil {
			t.Errorf("NewCipher(%d bytes) = %v, %v", n, c, err)
		}
	}
	for _, n := range []int{33, 48, 64, 1000} {
		c, err := NewCipher(make([]byte, n))
		var kse KeySizeError
		if c != nil || !errors.As(err, &kse) || int(kse) != n {
			t.Errorf("NewCipher(%d bytes) = %v, %v; want nil, KeySizeError(%d)", n, c, err, n)
		}
		if want := fmt.Sprintf("dfc: invalid key size %d", n); err != nil && err.Error() != want {
			t.Errorf("error %q, want %q", err, want)
		}
	}
}

// TestKeyPadding checks the padding rule for every key length: a key K of
// fewer than 32 bytes must act as the 32-byte key K|KS[:32-len(K)].
func TestKeyPadding(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	pt := make([]byte, BlockSize)
	for n := 0; n <= maxKeySize; n++ {
		key := make([]byte, n)
		for i := range key {
			key[i] = byte(rng.Uint32())
		}
		full := append(append([]byte(nil), key...), ks[:maxKeySize-n]...)
		for i := range pt {
			pt[i] = byte(rng.Uint32())
		}
		got, want := make([]byte, BlockSize), make([]byte, BlockSize)
		newTestCipher(t, key).Encrypt(got, pt)
		newTestCipher(t, full).Encrypt(want, pt)
		if !bytes.Equal(got, want) {
			t.Errorf("%d-byte key: %x, padded key gives %x", n, got, want)
		}
	}
	// Padding with anything else must change the cipher: the zero key of 16
	// bytes is not the zero key of 32 bytes.
	a, b := make([]byte, BlockSize), make([]byte, BlockSize)
	newTestCipher(t, make([]byte, 16)).Encrypt(a, pt)
	newTestCipher(t, make([]byte, 32)).Encrypt(b, pt)
	if bytes.Equal(a, b) {
		t.Error("16- and 32-byte zero keys encrypt alike")
	}
}

// TestMulAddMod compares the branch-free reduction with math/big on edge
// values, on values aimed at each case of the reduction, and at random.
func TestMulAddMod(t *testing.T) {
	p := new(big.Int).Add(new(big.Int).Lsh(big.NewInt(1), 64), big.NewInt(13))
	mask := new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 64), big.NewInt(1))
	want := func(a, x, b uint64) uint64 {
		v := new(big.Int).Mul(new(big.Int).SetUint64(a), new(big.Int).SetUint64(x))
		v.Add(v, new(big.Int).SetUint64(b))
		v.Mod(v, p)
		return v.And(v, mask).Uint64()
	}
	n := 0
	check := func(a, x, b uint64) {
		n++
		if got, w := mulAddMod(a, x, b), want(a, x, b); got != w {
			t.Fatalf("mulAddMod(%#x, %#x, %#x) = %#x, want %#x", a, x, b, got, w)
		}
	}

	edges := []uint64{0, 1, 2, 12, 13, 14, 155, 156, 157, 1 << 32, 1 << 63, 1<<64 - 14, 1<<64 - 13, 1<<64 - 12, 1<<64 - 2, 1<<64 - 1}
	for _, a := range edges {
		for _, x := range edges {
			for _, b := range edges {
				check(a, x, b)
			}
		}
	}

	// Values aimed at each case of the reduction (see reduction_test.go),
	// then random ones.
	rng := rand.New(rand.NewPCG(3, 4))
	for _, v := range reductionTargets() {
		for range 4 {
			check(aimAt(rng, v))
		}
	}
	for range 200000 {
		check(rng.Uint64(), rng.Uint64(), rng.Uint64())
	}
	t.Logf("%d inputs checked", n)
}

func TestRTSelect(t *testing.T) {
	for i := range uint32(64) {
		if got := rtSelect(i); got != rt[i] {
			t.Errorf("rtSelect(%d) = %#08x, want %#08x", i, got, rt[i])
		}
	}
}

// TestConstantsFromE recomputes every constant from the hexadecimal expansion
// of e, as the specification defines them.
func TestConstantsFromE(t *testing.T) {
	// frac(e) to 2144 bits plus guard bits, as the sum of 2^prec/k! for k >= 2.
	const bitsNeeded, guard = 2144, 64
	prec := uint(bitsNeeded + guard)
	sum := new(big.Int)
	term := new(big.Int).Lsh(big.NewInt(1), prec) // 2^prec / k!
	for k := int64(1); term.Sign() > 0; k++ {
		term.Quo(term, big.NewInt(k))
		if k >= 2 {
			sum.Add(sum, term)
		}
	}
	sum.Rsh(sum, guard) // frac(e) * 2^2144; the dropped terms cannot reach these bits
	ees := sum.FillBytes(make([]byte, bitsNeeded/8))
	word := func(bit, n int) uint64 { // n bytes of EES from bit offset bit
		var v uint64
		for _, c := range ees[bit/8 : bit/8+n] {
			v = v<<8 | uint64(c)
		}
		return v
	}
	for i, v := range rt {
		if w := uint32(word(32*i, 4)); v != w {
			t.Errorf("rt[%d] = %#08x, EES gives %#08x", i, v, w)
		}
	}
	if w := word(2048, 8); kd != w {
		t.Errorf("kd = %#x, EES gives %#x", kd, w)
	}
	if w := uint32(word(2112, 4)); kc != w {
		t.Errorf("kc = %#x, EES gives %#x", kc, w)
	}
	for i := range 3 {
		if w := word(64*i, 8); ka[i] != w {
			t.Errorf("KA%d = %#x, EES gives %#x", i+2, ka[i], w)
		}
		if w := word(192+64*i, 8); kb[i] != w {
			t.Errorf("KB%d = %#x, EES gives %#x", i+2, kb[i], w)
		}
	}
	if !bytes.Equal(ks[:], ees[48:80]) {
		t.Errorf("ks = %x, EES gives %x", ks, ees[48:80])
	}
}

// TestRoundTrip decrypts what it encrypts under random keys of every length.
func TestRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for i := range 2000 {
		key := make([]byte, i%(maxKeySize+1))
		for j := range key {
			key[j] = byte(rng.Uint32())
		}
		c := newTestCipher(t, key)
		pt := make([]byte, BlockSize)
		for j := range pt {
			pt[j] = byte(rng.Uint32())
		}
		ct, back := make([]byte, BlockSize), make([]byte, BlockSize)
		c.Encrypt(ct, pt)
		c.Decrypt(back, ct)
		if !bytes.Equal(back, pt) || bytes.Equal(ct, pt) {
			t.Fatalf("key %x: %x -> %x -> %x", key, pt, ct, back)
		}
	}
}

// forEachImplementation runs f as a sub-test for each multi-block path
// built. A path this CPU cannot run is skipped with the CPU features it
// lacks, so that go test -v shows what a machine left untested.
func forEachImplementation(t *testing.T, f func(t *testing.T)) {
	for _, name := range implNames {
		t.Run("impl="+name, func(t *testing.T) {
			restore, ok := setImplementation(name)
			defer restore()
			if !ok {
				t.Skipf("the CPU cannot run %s: no %s", name, missingFeatures(name))
			}
			f(t)
		})
	}
}

// randomBlocks returns n random blocks.
func randomBlocks(rng *rand.Rand, n int) []byte {
	b := make([]byte, n*BlockSize)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

// checkBlocksAgainstSingle compares EncryptBlocks and DecryptBlocks on 0 to
// 40 blocks (every group size and tail of the fast paths) with the
// single-block methods, out of place and in place.
func checkBlocksAgainstSingle(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for n := 0; n <= 40; n++ {
		c := newTestCipher(t, randomBlocks(rng, 2)[:n%(maxKeySize+1)])
		src := randomBlocks(rng, n)
		want := make([]byte, len(src))
		for i := 0; i < len(src); i += BlockSize {
			c.Encrypt(want[i:], src[i:])
		}
		got := make([]byte, len(src))
		c.EncryptBlocks(got, src)
		if !bytes.Equal(got, want) {
			t.Fatalf("%d blocks: EncryptBlocks differs from Encrypt", n)
		}
		back := make([]byte, len(src))
		c.DecryptBlocks(back, got)
		if !bytes.Equal(back, src) {
			t.Fatalf("%d blocks: DecryptBlocks does not invert EncryptBlocks", n)
		}
		inPlace := append([]byte(nil), src...)
		c.EncryptBlocks(inPlace, inPlace)
		if !bytes.Equal(inPlace, want) {
			t.Fatalf("%d blocks: in-place EncryptBlocks differs", n)
		}
		c.DecryptBlocks(inPlace, inPlace)
		if !bytes.Equal(inPlace, src) {
			t.Fatalf("%d blocks: in-place DecryptBlocks differs", n)
		}
	}
}

func TestBlocksAgainstSingle(t *testing.T) {
	forEachImplementation(t, checkBlocksAgainstSingle)
}

// TestBlocksAgainstGeneric compares every multi-block path with the portable
// multi-block loop, for random keys of every size from 0 to 32 bytes and
// every number of blocks from 1 to 40 (all chunk sizes and tails of the
// kernels), then for a few longer inputs, both ways, out of place and in
// place.
func TestBlocksAgainstGeneric(t *testing.T) {
	counts := make([]int, 0, 45)
	for n := 1; n <= 40; n++ {
		counts = append(counts, n)
	}
	counts = append(counts, 63, 64, 65, 255, 256+57)
	forEachImplementation(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(17, 18))
		for keySize := 0; keySize <= maxKeySize; keySize++ {
			for _, n := range counts {
				c := newTestCipher(t, randomBlocks(rng, 2)[:keySize])
				src := randomBlocks(rng, n)
				for _, dir := range []struct {
					name string
					rk   *schedule
					f    func(dst, src []byte)
				}{{"EncryptBlocks", &c.enc, c.EncryptBlocks}, {"DecryptBlocks", &c.dec, c.DecryptBlocks}} {
					want := make([]byte, len(src))
					cryptBlocksGeneric(dir.rk, want, src)
					got := make([]byte, len(src))
					dir.f(got, src)
					if i := firstBlockDiff(got, want); i >= 0 {
						t.Fatalf("%d-byte key, %d blocks: %s differs from the generic path at block %d", keySize, n, dir.name, i)
					}
					got = append(got[:0], src...)
					dir.f(got, got)
					if i := firstBlockDiff(got, want); i >= 0 {
						t.Fatalf("%d-byte key, %d blocks: in-place %s differs from the generic path at block %d", keySize, n, dir.name, i)
					}
				}
			}
		}
	})
}

// TestGenericBlocks checks the portable multi-block loop directly against the
// portable single-block code, whatever the dispatch picks on this machine.
func TestGenericBlocks(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	c := newTestCipher(t, randomBlocks(rng, 1))
	for n := 0; n <= 13; n++ {
		src := randomBlocks(rng, n)
		want, got := make([]byte, len(src)), make([]byte, len(src))
		for i := 0; i < len(src); i += BlockSize {
			cryptBlockGeneric(&c.enc, want[i:], src[i:])
		}
		cryptBlocksGeneric(&c.enc, got, src)
		if !bytes.Equal(got, want) {
			t.Errorf("%d blocks: cryptBlocksGeneric differs from cryptBlockGeneric", n)
		}
	}
}

// mustPanic fails the test unless f panics.
func mustPanic(t *testing.T, name string, f func()) {
	t.Helper()
	defer func() {
		if recover() == nil {
			t.Errorf("%s did not panic", name)
		}
	}()
	f()
}

func TestBufferRules(t *testing.T) {
	forEachImplementation(t, func(t *testing.T) {
		c := newTestCipher(t, make([]byte, 16))
		buf := make([]byte, 8*BlockSize)
		mustPanic(t, "Encrypt short src", func() { c.Encrypt(buf, buf[:15]) })
		mustPanic(t, "Encrypt short dst", func() { c.Encrypt(buf[:15], buf) })
		mustPanic(t, "Decrypt short src", func() { c.Decrypt(buf, buf[:15]) })
		mustPanic(t, "Encrypt overlap", func() { c.Encrypt(buf[1:], buf) })
		mustPanic(t, "Decrypt overlap", func() { c.Decrypt(buf, buf[15:]) })
		mustPanic(t, "EncryptBlocks partial", func() { c.EncryptBlocks(buf, buf[:33]) })
		mustPanic(t, "DecryptBlocks partial", func() { c.DecryptBlocks(buf, buf[:17]) })
		mustPanic(t, "EncryptBlocks short dst", func() { c.EncryptBlocks(buf[:16], buf[32:64]) })
		mustPanic(t, "EncryptBlocks overlap", func() { c.EncryptBlocks(buf[16:], buf[:64]) })
		mustPanic(t, "DecryptBlocks overlap", func() { c.DecryptBlocks(buf[:64], buf[8:72]) })

		// Nothing is written outside dst[:len(src)], and src is not modified.
		rng := rand.New(rand.NewPCG(11, 12))
		for n := 0; n <= 17; n++ {
			src := randomBlocks(rng, n)
			srcCopy := append([]byte(nil), src...)
			dst := bytes.Repeat([]byte{0xa5}, len(src)+2*BlockSize)
			out := dst[BlockSize : BlockSize+len(src)]
			c.EncryptBlocks(dst[BlockSize:], src)
			c.DecryptBlocks(out, out)
			if !bytes.Equal(src, srcCopy) {
				t.Fatalf("%d blocks: src modified", n)
			}
			if !bytes.Equal(dst[BlockSize:BlockSize+len(src)], src) {
				t.Fatalf("%d blocks: round trip failed", n)
			}
			for i, v := range append(dst[:BlockSize:BlockSize], dst[BlockSize+len(src):]...) {
				if v != 0xa5 {
					t.Fatalf("%d blocks: byte %d outside dst written", n, i)
				}
			}
		}
		// A dst longer than one block: only the first block is written.
		dst := bytes.Repeat([]byte{0xa5}, 2*BlockSize)
		c.Encrypt(dst, make([]byte, 2*BlockSize))
		if !bytes.Equal(dst[BlockSize:], bytes.Repeat([]byte{0xa5}, BlockSize)) {
			t.Error("Encrypt wrote past the first block")
		}
	})
}

func TestAllocations(t *testing.T) {
	c := newTestCipher(t, make([]byte, 16))
	buf := make([]byte, 20*BlockSize)
	for name, f := range map[string]func(){
		"Encrypt":       func() { c.Encrypt(buf, buf) },
		"Decrypt":       func() { c.Decrypt(buf, buf) },
		"EncryptBlocks": func() { c.EncryptBlocks(buf, buf) },
		"DecryptBlocks": func() { c.DecryptBlocks(buf, buf) },
	} {
		if n := testing.AllocsPerRun(100, f); n != 0 {
			t.Errorf("%s: %v allocations per call", name, n)
		}
	}
}

// TestConcurrentUse shares one cipher between goroutines (run with -race).
func TestConcurrentUse(t *testing.T) {
	c := newTestCipher(t, []byte("0123456789abcdef"))
	rng := rand.New(rand.NewPCG(13, 14))
	src := randomBlocks(rng, 64)
	want := make([]byte, len(src))
	c.EncryptBlocks(want, src)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			got := make([]byte, len(src))
			for range 50 {
				if g%2 == 0 {
					c.EncryptBlocks(got, src)
				} else {
					for i := 0; i < len(src); i += BlockSize {
						c.Encrypt(got[i:], src[i:])
					}
				}
				if !bytes.Equal(got, want) {
					t.Error("concurrent encryption differs")
					return
				}
			}
		})
	}
	wg.Wait()
}
