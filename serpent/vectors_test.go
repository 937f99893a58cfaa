package serpent

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"os"
	"strings"
	"testing"
)

// nessieVector is one entry of the NESSIE Serpent test vector files
// (testdata/serpent_nessie-*.txt, from the Serpent page of Eli Biham at
// the Technion, sets 1 to 8 of "Serpent-*-128.verified.test-vectors").
type nessieVector struct {
	name   string            // "Set 1, vector#  0"
	fields map[string][]byte // key, plain, cipher, decrypted, encrypted, iterated 100/1000 times
}

// readNessie parses a NESSIE file. Values longer than one line (the 256-bit
// keys) continue on lines that hold only hex digits.
func readNessie(t *testing.T, path string) []nessieVector {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var vs []nessieVector
	var last string
	s := bufio.NewScanner(f)
	for s.Scan() {
		line := strings.TrimSpace(s.Text())
		switch {
		case strings.HasPrefix(line, "Set ") && strings.HasSuffix(line, ":"):
			vs = append(vs, nessieVector{name: strings.TrimSuffix(line, ":"), fields: map[string][]byte{}})
			last = ""
		case len(vs) == 0 || line == "":
			last = ""
		case strings.Contains(line, "=") && !strings.HasPrefix(line, "="):
			k, v, _ := strings.Cut(line, "=")
			last = strings.ToLower(k)
			vs[len(vs)-1].fields[last] = mustHex(t, v)
		case last != "":
			f := vs[len(vs)-1].fields
			f[last] = append(f[last], mustHex(t, line)...)
		}
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	return vs
}

func mustHex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatalf("bad hex %q: %v", s, err)
	}
	return b
}

// TestNESSIE checks every vector of the three NESSIE files: sets 1-4 by
// encryption, decryption and the iterated values, sets 5-8 by decryption
// and re-encryption. The single-block methods and every multi-block
// implementation must agree with each vector.
func TestNESSIE(t *testing.T) {
	for _, tc := range []struct {
		file      string
		keyBytes  int
		encrypt   int // vectors in sets 1-4
		decrypt   int // vectors in sets 5-8
		iterated  int // vectors with iterated values
		totalSets int
	}{
		{"serpent_nessie-128.txt", 16, 514, 514, 514, 8},
		{"serpent_nessie-192.txt", 24, 578, 578, 578, 8},
		{"serpent_nessie-256.txt", 32, 642, 642, 642, 8},
	} {
		t.Run("file="+tc.file, func(t *testing.T) {
			vs := readNessie(t, "testdata/"+tc.file)
			var enc, dec, iter int
			sets := map[byte]bool{}
			for _, v := range vs {
				key := v.fields["key"]
				if len(key) != tc.keyBytes {
					t.Fatalf("%s: key of %d bytes", v.name, len(key))
				}
				c := newTestCipher(t, key)
				sets[v.name[4]] = true
				plain, cipher := v.fields["plain"], v.fields["cipher"]
				if len(plain) != BlockSize || len(cipher) != BlockSize {
					t.Fatalf("%s: missing plain or cipher", v.name)
				}
				if d, ok := v.fields["decrypted"]; ok { // sets 1-4
					enc++
					checkEncrypt(t, v.name, c, plain, cipher)
					checkDecrypt(t, v.name, c, cipher, d)
					i100, ok100 := v.fields["iterated 100 times"]
					i1000, ok1000 := v.fields["iterated 1000 times"]
					if !ok100 || !ok1000 {
						t.Fatalf("%s: missing iterated values", v.name)
					}
					iter++
					checkIterated(t, v.name, c, plain, i100, i1000)
				} else if e, ok := v.fields["encrypted"]; ok { // sets 5-8
					dec++
					checkDecrypt(t, v.name, c, cipher, plain)
					checkEncrypt(t, v.name, c, plain, e)
				} else {
					t.Fatalf("%s: neither decrypted nor encrypted given", v.name)
				}
			}
			if enc != tc.encrypt || dec != tc.decrypt || iter != tc.iterated || len(sets) != tc.totalSets {
				t.Errorf("checked %d encryption, %d decryption, %d iterated vectors in %d sets; want %d, %d, %d in %d",
					enc, dec, iter, len(sets), tc.encrypt, tc.decrypt, tc.iterated, tc.totalSets)
			}
			t.Logf("%d vectors: %d encryption (with iterated 100/1000), %d decryption", len(vs), enc, dec)
		})
	}
}

