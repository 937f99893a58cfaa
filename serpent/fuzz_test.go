package serpent

import (
	"bytes"
	"testing"
)

// FuzzImplementations checks that every multi-block implementation agrees
// with the single-block methods, in both directions, for any key and data.
func FuzzImplementations(f *testing.F) {
	f.Add([]byte("0123456789abcdef"), bytes.Repeat([]byte{0x5a}, 24*BlockSize))
	f.Add([]byte{}, make([]byte, 31*BlockSize))
	f.Add(bytes.Repeat([]byte{0xff}, 32), []byte("sixteen byte blk"))
	f.Fuzz(func(t *testing.T, key, data []byte) {
		if len(key) > MaxKeySize {
			key = key[:MaxKeySize]
		}
		c := newTestCipher(t, key)
		for _, im := range implementations() {
			n := len(data) / BlockSize / im.step * im.step
			src := data[:n*BlockSize]
			want := make([]byte, len(src))
			got := make([]byte, len(src))
			for i := 0; i < len(src); i += BlockSize {
				c.Encrypt(want[i:], src[i:])
			}
			im.encrypt(&c.ks, got, src)
			if !bytes.Equal(got, want) {
				t.Fatalf("impl=%s: encryption of %d blocks differs", im.name, n)
			}
			im.decrypt(&c.ks, got, got)
			if !bytes.Equal(got, src) {
				t.Fatalf("impl=%s: decryption of %d blocks differs", im.name, n)
			}
		}
	})
}

// FuzzSingle checks that every single-block implementation agrees with the
// generic multi-block code, in both directions, for any key and block.
func FuzzSingle(f *testing.F) {
	f.Add([]byte("0123456789abcdef"), []byte("sixteen byte blk"))
	f.Add([]byte{}, make([]byte, BlockSize))
	f.Fuzz(func(t *testing.T, key, block []byte) {
		if len(key) > MaxKeySize {
			key = key[:MaxKeySize]
		}
		if len(block) < BlockSize {
			return
		}
		block = block[:BlockSize]
		c := newTestCipher(t, key)
		wantEnc := make([]byte, BlockSize)
		wantDec := make([]byte, BlockSize)
		encryptBlocksGeneric(&c.ks, wantEnc, block)
		decryptBlocksGeneric(&c.ks, wantDec, block)
		got := make([]byte, BlockSize)
		for _, s := range availableSingles(t) {
			s.encrypt(&c.ek, got, block)
			if !bytes.Equal(got, wantEnc) {
				t.Fatalf("single=%s: encryption differs", s.name)
			}
			s.decrypt(&c.dk, got, block)
			if !bytes.Equal(got, wantDec) {
				t.Fatalf("single=%s: decryption differs", s.name)
			}
		}
	})
}
