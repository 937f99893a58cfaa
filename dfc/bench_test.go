package dfc

import (
	"fmt"
	"testing"
)

// benchCrypt measures throughput for three paths over the same bytes:
// path=single calls Encrypt (or Decrypt) once per block; the others make one
// EncryptBlocks (or DecryptBlocks) call with the named multi-block path.
// Compare them with benchstat -col /path.
func benchCrypt(b *testing.B, decrypt bool) {
	c, err := NewCipher([]byte("0123456789abcdef"))
	if err != nil {
		b.Fatal(err)
	}
	one, many := c.Encrypt, c.EncryptBlocks
	if decrypt {
		one, many = c.Decrypt, c.DecryptBlocks
	}
	for _, path := range append([]string{"single"}, implNames...) {
		for _, n := range []int{8, 64, 256} {
			b.Run(fmt.Sprintf("path=%s/blocks=%d", path, n), func(b *testing.B) {
				buf := make([]byte, n*BlockSize)
				b.SetBytes(int64(len(buf)))
				b.ReportAllocs()
				if path == "single" {
					for b.Loop() {
						for i := 0; i < len(buf); i += BlockSize {
							one(buf[i:], buf[i:])
						}
					}
					return
				}
				restore, ok := setImplementation(path)
				defer restore()
				if !ok {
					b.Skipf("the CPU cannot run %s", path)
				}
				for b.Loop() {
					many(buf, buf)
				}
			})
		}
	}
}

func BenchmarkEncrypt(b *testing.B) { benchCrypt(b, false) }

func BenchmarkDecrypt(b *testing.B) { benchCrypt(b, true) }

func BenchmarkNewCipher(b *testing.B) {
	key := []byte("0123456789abcdef")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := NewCipher(key); err != nil {
			b.Fatal(err)
		}
	}
}