// TestAESSubmissionKAT checks the known-answer files of the AES submission
// (testdata/serpent_ecb_{vk,vt,tbl}.txt, the "floppy4" set). They print
// KEY, PT and CT byte-reversed relative to the standard order, so every
// value is reversed before use; nettle's testsuite/serpent-test.c does the
// same.
func TestAESSubmissionKAT(t *testing.T) {
	for _, tc := range []struct {
		file string
		want int
	}{
		{"serpent_ecb_vk.txt", 576},
		{"serpent_ecb_vt.txt", 384},
		{"serpent_ecb_tbl.txt", 1536},
	} {
		t.Run("file="+tc.file, func(t *testing.T) {
			data, err := os.ReadFile("testdata/" + tc.file)
			if err != nil {
				t.Fatal(err)
			}
			var key, pt []byte
			var c *Cipher
			n := 0
			sizes := map[int]int{}
			for line := range strings.Lines(string(data)) {
				line = strings.TrimSpace(line)
				k, v, ok := strings.Cut(line, "=")
				if !ok {
					continue
				}
				switch k {
				case "KEYSIZE":
					key, pt, c = nil, nil, nil
				case "KEY":
					key = reversed(mustHex(t, v))
					c = newTestCipher(t, key)
				case "PT":
					pt = reversed(mustHex(t, v))
				case "CT":
					if c == nil || pt == nil {
						t.Fatalf("CT before KEY and PT in %s", tc.file)
					}
					ct := reversed(mustHex(t, v))
					name := tc.file + " " + hex.EncodeToString(key)
					checkEncrypt(t, name, c, pt, ct)
					checkDecrypt(t, name, c, ct, pt)
					sizes[len(key)*8]++
					n++
				}
			}
			if n != tc.want || len(sizes) != 3 {
				t.Errorf("checked %d vectors (%v by key size), want %d over 3 key sizes", n, sizes, tc.want)
			}
			t.Logf("%d vectors by key size: %v", n, sizes)
		})
	}
}

func reversed(b []byte) []byte {
	r := make([]byte, len(b))
	for i, x := range b {
		r[len(b)-1-i] = x
	}
	return r
}

// Spot checks that need no file: the first vector of NESSIE set 1 and of
// set 4 for 128-bit keys, and the AES-submission ecb_vk vector I=1 for
// 128-bit keys, converted to standard order.
func TestKnownAnswerSpot(t *testing.T) {
	for _, v := range []struct{ key, pt, ct string }{
		{"80000000000000000000000000000000", "00000000000000000000000000000000", "264e5481eff42a4606abda06c0bfda3d"},
		{"000102030405060708090a0b0c0d0e0f", "00112233445566778899aabbccddeeff", "563e2cf8740a27c164804560391e9b27"},
		{"00000000000000000000000000000080", "00000000000000000000000000000000", "ddd26b98a5ffd82c05345a9dadbfaf49"},
	} {
		c := newTestCipher(t, mustHex(t, v.key))
		pt, ct := mustHex(t, v.pt), mustHex(t, v.ct)
		checkEncrypt(t, v.key, c, pt, ct)
		checkDecrypt(t, v.key, c, ct, pt)
	}
}

