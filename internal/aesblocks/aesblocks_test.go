package aesblocks

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"encoding/hex"
	"errors"
	"math/rand/v2"
	"testing"
)

// withReference returns a Cipher for key and crypto/aes's cipher for the same key, the
// reference every comparison in these tests uses.
func withReference(tb testing.TB, key []byte) (*Cipher, cipher.Block) {
	tb.Helper()
	c, err := NewCipher(key)
	if err != nil {
		tb.Fatal(err)
	}
	ref, err := aes.NewCipher(key)
	if err != nil {
		tb.Fatal(err)
	}
	return c, ref
}

// fips197 are the example vectors of FIPS-197 Appendix C.1, C.2 and C.3.
var fips197 = []struct {
	name, key, plain, cipher string
}{
	{"C.1 AES-128", "000102030405060708090a0b0c0d0e0f",
		"00112233445566778899aabbccddeeff", "69c4e0d86a7b0430d8cdb78070b4c55a"},
	{"C.2 AES-192", "000102030405060708090a0b0c0d0e0f1011121314151617",
		"00112233445566778899aabbccddeeff", "dda97ca4864cdfe06eaf70a0ec0d7191"},
	{"C.3 AES-256", "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f",
		"00112233445566778899aabbccddeeff", "8ea2b7ca516745bfeafc49904b496089"},
}

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// paths runs f once for each implementation this build has: the AES-NI
// kernels when the CPU has them, and always the portable path.
func paths(t *testing.T, f func(t *testing.T)) {
	t.Helper()
	if supportsAESNI {
		t.Run("aesni", func(t *testing.T) {
			defer setAESNI(setAESNI(true))
			f(t)
		})
	}
	t.Run("portable", func(t *testing.T) {
		defer setAESNI(setAESNI(false))
		f(t)
	})
}

func TestFIPS197(t *testing.T) {
	paths(t, func(t *testing.T) {
		for _, v := range fips197 {
			c, err := NewCipher(unhex(t, v.key))
			if err != nil {
				t.Fatal(err)
			}
			plain, want := unhex(t, v.plain), unhex(t, v.cipher)

			got := make([]byte, 16)
			c.Encrypt(got, plain)
			if !bytes.Equal(got, want) {
				t.Errorf("%s: Encrypt = %x, want %x", v.name, got, want)
			}
			c.Decrypt(got, want)
			if !bytes.Equal(got, plain) {
				t.Errorf("%s: Decrypt = %x, want %x", v.name, got, plain)
			}

			// The same block in every position of the 8-, 4- and 1-block
			// passes: 13 blocks run through all three.
			const n = 13
			src := bytes.Repeat(plain, n)
			buf := make([]byte, len(src))
			c.EncryptBlocks(buf, src)
			if w := bytes.Repeat(want, n); !bytes.Equal(buf, w) {
				t.Errorf("%s: EncryptBlocks = %x, want %x", v.name, buf, w)
			}
			c.DecryptBlocks(buf, buf)
			if !bytes.Equal(buf, src) {
				t.Errorf("%s: DecryptBlocks in place = %x, want %x", v.name, buf, src)
			}
		}
	})
}

func TestKeySize(t *testing.T) {
	paths(t, func(t *testing.T) {
		for _, n := range []int{0, 1, 8, 15, 17, 20, 23, 25, 31, 33, 64} {
			c, err := NewCipher(make([]byte, n))
			var ks KeySizeError
			if c != nil || !errors.As(err, &ks) || int(ks) != n {
				t.Errorf("NewCipher(%d bytes) = %v, %v; want nil, KeySizeError(%d)", n, c, err, n)
			}
		}
	})
}

// TestDifferential compares every block count from 0 to 40 (every tail
// after zero to five 8-block passes), every key size, in place and out of
// place, both directions, with crypto/aes block by block.
func TestDifferential(t *testing.T) {
	paths(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(1, 2))
		for _, keyLen := range []int{16, 24, 32} {
			for trial := range 3 {
				key := make([]byte, keyLen)
				fill(rng, key)
				c, ref := withReference(t, key)
				for n := 0; n <= 40; n++ {
					src := make([]byte, 16*n)
					fill(rng, src)
					check(t, c, ref, src, keyLen, trial, n)
				}
			}
		}
	})
}

func fill(rng *rand.Rand, b []byte) {
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
}

