package scrambling_test

import (
	"bufio"
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/des"
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tsdescramble/tsdescramble/scrambling"
)

// The descrambler modes of a key server's key slots, checked against Go's crypto/aes and
// crypto/des, which share no code with this module (the AES systems here run on
// internal/aesblocks), under the rules of the package doc: whole blocks only, each on its own
// (ECB) or chained from the IV restarted for every payload (CBC); the residue and payloads under
// a block clear.

var (
	testAESIV = []byte{0xF0, 0xE1, 0xD2, 0xC3, 0xB4, 0xA5, 0x96, 0x87, 0x78, 0x69, 0x5A, 0x4B, 0x3C, 0x2D, 0x1E, 0x0F}
	testDESIV = []byte{0x13, 0x57, 0x9B, 0xDF, 0x02, 0x46, 0x8A, 0xCE}
)

// modeCase is a mode system with what the reference needs to know of it.
type modeCase struct {
	s   scrambling.System
	des bool   // DES, else AES-128
	iv  []byte // CBC from this IV, or nil: ECB
}

func modeCases(t testing.TB) []modeCase {
	aesCBC, err := scrambling.NewAESCBC(testAESIV)
	if err != nil {
		t.Fatal(err)
	}
	desCBC, err := scrambling.NewDESCBC(testDESIV)
	if err != nil {
		t.Fatal(err)
	}
	return []modeCase{
		{s: scrambling.AESECB()},
		{s: aesCBC, iv: testAESIV},
		{s: scrambling.DESECB(), des: true},
		{s: desCBC, des: true, iv: testDESIV},
	}
}

// modeSystems returns the mode systems, for the tables of every system.
func modeSystems(t testing.TB) []scrambling.System {
	var out []scrambling.System
	for _, c := range modeCases(t) {
		out = append(out, c.s)
	}
	return out
}

// stdlibCrypt (de)scrambles one payload as c's rules say, with crypto/aes or crypto/des and
// crypto/cipher's CBC.
func stdlibCrypt(t testing.TB, c modeCase, key, payload []byte, encrypt bool) {
	newCipher := aes.NewCipher
	if c.des {
		newCipher = des.NewCipher
	}
	b, err := newCipher(key)
	if err != nil {
		t.Fatal(err)
	}
	bs := b.BlockSize()
	n := len(payload) / bs * bs // the residue after n stays clear
	if n == 0 {
		return
	}
	if c.iv != nil {
		if encrypt {
			cipher.NewCBCEncrypter(b, c.iv).CryptBlocks(payload[:n], payload[:n])
		} else {
			cipher.NewCBCDecrypter(b, c.iv).CryptBlocks(payload[:n], payload[:n])
		}
		return
	}
	for i := 0; i < n; i += bs {
		if encrypt {
			b.Encrypt(payload[i:], payload[i:])
		} else {
			b.Decrypt(payload[i:], payload[i:])
		}
	}
}

// TestModesAgainstStdlib checks every payload length 0..184, in batches of mixed lengths and
// many sizes, in both directions, against crypto/aes and crypto/des.
func TestModesAgainstStdlib(t *testing.T) {
	for _, c := range modeCases(t) {
		t.Run(label(c.s, c.s.KeySizes()[0]), func(t *testing.T) {
			cw := testKey(c.s.Name(), c.s.KeySizes()[0])
			k, err := c.s.NewKey(cw)
			if err != nil {
				t.Fatal(err)
			}
			p := c.s.NewProcessor()
			for _, size := range batchSizes(c.s.Lanes()) {
				for _, encrypt := range []bool{true, false} {
					got, orig := mixedPayloads(uint64(size) + 77)
					for _, batch := range batches(got, size) {
						if encrypt {
							p.Encrypt(k, batch)
						} else {
							p.Decrypt(k, batch)
						}
					}
					for i, want := range orig {
						stdlibCrypt(t, c, cw, want, encrypt)
						if !bytes.Equal(got[i], want) {
							t.Fatalf("batch size %d, encrypt %v, %d-byte payload:\n got %x\nwant %x", size, encrypt, len(want), got[i], want)
						}
					}
				}
			}
			// The clear part: a payload under a block, and the residue, are left as they are.
			bs := c.s.MinPayload()
			for _, n := range []int{0, 1, bs - 1, bs + 1, 2*bs + bs/2, maxPayload} {
				b := bytes.Repeat([]byte{0x5A}, n)
				p.Decrypt(k, [][]byte{b})
				whole := n / bs * bs
				if !bytes.Equal(b[whole:], bytes.Repeat([]byte{0x5A}, n-whole)) {
					t.Errorf("%d-byte payload: the %d bytes after the last whole block changed", n, n-whole)
				}
				if whole > 0 && bytes.Equal(b[:whole], bytes.Repeat([]byte{0x5A}, whole)) {
					t.Errorf("%d-byte payload: the whole blocks were left as they came", n)
				}
			}
		})
	}
}

