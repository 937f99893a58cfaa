package scrambling_test

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/tsdescramble/tsdescramble/csa"
	"github.com/tsdescramble/tsdescramble/dfc"
	"github.com/tsdescramble/tsdescramble/scrambling"
	"github.com/tsdescramble/tsdescramble/serpent"
)

const maxPayload = 184

func lookup(t testing.TB, name string) scrambling.System {
	t.Helper()
	s, err := scrambling.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// testKey returns a control word of n bytes that differs per system and size.
func testKey(name string, n int) []byte {
	cw := make([]byte, n)
	for i := range cw {
		cw[i] = byte(len(name)*31 + n*7 + i*13 + 1)
	}
	return cw
}

// mixedPayloads returns one payload of every length 0..184, in a shuffled order, with
// pseudo-random content, and a copy of them.
func mixedPayloads(seed uint64) (payloads, orig [][]byte) {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	for n := 0; n <= maxPayload; n++ {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		payloads = append(payloads, b)
	}
	r.Shuffle(len(payloads), func(i, j int) { payloads[i], payloads[j] = payloads[j], payloads[i] })
	for _, b := range payloads {
		orig = append(orig, slices.Clone(b))
	}
	return payloads, orig
}

// batches cuts payloads into consecutive batches of the given size (the last may be shorter).
func batches(payloads [][]byte, size int) [][][]byte {
	var out [][][]byte
	for len(payloads) > 0 {
		n := min(size, len(payloads))
		out = append(out, payloads[:n])
		payloads = payloads[n:]
	}
	return out
}

// batchSizes are the batch sizes every system is tested with: single payloads, sizes that
// do not divide any lane width, one lane width and a bit, and everything at once.
func batchSizes(lanes int) []int {
	return []int{1, 2, 7, 31, lanes, lanes + 3, maxPayload + 1}
}

func TestNamesAndLookup(t *testing.T) {
	want := []string{"csa2", "dvb-cissa", "atis-idsa", "dfc", "serpent"}
	if got := scrambling.Names(); !slices.Equal(got, want) {
		t.Fatalf("Names() = %v, want %v", got, want)
	}
	for _, name := range want {
		s := lookup(t, name)
		if s.Name() != name {
			t.Errorf("Lookup(%q).Name() = %q", name, s.Name())
		}
		if s.Lanes() <= 0 {
			t.Errorf("%s: Lanes() = %d", name, s.Lanes())
		}
		if u, err := scrambling.Lookup(strings.ToUpper(name)); err != nil || u.Name() != name {
			t.Errorf("Lookup(%q) = %v, %v", strings.ToUpper(name), u, err)
		}
	}
	_, err := scrambling.Lookup("aes")
	if err == nil {
		t.Fatal(`Lookup("aes") succeeded`)
	}
	for _, name := range want {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("Lookup error %q does not list %q", err, name)
		}
	}
}

func TestKeySizes(t *testing.T) {
	want := map[string][]int{
		"csa2":      {8},
		"dvb-cissa": {16},
		"atis-idsa": {16},
		"dfc":       {16, 24, 32},
		"serpent":   {16, 24, 32},
	}
	for _, name := range scrambling.Names() {
		s := lookup(t, name)
		sizes := s.KeySizes()
		if !slices.Equal(sizes, want[name]) {
			t.Errorf("%s: KeySizes() = %v, want %v", name, sizes, want[name])
		}
		for n := 0; n <= 40; n++ {
			k, err := s.NewKey(make([]byte, n))
			if slices.Contains(sizes, n) {
				if err != nil || k == nil || k.System().Name() != name {
					t.Errorf("%s: NewKey(%d bytes) = %v, %v", name, n, k, err)
				}
				continue
			}
			var kse *scrambling.KeySizeError
			if !errors.As(err, &kse) {
				t.Errorf("%s: NewKey(%d bytes) error = %v, want a *KeySizeError", name, n, err)
				continue
			}
			if kse.System != name || kse.Size != n || !slices.Equal(kse.Sizes, sizes) {
				t.Errorf("%s: NewKey(%d bytes) error = %+v", name, n, kse)
			}
			msg := err.Error()
			if !strings.Contains(msg, name) || !strings.Contains(msg, fmt.Sprint(n)) {
				t.Errorf("%s: error %q does not name the system and the size", name, msg)
			}
			for _, s := range sizes {
				if !strings.Contains(msg, fmt.Sprint(s)) || !strings.Contains(msg, fmt.Sprint(2*s)) {
					t.Errorf("%s: error %q does not list size %d (%d hex digits)", name, msg, s, 2*s)
				}
			}
		}
	}
	// The accepted sizes are a copy: a caller cannot change what the system accepts.
	s := lookup(t, "dfc")
	s.KeySizes()[0] = 3
	if _, err := s.NewKey(make([]byte, 3)); err == nil {
		t.Error("changing the result of KeySizes changed the accepted sizes")
	}
}

