package serpent_test

import (
	"bytes"
	"encoding/hex"
	"fmt"

	"github.com/tsdescramble/tsdescramble/serpent"
)

func ExampleNewCipher() {
	// NESSIE set 4, vector 0 for 128-bit keys.
	key, _ := hex.DecodeString("000102030405060708090a0b0c0d0e0f")
	plain, _ := hex.DecodeString("00112233445566778899aabbccddeeff")

	block, err := serpent.NewCipher(key)
	if err != nil {
		panic(err)
	}
	out := make([]byte, serpent.BlockSize)
	block.Encrypt(out, plain)
	fmt.Printf("%x\n", out)
	// Output: 563e2cf8740a27c164804560391e9b27
}

func ExampleCipher_EncryptBlocks() {
	c, err := serpent.NewCipher([]byte("an example key"))
	if err != nil {
		panic(err)
	}

	// One block from each of 32 independent messages, for example the
	// next CBC block of 32 packets, XORed with their chaining values.
	batch := make([]byte, 32*serpent.BlockSize)
	for i := range batch {
		batch[i] = byte(i)
	}
	out := make([]byte, len(batch))
	c.EncryptBlocks(out, batch)

	// The batch equals block-by-block encryption.
	one := make([]byte, serpent.BlockSize)
	c.Encrypt(one, batch[5*serpent.BlockSize:])
	fmt.Println(bytes.Equal(one, out[5*serpent.BlockSize:6*serpent.BlockSize]))

	c.DecryptBlocks(out, out)
	fmt.Println(bytes.Equal(out, batch))
	// Output:
	// true
	// true
}
