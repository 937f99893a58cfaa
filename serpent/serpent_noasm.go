//go:build !amd64 || !gc || purego

package serpent

func encryptBlocks(ks *[132]uint32, dst, src []byte) {
	encryptBlocksGeneric(ks, dst, src)
}

func decryptBlocks(ks *[132]uint32, dst, src []byte) {
	decryptBlocksGeneric(ks, dst, src)
}
