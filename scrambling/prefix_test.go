package scrambling_test

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"github.com/tsdescramble/tsdescramble/scrambling"
)

// opaqueSystem hides the type of a system, so that DecryptPrefix takes the path for systems
// it does not know.
type opaqueSystem struct{ scrambling.System }

// prefixCase is a system and a key size to test DecryptPrefix with.
type prefixCase struct {
	s       scrambling.System
	keySize int
}

func prefixCases(t testing.TB) []prefixCase {
	var out []prefixCase
	for _, s := range append(systemsUnderTest(t), modeSystems(t)...) {
		for _, ks := range s.KeySizes() {
			out = append(out, prefixCase{s, ks})
		}
	}
	csa2 := lookup(t, "csa2")
	atis := lookup(t, "atis-idsa")
	return append(out, prefixCase{opaqueSystem{csa2}, 8}, prefixCase{opaqueSystem{atis}, 16})
}

// checkPrefixes fails the test unless DecryptPrefix gives, for every length 0..len(payload),
// the first bytes of what a processor of s makes of payload, and leaves payload unchanged.
func checkPrefixes(t *testing.T, s scrambling.System, cw, payload []byte) {
	t.Helper()
	k, err := s.NewKey(cw)
	if err != nil {
		t.Fatal(err)
	}
	want := slices.Clone(payload)
	s.NewProcessor().Decrypt(k, [][]byte{want})
	orig := slices.Clone(payload)
	dst := make([]byte, len(payload)+1)
	for n := 0; n <= len(payload); n++ {
		dst[n] = 0xA5 // must stay as it is
		if err := scrambling.DecryptPrefix(s, cw, payload, dst[:n]); err != nil {
			t.Fatalf("%s, payload of %d bytes, prefix of %d: %v", s.Name(), len(payload), n, err)
		}
		if !bytes.Equal(dst[:n], want[:n]) {
			t.Fatalf("%s, key %x, payload of %d bytes, prefix of %d:\n got %x\nwant %x", s.Name(), cw, len(payload), n, dst[:n], want[:n])
		}
		if dst[n] != 0xA5 {
			t.Fatalf("%s, payload of %d bytes, prefix of %d: wrote past dst", s.Name(), len(payload), n)
		}
		if !bytes.Equal(payload, orig) {
			t.Fatalf("%s, payload of %d bytes, prefix of %d: payload changed", s.Name(), len(payload), n)
		}
	}
}

// TestDecryptPrefix checks every prefix of every payload length 0..184 for every system, key
// size and csa2 width, with random keys and payloads, against the system's processor.
func TestDecryptPrefix(t *testing.T) {
	for _, c := range prefixCases(t) {
		t.Run(label(c.s, c.keySize), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(c.keySize), uint64(c.s.Lanes())))
			for l := 0; l <= maxPayload; l++ {
				cw := make([]byte, c.keySize)
				p := make([]byte, l)
				for _, b := range [][]byte{cw, p} {
					for i := range b {
						b[i] = byte(rng.Uint32())
					}
				}
				checkPrefixes(t, c.s, cw, p)
			}
		})
	}
}

// TestDecryptPrefixLong checks the block-cipher systems on payloads longer than a TS packet's,
// which their processors accept.
func TestDecryptPrefixLong(t *testing.T) {
	for _, name := range []string{"dvb-cissa", "atis-idsa", "dfc", "serpent"} {
		s := lookup(t, name)
		for _, l := range []int{185, 200, 401} {
			p := make([]byte, l)
			for i := range p {
				p[i] = byte(i*7 + l)
			}
			checkPrefixes(t, s, testKey(name, s.KeySizes()[0]), p)
		}
	}
}

func TestDecryptPrefixErrors(t *testing.T) {
	for _, c := range prefixCases(t) {
		s := c.s
		var kse *scrambling.KeySizeError
		err := scrambling.DecryptPrefix(s, make([]byte, c.keySize+1), make([]byte, 184), make([]byte, 16))
		if !errors.As(err, &kse) || kse.Size != c.keySize+1 {
			t.Errorf("%s: key of %d bytes: got %v, want a *KeySizeError", s.Name(), c.keySize+1, err)
		}
		err = scrambling.DecryptPrefix(s, testKey(s.Name(), c.keySize), make([]byte, 16), make([]byte, 17))
		if err == nil {
			t.Errorf("%s: dst longer than payload: no error", s.Name())
		}
	}
	csa2 := lookup(t, "csa2")
	if err := scrambling.DecryptPrefix(csa2, testKey("csa2", 8), make([]byte, 185), make([]byte, 16)); err == nil {
		t.Error("csa2: payload of 185 bytes: no error")
	}
}