func TestKeySizeErrorMessage(t *testing.T) {
	_, err := lookup(t, "dfc").NewKey(make([]byte, 8))
	const want = "scrambling: dfc: control word of 8 bytes, want 16, 24 or 32 bytes (32, 48, 64 hex digits)"
	if err == nil || err.Error() != want {
		t.Errorf("error = %v\nwant    %s", err, want)
	}
	_, err = lookup(t, "dvb-cissa").NewKey(make([]byte, 8))
	const want2 = "scrambling: dvb-cissa: control word of 8 bytes, want 16 bytes (32 hex digits)"
	if err == nil || err.Error() != want2 {
		t.Errorf("error = %v\nwant    %s", err, want2)
	}
}

// refChain is a per-payload reference for the block-cipher systems, built on crypto/cipher's
// CBC and the residue rule written out directly.
type refChain struct {
	newBlock func(key []byte) (cipher.Block, error)
	iv       []byte
	dvs042   bool
}

var cissaIV = []byte("DVBTMCPTAESCISSA")

var refs = map[string]refChain{
	"dvb-cissa": {aes.NewCipher, cissaIV, false},
	"atis-idsa": {aes.NewCipher, make([]byte, 16), true},
	"dfc":       {asBlock(dfc.NewCipher), make([]byte, 16), true},
	"serpent":   {asBlock(serpent.NewCipher), make([]byte, 16), true},
}

// asBlock gives a constructor of a concrete cipher type the signature of aes.NewCipher.
func asBlock[C cipher.Block](newCipher func(key []byte) (C, error)) func(key []byte) (cipher.Block, error) {
	return func(key []byte) (cipher.Block, error) {
		c, err := newCipher(key)
		if err != nil {
			return nil, err
		}
		return c, nil
	}
}

func (r refChain) crypt(t testing.TB, key, payload []byte, encrypt bool) {
	b, err := r.newBlock(key)
	if err != nil {
		t.Fatal(err)
	}
	n := len(payload) / 16 * 16
	// residue applies the DVS-042 rule: the key stream of the bytes after the last full block
	// is the forward cipher of the last ciphertext block, or of the IV when there is no full
	// block, in both directions.
	residue := func() {
		if !r.dvs042 {
			return
		}
		var pad [16]byte
		if n > 0 {
			b.Encrypt(pad[:], payload[n-16:n])
		} else {
			b.Encrypt(pad[:], r.iv)
		}
		for i := n; i < len(payload); i++ {
			payload[i] ^= pad[i-n]
		}
	}
	if encrypt {
		if n > 0 {
			cipher.NewCBCEncrypter(b, r.iv).CryptBlocks(payload[:n], payload[:n])
		}
		residue()
		return
	}
	residue()
	if n > 0 {
		cipher.NewCBCDecrypter(b, r.iv).CryptBlocks(payload[:n], payload[:n])
	}
}

// refCrypt (de)scrambles one payload with the straightforward per-packet reference of system
// name: csa.Key for csa2, refChain for the others.
func refCrypt(t testing.TB, name string, key, payload []byte, encrypt bool) {
	if name == "csa2" {
		k, err := csa.NewKey(key)
		if err != nil {
			t.Fatal(err)
		}
		if encrypt {
			k.Encrypt(payload)
		} else {
			k.Decrypt(payload)
		}
		return
	}
	refs[name].crypt(t, key, payload, encrypt)
}

// systemsUnderTest returns every system by name, and csa2 once per available engine width.
func systemsUnderTest(t testing.TB) []scrambling.System {
	var out []scrambling.System
	for _, name := range scrambling.Names() {
		out = append(out, lookup(t, name))
	}
	for _, w := range csa.Available() {
		s, err := scrambling.NewCSA2(w)
		if err != nil {
			t.Fatal(err)
		}
		if s.Lanes() != w {
			t.Fatalf("NewCSA2(%d).Lanes() = %d", w, s.Lanes())
		}
		out = append(out, s)
	}
	return out
}

func label(s scrambling.System, keySize int) string {
	return fmt.Sprintf("%s/%d-lanes/%d-byte-key", s.Name(), s.Lanes(), keySize)
}

