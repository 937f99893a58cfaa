//go:build !amd64 || !gc || purego

package serpent

func encryptBlocks(ks *[132]uint32, dst, src []byte) {
	encryptBlocksGeneric(ks, dst, src)
}

func decryptBlocks(ks *[132]uint32, dst, src []byte) {
	decryptBlocksGeneric(ks, dst, src)
}

func encryptBlock(ek *[132]uint32, dst, src []byte) {
	encryptFolded(ek, dst, src)
}

func decryptBlock(dk *[132]uint32, dst, src []byte) {
	decryptFolded(dk, dst, src)
}
