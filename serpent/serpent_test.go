package serpent

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"slices"
	"sync"
	"testing"
)

// The S-boxes of the Serpent specification (Anderson, Biham, Knudsen,
// "Serpent: A Proposal for the Advanced Encryption Standard", 1998).
var specSBoxes = [8][16]uint8{
	{3, 8, 15, 1, 10, 6, 5, 11, 14, 13, 4, 2, 7, 0, 9, 12},
	{15, 12, 2, 7, 9, 0, 5, 10, 1, 11, 14, 8, 6, 13, 3, 4},
	{8, 6, 7, 9, 3, 12, 10, 15, 13, 1, 14, 4, 0, 11, 5, 2},
	{0, 15, 11, 8, 12, 9, 6, 3, 13, 1, 2, 4, 10, 7, 5, 14},
	{1, 15, 8, 3, 12, 0, 11, 6, 2, 5, 4, 10, 9, 14, 7, 13},
	{15, 5, 2, 11, 4, 10, 9, 12, 0, 3, 14, 8, 13, 6, 7, 1},
	{7, 2, 12, 5, 8, 4, 6, 11, 14, 9, 1, 15, 13, 3, 10, 0},
	{1, 13, 15, 0, 14, 8, 2, 11, 7, 4, 12, 10, 9, 3, 5, 6},
}

type sboxFunc func(a, b, c, d uint32) (uint32, uint32, uint32, uint32)

// TestSBoxes checks each bitsliced S-box and inverse against the tables of
// the specification. Bit position j (and j+16) of the input words carries
// the nibble j, so one call covers all 16 inputs.
func TestSBoxes(t *testing.T) {
	fwd := []sboxFunc{sb0, sb1, sb2, sb3, sb4, sb5, sb6, sb7}
	inv := []sboxFunc{sb0Inv, sb1Inv, sb2Inv, sb3Inv, sb4Inv, sb5Inv, sb6Inv, sb7Inv}
	for i, table := range specSBoxes {
		var invTable [16]uint8
		for x, y := range table {
			invTable[y] = uint8(x)
		}
		check := func(name string, f sboxFunc, table *[16]uint8) {
			var in [4]uint32
			for x := range 16 {
				for bit := range 4 {
					if x>>bit&1 == 1 {
						in[bit] |= 1<<x | 1<<(x+16)
					}
				}
			}
			a, b, c, d := f(in[0], in[1], in[2], in[3])
			out := [4]uint32{a, b, c, d}
			for x := range 32 {
				var y uint8
				for bit := range 4 {
					y |= uint8(out[bit]>>x&1) << bit
				}
				if want := table[x%16]; y != want {
					t.Errorf("%s(%d) = %d, want %d", name, x%16, y, want)
				}
			}
		}
		check(fmt.Sprintf("sb%d", i), fwd[i], &specSBoxes[i])
		check(fmt.Sprintf("sb%dInv", i), inv[i], &invTable)
	}
}

func TestLinearTransform(t *testing.T) {
	for range 1000 {
		a, b, c, d := mrand.Uint32(), mrand.Uint32(), mrand.Uint32(), mrand.Uint32()
		a2, b2, c2, d2 := ltInv(lt(a, b, c, d))
		if a2 != a || b2 != b || c2 != c || d2 != d {
			t.Fatalf("ltInv(lt(%08x %08x %08x %08x)) = %08x %08x %08x %08x", a, b, c, d, a2, b2, c2, d2)
		}
	}
	// One value worked by hand: only bit 0 of word 0 set.
	a, b, c, d := lt(1, 0, 0, 0)
	// a<<<13 = 1<<13; b = 1<<13 then <<<1 = 1<<14; d = (1<<16) <<<7 = 1<<23;
	// a = (1<<13 ^ 1<<14 ^ 1<<23) <<<5; c = (1<<23 ^ 1<<21) <<<22.
	wa := uint32(1<<18 | 1<<19 | 1<<28)
	wc := uint32(1<<13 | 1<<11)
	if a != wa || b != 1<<14 || c != wc || d != 1<<23 {
		t.Errorf("lt(1, 0, 0, 0) = %08x %08x %08x %08x, want %08x %08x %08x %08x", a, b, c, d, wa, 1<<14, wc, 1<<23)
	}
}

