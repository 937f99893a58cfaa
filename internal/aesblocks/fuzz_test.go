package aesblocks

import (
	"bytes"
	"testing"
)

// FuzzCompare checks EncryptBlocks and DecryptBlocks against crypto/aes on
// arbitrary keys and data. The key is the first 16, 24 or 32 bytes of key
// (by its length, rounded down; shorter keys are padded with zeros), and the
// data are the whole blocks of data.
func FuzzCompare(f *testing.F) {
	f.Add(make([]byte, 16), make([]byte, 16))
	f.Add(bytes.Repeat([]byte{1}, 24), bytes.Repeat([]byte{2}, 16*9))
	f.Add(bytes.Repeat([]byte{3}, 32), bytes.Repeat([]byte{4}, 16*17))
	f.Fuzz(func(t *testing.T, key, data []byte) {
		switch {
		case len(key) >= 32:
			key = key[:32]
		case len(key) >= 24:
			key = key[:24]
		default:
			key = append(key[:len(key):len(key)], make([]byte, 16)...)[:16]
		}
		data = data[:len(data)&^15]
		c, ref := withReference(t, key)
		enc, dec := make([]byte, len(data)), make([]byte, len(data))
		c.EncryptBlocks(enc, data)
		c.DecryptBlocks(dec, data)
		want := make([]byte, 16)
		for i := 0; i < len(data); i += 16 {
			ref.Encrypt(want, data[i:])
			if !bytes.Equal(enc[i:i+16], want) {
				t.Fatalf("key %x block %d: EncryptBlocks %x, crypto/aes %x", key, i/16, enc[i:i+16], want)
			}
			ref.Decrypt(want, data[i:])
			if !bytes.Equal(dec[i:i+16], want) {
				t.Fatalf("key %x block %d: DecryptBlocks %x, crypto/aes %x", key, i/16, dec[i:i+16], want)
			}
		}
		// In place, the round trip gives the data back.
		buf := bytes.Clone(data)
		c.EncryptBlocks(buf, buf)
		c.DecryptBlocks(buf, buf)
		if !bytes.Equal(buf, data) {
			t.Fatalf("key %x: in-place round trip changed the data", key)
		}
	})
}
