package newcamd

import (
	"crypto/md5"
	"math/bits"
)

// DESKeySize is the size of a newcamd DES key as configured: 14 bytes, 112 bits, the two
// 56-bit halves of a two-key triple DES key without their parity bits.
const DESKeySize = 14

// DESKey is a configured newcamd key, as servers and clients write it: 28 hex digits.
type DESKey [DESKeySize]byte

// DefaultDESKey is the key that newcamd servers and clients use unless configured otherwise
// (the usual [newcamd] key of OSCam's configurations, tsdecrypt's -B default): the bytes 01 to
// 14 written as decimal digits. (An OSCam whose [newcamd] names no key uses 14 zero bytes.)
var DefaultDESKey = DESKey{0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x10, 0x11, 0x12, 0x13, 0x14}

// Key is the 16-byte two-key triple DES key a connection's messages are encrypted with: the
// first 8 bytes are K1, the last 8 K2, and each block is encrypted K1, decrypted K2, encrypted
// K1 again (EDE2).
type Key [16]byte

// Spread turns 14 key bytes into a Key: each 7 bytes (56 bits) become 8 bytes of 7 key bits
// each, the key bits in the high 7 bits of each byte, most significant first, and the low bit
// made odd parity as DES keys have it (the parity bits are ignored by DES itself).
func Spread(k DESKey) Key {
	var out Key
	for half := range 2 {
		var v uint64
		for _, b := range k[7*half : 7*half+7] {
			v = v<<8 | uint64(b)
		}
		for i := range 8 {
			b := byte(v>>(49-7*i)) << 1
			if bits.OnesCount8(b)%2 == 0 {
				b |= 1
			}
			out[8*half+i] = b
		}
	}
	return out
}

// LoginKey returns the key of the login exchange: the configured key XORed with the 14 random
// bytes the server sends when a client connects, spread.
func LoginKey(k DESKey, random [DESKeySize]byte) Key {
	for i := range k {
		k[i] ^= random[i]
	}
	return Spread(k)
}

// SessionKey returns the key of the messages after a login the server accepted: the
// configured key XORed with the MD5-crypt of the password (Crypt), its 34 characters folded
// onto the 14 key bytes in turn, spread.
func SessionKey(k DESKey, crypted string) Key {
	for i := range len(crypted) {
		k[i%DESKeySize] ^= crypted[i]
	}
	return Spread(k)
}

// Salt is the MD5-crypt salt of newcamd passwords: every client and server uses this one, so
// that the crypted password can be compared as a string.
const Salt = "abcdefgh"

// Crypt returns the MD5-crypt ("$1$", Poul-Henning Kamp's FreeBSD password scheme, as
// crypt(3), openssl passwd -1 and glibc compute it) of password with Salt: the string a
// newcamd client sends at login in place of the password, and from which the session key is
// derived.
func Crypt(password string) string {
	return md5Crypt(password, Salt)
}

// md5Crypt is the MD5-crypt of pw with salt (at most 8 bytes are used), "$1$salt$hash".
func md5Crypt(pw, salt string) string {
	const magic = "$1$"
	if len(salt) > 8 {
		salt = salt[:8]
	}
	// The alternate sum, MD5(pw salt pw), feeds the main one a byte per password byte.
	alt := md5.Sum([]byte(pw + salt + pw))
	h := md5.New()
	h.Write([]byte(pw + magic + salt))
	for n := len(pw); n > 0; n -= 16 {
		h.Write(alt[:min(n, 16)])
	}
	// Then one byte per bit of the password's length: a zero byte for a 1 bit, the password's
	// first byte for a 0 bit (the scheme's own quirk: the original meant the alternate sum).
	for n := len(pw); n != 0; n >>= 1 {
		if n&1 != 0 {
			h.Write([]byte{0})
		} else {
			h.Write([]byte{pw[0]})
		}
	}
	sum := h.Sum(nil)
	// 1000 rounds, to make guessing slow.
	for i := range 1000 {
		h.Reset()
		if i&1 != 0 {
			h.Write([]byte(pw))
		} else {
			h.Write(sum)
		}
		if i%3 != 0 {
			h.Write([]byte(salt))
		}
		if i%7 != 0 {
			h.Write([]byte(pw))
		}
		if i&1 != 0 {
			h.Write(sum)
		} else {
			h.Write([]byte(pw))
		}
		sum = h.Sum(sum[:0])
	}
	// The 16 bytes go out in groups of three, in the scheme's order, six bits per character,
	// least significant first.
	const itoa64 = "./0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	out := []byte(magic + salt + "$")
	put := func(v uint32, n int) {
		for range n {
			out = append(out, itoa64[v&0x3F])
			v >>= 6
		}
	}
	for _, g := range [5][3]int{{0, 6, 12}, {1, 7, 13}, {2, 8, 14}, {3, 9, 15}, {4, 10, 5}} {
		put(uint32(sum[g[0]])<<16|uint32(sum[g[1]])<<8|uint32(sum[g[2]]), 4)
	}
	put(uint32(sum[11]), 2)
	return string(out)
}
