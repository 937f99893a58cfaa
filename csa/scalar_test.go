package csa

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestNewKeySize(t *testing.T) {
	for _, n := range []int{0, 7, 9, 16} {
		k, err := NewKey(make([]byte, n))
		var kse KeySizeError
		if k != nil || !errors.As(err, &kse) || int(kse) != n {
			t.Errorf("NewKey(%d bytes) = %v, %v; want nil, KeySizeError(%d)", n, k, err, n)
		}
	}
	if got, want := KeySizeError(5).Error(), "csa: invalid control word size 5"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if _, err := NewKey(make([]byte, CWSize)); err != nil {
		t.Errorf("NewKey(8 bytes): %v", err)
	}
}

// TestNewKeyCopies checks that the key does not alias the caller's slice.
func TestNewKeyCopies(t *testing.T) {
	cw := readHex(t, "libdvbcsa_test1.cw.hex")
	k := mustKey(t, cw)
	cw[0] ^= 0xff
	p := readHex(t, "libdvbcsa_test1.scrambled.hex")
	k.Decrypt(p)
	if want := readHex(t, "libdvbcsa_test1.clear.hex"); !bytes.Equal(p, want) {
		t.Error("key changed when the caller's control word slice was modified")
	}
}

func TestPayloadVectors(t *testing.T) {
	for _, v := range payloadVectors(t) {
		t.Run("vector="+v.name, func(t *testing.T) {
			k := mustKey(t, v.cw)
			p := slices.Clone(v.scrambled)
			k.Decrypt(p)
			if !bytes.Equal(p, v.clear) {
				t.Errorf("Decrypt:\n got %x\nwant %x", p, v.clear)
			}
			p = slices.Clone(v.clear)
			k.Encrypt(p)
			if !bytes.Equal(p, v.scrambled) {
				t.Errorf("Encrypt:\n got %x\nwant %x", p, v.scrambled)
			}
		})
	}
}

// tsPayloadOffset locates the payload of a 188-byte TS packet from its
// adaptation field control bits.
func tsPayloadOffset(t *testing.T, pkt []byte) int {
	t.Helper()
	if len(pkt) != 188 || pkt[0] != 0x47 {
		t.Fatalf("not a TS packet: % x", pkt[:4])
	}
	switch pkt[3] >> 4 & 3 {
	case 1: // payload only
		return 4
	case 3: // adaptation field, then payload
		off := 5 + int(pkt[4])
		if off > 188 {
			t.Fatalf("adaptation field length %d too long", pkt[4])
		}
		return off
	}
	t.Fatalf("packet without payload: header % x", pkt[:4])
	return 0
}

// TestFFdecsaPackets runs FFdecsa's whole-packet tests. The TSC bits of each
// header say which parity the packet uses; FFdecsa's comments do not always
// agree, so the test relies only on the header and the key that goes with it.
func TestFFdecsaPackets(t *testing.T) {
	for _, tc := range []struct {
		name       string
		payloadLen int
	}{
		{"1", 184}, {"2", 184}, {"3", 184}, {"p_10_0", 80}, {"p_1_6", 14},
	} {
		t.Run("test="+tc.name, func(t *testing.T) {
			base := "ffdecsa_test_" + tc.name
			k := mustKey(t, readHex(t, base+"_key.hex"))
			enc := readHex(t, base+"_encrypted.hex")
			want := readHex(t, base+"_expected.hex")
			if tsc := enc[3] >> 6; tsc != 2 && tsc != 3 {
				t.Fatalf("TSC %02b: not scrambled", tsc)
			}
			off := tsPayloadOffset(t, enc)
			if got := 188 - off; got != tc.payloadLen {
				t.Fatalf("payload length %d, want %d", got, tc.payloadLen)
			}

			// FFdecsa clears the TSC bits but its expected packets keep the
			// scrambled header byte 3, so byte 3 is not compared.
			equalButByte3 := func(a, b []byte) bool {
				return bytes.Equal(a[:3], b[:3]) && bytes.Equal(a[4:], b[4:])
			}
			pkt := slices.Clone(enc)
			k.Decrypt(pkt[off:])
			if !equalButByte3(pkt, want) {
				t.Errorf("Decrypt:\n got %x\nwant %x", pkt, want)
			}
			pkt = slices.Clone(want)
			k.Encrypt(pkt[off:])
			if !equalButByte3(pkt, enc) {
				t.Errorf("Encrypt:\n got %x\nwant %x", pkt, enc)
			}
		})
	}
}