func TestKeySizes(t *testing.T) {
	for n := 0; n <= MaxKeySize; n++ {
		b, err := NewCipher(make([]byte, n))
		if err != nil {
			t.Fatalf("NewCipher(%d bytes): %v", n, err)
		}
		if b.BlockSize() != BlockSize {
			t.Fatalf("BlockSize() = %d", b.BlockSize())
		}
	}
	for _, n := range []int{33, 48, 64} {
		b, err := NewCipher(make([]byte, n))
		var kse KeySizeError
		if b != nil || !errors.As(err, &kse) || int(kse) != n {
			t.Fatalf("NewCipher(%d bytes) = %v, %v; want KeySizeError(%d)", n, b, err, n)
		}
		if want := fmt.Sprintf("serpent: invalid key size %d", n); err.Error() != want {
			t.Errorf("error %q, want %q", err, want)
		}
	}
}

// TestShortKeyPadding checks that a key shorter than 32 bytes acts as the
// key followed by the byte 0x01 and zeros, which is how the specification
// pads it; the 32-byte form is used as is.
func TestShortKeyPadding(t *testing.T) {
	block := []byte("0123456789abcdef")
	for n := 0; n < MaxKeySize; n++ {
		key := make([]byte, n)
		rand.Read(key)
		padded := make([]byte, MaxKeySize)
		copy(padded, key)
		padded[n] = 1
		got, want := make([]byte, 16), make([]byte, 16)
		newTestCipher(t, key).Encrypt(got, block)
		newTestCipher(t, padded).Encrypt(want, block)
		if !bytes.Equal(got, want) {
			t.Errorf("%d-byte key: %x, padded key: %x", n, got, want)
		}
		// A 32-byte key that ends in 0x01 must differ from the padded
		// short key with its last byte zero: padding is not applied twice.
		if n == MaxKeySize-1 {
			other := bytes.Clone(padded)
			other[n] = 0
			newTestCipher(t, other).Encrypt(got, block)
			if bytes.Equal(got, want) {
				t.Errorf("32-byte key ending in 0 encrypts like the padded 31-byte key")
			}
		}
	}
}

// TestImplementations compares every multi-block implementation with the
// single-block path on random keys and data, for every length its kernels
// accept up to a few groups, out of place and in place.
func TestImplementations(t *testing.T) {
	reportMissing(t)
	for _, im := range implementations() {
		t.Run("impl="+im.name, func(t *testing.T) {
			for trial := range 8 {
				key := make([]byte, trial*4+4)
				rand.Read(key)
				c := newTestCipher(t, key)
				for n := 0; n <= 3*max(slices.Max(im.widths), 16); n += im.step {
					src := make([]byte, n*BlockSize)
					rand.Read(src)
					wantEnc := make([]byte, len(src))
					wantDec := make([]byte, len(src))
					for i := 0; i < len(src); i += BlockSize {
						c.Encrypt(wantEnc[i:], src[i:])
						c.Decrypt(wantDec[i:], src[i:])
					}
					orig := bytes.Clone(src)
					dst := make([]byte, len(src))
					im.encrypt(&c.ks, dst, src)
					if !bytes.Equal(dst, wantEnc) {
						t.Fatalf("encrypt %d blocks: got %x\nwant %x", n, dst, wantEnc)
					}
					im.decrypt(&c.ks, dst, src)
					if !bytes.Equal(dst, wantDec) {
						t.Fatalf("decrypt %d blocks: got %x\nwant %x", n, dst, wantDec)
					}
					if !bytes.Equal(src, orig) {
						t.Fatalf("%d blocks: src modified", n)
					}
					im.encrypt(&c.ks, src, src)
					if !bytes.Equal(src, wantEnc) {
						t.Fatalf("encrypt %d blocks in place: wrong result", n)
					}
					im.decrypt(&c.ks, src, src)
					if !bytes.Equal(src, orig) {
						t.Fatalf("decrypt %d blocks in place: no round trip", n)
					}
				}
			}
		})
	}
}

