//go:build amd64 && gc && !purego

package aesblocks

import (
	"encoding/binary"

	"golang.org/x/sys/cpu"
)

// supportsAESNI reports whether the CPU has the AES instructions. The kernels
// use nothing else beyond the SSE2 of the amd64 baseline.
var supportsAESNI = cpu.X86.HasAES

// useAESNI selects the AES-NI path in NewCipher; tests clear it to build
// ciphers on the portable path on the same machine.
var useAESNI = supportsAESNI

// The functions below are implemented in aesblocks_amd64.s, which the
// program in _asm generates (cd _asm && go generate).

// encryptBlocksAESNI and decryptBlocksAESNI cipher the len(src)/16
// independent blocks of src into dst with nr rounds and the round keys at
// xk. len(src) is a multiple of 16, len(dst) >= len(src) and the buffers do
// not overlap in part; the callers check.
//
//go:noescape
func encryptBlocksAESNI(nr int, xk *uint32, dst, src []byte)

//go:noescape
func decryptBlocksAESNI(nr int, xk *uint32, dst, src []byte)

// subWord applies the S-box to each byte of w (AESKEYGENASSIST).
func subWord(w uint32) uint32

// invMixColumns sets dst to InvMixColumns(src) (AESIMC).
//
//go:noescape
func invMixColumns(dst, src *[4]uint32)

// expandKey writes the round keys of key (16, 24 or 32 bytes) into enc, those
// of the equivalent inverse cipher into dec, and returns the number of
// rounds.
//
// The schedule is the one of FIPS-197 5.2, on words that hold their bytes
// in memory order (little-endian), so that RotWord is a rotation right by 8
// and Rcon sits in the low byte. SubWord is computed by the AES unit rather
// than by a table in memory, whose access pattern would depend on the key.
func expandKey(key []byte, enc, dec *[4 * (maxRounds + 1)]uint32) int {
	nk := len(key) / 4
	nr := nk + 6
	n := 4 * (nr + 1)
	for i := range nk {
		enc[i] = binary.LittleEndian.Uint32(key[4*i:])
	}
	rcon := uint32(1)
	for i := nk; i < n; i++ {
		t := enc[i-1]
		switch {
		case i%nk == 0:
			t = subWord(t>>8|t<<24) ^ rcon
			// xtime; the round constants depend on nothing secret.
			rcon <<= 1
			if rcon&0x100 != 0 {
				rcon ^= 0x11b
			}
		case nk > 6 && i%nk == 4:
			t = subWord(t)
		}
		enc[i] = enc[i-nk] ^ t
	}

	// Decryption applies the keys in reverse order; the middle ones go
	// through InvMixColumns because AESDEC applies InvMixColumns before
	// adding the round key (FIPS-197 5.3.5).
	copy(dec[0:4], enc[4*nr:4*nr+4])
	for r := 1; r < nr; r++ {
		invMixColumns((*[4]uint32)(dec[4*r:]), (*[4]uint32)(enc[4*(nr-r):]))
	}
	copy(dec[4*nr:4*nr+4], enc[0:4])
	return nr
}