func TestLengthTables(t *testing.T) {
	k := mustKey(t, lengthTableCW)
	for _, name := range []string{"generated_libdvbcsa_all_lengths.txt", "generated_libdvbcsa_lengths.txt"} {
		vs := readLengthTable(t, name)
		if name == "generated_libdvbcsa_all_lengths.txt" && len(vs) != maxPayload+1 {
			t.Fatalf("%s: %d lines, want %d", name, len(vs), maxPayload+1)
		}
		for _, v := range vs {
			p := slices.Clone(v.scrambled)
			k.Decrypt(p)
			if !bytes.Equal(p, v.clear) {
				t.Errorf("%s: Decrypt length %d:\n got %x\nwant %x", name, len(p), p, v.clear)
			}
			p = slices.Clone(v.clear)
			k.Encrypt(p)
			if !bytes.Equal(p, v.scrambled) {
				t.Errorf("%s: Encrypt length %d:\n got %x\nwant %x", name, len(p), p, v.scrambled)
			}
		}
	}
}

// The FFdecsa test 1 intermediate values check the two halves of the cipher
// and the key schedule on their own.

func TestBlockKeyRows(t *testing.T) {
	// The file lists the rows from the control word down, each byte-reversed:
	// that is the 56 bytes of rows 0..6 in reverse order.
	want := readHex(t, "ffdecsa_test_1_expected_kb.hex")
	rows := blockKeyRows([8]byte(readHex(t, "ffdecsa_test_1_key.hex")))
	var got []byte
	for _, r := range rows {
		got = append(got, r[:]...)
	}
	slices.Reverse(got)
	if !bytes.Equal(got, want) {
		t.Errorf("key rows:\n got %x\nwant %x", got, want)
	}
}

func TestBlockRoundKeys(t *testing.T) {
	// Round keys for CW 07e01b02c9e045ee as computed by libdvbcsa
	// (dvbcsa_key_schedule_block), recorded in the project's CSA research notes.
	want := []byte{
		0xce, 0x49, 0x42, 0x11, 0x29, 0x77, 0x6c, 0xa0, 0x99, 0xd3, 0x2c, 0x2d, 0xc5, 0x0d, 0x56, 0xa3,
		0x21, 0x5c, 0x81, 0xca, 0x38, 0x82, 0x60, 0x77, 0x51, 0x30, 0xb3, 0x30, 0xd2, 0x3a, 0x81, 0x1a,
		0x50, 0x89, 0x4e, 0xc0, 0x10, 0xc7, 0x9d, 0x97, 0xe8, 0x04, 0x09, 0x7e, 0x23, 0x19, 0xa1, 0x43,
		0x01, 0xe6, 0x1d, 0x04, 0xcf, 0xe6, 0x43, 0xe8,
	}
	k := mustKey(t, readHex(t, "ffdecsa_test_1_key.hex"))
	if !bytes.Equal(k.kk[:], want) {
		t.Errorf("round keys:\n got %x\nwant %x", k.kk, want)
	}
}

func TestStreamKeystream(t *testing.T) {
	k := mustKey(t, readHex(t, "ffdecsa_test_1_key.hex"))
	pkt := readHex(t, "ffdecsa_test_1_encrypted.hex")
	want := readHex(t, "ffdecsa_test_1_expected_stream.hex")
	s := newStreamState(&k.cw)
	s.init(pkt[4:12])
	var got []byte
	for len(got) < len(want) {
		ks := s.keystream()
		got = append(got, ks[:]...)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("keystream:\n got %x\nwant %x", got, want)
	}
}