// TestRoundTrip encrypts and decrypts random data under random keys of every
// length through the exported methods.
func TestRoundTrip(t *testing.T) {
	for n := 0; n <= MaxKeySize; n++ {
		key := make([]byte, n)
		rand.Read(key)
		c := newTestCipher(t, key)
		blocks := mrand.IntN(70)
		plain := make([]byte, blocks*BlockSize)
		rand.Read(plain)
		ct := make([]byte, len(plain))
		c.EncryptBlocks(ct, plain)
		if blocks > 0 && bytes.Equal(ct, plain) {
			t.Fatalf("key of %d bytes: ciphertext equals plaintext", n)
		}
		back := make([]byte, len(plain))
		c.DecryptBlocks(back, ct)
		if !bytes.Equal(back, plain) {
			t.Fatalf("key of %d bytes, %d blocks: no round trip", n, blocks)
		}
		for i := 0; i < len(plain); i += BlockSize {
			one := make([]byte, BlockSize)
			c.Decrypt(one, ct[i:])
			if !bytes.Equal(one, plain[i:i+BlockSize]) {
				t.Fatalf("key of %d bytes: Decrypt of block %d differs", n, i/BlockSize)
			}
		}
	}
}

// TestBlockConformance covers the cipher.Block contract and the
// multi-block methods: src left alone, dst == src allowed, nothing written
// past the blocks, and panics on short blocks and inexact overlap.
func TestBlockConformance(t *testing.T) {
	c := newTestCipher(t, []byte("conformance key!"))
	const sentinel = 0xa5
	for _, n := range []int{1, 2, 3, 4, 7, 8, 9, 16, 17, 24, 33} {
		src := make([]byte, n*BlockSize)
		rand.Read(src)
		orig := bytes.Clone(src)
		dst := bytes.Repeat([]byte{sentinel}, len(src)+BlockSize)
		c.EncryptBlocks(dst, src)
		if !bytes.Equal(src, orig) {
			t.Fatalf("EncryptBlocks(%d) modified src", n)
		}
		for i, x := range dst[len(src):] {
			if x != sentinel {
				t.Fatalf("EncryptBlocks(%d) wrote dst[%d]", n, len(src)+i)
			}
		}
		c.DecryptBlocks(dst[:len(src)], dst[:len(src)])
		if !bytes.Equal(dst[:len(src)], orig) {
			t.Fatalf("DecryptBlocks(%d) in place: no round trip", n)
		}
	}
	one := bytes.Repeat([]byte{sentinel}, 2*BlockSize)
	c.Encrypt(one, make([]byte, 2*BlockSize))
	if !bytes.Equal(one[BlockSize:], bytes.Repeat([]byte{sentinel}, BlockSize)) {
		t.Fatal("Encrypt wrote past the first block")
	}

	buf := make([]byte, 5*BlockSize)
	for _, tc := range []struct {
		name string
		f    func()
	}{
		{"Encrypt short src", func() { c.Encrypt(buf, buf[:15]) }},
		{"Encrypt short dst", func() { c.Encrypt(buf[:15], buf[16:]) }},
		{"Decrypt short src", func() { c.Decrypt(buf, buf[:15]) }},
		{"Decrypt short dst", func() { c.Decrypt(buf[:15], buf[16:]) }},
		{"Encrypt overlap", func() { c.Encrypt(buf[1:], buf) }},
		{"Decrypt overlap", func() { c.Decrypt(buf, buf[8:]) }},
		{"EncryptBlocks partial", func() { c.EncryptBlocks(buf, buf[:17]) }},
		{"DecryptBlocks partial", func() { c.DecryptBlocks(buf, buf[:33]) }},
		{"EncryptBlocks short dst", func() { c.EncryptBlocks(buf[:32], buf[32:80]) }},
		{"DecryptBlocks short dst", func() { c.DecryptBlocks(buf[:16], buf[16:48]) }},
		{"EncryptBlocks overlap", func() { c.EncryptBlocks(buf[16:], buf[:64]) }},
		{"DecryptBlocks overlap", func() { c.DecryptBlocks(buf[:64], buf[16:]) }},
	} {
		if !panics(tc.f) {
			t.Errorf("%s: no panic", tc.name)
		}
	}
	// Empty input is not an error.
	c.EncryptBlocks(nil, nil)
	c.DecryptBlocks(buf, buf[:0])
}

