package dfc

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// katVector is one entry of a NIST-layout known-answer file.
type katVector struct {
	line            int // line of the CT= field, for messages
	keySize, index  int
	key, plain, enc []byte
}

// readKAT parses a file in the layout of the AES round-1 known-answer tests:
// a KEYSIZE= line opens a section, then each test gives I=, KEY=, PT= and CT=.
// It fails the test on anything it does not understand, so a damaged file
// cannot silently shrink the number of vectors checked.
func readKAT(t *testing.T, name string) []katVector {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var (
		out []katVector
		cur katVector
	)
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		field, value, ok := strings.Cut(line, "=")
		if !ok {
			t.Fatalf("%s:%d: unexpected line %q", name, n, line)
		}
		var err error
		switch field {
		case "KEYSIZE":
			cur.keySize, err = strconv.Atoi(value)
		case "I":
			cur.index, err = strconv.Atoi(value)
			cur.key, cur.plain, cur.enc = nil, nil, nil
		case "KEY":
			cur.key, err = hex.DecodeString(value)
		case "PT":
			cur.plain, err = hex.DecodeString(value)
		case "CT":
			cur.enc, err = hex.DecodeString(value)
			cur.line = n
			if err == nil {
				if cur.key == nil || cur.plain == nil || len(cur.key)*8 != cur.keySize ||
					len(cur.plain) != BlockSize || len(cur.enc) != BlockSize {
					t.Fatalf("%s:%d: incomplete or inconsistent vector", name, n)
				}
				out = append(out, cur)
			}
		default:
			t.Fatalf("%s:%d: unknown field %q", name, n, field)
		}
		if err != nil {
			t.Fatalf("%s:%d: %v", name, n, err)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// checkKAT runs every vector of a file through Encrypt, Decrypt and the
// multi-block methods (one block, then batches through every multi-block
// path), and checks that the file holds the expected number of
// vectors and key sizes.
func checkKAT(t *testing.T, name string, wantCount int, wantSizes []int) {
	vs := readKAT(t, name)
	if len(vs) != wantCount {
		t.Fatalf("%s: %d vectors, want %d", name, len(vs), wantCount)
	}
	sizes := map[int]int{}
	for _, v := range vs {
		sizes[v.keySize]++
		c, err := NewCipher(v.key)
		if err != nil {
			t.Fatalf("%s:%d: NewCipher: %v", name, v.line, err)
		}
		got := make([]byte, BlockSize)
		c.Encrypt(got, v.plain)
		if !bytes.Equal(got, v.enc) {
			t.Errorf("%s:%d: KEYSIZE=%d I=%d: Encrypt = %x, want %x", name, v.line, v.keySize, v.index, got, v.enc)
		}
		c.Decrypt(got, v.enc)
		if !bytes.Equal(got, v.plain) {
			t.Errorf("%s:%d: KEYSIZE=%d I=%d: Decrypt = %x, want %x", name, v.line, v.keySize, v.index, got, v.plain)
		}
		c.EncryptBlocks(got, v.plain)
		if !bytes.Equal(got, v.enc) {
			t.Errorf("%s:%d: KEYSIZE=%d I=%d: EncryptBlocks = %x, want %x", name, v.line, v.keySize, v.index, got, v.enc)
		}
		c.DecryptBlocks(got, v.enc)
		if !bytes.Equal(got, v.plain) {
			t.Errorf("%s:%d: KEYSIZE=%d I=%d: DecryptBlocks = %x, want %x", name, v.line, v.keySize, v.index, got, v.plain)
		}
	}
	checkKATBatches(t, name, vs)
	for _, s := range wantSizes {
		if sizes[s] == 0 {
			t.Errorf("%s: no vector with KEYSIZE=%d", name, s)
		}
	}
	if len(sizes) != len(wantSizes) {
		t.Errorf("%s: key sizes %v, want %v", name, sizes, wantSizes)
	}
}

// katBatchBlocks is the size of the batches of checkKATBatches: one chunk of
// each AVX-512 kernel (32 + 16 + 8 blocks) and a padded group of three, or
// three chunks of the 16-block AVX2 kernel and a padded group of eleven.
const katBatchBlocks = 59

// checkKATBatches runs every vector through each multi-block path that the
// CPU can run: a batch of katBatchBlocks copies of the plaintext must
// encrypt to as many copies of the ciphertext, in every lane of every
// kernel, and decrypt back.
func checkKATBatches(t *testing.T, name string, vs []katVector) {
	forEachImplementation(t, func(t *testing.T) {
		pt, ct := make([]byte, katBatchBlocks*BlockSize), make([]byte, katBatchBlocks*BlockSize)
		got := make([]byte, katBatchBlocks*BlockSize)
		for _, v := range vs {
			for i := 0; i < len(pt); i += BlockSize {
				copy(pt[i:], v.plain)
				copy(ct[i:], v.enc)
			}
			c := newTestCipher(t, v.key)
			c.EncryptBlocks(got, pt)
			if i := firstBlockDiff(got, ct); i >= 0 {
				t.Fatalf("%s:%d: KEYSIZE=%d I=%d: EncryptBlocks of %d blocks: block %d is %x, want %x",
					name, v.line, v.keySize, v.index, katBatchBlocks, i, got[i*BlockSize:(i+1)*BlockSize], v.enc)
			}
			c.DecryptBlocks(got, got)
			if i := firstBlockDiff(got, pt); i >= 0 {
				t.Fatalf("%s:%d: KEYSIZE=%d I=%d: DecryptBlocks of %d blocks in place: block %d is %x, want %x",
					name, v.line, v.keySize, v.index, katBatchBlocks, i, got[i*BlockSize:(i+1)*BlockSize], v.plain)
			}
		}
		t.Logf("%s: %d vectors in batches of %d blocks", name, len(vs), katBatchBlocks)
	})
}

// firstBlockDiff returns the index of the first block where a and b differ,
// or -1.
func firstBlockDiff(a, b []byte) int {
	for i := 0; i < len(a); i += BlockSize {
		if !bytes.Equal(a[i:i+BlockSize], b[i:i+BlockSize]) {
			return i / BlockSize
		}
	}
	return -1
}

// TestVariableKeyKAT checks ecb_vk: PT = 0 under every key with a single bit
// set, for 128-, 192- and 256-bit keys (128 + 192 + 256 vectors).
func TestVariableKeyKAT(t *testing.T) {
	checkKAT(t, "dfc_ecb_vk.txt", 576, []int{128, 192, 256})
}

// TestTableKAT checks ecb_tbl: the all-zero key of each size from 128 to 256
// bits in steps of 16, which exercises the padding with KS.
func TestTableKAT(t *testing.T) {
	checkKAT(t, "dfc_ecb_tbl.txt", 9, []int{128, 144, 160, 176, 192, 208, 224, 240, 256})
}

// variableText holds entries of ecb_vt.txt from the same DFC round-1 package
// (dfc-vals.zip): the all-zero key of the given size and a plaintext with one
// bit set. The full file is not in testdata; these are its first five
// entries for each key size and its last entry for 256 bits.
var variableText = []struct {
	keyBits   int
	plain, ct string
}{
	{128, "80000000000000000000000000000000", "21beee82842fd0507b7c30a25b3272ae"},
	{128, "40000000000000000000000000000000", "0a70b42ef1b71f5bd49d603097a6887f"},
	{128, "20000000000000000000000000000000", "1f329af763edb27bfc0f23f11e4626cc"},
	{128, "10000000000000000000000000000000", "010022694bead57cf18646f775449e8a"},
	{128, "08000000000000000000000000000000", "bee8fc07cb49bc3aa8adef0150cd8013"},
	{192, "80000000000000000000000000000000", "413b1c5e283c0f981e8b4983cc520fe4"},
	{192, "40000000000000000000000000000000", "cd71e7be5638134fc5b37034bd1f1599"},
	{192, "20000000000000000000000000000000", "2447bbc2028e54a3208a5ff9af25e8e2"},
	{192, "10000000000000000000000000000000", "1cd78c613b01aa2011b3d0870b38dcc3"},
	{192, "08000000000000000000000000000000", "0f6b297cd377e67c4031daf4984e8ad4"},
	{256, "80000000000000000000000000000000", "67df7d8a538d1c96fb4d002a3e8ba6d6"},
	{256, "40000000000000000000000000000000", "a1a338bf026da5940413bb2842c6085d"},
	{256, "20000000000000000000000000000000", "af63ad429322a2192cdf664154cb605f"},
	{256, "10000000000000000000000000000000", "bdcad3fd2d726d82b760de35b1b69d5c"},
	{256, "08000000000000000000000000000000", "4c46c4d6d62c9b5fdda3a04708724a7a"},
	{256, "00000000000000000000000000000001", "c89a61a237ecc4cddd3748b68f639275"},
}

func TestVariableTextKAT(t *testing.T) {
	for _, v := range variableText {
		key := make([]byte, v.keyBits/8)
		pt, _ := hex.DecodeString(v.plain)
		checkVector(t, key, pt, v.ct)
	}
}

// mixedInputs are not published values: they were computed by two
// independent models written from the specification (one with Python
// integers, one with math/bits) and serve to catch regressions on inputs
// that are neither zero nor a single bit.
var mixedInputs = []struct{ key, plain, ct string }{
	{"000102030405060708090a0b0c0d0e0f", "00112233445566778899aabbccddeeff", "cc69f8d0bd3e0774b209b798e9248acf"},
	{"000102030405060708090a0b0c0d0e0f1011121314151617", "00112233445566778899aabbccddeeff", "297bc45b96806a816a565929f340a731"},
	{"000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f", "00112233445566778899aabbccddeeff", "190124744a9d4f1f5dcdd6fb5503eb53"},
}

func TestMixedInputs(t *testing.T) {
	for _, v := range mixedInputs {
		key, _ := hex.DecodeString(v.key)
		pt, _ := hex.DecodeString(v.plain)
		checkVector(t, key, pt, v.ct)
	}
}

// checkVector checks one vector in both directions, one block at a time and
// through the multi-block methods.
func checkVector(t *testing.T, key, pt []byte, ctHex string) {
	t.Helper()
	c := newTestCipher(t, key)
	ct, _ := hex.DecodeString(ctHex)
	got := make([]byte, BlockSize)
	c.Encrypt(got, pt)
	if !bytes.Equal(got, ct) {
		t.Errorf("key %x: Encrypt(%x) = %x, want %x", key, pt, got, ct)
	}
	c.Decrypt(got, ct)
	if !bytes.Equal(got, pt) {
		t.Errorf("key %x: Decrypt(%x) = %x, want %x", key, ct, got, pt)
	}
	c.EncryptBlocks(got, pt)
	if !bytes.Equal(got, ct) {
		t.Errorf("key %x: EncryptBlocks(%x) = %x, want %x", key, pt, got, ct)
	}
	c.DecryptBlocks(got, ct)
	if !bytes.Equal(got, pt) {
		t.Errorf("key %x: DecryptBlocks(%x) = %x, want %x", key, ct, got, pt)
	}
}
