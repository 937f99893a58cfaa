package serpent

import (
	"fmt"
	"testing"
)

func benchCipher(b *testing.B) *Cipher {
	c, err := NewCipher(make([]byte, 16))
	if err != nil {
		b.Fatal(err)
	}
	return c
}

func BenchmarkEncrypt(b *testing.B) {
	c := benchCipher(b)
	buf := make([]byte, BlockSize)
	b.SetBytes(BlockSize)
	b.ReportAllocs()
	for b.Loop() {
		c.Encrypt(buf, buf)
	}
}

func BenchmarkDecrypt(b *testing.B) {
	c := benchCipher(b)
	buf := make([]byte, BlockSize)
	b.SetBytes(BlockSize)
	b.ReportAllocs()
	for b.Loop() {
		c.Decrypt(buf, buf)
	}
}

// BenchmarkSingle measures every single-block implementation, one block
// at a time in place, so that each call waits for the previous one.
func BenchmarkSingle(b *testing.B) {
	c := benchCipher(b)
	for _, s := range singleImplementations() {
		for _, enc := range []bool{true, false} {
			dir, f, k := "dec", s.decrypt, &c.dk
			if enc {
				dir, f, k = "enc", s.encrypt, &c.ek
			}
			b.Run("dir="+dir+"/single="+s.name, func(b *testing.B) {
				if !s.available {
					b.Skip("the CPU cannot run it: no " + s.missing)
				}
				buf := make([]byte, BlockSize)
				b.SetBytes(BlockSize)
				for b.Loop() {
					f(k, buf, buf)
				}
			})
		}
	}
}

// benchWidths gives, per implementation, the block counts to measure: one
// group of each kernel width, then 64 blocks (1 KiB, the buffer size of
// "botan speed").
var benchWidths = map[string][]int{
	"generic":  {2, 64},
	"sse2":     {4, 8, 64},
	"avx2":     {8, 16, 24, 48, 64, 256},
	"avx512":   {16, 32, 64, 256},
	"dispatch": {64, 256},
}

func BenchmarkEncryptBlocks(b *testing.B) { benchBlocks(b, true) }
func BenchmarkDecryptBlocks(b *testing.B) { benchBlocks(b, false) }

func benchBlocks(b *testing.B, enc bool) {
	c := benchCipher(b)
	for _, ia := range allImplementations() {
		for _, n := range benchWidths[ia.name] {
			b.Run(fmt.Sprintf("impl=%s/blocks=%d", ia.name, n), func(b *testing.B) {
				if !ia.available {
					b.Skip("not supported by this CPU")
				}
				f := ia.decrypt
				if enc {
					f = ia.encrypt
				}
				buf := make([]byte, n*BlockSize)
				b.SetBytes(int64(len(buf)))
				b.ReportAllocs()
				for b.Loop() {
					f(&c.ks, buf, buf)
				}
			})
		}
	}
}