func panics(f func()) (p bool) {
	defer func() { p = recover() != nil }()
	f()
	return false
}

func TestNoAllocs(t *testing.T) {
	c := newTestCipher(t, make([]byte, 32))
	buf := make([]byte, 64*BlockSize)
	for name, f := range map[string]func(){
		"Encrypt":       func() { c.Encrypt(buf, buf) },
		"Decrypt":       func() { c.Decrypt(buf, buf) },
		"EncryptBlocks": func() { c.EncryptBlocks(buf, buf) },
		"DecryptBlocks": func() { c.DecryptBlocks(buf[:23*BlockSize], buf[:23*BlockSize]) },
	} {
		if n := testing.AllocsPerRun(20, f); n != 0 {
			t.Errorf("%s: %v allocations per call", name, n)
		}
	}
}

// TestConcurrentUse runs one Cipher from several goroutines; with -race it
// also proves that the methods only read the cipher.
func TestConcurrentUse(t *testing.T) {
	c := newTestCipher(t, []byte("shared key"))
	src := make([]byte, 40*BlockSize)
	rand.Read(src)
	want := make([]byte, len(src))
	c.EncryptBlocks(want, src)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			dst := make([]byte, len(src))
			for range 50 {
				c.EncryptBlocks(dst, src)
				if !bytes.Equal(dst, want) {
					errs <- errors.New("concurrent EncryptBlocks differs")
					return
				}
				c.DecryptBlocks(dst, dst)
				if !bytes.Equal(dst, src) {
					errs <- errors.New("concurrent DecryptBlocks differs")
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// TestSingleImplementations compares every single-block implementation
// with the multi-block generic code, which uses the unfolded round keys, on
// many random keys of every length and random blocks, and checks that
// decryption undoes encryption.
func TestSingleImplementations(t *testing.T) {
	singles := availableSingles(t)
	for klen := 0; klen <= MaxKeySize; klen++ {
		for range 16 {
			key := make([]byte, klen)
			rand.Read(key)
			c := newTestCipher(t, key)
			src := make([]byte, 4*BlockSize)
			rand.Read(src)
			wantEnc := make([]byte, len(src))
			wantDec := make([]byte, len(src))
			encryptBlocksGeneric(&c.ks, wantEnc, src)
			decryptBlocksGeneric(&c.ks, wantDec, src)
			for _, s := range singles {
				got := make([]byte, BlockSize)
				for i := 0; i < len(src); i += BlockSize {
					s.encrypt(&c.ek, got, src[i:])
					if !bytes.Equal(got, wantEnc[i:i+BlockSize]) {
						t.Fatalf("single=%s key %x: encrypt %x = %x, want %x", s.name, key, src[i:i+BlockSize], got, wantEnc[i:i+BlockSize])
					}
					s.decrypt(&c.dk, got, got)
					if !bytes.Equal(got, src[i:i+BlockSize]) {
						t.Fatalf("single=%s key %x: no round trip", s.name, key)
					}
					s.decrypt(&c.dk, got, src[i:])
					if !bytes.Equal(got, wantDec[i:i+BlockSize]) {
						t.Fatalf("single=%s key %x: decrypt %x = %x, want %x", s.name, key, src[i:i+BlockSize], got, wantDec[i:i+BlockSize])
					}
				}
			}
		}
	}
}
