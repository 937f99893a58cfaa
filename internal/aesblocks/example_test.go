package aesblocks_test

import (
	"encoding/hex"
	"fmt"

	"github.com/tsdescramble/tsdescramble/internal/aesblocks"
)

// Encrypt two independent blocks in one call, here with the FIPS-197
// Appendix C.1 key and plaintext, then decrypt them in place.
func Example() {
	key, _ := hex.DecodeString("000102030405060708090a0b0c0d0e0f")
	block, _ := hex.DecodeString("00112233445566778899aabbccddeeff")
	c, err := aesblocks.NewCipher(key)
	if err != nil {
		panic(err)
	}
	buf := append(block, make([]byte, 16)...)
	c.EncryptBlocks(buf, buf)
	fmt.Printf("%x\n%x\n", buf[:16], buf[16:])
	c.DecryptBlocks(buf, buf)
	fmt.Printf("%x\n", buf[:16])
	// Output:
	// 69c4e0d86a7b0430d8cdb78070b4c55a
	// c6a13b37878f5b826f4f8162a1c8d879
	// 00112233445566778899aabbccddeeff
}
