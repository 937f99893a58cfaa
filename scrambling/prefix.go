package scrambling

import (
	"fmt"

	"github.com/tsdescramble/tsdescramble/csa"
)

// csa2MaxPayload is the longest payload the csa2 processors accept: a whole 188-byte TS packet
// after its 4-byte header.
const csa2MaxPayload = 184

// DecryptPrefix writes to dst the first len(dst) bytes of payload descrambled by system s with
// control word cw, without changing payload: the bytes a Processor of s would leave in
// payload[:len(dst)] after Decrypt with the key s.NewKey(cw) makes. dst must not overlap
// payload.
//
// It is the cheap trial of a control word that key synchronisation needs: when many control
// words are tried on the start of one PES packet, only the first bytes of each result are
// looked at, and expanding a full key and descrambling the whole payload for each would cost
// many times more. It does not allocate for csa2 (whatever the system's lane width), and then
// needs no Key: it runs the stream cipher only as far as dst reaches and one block decryption
// per 8 bytes of dst. For the block-cipher systems it expands the key and deciphers only the
// blocks that dst covers, one per 16 bytes, plus one encryption when dst reaches a DVS-042
// residue or the payload is shorter than a block; those allocate the cipher.
//
// It returns a *KeySizeError for a control word of a size s does not accept, and an error if
// dst is longer than payload or, for csa2, payload is longer than 184 bytes.
func DecryptPrefix(s System, cw []byte, payload, dst []byte) error {
	if len(dst) > len(payload) {
		return fmt.Errorf("scrambling: DecryptPrefix: dst of %d bytes is longer than the payload of %d", len(dst), len(payload))
	}
	switch s := s.(type) {
	case *csa2System:
		if len(cw) != csa.CWSize {
			return checkKeySize(s.Name(), s.KeySizes(), len(cw))
		}
		if len(payload) > csa2MaxPayload {
			return fmt.Errorf("scrambling: csa2: payload of %d bytes, want at most %d", len(payload), csa2MaxPayload)
		}
		csa.DecryptPrefix((*[csa.CWSize]byte)(cw), payload, dst)
		return nil
	case *chainSystem:
		return s.decryptPrefix(cw, payload, dst)
	case *desSystem:
		return s.decryptPrefix(cw, payload, dst)
	}
	return decryptPrefixAny(s, cw, payload, dst)
}

// decryptPrefixAny is DecryptPrefix for a System this package does not know the inside of:
// it descrambles a copy of the whole payload with a new key and processor.
func decryptPrefixAny(s System, cw []byte, payload, dst []byte) error {
	k, err := s.NewKey(cw)
	if err != nil {
		return err
	}
	buf := append([]byte(nil), payload...)
	s.NewProcessor().Decrypt(k, [][]byte{buf})
	copy(dst, buf)
	return nil
}

// decryptPrefix is DecryptPrefix for a CBC system. Each CBC plaintext block is D(C_i) XOR
// C_{i-1} (the IV for the first), so the blocks dst covers are deciphered on their own, in
// one multi-block call, whatever follows them. What lies after the last full block follows
// the system's rule, as in chainProcessor.decrypt: clear, or for DVS-042 XORed with the
// encryption of the last full ciphertext block, or of the IV when there is no full block.
func (s *chainSystem) decryptPrefix(cw []byte, payload, dst []byte) error {
	if err := checkKeySize(s.name, s.sizes, len(cw)); err != nil {
		return err
	}
	m := len(dst)
	full := len(payload) / blockSize * blockSize
	lim := min(m, full)
	if m == 0 || !s.dvs042 && lim == 0 {
		copy(dst, payload) // nothing dst reaches is scrambled
		return nil
	}
	c, err := s.newCipher(cw)
	if err != nil {
		return fmt.Errorf("scrambling: %s: %w", s.name, err)
	}
	if lim > 0 {
		n := (lim + blockSize - 1) / blockSize * blockSize
		buf := make([]byte, n)
		c.DecryptBlocks(buf, payload[:n])
		for t := 0; t < lim; t += blockSize {
			out := dst[t:min(t+blockSize, lim)]
			if s.ecb {
				copy(out, buf[t:])
				continue
			}
			prev := s.iv[:]
			if t > 0 {
				prev = payload[t-blockSize : t]
			}
			for j := range out {
				out[j] = buf[t+j] ^ prev[j]
			}
		}
	}
	if m <= full {
		return nil
	}
	if !s.dvs042 {
		copy(dst[full:], payload[full:m])
		return nil
	}
	// The DVS-042 residue, or a payload shorter than one block.
	pad := make([]byte, blockSize)
	if full > 0 {
		copy(pad, payload[full-blockSize:full])
	} else {
		copy(pad, s.iv[:])
	}
	c.EncryptBlocks(pad, pad)
	for q := full; q < m; q++ {
		dst[q] = payload[q] ^ pad[q-full]
	}
	return nil
}
