package scrambling_test

import (
	"bytes"
	"encoding/hex"
	"fmt"

	"github.com/tsdescramble/tsdescramble/scrambling"
)

// A system is chosen by name (the -cipher flag), the control word expanded once, and each
// goroutine scrambles and descrambles batches of payloads with its own Processor.
func ExampleLookup() {
	sys, err := scrambling.Lookup("atis-idsa")
	if err != nil {
		panic(err)
	}
	cw, _ := hex.DecodeString("01020304050607080910111213141516")
	key, err := sys.NewKey(cw)
	if err != nil {
		panic(err)
	}
	proc := sys.NewProcessor()

	// Two payloads of one batch: lengths may differ (adaptation fields shorten payloads).
	a := []byte("a payload of 35 bytes: two blocks+")
	b := []byte("a short one")
	batch := [][]byte{a, b}
	proc.Encrypt(key, batch)
	fmt.Println(bytes.Equal(a, []byte("a payload of 35 bytes: two blocks+")))

	proc.Decrypt(key, batch)
	fmt.Printf("%q\n%q\n", a, b)
	// Output:
	// false
	// "a payload of 35 bytes: two blocks+"
	// "a short one"
}

// A control word of the wrong size is refused with a message that says what the system
// accepts.
func ExampleSystem_NewKey() {
	sys, err := scrambling.Lookup("serpent")
	if err != nil {
		panic(err)
	}
	_, err = sys.NewKey(make([]byte, 8))
	fmt.Println(err)
	// Output:
	// scrambling: serpent: control word of 8 bytes, want 16, 24 or 32 bytes (32, 48, 64 hex digits)
}

// DVB-CISSA descrambles the payload of the first test vector of ETSI TS 103 127 Annex B; the
// last 8 bytes (184 mod 16) were never scrambled.
func ExampleProcessor_cissa() {
	sys, _ := scrambling.Lookup("dvb-cissa")
	cw, _ := hex.DecodeString("00112233445566778899aabbccddeeff")
	key, err := sys.NewKey(cw)
	if err != nil {
		panic(err)
	}
	payload, _ := hex.DecodeString("15ce67e0cb01b53ce76054e57a4ad120a0dfa4eaaae932c6783f51ae19faee108bdb78f3113ec2b572cc208500a52ceca114126c58244df563e7a9b4e041cbc3fbfffbd83c8fbffb10e83ea38204bad702fb01a27b622c4f85aab6aa75559720d65ab844cea28cf2e1fe5e7ac19d44818919c23249f140757b5d16c0af45b25f509b9da0619712c59f0b39b06f1fbe90123f212983936a95317fcb62f4346a1b1e164840303aff838a019bf810a8e0b22f6465736372616d")
	sys.NewProcessor().Decrypt(key, [][]byte{payload})
	fmt.Printf("%s\n", payload[:52])
	// Output:
	// This is the payload used for creating the test vecto
}

// A process that runs many short streams one after another hands each stream's processors
// back when the stream ends: the next stream's processors of the same system take over their
// scratch memory, wiped, instead of allocating it (tens of kilobytes per csa2 processor).
func ExampleRelease() {
	sys, err := scrambling.NewCSA2(0)
	if err != nil {
		panic(err)
	}
	key, err := sys.NewKey([]byte{0x11, 0x22, 0x33, 0x66, 0x44, 0x55, 0x66, 0xff})
	if err != nil {
		panic(err)
	}
	for _, stream := range []string{"the first recording's payload", "the second recording's payload"} {
		proc := sys.NewProcessor()
		payload := []byte(stream)
		proc.Encrypt(key, [][]byte{payload})
		proc.Decrypt(key, [][]byte{payload})
		fmt.Printf("%q\n", payload)
		scrambling.Release(proc) // proc must not be used after this
	}
	// Output:
	// "the first recording's payload"
	// "the second recording's payload"
}
