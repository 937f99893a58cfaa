//go:build !amd64 || !gc || purego

package dfc

func cryptBlock(rk *schedule, dst, src []byte)  { cryptBlockGeneric(rk, dst, src) }
func cryptBlocks(rk *schedule, dst, src []byte) { cryptBlocksGeneric(rk, dst, src) }
