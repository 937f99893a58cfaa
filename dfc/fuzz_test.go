package dfc

import (
	"bytes"
	"testing"
)

// FuzzBlocks checks, for any key and any blocks, that every multi-block path
// agrees with the single-block methods and that decryption inverts
// encryption.
func FuzzBlocks(f *testing.F) {
	f.Add(make([]byte, 16), make([]byte, 16))
	f.Add([]byte("0123456789abcdef0123456789abcdef"), bytes.Repeat([]byte{0xff}, 17*BlockSize))
	f.Add([]byte{}, bytes.Repeat([]byte{1, 2, 3}, 16*3))
	f.Fuzz(func(t *testing.T, key, data []byte) {
		key = key[:min(len(key), maxKeySize)]
		data = data[:len(data)/BlockSize*BlockSize]
		c := newTestCipher(t, key)
		want := make([]byte, len(data))
		for i := 0; i < len(data); i += BlockSize {
			c.Encrypt(want[i:], data[i:])
		}
		for _, name := range implNames {
			restore, ok := setImplementation(name)
			if !ok {
				restore()
				continue
			}
			got := make([]byte, len(data))
			c.EncryptBlocks(got, data)
			back := make([]byte, len(data))
			c.DecryptBlocks(back, got)
			restore()
			if !bytes.Equal(got, want) {
				t.Fatalf("%s: EncryptBlocks differs from Encrypt", name)
			}
			if !bytes.Equal(back, data) {
				t.Fatalf("%s: DecryptBlocks does not invert EncryptBlocks", name)
			}
		}
	})
}
