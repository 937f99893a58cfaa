package main

import (
	"bytes"
	"io"
	"testing"
	"testing/iotest"

	"github.com/tsdescramble/tsdescramble/csa"
	"github.com/tsdescramble/tsdescramble/internal/synth"
)

// The bench's stream is a bounded block repeated: its first packets are the synthetic
// stream's, and it is as long as asked.
func TestBenchStream(t *testing.T) {
	t.Parallel()
	key, err := csa.NewKey(faultCW)
	if err != nil {
		t.Fatal(err)
	}
	block, size := benchStream(3000, key)
	if !bytes.Equal(block, synth.SyntheticStream(3000, 5000, key)) || size != 3000*188 {
		t.Fatalf("3000 packets: a block of %d bytes, a stream of %d", len(block), size)
	}
	// Read in odd sizes: the block again and again, then the end.
	small := []byte("0123456789")
	got, err := io.ReadAll(iotest.OneByteReader(&repeatReader{block: small, n: 25}))
	if err != nil || string(got) != "0123456789012345678901234" {
		t.Fatalf("%q, %v", got, err)
	}
	if err := iotest.TestReader(&repeatReader{block: small, n: 35}, bytes.Repeat(small, 4)[:35]); err != nil {
		t.Fatal(err)
	}
}

// The engine-alone line deciphers and enciphers one batch of the default engine's width, and
// says at what rate.
func TestEngineAlone(t *testing.T) {
	dec, enc, e := engineAlone(1000, 2)
	if want, _ := csa.NewEngine(0); e.String() != want.String() {
		t.Errorf("measured %v, want the default engine %v", e, want)
	}
	if !(dec > 0) || !(enc > 0) {
		t.Errorf("decrypt %v Mbit/s, encrypt %v Mbit/s", dec, enc)
	}
}
