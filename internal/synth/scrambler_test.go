package synth

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/tsdescramble/tsdescramble/csa"
)

// The Scrambler gives the bytes Key.Encrypt gives one payload at a time, for payloads of every
// length from 0 to 184 under two keys in any order, however the stream grew meanwhile.
func TestScramblerIsKeyEncrypt(t *testing.T) {
	var keys [2]*csa.Key
	for i, cw := range [][]byte{{1, 2, 3, 6, 4, 5, 6, 15}, {0x11, 0x22, 0x33, 0x66, 0x44, 0x55, 0x66, 0xff}} {
		k, err := csa.NewKey(cw)
		if err != nil {
			t.Fatal(err)
		}
		keys[i] = k
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var stream, want []byte
	var s Scrambler
	for n := range 185 * 3 {
		payload := make([]byte, n%185)
		for i := range payload {
			payload[i] = byte(rng.Uint32())
		}
		gap := make([]byte, rng.IntN(5)) // bytes between payloads stay as they are
		stream, want = append(stream, gap...), append(want, gap...)
		k := keys[rng.IntN(2)]
		s.Add(k, len(stream), len(stream)+len(payload))
		stream = append(stream, payload...)
		scrambled := bytes.Clone(payload)
		k.Encrypt(scrambled)
		want = append(want, scrambled...)
	}
	s.EncryptIn(stream)
	if !bytes.Equal(stream, want) {
		t.Fatal("the Scrambler's bytes differ from Key.Encrypt's")
	}
}
