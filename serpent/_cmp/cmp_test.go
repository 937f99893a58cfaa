// Package cmp compares package serpent with github.com/aead/serpent, a
// straightforward Go implementation, on single blocks. It is a separate
// module so that the comparison dependency stays out of the main go.mod.
package cmp

import (
	"bytes"
	"crypto/cipher"
	"testing"

	aead "github.com/aead/serpent"

	"github.com/tsdescramble/tsdescramble/serpent"
)

func ciphers(tb testing.TB, key []byte) (ours, theirs cipher.Block) {
	ours, err := serpent.NewCipher(key)
	if err != nil {
		tb.Fatal(err)
	}
	theirs, err = aead.NewCipher(key)
	if err != nil {
		tb.Fatal(err)
	}
	return ours, theirs
}

// TestSame checks that both packages agree, so that the benchmarks compare
// the same function.
func TestSame(t *testing.T) {
	for _, n := range []int{16, 24, 32} {
		key := make([]byte, n)
		for i := range key {
			key[i] = byte(i*7 + n)
		}
		ours, theirs := ciphers(t, key)
		blk := []byte("0123456789abcdef")
		for i := range 1000 {
			var a, b [16]byte
			ours.Encrypt(a[:], blk)
			theirs.Encrypt(b[:], blk)
			if a != b {
				t.Fatalf("key %d bytes, round %d: encrypt %x, aead %x", n, i, a, b)
			}
			var c, d [16]byte
			ours.Decrypt(c[:], a[:])
			theirs.Decrypt(d[:], a[:])
			if c != d || !bytes.Equal(c[:], blk) {
				t.Fatalf("key %d bytes, round %d: decrypt %x, aead %x", n, i, c, d)
			}
			blk = a[:]
		}
	}
}

func bench(b *testing.B, c cipher.Block, enc bool) {
	buf := make([]byte, 16)
	b.SetBytes(16)
	if enc {
		for b.Loop() {
			c.Encrypt(buf, buf)
		}
	} else {
		for b.Loop() {
			c.Decrypt(buf, buf)
		}
	}
}

// BenchmarkSingle alternates the two packages, so that both see the same
// machine load when run with -count.
func BenchmarkSingle(b *testing.B) {
	ours, theirs := ciphers(b, make([]byte, 16))
	b.Run("dir=enc/impl=ours", func(b *testing.B) { bench(b, ours, true) })
	b.Run("dir=enc/impl=aead", func(b *testing.B) { bench(b, theirs, true) })
	b.Run("dir=dec/impl=ours", func(b *testing.B) { bench(b, ours, false) })
	b.Run("dir=dec/impl=aead", func(b *testing.B) { bench(b, theirs, false) })
}