// check compares c with ref on src in both directions, out of place (with
// a dst longer than src, whose extra bytes must stay untouched) and in
// place.
func check(t *testing.T, c *Cipher, ref cipher.Block, src []byte, keyLen, trial, n int) {
	t.Helper()
	wantEnc := make([]byte, len(src))
	wantDec := make([]byte, len(src))
	for i := 0; i < len(src); i += 16 {
		ref.Encrypt(wantEnc[i:], src[i:])
		ref.Decrypt(wantDec[i:], src[i:])
	}
	orig := bytes.Clone(src)
	for _, dir := range []struct {
		name string
		f    func(dst, src []byte)
		want []byte
	}{
		{"EncryptBlocks", c.EncryptBlocks, wantEnc},
		{"DecryptBlocks", c.DecryptBlocks, wantDec},
	} {
		dst := bytes.Repeat([]byte{0xa5}, len(src)+16)
		dir.f(dst, src)
		if !bytes.Equal(dst[:len(src)], dir.want) {
			t.Errorf("key %d bytes #%d, %d blocks: %s = %x, want %x", keyLen, trial, n, dir.name, dst[:len(src)], dir.want)
		}
		if !bytes.Equal(dst[len(src):], bytes.Repeat([]byte{0xa5}, 16)) {
			t.Errorf("key %d bytes #%d, %d blocks: %s wrote past len(src)", keyLen, trial, n, dir.name)
		}
		if !bytes.Equal(src, orig) {
			t.Fatalf("key %d bytes #%d, %d blocks: %s modified src", keyLen, trial, n, dir.name)
		}
		buf := bytes.Clone(src)
		dir.f(buf, buf)
		if !bytes.Equal(buf, dir.want) {
			t.Errorf("key %d bytes #%d, %d blocks: %s in place = %x, want %x", keyLen, trial, n, dir.name, buf, dir.want)
		}
	}
}

// TestSingleBlock checks Encrypt and Decrypt against crypto/aes, including
// their use of only the first block of longer buffers.
func TestSingleBlock(t *testing.T) {
	paths(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(3, 4))
		for _, keyLen := range []int{16, 24, 32} {
			key := make([]byte, keyLen)
			fill(rng, key)
			c, ref := withReference(t, key)
			src := make([]byte, 20)
			fill(rng, src)
			for _, dir := range []struct {
				name     string
				got, ref func(dst, src []byte)
			}{
				{"Encrypt", c.Encrypt, ref.Encrypt},
				{"Decrypt", c.Decrypt, ref.Decrypt},
			} {
				got, want := make([]byte, 20), make([]byte, 20)
				dir.got(got, src)
				dir.ref(want, src)
				if !bytes.Equal(got, want) {
					t.Errorf("key %d bytes: %s = %x, want %x", keyLen, dir.name, got, want)
				}
				buf := bytes.Clone(src)
				dir.got(buf, buf)
				if !bytes.Equal(buf[:16], want[:16]) || !bytes.Equal(buf[16:], src[16:]) {
					t.Errorf("key %d bytes: %s in place = %x, want %x%x", keyLen, dir.name, buf, want[:16], src[16:])
				}
			}
		}
	})
}

// TestPanics checks that misuse panics, as crypto/cipher and crypto/aes do,
// before the kernels could read or write out of bounds.
func TestPanics(t *testing.T) {
	paths(t, func(t *testing.T) {
		c, err := NewCipher(make([]byte, 16))
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 64)
		for _, tc := range []struct {
			name string
			f    func()
		}{
			{"EncryptBlocks partial block", func() { c.EncryptBlocks(buf, buf[:17]) }},
			{"DecryptBlocks partial block", func() { c.DecryptBlocks(buf, buf[:15]) }},
			{"EncryptBlocks short dst", func() { c.EncryptBlocks(buf[:16], buf[32:64]) }},
			{"DecryptBlocks short dst", func() { c.DecryptBlocks(buf[:16], buf[32:64]) }},
			{"EncryptBlocks overlap", func() { c.EncryptBlocks(buf[16:48], buf[:32]) }},
			{"DecryptBlocks overlap", func() { c.DecryptBlocks(buf[:32], buf[16:48]) }},
			{"Encrypt short src", func() { c.Encrypt(buf, buf[:15]) }},
			{"Decrypt short dst", func() { c.Decrypt(buf[:15], buf[16:]) }},
			{"Encrypt overlap", func() { c.Encrypt(buf[1:], buf) }},
		} {
			func() {
				defer func() {
					if recover() == nil {
						t.Errorf("%s did not panic", tc.name)
					}
				}()
				tc.f()
			}()
		}
		// Disjoint neighbours and exact aliasing are allowed.
		c.EncryptBlocks(buf[:32], buf[32:])
		c.DecryptBlocks(buf, buf)
		c.Encrypt(buf[16:], buf[:16])
	})
}

