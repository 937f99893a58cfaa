package scrambling

import (
	"crypto/cipher"
	"crypto/des"
	"encoding/binary"
	"fmt"
	"sync"
	"sync/atomic"
)

// The descrambler modes a key server sets per key slot, beside the systems Lookup names: OSCam's
// DVBAPI CA_SET_DESCR_MODE asks a descrambler for DVB-CSA, DES or AES-128, in ECB or CBC
// (module-dvbapi.h, enum ca_descr_algo and ca_descr_cipher_mode), and CA_SET_DESCR_DATA gives
// the keys and IVs. DVB-CSA is csa2. The others follow the receivers that descramble them in
// software, tvheadend (src/descrambler/tvhcsa.c, over src/descrambler/algo/) and the stream
// relay of OSCam's emulator, and where neither has a rule, DVB-CISSA's:
//
//   - aes-128-ecb: each whole 16-byte block of the payload is deciphered on its own; the bytes
//     after the last whole block (the residue) and payloads shorter than 16 bytes stay clear.
//     tvheadend src/descrambler/algo/libaes128dec.c, aes128_decrypt_packet: a packet whose
//     payload offset + 16 passes 188 is left as it is, and its loop stops at the last whole
//     block.
//   - des-ecb: the same with DES's 8-byte blocks: the residue and payloads shorter than 8 bytes
//     stay clear. tvheadend src/descrambler/algo/libdesdec.c, des_decrypt_packet (offset + 8
//     past 188: untouched; blocks while offset <= 180); OSCam's emulator stream relay
//     (DescrambleTsPacketsPowervu) does the same for PowerVu's DES.
//   - aes-128-cbc: CBC restarted from the slot's IV for every payload over the whole blocks,
//     the residue and payloads shorter than 16 bytes clear: the dvb-cissa rules (ETSI TS 103
//     127) with another IV, and dvb-cissa itself with its own. tvheadend has no AES-CBC
//     (src/descrambler/capmt.c, capmt_send_key: "uknown cipher mode"); minisatip
//     (src/aes.cpp, dvbaes_cbc_decrypt_stream) deciphers the whole blocks only, as here.
//   - des-cbc: the same with DES, its IV and its 8-byte blocks. tvheadend deciphers every DES
//     slot as des-ecb whatever its cipher mode (capmt.c, capmt_send_key: CA_ALGO_DES is
//     DESCRAMBLER_DES_NCB); package keyserver/dvbapi does the same for a DES slot that got no IV.
//
// A short payload's packet is still marked scrambled; the pipeline clears its bits, as
// tvheadend does ("consider it decrypted now").

// aesECB is AES-128 in ECB over the whole blocks of each payload.
var aesECB = &chainSystem{
	name:      "aes-128-ecb",
	sizes:     []int{16},
	ecb:       true,
	newCipher: newAES,
}

// AESECB returns aes-128-ecb: AES-128 deciphering each whole 16-byte block of a payload on its
// own, the residue and payloads shorter than 16 bytes left clear (the package's list of modes
// says where the rule comes from). Its keys are 16 bytes.
func AESECB() System { return aesECB }

// desECB is single DES in ECB over the whole blocks of each payload.
var desECB = &desSystem{name: "des-ecb"}

// DESECB returns des-ecb: single DES deciphering each whole 8-byte block of a payload on its
// own, the residue and payloads shorter than 8 bytes left clear. Its keys are 8 bytes, parity
// bits ignored, as OpenSSL's DES_set_key_unchecked that tvheadend calls does.
func DESECB() System { return desECB }

// NewAESCBC returns aes-128-cbc with the given 16-byte IV: AES-128 in CBC restarted from iv
// for every payload, the residue and payloads shorter than 16 bytes left clear. With the
// DVB-CISSA IV ("DVBTMCPTAESCISSA") it returns the dvb-cissa system, so such keys descramble
// exactly as -cipher dvb-cissa does. The systems of one IV are one value, so that keys of the
// same IV compare equal, up to maxModeIVs IVs in a process.
func NewAESCBC(iv []byte) (System, error) {
	if len(iv) != blockSize {
		return nil, fmt.Errorf("scrambling: aes-128-cbc: IV of %d bytes, want %d", len(iv), blockSize)
	}
	if [blockSize]byte(iv) == dvbCISSAIV {
		return dvbCISSA, nil
	}
	return modeSystem("aes-128-cbc", iv, func() System {
		return &chainSystem{name: "aes-128-cbc", sizes: []int{16}, iv: [blockSize]byte(iv), newCipher: newAES}
	}), nil
}

// NewDESCBC returns des-cbc with the given 8-byte IV: single DES in CBC restarted from iv for
// every payload, the residue and payloads shorter than 8 bytes left clear. The systems of one
// IV are one value, as NewAESCBC's.
func NewDESCBC(iv []byte) (System, error) {
	if len(iv) != des.BlockSize {
		return nil, fmt.Errorf("scrambling: des-cbc: IV of %d bytes, want %d", len(iv), des.BlockSize)
	}
	return modeSystem("des-cbc", iv, func() System {
		return &desSystem{name: "des-cbc", cbc: true, iv: [des.BlockSize]byte(iv)}
	}), nil
}

