package dfc_test

import (
	"encoding/hex"
	"fmt"

	"github.com/tsdescramble/tsdescramble/dfc"
)

func ExampleNewCipher() {
	// The first variable-key vector of the DFC submission (ecb_vk.txt, I=1).
	key, _ := hex.DecodeString("80000000000000000000000000000000")
	block, err := dfc.NewCipher(key)
	if err != nil {
		panic(err)
	}
	ct := make([]byte, dfc.BlockSize)
	block.Encrypt(ct, make([]byte, dfc.BlockSize))
	fmt.Printf("%x\n", ct)

	pt := make([]byte, dfc.BlockSize)
	block.Decrypt(pt, ct)
	fmt.Printf("%x\n", pt)
	// Output:
	// aa40250b7f35796ba3bd48d462a503aa
	// 00000000000000000000000000000000
}

func ExampleCipher_EncryptBlocks() {
	block, err := dfc.NewCipher(make([]byte, 16))
	if err != nil {
		panic(err)
	}
	// One block from each of four packets, encrypted in one call. The blocks
	// are independent: equal inputs give equal outputs.
	src, _ := hex.DecodeString("000102030405060708090a0b0c0d0e0f" +
		"00000000000000000000000000000000" +
		"000102030405060708090a0b0c0d0e0f" +
		"ffffffffffffffffffffffffffffffff")
	dst := make([]byte, len(src))
	block.EncryptBlocks(dst, src)
	for i := 0; i < len(dst); i += dfc.BlockSize {
		fmt.Printf("%x\n", dst[i:i+dfc.BlockSize])
	}
	// Output:
	// 630420709e777ff6cb1c65231362c5e3
	// f12dd2307064907f3b61da941efb2184
	// 630420709e777ff6cb1c65231362c5e3
	// c5f018edfe762a03ac7dd67d9af7e552
}
