package aesblocks

import (
	"crypto/cipher"
	"testing"
)

// blockByBlock is how package scrambling ran crypto/aes before this package:
// one cipher.Block call per block, through the interface. It is the baseline
// of the benchmarks.
type blockByBlock struct {
	b cipher.Block
}

func (c blockByBlock) EncryptBlocks(dst, src []byte) {
	for i := 0; i+16 <= len(src); i += 16 {
		c.b.Encrypt(dst[i:i+16], src[i:i+16])
	}
}

func (c blockByBlock) DecryptBlocks(dst, src []byte) {
	for i := 0; i+16 <= len(src); i += 16 {
		c.b.Decrypt(dst[i:i+16], src[i:i+16])
	}
}

type multiBlock interface {
	EncryptBlocks(dst, src []byte)
	DecryptBlocks(dst, src []byte)
}

// benchBlocks is one step of a CBC encryption pass of package scrambling:
// one block of each of the pass's 32 payloads (the block-cipher systems'
// Lanes).
const benchBlocks = 32

func BenchmarkEncryptBlocks(b *testing.B) {
	benchImpls(b, func(m multiBlock) func(dst, src []byte) { return m.EncryptBlocks })
}

func BenchmarkDecryptBlocks(b *testing.B) {
	benchImpls(b, func(m multiBlock) func(dst, src []byte) { return m.DecryptBlocks })
}

func benchImpls(b *testing.B, method func(multiBlock) func(dst, src []byte)) {
	key := make([]byte, 16)
	ours, std := withReference(b, key)
	for _, impl := range []struct {
		name string
		m    multiBlock
	}{
		{"aesblocks", ours},
		{"crypto-aes-loop", blockByBlock{std}},
	} {
		b.Run(impl.name, func(b *testing.B) {
			f := method(impl.m)
			buf := make([]byte, 16*benchBlocks)
			b.SetBytes(int64(len(buf)))
			for b.Loop() {
				f(buf, buf)
			}
		})
	}
}