// maxModeIVs bounds the CBC systems kept, one per IV: a key server sends few IVs (one, in
// practice, such as DVB-CISSA's), and one that sent a new IV with every key must not make the
// process grow. Past the bound a new value is made for each call, which descrambles the same.
const maxModeIVs = 1024

var (
	modeSystems sync.Map // name and IV → System
	modeCount   atomic.Int32
)

// modeSystem returns the system of name and iv that newSystem made first, or a new one past
// maxModeIVs.
func modeSystem(name string, iv []byte, newSystem func() System) System {
	id := name + "/" + string(iv)
	if s, ok := modeSystems.Load(id); ok {
		return s.(System)
	}
	s := newSystem()
	if modeCount.Load() >= maxModeIVs {
		return s
	}
	s2, loaded := modeSystems.LoadOrStore(id, s)
	if !loaded {
		modeCount.Add(1)
	}
	return s2.(System)
}

// desSystem is single DES over the whole 8-byte blocks of each payload, in ECB or in CBC
// restarted from iv for every payload; the residue and payloads shorter than a block stay
// clear. DES is a legacy of some CA systems (PowerVu): it runs one block per call of
// crypto/des, far below the speed of the other systems, which is enough for the one service a
// key server descrambles.
type desSystem struct {
	name string
	cbc  bool
	iv   [des.BlockSize]byte
}

func (s *desSystem) Name() string    { return s.name }
func (s *desSystem) KeySizes() []int { return []int{8} }
func (s *desSystem) Lanes() int      { return passLanes }

// MinPayload is one DES block: shorter payloads stay clear.
func (s *desSystem) MinPayload() int { return des.BlockSize }

func (s *desSystem) NewKey(cw []byte) (Key, error) {
	if err := checkKeySize(s.name, s.KeySizes(), len(cw)); err != nil {
		return nil, err
	}
	c, err := des.NewCipher(cw)
	if err != nil {
		return nil, fmt.Errorf("scrambling: %s: %w", s.name, err)
	}
	return &desKey{sys: s, c: c}, nil
}

func (s *desSystem) NewProcessor() Processor { return &desProcessor{name: s.name} }

// desKey is an expanded DES key of a desSystem, with the mode and IV of its system.
type desKey struct {
	sys *desSystem
	c   cipher.Block
}

func (k *desKey) System() System { return k.sys }

// desProcessor (de)scrambles with the keys of every desSystem of its name, each with its own
// IV. It holds nothing between calls.
type desProcessor struct{ name string }

func (p *desProcessor) key(k Key) *desKey {
	dk, ok := k.(*desKey)
	if !ok || dk.sys.name != p.name {
		foreignKey(p.name, k)
	}
	return dk
}

// Decrypt deciphers the whole blocks of each payload, in place.
func (p *desProcessor) Decrypt(k Key, payloads [][]byte) {
	key := p.key(k)
	for _, b := range payloads {
		n := len(b) / des.BlockSize * des.BlockSize
		prev := key.sys.iv
		for j := 0; j < n; j += des.BlockSize {
			blk := b[j : j+des.BlockSize]
			c := [des.BlockSize]byte(blk)
			key.c.Decrypt(blk, blk)
			if key.sys.cbc {
				xor8(blk, prev[:])
				prev = c
			}
		}
	}
}

// Encrypt enciphers the whole blocks of each payload, in place; it is the inverse of Decrypt.
func (p *desProcessor) Encrypt(k Key, payloads [][]byte) {
	key := p.key(k)
	for _, b := range payloads {
		n := len(b) / des.BlockSize * des.BlockSize
		prev := key.sys.iv[:]
		for j := 0; j < n; j += des.BlockSize {
			blk := b[j : j+des.BlockSize]
			if key.sys.cbc {
				xor8(blk, prev)
			}
			key.c.Encrypt(blk, blk)
			prev = blk
		}
	}
}

// decryptPrefix is DecryptPrefix for DES: only the blocks dst reaches are deciphered.
func (s *desSystem) decryptPrefix(cw []byte, payload, dst []byte) error {
	if err := checkKeySize(s.name, s.KeySizes(), len(cw)); err != nil {
		return err
	}
	m := len(dst)
	full := len(payload) / des.BlockSize * des.BlockSize
	lim := min(m, full)
	if lim > 0 {
		c, err := des.NewCipher(cw)
		if err != nil {
			return fmt.Errorf("scrambling: %s: %w", s.name, err)
		}
		var blk [des.BlockSize]byte
		for t := 0; t < lim; t += des.BlockSize {
			c.Decrypt(blk[:], payload[t:t+des.BlockSize])
			if s.cbc {
				prev := s.iv[:]
				if t > 0 {
					prev = payload[t-des.BlockSize : t]
				}
				xor8(blk[:], prev)
			}
			copy(dst[t:lim], blk[:])
		}
	}
	if m > lim {
		copy(dst[lim:], payload[lim:m]) // the residue, or a payload under a block: clear
	}
	return nil
}

// xor8 XORs the 8 bytes of b into dst.
func xor8(dst, b []byte) {
	le := binary.LittleEndian
	le.PutUint64(dst, le.Uint64(dst)^le.Uint64(b))
}