func newTestCipher(t *testing.T, key []byte) *Cipher {
	t.Helper()
	c, err := NewCipher(key)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// checkEncrypt checks in against want through Encrypt, through the
// dispatched EncryptBlocks and through every multi-block implementation. In
// the multi-block calls the vector sits in one lane of a full group, the
// other lanes hold unrelated blocks checked against the single-block path,
// so a lane mix-up cannot go unnoticed.
func checkEncrypt(t *testing.T, name string, c *Cipher, in, want []byte) {
	t.Helper()
	checkPaths(t, name, c, in, want, true)
}

func checkDecrypt(t *testing.T, name string, c *Cipher, in, want []byte) {
	t.Helper()
	checkPaths(t, name, c, in, want, false)
}

func checkPaths(t *testing.T, name string, c *Cipher, in, want []byte, enc bool) {
	t.Helper()
	got := make([]byte, BlockSize)
	single := c.Decrypt
	if enc {
		single = c.Encrypt
	}
	single(got, in)
	if !bytes.Equal(got, want) {
		t.Fatalf("%s: single block (encrypt=%v) = %x, want %x", name, enc, got, want)
	}
	for _, s := range availableSingles(t) {
		if enc {
			s.encrypt(&c.ek, got, in)
		} else {
			s.decrypt(&c.dk, got, in)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("%s: single=%s (encrypt=%v) = %x, want %x", name, s.name, enc, got, want)
		}
	}
	for _, im := range implementations() {
		for _, n := range im.widths {
			lane := int(in[0]) % n // vary the lane that holds the vector
			src := make([]byte, n*BlockSize)
			exp := make([]byte, n*BlockSize)
			for i := range n {
				b := src[i*BlockSize : (i+1)*BlockSize]
				if i == lane {
					copy(b, in)
					copy(exp[i*BlockSize:], want)
					continue
				}
				for j := range b {
					b[j] = byte(i*31 + j*7 + int(in[j]))
				}
				single(exp[i*BlockSize:], b)
			}
			dst := make([]byte, len(src))
			if enc {
				im.encrypt(&c.ks, dst, src)
			} else {
				im.decrypt(&c.ks, dst, src)
			}
			if !bytes.Equal(dst, exp) {
				t.Fatalf("%s: impl=%s blocks=%d (encrypt=%v) lane %d:\n got %x\nwant %x", name, im.name, n, enc, lane, dst, exp)
			}
		}
	}
}

// checkIterated checks the NESSIE "Iterated 100 times" and "Iterated 1000
// times" values: the plaintext encrypted 100 (1000) times in a row. The
// single-block path runs it directly; each multi-block implementation runs
// it in every lane of one group at once.
func checkIterated(t *testing.T, name string, c *Cipher, plain, want100, want1000 []byte) {
	t.Helper()
	x := bytes.Clone(plain)
	for i := 1; i <= 1000; i++ {
		c.Encrypt(x, x)
		if i == 100 && !bytes.Equal(x, want100) {
			t.Fatalf("%s: iterated 100 times = %x, want %x", name, x, want100)
		}
	}
	if !bytes.Equal(x, want1000) {
		t.Fatalf("%s: iterated 1000 times = %x, want %x", name, x, want1000)
	}
	for _, s := range availableSingles(t) {
		x := bytes.Clone(plain)
		for range 1000 {
			s.encrypt(&c.ek, x, x)
		}
		if !bytes.Equal(x, want1000) {
			t.Fatalf("%s: single=%s iterated 1000 times = %x, want %x", name, s.name, x, want1000)
		}
	}
	for _, im := range implementations() {
		if strings.HasPrefix(im.name, "dispatch") {
			// Made of the others, each checked here on its own;
			// checkPaths covers the dispatcher.
			continue
		}
		for _, n := range im.widths {
			buf := bytes.Repeat(plain, n)
			for i := 1; i <= 1000; i++ {
				im.encrypt(&c.ks, buf, buf)
				switch i {
				case 100:
					if !bytes.Equal(buf, bytes.Repeat(want100, n)) {
						t.Fatalf("%s: impl=%s blocks=%d iterated 100 times = %x, want %x in each lane", name, im.name, n, buf, want100)
					}
				case 1000:
					if !bytes.Equal(buf, bytes.Repeat(want1000, n)) {
						t.Fatalf("%s: impl=%s blocks=%d iterated 1000 times = %x, want %x in each lane", name, im.name, n, buf, want1000)
					}
				}
			}
		}
	}
}