// TestAgainstReference checks the batched paths against the per-payload reference, in both
// directions, for every payload length 0..184 in batches of mixed lengths and many sizes.
func TestAgainstReference(t *testing.T) {
	for _, s := range systemsUnderTest(t) {
		for _, ks := range s.KeySizes() {
			t.Run(label(s, ks), func(t *testing.T) {
				cw := testKey(s.Name(), ks)
				k, err := s.NewKey(cw)
				if err != nil {
					t.Fatal(err)
				}
				p := s.NewProcessor()
				for _, size := range batchSizes(s.Lanes()) {
					for _, encrypt := range []bool{true, false} {
						got, orig := mixedPayloads(uint64(size))
						for _, batch := range batches(got, size) {
							if encrypt {
								p.Encrypt(k, batch)
							} else {
								p.Decrypt(k, batch)
							}
						}
						for i, want := range orig {
							refCrypt(t, s.Name(), cw, want, encrypt)
							if !bytes.Equal(got[i], want) {
								t.Fatalf("batch size %d, encrypt %v, %d-byte payload:\n got %x\nwant %x",
									size, encrypt, len(want), got[i], want)
							}
						}
					}
				}
			})
		}
	}
}

// clearBytes is how many bytes of a payload of length n system name leaves clear.
func clearBytes(name string, n int) int {
	switch name {
	case "csa2":
		if n < 8 {
			return n
		}
		return 0
	case "dvb-cissa":
		if n < 16 {
			return n
		}
		return n % 16
	}
	return 0
}

// TestRoundTrip scrambles and descrambles every payload length in mixed batches, and checks
// which bytes each system leaves clear.
func TestRoundTrip(t *testing.T) {
	for _, s := range systemsUnderTest(t) {
		for _, ks := range s.KeySizes() {
			t.Run(label(s, ks), func(t *testing.T) {
				k, err := s.NewKey(testKey(s.Name(), ks))
				if err != nil {
					t.Fatal(err)
				}
				enc, dec := s.NewProcessor(), s.NewProcessor()
				for _, size := range batchSizes(s.Lanes()) {
					payloads, orig := mixedPayloads(uint64(1000 + size))
					for _, batch := range batches(payloads, size) {
						enc.Encrypt(k, batch)
					}
					for i, b := range payloads {
						n := len(b)
						c := clearBytes(s.Name(), n)
						// The clear bytes are the residue at the end of the payload (or all of
						// a short payload); the rest must have changed. A changed block equal to
						// the clear one has odds of 2^-64 or less: treat it as a failure.
						if !bytes.Equal(b[n-c:], orig[i][n-c:]) {
							t.Fatalf("%d-byte payload: the %d clear bytes changed", n, c)
						}
						if n-c >= 8 && bytes.Equal(b[:n-c], orig[i][:n-c]) {
							t.Fatalf("%d-byte payload: scrambled part unchanged", n)
						}
						if s.Name() != "csa2" && s.Name() != "dvb-cissa" && n > 0 && n < 8 && bytes.Equal(b, orig[i]) {
							t.Fatalf("%d-byte payload unchanged", n)
						}
					}
					// Descramble in other batches than those of the scrambling: every payload
					// stands alone.
					for _, batch := range batches(payloads, size/2+1) {
						dec.Decrypt(k, batch)
					}
					for i := range payloads {
						if !bytes.Equal(payloads[i], orig[i]) {
							t.Fatalf("batch size %d: %d-byte payload did not survive the round trip", size, len(orig[i]))
						}
					}
				}
			})
		}
	}
}

// TestKeysAcrossCSA2Widths checks that a csa2 key works with the processors of every width.
func TestKeysAcrossCSA2Widths(t *testing.T) {
	def := lookup(t, "csa2")
	k, err := def.NewKey(testKey("csa2", 8))
	if err != nil {
		t.Fatal(err)
	}
	want, _ := mixedPayloads(7)
	def.NewProcessor().Encrypt(k, want)
	for _, w := range csa.Available() {
		s, err := scrambling.NewCSA2(w)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := mixedPayloads(7)
		s.NewProcessor().Encrypt(k, got)
		for i := range got {
			if !bytes.Equal(got[i], want[i]) {
				t.Fatalf("%d lanes: %d-byte payload differs", w, len(got[i]))
			}
		}
	}
}

func TestNewCSA2BadWidth(t *testing.T) {
	for _, w := range []int{-1, 1, 48, 512} {
		if _, err := scrambling.NewCSA2(w); err == nil {
			t.Errorf("NewCSA2(%d) succeeded", w)
		}
	}
}