func TestAllocs(t *testing.T) {
	paths(t, func(t *testing.T) {
		for _, keyLen := range []int{16, 24, 32} {
			c, err := NewCipher(make([]byte, keyLen))
			if err != nil {
				t.Fatal(err)
			}
			buf := make([]byte, 16*37)
			for _, dir := range []struct {
				name string
				f    func(dst, src []byte)
			}{
				{"EncryptBlocks", c.EncryptBlocks},
				{"DecryptBlocks", c.DecryptBlocks},
				{"Encrypt", c.Encrypt},
				{"Decrypt", c.Decrypt},
			} {
				if n := testing.AllocsPerRun(100, func() { dir.f(buf, buf) }); n != 0 {
					t.Errorf("key %d bytes: %s: %v allocations per call, want 0", keyLen, dir.name, n)
				}
			}
		}
	})
}

// TestConcurrent runs one Cipher from several goroutines; with -race it
// checks that the methods only read the Cipher.
func TestConcurrent(t *testing.T) {
	paths(t, func(t *testing.T) {
		key := make([]byte, 32)
		c, ref := withReference(t, key)
		const goroutines = 4
		var srcs, wants, gots [goroutines][]byte
		for g := range goroutines {
			srcs[g] = bytes.Repeat([]byte{byte(g)}, 16*20)
			wants[g] = make([]byte, len(srcs[g]))
			for i := 0; i < len(srcs[g]); i += 16 {
				ref.Encrypt(wants[g][i:], srcs[g][i:])
			}
		}
		done := make(chan int)
		for g := range goroutines {
			go func() {
				dst := make([]byte, len(srcs[g]))
				for range 100 {
					c.EncryptBlocks(dst, srcs[g])
					c.DecryptBlocks(dst, dst)
				}
				c.EncryptBlocks(dst, srcs[g])
				gots[g] = dst
				done <- g
			}()
		}
		for range goroutines {
			g := <-done
			if !bytes.Equal(gots[g], wants[g]) {
				t.Errorf("goroutine %d: EncryptBlocks = %x, want %x", g, gots[g], wants[g])
			}
		}
	})
}

// TestPathsAgree compares the AES-NI kernels with the portable path directly,
// on random keys and data of every block count up to 40.
func TestPathsAgree(t *testing.T) {
	if !supportsAESNI {
		t.Skip("no AES-NI kernels in this build (purego, not amd64, or a CPU without AES): nothing to compare")
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for _, keyLen := range []int{16, 24, 32} {
		key := make([]byte, keyLen)
		fill(rng, key)
		prev := setAESNI(true)
		asm, err := NewCipher(key)
		setAESNI(false)
		portable, err2 := NewCipher(key)
		setAESNI(prev)
		if err != nil || err2 != nil {
			t.Fatal(err, err2)
		}
		if asm.block != nil || portable.block == nil {
			t.Fatalf("useAESNI did not select the paths: asm.block=%v portable.block=%v", asm.block, portable.block)
		}
		for n := 0; n <= 40; n++ {
			src := make([]byte, 16*n)
			fill(rng, src)
			a, p := make([]byte, len(src)), make([]byte, len(src))
			asm.EncryptBlocks(a, src)
			portable.EncryptBlocks(p, src)
			if !bytes.Equal(a, p) {
				t.Errorf("key %d bytes, %d blocks: EncryptBlocks: AES-NI %x, portable %x", keyLen, n, a, p)
			}
			asm.DecryptBlocks(a, src)
			portable.DecryptBlocks(p, src)
			if !bytes.Equal(a, p) {
				t.Errorf("key %d bytes, %d blocks: DecryptBlocks: AES-NI %x, portable %x", keyLen, n, a, p)
			}
		}
	}
}

// setAESNI sets useAESNI for the ciphers made next and returns its previous
// value. Tests do not run in parallel, so switching it is safe.
func setAESNI(on bool) bool {
	prev := useAESNI
	useAESNI = on
	return prev
}

// The Cipher is a cipher.Block, so it can stand in for crypto/aes.
var _ cipher.Block = (*Cipher)(nil)