// TestModeVectors checks the published vectors of testdata/modes.txt in both directions.
func TestModeVectors(t *testing.T) {
	f, err := os.Open(filepath.Join("testdata", "modes.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<16)
	seen := map[string]bool{}
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		fields := strings.Fields(text)
		if len(fields) != 5 {
			t.Fatalf("modes.txt:%d: %d fields, want 5", line, len(fields))
		}
		var v [4][]byte
		for i, x := range fields[1:] {
			if x == "-" {
				continue
			}
			if v[i], err = hex.DecodeString(x); err != nil {
				t.Fatalf("modes.txt:%d: %v", line, err)
			}
		}
		key, iv, clear, scrambled := v[0], v[1], v[2], v[3]
		var s scrambling.System
		switch fields[0] {
		case "aes-128-ecb":
			s = scrambling.AESECB()
		case "des-ecb":
			s = scrambling.DESECB()
		case "aes-128-cbc":
			s, err = scrambling.NewAESCBC(iv)
		case "des-cbc":
			s, err = scrambling.NewDESCBC(iv)
		default:
			t.Fatalf("modes.txt:%d: unknown system %q", line, fields[0])
		}
		if err != nil {
			t.Fatalf("modes.txt:%d: %v", line, err)
		}
		seen[s.Name()] = true
		k, err := s.NewKey(key)
		if err != nil {
			t.Fatalf("modes.txt:%d: %v", line, err)
		}
		got := slices.Clone(clear)
		s.NewProcessor().Encrypt(k, [][]byte{got})
		if !bytes.Equal(got, scrambled) {
			t.Errorf("modes.txt:%d: %s Encrypt\n got %x\nwant %x", line, s.Name(), got, scrambled)
		}
		s.NewProcessor().Decrypt(k, [][]byte{got})
		if !bytes.Equal(got, clear) {
			t.Errorf("modes.txt:%d: %s Decrypt\n got %x\nwant %x", line, s.Name(), got, clear)
		}
		dst := make([]byte, len(scrambled))
		if err := scrambling.DecryptPrefix(s, key, scrambled, dst); err != nil || !bytes.Equal(dst, clear) {
			t.Errorf("modes.txt:%d: %s DecryptPrefix: %x, %v", line, s.Name(), dst, err)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"aes-128-ecb", "aes-128-cbc", "des-ecb", "des-cbc"} {
		if !seen[name] {
			t.Errorf("no vector of %s", name)
		}
	}
}

// AES-128-CBC with the DVB-CISSA IV is dvb-cissa: the same system, so the same bytes (the ETSI
// vectors of dvb_cissa.txt pass through it).
func TestAESCBCWithTheCISSAIVIsDVBCISSA(t *testing.T) {
	s, err := scrambling.NewAESCBC([]byte("DVBTMCPTAESCISSA"))
	if err != nil {
		t.Fatal(err)
	}
	if cissa := lookup(t, "dvb-cissa"); s != cissa {
		t.Fatalf("NewAESCBC(DVB-CISSA IV) = %s, not the dvb-cissa system", s.Name())
	}
	p := s.NewProcessor()
	for _, v := range readVectors(t, "dvb_cissa.txt") {
		k, err := s.NewKey(v.key)
		if err != nil {
			t.Fatal(err)
		}
		off := payloadOffset(v.clear)
		got := slices.Clone(v.scrm[off:])
		p.Decrypt(k, [][]byte{got})
		if !bytes.Equal(got, v.clear[off:]) {
			t.Errorf("vector at line %d: got %x", v.line, got)
		}
	}
}

// The systems of one IV are one value, so that a key server's keys of the same mode and IV
// compare equal; another IV is another system of the same name, whose processors take the keys
// of every IV, each with its own.
func TestModeSystemsPerIV(t *testing.T) {
	a1, _ := scrambling.NewAESCBC(testAESIV)
	a2, _ := scrambling.NewAESCBC(slices.Clone(testAESIV))
	other := slices.Clone(testAESIV)
	other[0] ^= 1
	b, _ := scrambling.NewAESCBC(other)
	if a1 != a2 || a1 == b || b.Name() != "aes-128-cbc" {
		t.Fatalf("NewAESCBC: same IV gave %p and %p, another IV %p (%s)", a1, a2, b, b.Name())
	}
	d1, _ := scrambling.NewDESCBC(testDESIV)
	d2, _ := scrambling.NewDESCBC(slices.Clone(testDESIV))
	if d1 != d2 || d1.Name() != "des-cbc" {
		t.Fatal("NewDESCBC: the same IV gave two systems")
	}
	// A processor of one IV with a key of another: the key's IV applies.
	cw := testKey("aes-128-cbc", 16)
	kb, _ := b.NewKey(cw)
	got := bytes.Repeat([]byte{7}, 40)
	want := slices.Clone(got)
	a1.NewProcessor().Decrypt(kb, [][]byte{got})
	stdlibCrypt(t, modeCase{s: b, iv: other}, cw, want, false)
	if !bytes.Equal(got, want) {
		t.Fatal("a processor used its own IV for another IV's key")
	}
	for _, n := range []int{0, 8, 15, 17, 32} {
		if _, err := scrambling.NewAESCBC(make([]byte, n)); err == nil {
			t.Errorf("NewAESCBC with an IV of %d bytes succeeded", n)
		}
	}
	for _, n := range []int{0, 7, 9, 16} {
		if _, err := scrambling.NewDESCBC(make([]byte, n)); err == nil {
			t.Errorf("NewDESCBC with an IV of %d bytes succeeded", n)
		}
	}
}

// A mode's processor panics on a key of another mode, as every system's does.
func TestModeForeignKeyPanics(t *testing.T) {
	desCBC, _ := scrambling.NewDESCBC(testDESIV)
	aesCBC, _ := scrambling.NewAESCBC(testAESIV)
	desKey, _ := scrambling.DESECB().NewKey(make([]byte, 8))
	cissaKey, _ := lookup(t, "dvb-cissa").NewKey(make([]byte, 16))
	ecbKey, _ := scrambling.AESECB().NewKey(make([]byte, 16))
	for _, c := range []struct {
		s scrambling.System
		k scrambling.Key
	}{{desCBC, desKey}, {scrambling.AESECB(), cissaKey}, {aesCBC, cissaKey}, {lookup(t, "dvb-cissa"), ecbKey}, {scrambling.DESECB(), ecbKey}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s processor took a %s key", c.s.Name(), c.k.System().Name())
				}
			}()
			c.s.NewProcessor().Decrypt(c.k, [][]byte{make([]byte, 16)})
		}()
	}
}
