package csa_test

import (
	"encoding/hex"
	"fmt"

	"github.com/tsdescramble/tsdescramble/csa"
)

func ExampleKey_Decrypt() {
	// A BISS-style control word: bytes 3 and 7 are the checksums of the
	// three bytes before them. CSA uses all eight bytes as they are.
	key, err := csa.NewKey([]byte{0x11, 0x22, 0x33, 0x66, 0x44, 0x55, 0x66, 0xff})
	if err != nil {
		panic(err)
	}
	// The scrambled payload of a TS packet: one full block and a 1-byte residue.
	payload, _ := hex.DecodeString("71b2869f4bf3b76db1")
	key.Decrypt(payload)
	fmt.Printf("%x\n", payload)

	key.Encrypt(payload)
	fmt.Printf("%x\n", payload)
	// Output:
	// 000102030405060708
	// 71b2869f4bf3b76db1
}

func ExampleEngine_Decrypt() {
	key, err := csa.NewKey([]byte{0x11, 0x22, 0x33, 0x66, 0x44, 0x55, 0x66, 0xff})
	if err != nil {
		panic(err)
	}
	engine, err := csa.NewEngine(0) // the fastest engine for this CPU
	if err != nil {
		panic(err)
	}
	// Payloads of any length up to 184 bytes, for example sliced out of
	// TS packets after their adaptation fields; they are descrambled in
	// place, Lanes at a time.
	clear := []byte("a TS payload of more than one block")
	payloads := make([][]byte, 300)
	for i := range payloads {
		payloads[i] = append([]byte(nil), clear...)
		key.Encrypt(payloads[i])
	}
	engine.Decrypt(key, payloads)
	fmt.Printf("%s\n%s\n", payloads[0], payloads[299])
	// Output:
	// a TS payload of more than one block
	// a TS payload of more than one block
}

func ExampleEngine_Choice() {
	engine, err := csa.NewEngine(0)
	if err != nil {
		panic(err)
	}
	// With AVX2 and no AVX-512, for example:
	// csa2: 256 lanes AVX2: block S-box: nibble tables, measured 1.05× as
	// fast as the blend tree on this CPU
	if c := engine.Choice(); c != "" {
		fmt.Printf("%v: %s\n", engine, c)
	} else {
		fmt.Println(engine)
	}
}