func TestForeignKeyPanics(t *testing.T) {
	serpentKey, err := lookup(t, "serpent").NewKey(make([]byte, 16))
	if err != nil {
		t.Fatal(err)
	}
	csaKey, err := lookup(t, "csa2").NewKey(make([]byte, 8))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		proc string
		key  scrambling.Key
	}{
		{"dfc", serpentKey},
		{"atis-idsa", serpentKey},
		{"csa2", serpentKey},
		{"serpent", csaKey},
		{"serpent", nil},
	}
	for _, c := range cases {
		func() {
			defer func() {
				r := recover()
				if r == nil {
					t.Errorf("%s processor accepted a foreign key", c.proc)
					return
				}
				if msg := fmt.Sprint(r); !strings.Contains(msg, c.proc) {
					t.Errorf("panic %q does not name the %s processor", msg, c.proc)
				}
			}()
			lookup(t, c.proc).NewProcessor().Decrypt(c.key, [][]byte{make([]byte, 32)})
		}()
	}
}

// TestNoAllocations checks that a warm processor does not allocate per call.
func TestNoAllocations(t *testing.T) {
	for _, s := range systemsUnderTest(t) {
		k, err := s.NewKey(testKey(s.Name(), s.KeySizes()[0]))
		if err != nil {
			t.Fatal(err)
		}
		p := s.NewProcessor()
		payloads, _ := mixedPayloads(3)
		payloads = payloads[:min(len(payloads), s.Lanes()+5)]
		p.Encrypt(k, payloads) // warm the scratch
		p.Decrypt(k, payloads)
		for _, dir := range []string{"Encrypt", "Decrypt"} {
			f := p.Encrypt
			if dir == "Decrypt" {
				f = p.Decrypt
			}
			if n := testing.AllocsPerRun(20, func() { f(k, payloads) }); n != 0 {
				t.Errorf("%s/%d lanes: %s allocates %v times per call", s.Name(), s.Lanes(), dir, n)
			}
		}
	}
}

// TestSharedKey uses one key from several goroutines at once, each with its own processor;
// run with -race to check that keys are read-only.
func TestSharedKey(t *testing.T) {
	for _, name := range scrambling.Names() {
		s := lookup(t, name)
		k, err := s.NewKey(testKey(name, s.KeySizes()[0]))
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error)
		for g := range 4 {
			go func() {
				p := s.NewProcessor()
				payloads, orig := mixedPayloads(uint64(g))
				p.Encrypt(k, payloads)
				p.Decrypt(k, payloads)
				for i := range payloads {
					if !bytes.Equal(payloads[i], orig[i]) {
						done <- fmt.Errorf("%s: goroutine %d: round trip failed", name, g)
						return
					}
				}
				done <- nil
			}()
		}
		for range 4 {
			if err := <-done; err != nil {
				t.Error(err)
			}
		}
	}
}

// TestLargeBatch passes more payloads than one internal pass takes, and, for the block-cipher
// systems, payloads longer than a TS payload, which they process by the same rules.
func TestLargeBatch(t *testing.T) {
	for _, name := range scrambling.Names() {
		s := lookup(t, name)
		cw := testKey(name, s.KeySizes()[0])
		k, err := s.NewKey(cw)
		if err != nil {
			t.Fatal(err)
		}
		var got, want [][]byte
		for seed := range uint64(4) {
			g, w := mixedPayloads(100 + seed)
			got, want = append(got, g...), append(want, w...)
		}
		if name != "csa2" {
			for _, n := range []int{185, 200, 333, 1000} {
				b := make([]byte, n)
				for i := range b {
					b[i] = byte(i * 7)
				}
				got, want = append(got, b), append(want, slices.Clone(b))
			}
		}
		p := s.NewProcessor()
		for _, encrypt := range []bool{true, false} {
			if encrypt {
				p.Encrypt(k, got)
			} else {
				p.Decrypt(k, got)
			}
			for i := range want {
				refCrypt(t, name, cw, want[i], encrypt)
				if !bytes.Equal(got[i], want[i]) {
					t.Fatalf("%s: encrypt %v: payload %d (%d bytes) differs from the reference", name, encrypt, i, len(want[i]))
				}
			}
		}
	}
}

// MinPayload tells the truth: a payload one byte shorter stays clear, and one of that length
// changes, under every system.
func TestMinPayload(t *testing.T) {
	for _, name := range scrambling.Names() {
		sys, err := scrambling.Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		k, err := sys.NewKey(make([]byte, sys.KeySizes()[0]))
		if err != nil {
			t.Fatal(err)
		}
		p := sys.NewProcessor()
		n := sys.MinPayload()
		short, long := make([]byte, n-1), make([]byte, n)
		p.Encrypt(k, [][]byte{short, long})
		if !bytes.Equal(short, make([]byte, n-1)) || bytes.Equal(long, make([]byte, n)) {
			t.Errorf("%s: MinPayload %d: %x stayed clear? %x changed?", name, n, short, long)
		}
	}
}
