package scrambling_test

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// vector is a known-answer vector: a key, and a clear and a scrambled payload.
type vector struct {
	line             int
	key, clear, scrm []byte
}

// readVectors parses a testdata file of "KEY CLEAR SCRAMBLED" hex lines ('#' comments).
func readVectors(t *testing.T, name string) []vector {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var vs []vector
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<16)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) != 3 {
			t.Fatalf("%s:%d: %d fields, want 3", name, n, len(fields))
		}
		v := vector{line: n}
		for i, dst := range []*[]byte{&v.key, &v.clear, &v.scrm} {
			if *dst, err = hex.DecodeString(fields[i]); err != nil {
				t.Fatalf("%s:%d: %v", name, n, err)
			}
		}
		if len(v.clear) != len(v.scrm) {
			t.Fatalf("%s:%d: clear and scrambled lengths differ", name, n)
		}
		vs = append(vs, v)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return vs
}

// payloadOffset returns where the payload of a 188-byte TS packet starts: after the 4-byte
// header and, when adaptation_field_control says there is one, the adaptation field.
func payloadOffset(pkt []byte) int {
	if pkt[3]&0x20 != 0 {
		return 5 + int(pkt[4])
	}
	return 4
}

// checkVectors runs the vectors through the system of the given name: one at a time, then
// all in one batch, in both directions.
func checkVectors(t *testing.T, name string, vs []vector) {
	s := lookup(t, name)
	p := s.NewProcessor()
	for _, v := range vs {
		k, err := s.NewKey(v.key)
		if err != nil {
			t.Fatal(err)
		}
		got := slices.Clone(v.scrm)
		p.Decrypt(k, [][]byte{got})
		if !bytes.Equal(got, v.clear) {
			t.Errorf("%s: vector at line %d: Decrypt\n got %x\nwant %x", name, v.line, got, v.clear)
		}
		got = slices.Clone(v.clear)
		p.Encrypt(k, [][]byte{got})
		if !bytes.Equal(got, v.scrm) {
			t.Errorf("%s: vector at line %d: Encrypt\n got %x\nwant %x", name, v.line, got, v.scrm)
		}
	}
	// In one batch, when the vectors share a key: the batched path gathers blocks across
	// payloads of different lengths.
	for _, v := range vs[1:] {
		if !bytes.Equal(v.key, vs[0].key) {
			return
		}
	}
	k, err := s.NewKey(vs[0].key)
	if err != nil {
		t.Fatal(err)
	}
	var dec, enc [][]byte
	for _, v := range vs {
		dec = append(dec, slices.Clone(v.scrm))
		enc = append(enc, slices.Clone(v.clear))
	}
	p.Decrypt(k, dec)
	p.Encrypt(k, enc)
	for i, v := range vs {
		if !bytes.Equal(dec[i], v.clear) || !bytes.Equal(enc[i], v.scrm) {
			t.Errorf("%s: vector at line %d fails in a batch of %d", name, v.line, len(vs))
		}
	}
}

// TestDVBCISSAVectors checks the four TS-level vectors of ETSI TS 103 127 Annex B. They are
// whole packets: the payload follows the header and any adaptation field, which the scrambler
// leaves alone apart from the scrambling control bits.
func TestDVBCISSAVectors(t *testing.T) {
	pkts := readVectors(t, "dvb_cissa.txt")
	if len(pkts) != 4 {
		t.Fatalf("%d vectors, want 4", len(pkts))
	}
	var vs []vector
	for _, v := range pkts {
		if len(v.clear) != 188 || v.clear[0] != 0x47 {
			t.Fatalf("line %d: not a TS packet", v.line)
		}
		off := payloadOffset(v.clear)
		if payloadOffset(v.scrm) != off {
			t.Fatalf("line %d: payload offsets differ", v.line)
		}
		// Only the transport_scrambling_control bits (the top two of byte 3) differ before the
		// payload: "10" (even key) in the scrambled packet.
		hc, hs := slices.Clone(v.clear[:off]), slices.Clone(v.scrm[:off])
		if hs[3]>>6 != 2 || hc[3]>>6 != 0 {
			t.Errorf("line %d: scrambling control bits %02b -> %02b, want 00 -> 10", v.line, hc[3]>>6, hs[3]>>6)
		}
		hc[3] &^= 0xc0
		hs[3] &^= 0xc0
		if !bytes.Equal(hc, hs) {
			t.Errorf("line %d: header or adaptation field differ", v.line)
		}
		vs = append(vs, vector{line: v.line, key: v.key, clear: v.clear[off:], scrm: v.scrm[off:]})
	}
	checkVectors(t, "dvb-cissa", vs)
}

// TestATISIDSAVectors checks TSDuck's ATIS-IDSA vectors: a 13-byte payload (no full block),
// 35 bytes (two blocks and a residue) and 48 bytes (three blocks).
func TestATISIDSAVectors(t *testing.T) {
	vs := readVectors(t, "atis_idsa.txt")
	if len(vs) != 3 {
		t.Fatalf("%d vectors, want 3", len(vs))
	}
	checkVectors(t, "atis-idsa", vs)
}
