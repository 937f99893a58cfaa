package csa

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
)

// checkPrefixes fails the test unless DecryptPrefix gives, for every length
// 0..len(payload), the first bytes of the scalar cipher's output, and leaves
// payload unchanged.
func checkPrefixes(t *testing.T, cw []byte, payload []byte) {
	t.Helper()
	want := slices.Clone(payload)
	mustKey(t, cw).Decrypt(want)
	orig := slices.Clone(payload)
	c := [CWSize]byte(cw)
	dst := make([]byte, len(payload)+1)
	for n := 0; n <= len(payload); n++ {
		// A byte past dst that must stay as it was.
		dst[n] = 0xA5
		DecryptPrefix(&c, payload, dst[:n])
		if !bytes.Equal(dst[:n], want[:n]) {
			t.Fatalf("cw %x, payload of %d bytes, prefix of %d:\n got %x\nwant %x", cw, len(payload), n, dst[:n], want[:n])
		}
		if dst[n] != 0xA5 {
			t.Fatalf("cw %x, payload of %d bytes, prefix of %d: wrote past dst", cw, len(payload), n)
		}
		if !bytes.Equal(payload, orig) {
			t.Fatalf("cw %x, payload of %d bytes, prefix of %d: payload changed", cw, len(payload), n)
		}
	}
}

// TestDecryptPrefix checks every prefix of every payload length 0..184 with
// random control words and payloads, and a few longer payloads.
func TestDecryptPrefix(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 14))
	keysPerLength := 4
	if testing.Short() {
		keysPerLength = 1
	}
	for l := 0; l <= maxPayload; l++ {
		for range keysPerLength {
			cw := make([]byte, CWSize)
			for i := range cw {
				cw[i] = byte(rng.Uint32())
			}
			p := make([]byte, l)
			for i := range p {
				p[i] = byte(rng.Uint32())
			}
			checkPrefixes(t, cw, p)
		}
	}
	for _, l := range []int{185, 191, 192, 300, 1000} {
		p := make([]byte, l)
		for i := range p {
			p[i] = byte(rng.Uint32())
		}
		checkPrefixes(t, lengthTableCW, p)
	}
}

// TestDecryptPrefixVectors checks the published payload vectors and the
// generated table of every length.
func TestDecryptPrefixVectors(t *testing.T) {
	for _, v := range payloadVectors(t) {
		c := [CWSize]byte(v.cw)
		for n := 0; n <= len(v.scrambled); n++ {
			got := make([]byte, n)
			DecryptPrefix(&c, v.scrambled, got)
			if !bytes.Equal(got, v.clear[:n]) {
				t.Fatalf("%s, prefix of %d:\n got %x\nwant %x", v.name, n, got, v.clear[:n])
			}
		}
	}
	c := [CWSize]byte(lengthTableCW)
	for _, v := range readLengthTable(t, "generated_libdvbcsa_all_lengths.txt") {
		for _, n := range []int{0, 3, 8, 16, 19, len(v.scrambled)} {
			if n > len(v.scrambled) {
				continue
			}
			got := make([]byte, n)
			DecryptPrefix(&c, v.scrambled, got)
			if !bytes.Equal(got, v.clear[:n]) {
				t.Fatalf("length table, payload of %d bytes, prefix of %d:\n got %x\nwant %x", len(v.scrambled), n, got, v.clear[:n])
			}
		}
	}
}

// TestPrefixStream holds the packed stream cipher to the reference one,
// keystream byte by keystream byte, from random keys and IVs.
func TestPrefixStream(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	for range 200 {
		var cw [CWSize]byte
		var iv [8]byte
		for i := range cw {
			cw[i], iv[i] = byte(rng.Uint32()), byte(rng.Uint32())
		}
		ref := newStreamState(&cw)
		ref.init(iv[:])
		var s prefixStream
		s.init(&cw, &iv)
		for blk := 0; blk < 23; blk++ {
			want := ref.keystream()
			for j, w := range want {
				if got := s.keystreamByte(); got != w {
					t.Fatalf("cw %x, iv %x: keystream byte %d is %02x, want %02x", cw, iv, 8*blk+j, got, w)
				}
			}
		}
	}
}