func TestBlockCipherOutput(t *testing.T) {
	k := mustKey(t, readHex(t, "ffdecsa_test_1_key.hex"))
	payload := readHex(t, "ffdecsa_test_1_encrypted.hex")[4:]
	ks := readHex(t, "ffdecsa_test_1_expected_stream.hex")
	want := readHex(t, "ffdecsa_test_1_expected_block.hex")
	var got []byte
	for i := 0; i < len(payload); i += 8 {
		blk := [8]byte(payload[i : i+8]) // C'_i: block 0 has no keystream
		if i > 0 {
			for j := range blk {
				blk[j] ^= ks[i-8+j]
			}
		}
		enc := blk
		blockDecrypt(&k.kk, &blk)
		got = append(got, blk[:]...)
		if blockEncrypt(&k.kk, &blk); blk != enc {
			t.Errorf("block %d: blockEncrypt does not invert blockDecrypt", i/8)
		}
	}
	if !bytes.Equal(got, want) {
		t.Errorf("block cipher output:\n got %x\nwant %x", got, want)
	}
}

// TestBlockPerm checks the bit permutation against the first entries of the
// published 256-entry table (TSDuck block_perm) and for being a bijection.
func TestBlockPerm(t *testing.T) {
	want := []byte{0x00, 0x02, 0x80, 0x82, 0x20, 0x22, 0xA0, 0xA2, 0x10, 0x12, 0x90, 0x92, 0x30, 0x32, 0xB0, 0xB2}
	for i, w := range want {
		if got := blockPerm(byte(i)); got != w {
			t.Errorf("blockPerm(%#x) = %#x, want %#x", i, got, w)
		}
	}
	if got := blockPerm(0xff); got != 0xff {
		t.Errorf("blockPerm(0xff) = %#x", got)
	}
	if got := blockPerm(0x40); got != 0x01 {
		t.Errorf("blockPerm(0x40) = %#x, want 0x01", got)
	}
	seen := map[byte]bool{}
	for i := 0; i < 256; i++ {
		seen[blockPerm(byte(i))] = true
	}
	if len(seen) != 256 {
		t.Errorf("blockPerm is not a permutation: %d distinct outputs", len(seen))
	}
}

func TestScalarRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	cw := make([]byte, CWSize)
	for i := 0; i < 2000; i++ {
		for j := range cw {
			cw[j] = byte(rng.Uint32())
		}
		k := mustKey(t, cw)
		n := rng.IntN(maxPayload + 1)
		clear := make([]byte, n)
		for j := range clear {
			clear[j] = byte(rng.Uint32())
		}
		p := slices.Clone(clear)
		k.Encrypt(p)
		if n < 8 && !bytes.Equal(p, clear) {
			t.Fatalf("length %d: short payload was changed", n)
		}
		if n >= 8 && bytes.Equal(p[:8], clear[:8]) {
			t.Fatalf("length %d: first block left clear", n)
		}
		k.Decrypt(p)
		if !bytes.Equal(p, clear) {
			t.Fatalf("cw %x length %d: Decrypt(Encrypt(x)) != x", cw, n)
		}
	}
}

// TestScalarLongPayload checks that payloads longer than a TS packet's are
// processed without a panic and still round-trip.
func TestScalarLongPayload(t *testing.T) {
	k := mustKey(t, lengthTableCW)
	p := make([]byte, 1000)
	for i := range p {
		p[i] = byte(i)
	}
	q := slices.Clone(p)
	k.Encrypt(q)
	k.Decrypt(q)
	if !bytes.Equal(p, q) {
		t.Error("1000-byte payload does not round-trip")
	}
}

func TestScalarNoAlloc(t *testing.T) {
	k := mustKey(t, lengthTableCW)
	p := make([]byte, maxPayload)
	if n := testing.AllocsPerRun(100, func() { k.Decrypt(p); k.Encrypt(p) }); n != 0 {
		t.Errorf("%v allocations per Decrypt+Encrypt, want 0", n)
	}
}