// TestDecryptPrefixNoAlloc checks that csa2 trials do not allocate, at every width.
func TestDecryptPrefixNoAlloc(t *testing.T) {
	for _, s := range systemsUnderTest(t) {
		if s.Name() != "csa2" {
			continue
		}
		cw, p, dst := testKey("csa2", 8), make([]byte, maxPayload), make([]byte, 19)
		if n := testing.AllocsPerRun(100, func() { scrambling.DecryptPrefix(s, cw, p, dst) }); n != 0 {
			t.Errorf("csa2/%d lanes: %v allocations per DecryptPrefix, want 0", s.Lanes(), n)
		}
	}
}

// FuzzDecryptPrefix checks DecryptPrefix against each system's processor on inputs cut from
// the fuzz data: a byte choosing the system and key size, the key, a byte for the prefix
// length (mod the payload length + 1), then the payload (at most 184 bytes are used).
func FuzzDecryptPrefix(f *testing.F) {
	cases := prefixCases(f)
	for i := range cases {
		for _, l := range []int{0, 7, 8, 16, 17, 31, 32, 33, maxPayload} {
			data := append([]byte{byte(i)}, make([]byte, cases[i].keySize)...)
			f.Add(append(append(data, byte(l)), make([]byte, l)...))
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 1 {
			return
		}
		c := cases[int(data[0])%len(cases)]
		data = data[1:]
		if len(data) < c.keySize+1 {
			return
		}
		cw, data := data[:c.keySize], data[c.keySize:]
		payload := data[1:min(len(data), 1+maxPayload)]
		n := int(data[0]) % (len(payload) + 1)
		k, err := c.s.NewKey(cw)
		if err != nil {
			t.Fatal(err)
		}
		want := slices.Clone(payload)
		c.s.NewProcessor().Decrypt(k, [][]byte{want})
		got := make([]byte, n)
		if err := scrambling.DecryptPrefix(c.s, cw, payload, got); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want[:n]) {
			t.Fatalf("%s, key %x, payload of %d bytes, prefix of %d:\n got %x\nwant %x", c.s.Name(), cw, len(payload), n, got, want[:n])
		}
	})
}

// benchKeys returns n random control words of the given size, one per trial, as a key
// synchronisation over a list would try them.
func benchKeys(n, size int) [][]byte {
	rng := rand.New(rand.NewPCG(9, uint64(size)))
	cws := make([][]byte, n)
	for i := range cws {
		cws[i] = make([]byte, size)
		for j := range cws[i] {
			cws[i][j] = byte(rng.Uint32())
		}
	}
	return cws
}

// BenchmarkDecryptPrefix is one trial of a control word on a full payload: DecryptPrefix of n
// bytes. Compare with BenchmarkNewKeyDecrypt.
func BenchmarkDecryptPrefix(b *testing.B) {
	payload := bytes.Repeat([]byte{0x5a, 0xc3, 0x17}, maxPayload/3+1)[:maxPayload]
	for _, name := range scrambling.Names() {
		s := lookup(b, name)
		cws := benchKeys(1024, s.KeySizes()[0])
		for _, n := range []int{3, 16, 19} {
			b.Run(name+"/n="+strconv.Itoa(n), func(b *testing.B) {
				dst := make([]byte, n)
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					if err := scrambling.DecryptPrefix(s, cws[i%len(cws)], payload, dst); err != nil {
						b.Fatal(err)
					}
					i++
				}
			})
		}
	}
}

// BenchmarkNewKeyDecrypt is one trial of a control word on a full payload without
// DecryptPrefix: expand the key and descramble a copy of the payload with a warm processor.
func BenchmarkNewKeyDecrypt(b *testing.B) {
	payload := bytes.Repeat([]byte{0x5a, 0xc3, 0x17}, maxPayload/3+1)[:maxPayload]
	for _, name := range scrambling.Names() {
		s := lookup(b, name)
		cws := benchKeys(1024, s.KeySizes()[0])
		b.Run(name, func(b *testing.B) {
			p := s.NewProcessor()
			buf := make([]byte, len(payload))
			batch := [][]byte{buf}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				k, err := s.NewKey(cws[i%len(cws)])
				if err != nil {
					b.Fatal(err)
				}
				copy(buf, payload)
				p.Decrypt(k, batch)
				i++
			}
		})
	}
}