// TestPrefixBlockCipher holds the key schedule and block decryption of
// DecryptPrefix to the reference ones.
func TestPrefixBlockCipher(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 6))
	for range 1000 {
		var cw [CWSize]byte
		var blk [8]byte
		for i := range cw {
			cw[i], blk[i] = byte(rng.Uint32()), byte(rng.Uint32())
		}
		want := scheduleBlockKey(cw)
		var kk [56]byte
		prefixBlockKey(&cw, &kk)
		if kk != want {
			t.Fatalf("cw %x: round keys\n got %x\nwant %x", cw, kk, want)
		}
		got, ref := blk, blk
		prefixBlockDecrypt(&kk, &got)
		blockDecrypt(&want, &ref)
		if got != ref {
			t.Fatalf("cw %x, block %x: decrypted to %x, want %x", cw, blk, got, ref)
		}
	}
}

func TestDecryptPrefixNoAlloc(t *testing.T) {
	c := [CWSize]byte(lengthTableCW)
	p := make([]byte, maxPayload)
	dst := make([]byte, 19)
	if n := testing.AllocsPerRun(100, func() { DecryptPrefix(&c, p, dst) }); n != 0 {
		t.Errorf("%v allocations per DecryptPrefix, want 0", n)
	}
}

func TestDecryptPrefixLongDstPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("DecryptPrefix with dst longer than payload did not panic")
		}
	}()
	var c [CWSize]byte
	DecryptPrefix(&c, make([]byte, 16), make([]byte, 17))
}

// FuzzDecryptPrefix checks DecryptPrefix against the scalar cipher on
// inputs cut from the fuzz data: 8 bytes of control word, one byte for the
// prefix length (mod the payload length + 1), then the payload.
func FuzzDecryptPrefix(f *testing.F) {
	f.Add(append(slices.Clone(lengthTableCW), append([]byte{19}, make([]byte, 184)...)...))
	for _, l := range []int{0, 7, 8, 9, 15, 16, 17, 23, 24, 25} {
		f.Add(append(slices.Clone(lengthTableCW), append([]byte{byte(l)}, make([]byte, l)...)...))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < CWSize+1 {
			return
		}
		cw := [CWSize]byte(data)
		payload := data[CWSize+1:]
		n := int(data[CWSize]) % (len(payload) + 1)
		want := slices.Clone(payload)
		mustKey(t, cw[:]).Decrypt(want)
		got := make([]byte, n)
		DecryptPrefix(&cw, payload, got)
		if !bytes.Equal(got, want[:n]) {
			t.Fatalf("cw %x, payload of %d bytes, prefix of %d:\n got %x\nwant %x", cw, len(payload), n, got, want[:n])
		}
	})
}

// benchCWs returns n random control words, one per trial, as a key
// synchronisation over a list would try them.
func benchCWs(n int) [][CWSize]byte {
	rng := rand.New(rand.NewPCG(9, 9))
	cws := make([][CWSize]byte, n)
	for i := range cws {
		for j := range cws[i] {
			cws[i][j] = byte(rng.Uint32())
		}
	}
	return cws
}

// BenchmarkDecryptPrefix is one trial of a control word on a full payload:
// DecryptPrefix of n bytes. Compare with BenchmarkNewKeyDecrypt.
func BenchmarkDecryptPrefix(b *testing.B) {
	payload := benchPayloads(1, false)[0]
	cws := benchCWs(1024)
	for _, n := range []int{3, 8, 16, 19, maxPayload} {
		b.Run("n="+strconv.Itoa(n), func(b *testing.B) {
			dst := make([]byte, n)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				DecryptPrefix(&cws[i%len(cws)], payload, dst)
				i++
			}
		})
	}
}

// BenchmarkNewKeyDecrypt is one trial of a control word on a full payload
// the way it costs without DecryptPrefix: expand the key and descramble a
// copy of the payload with the scalar cipher.
func BenchmarkNewKeyDecrypt(b *testing.B) {
	payload := benchPayloads(1, false)[0]
	cws := benchCWs(1024)
	buf := make([]byte, len(payload))
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		k, err := NewKey(cws[i%len(cws)][:])
		if err != nil {
			b.Fatal(err)
		}
		copy(buf, payload)
		k.Decrypt(buf)
		i++
	}
}
