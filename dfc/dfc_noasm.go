//go:build !amd64 || !gc || purego

package dfc

func cryptBlock(rk *schedule, dst, src []byte) { cryptBlockGeneric(rk, dst, src) }

// cryptBlocks has no use for the IFMA schedule here.
func cryptBlocks(rk *schedule, _ *ifmaSchedule, dst, src []byte) { cryptBlocksGeneric(rk, dst, src) }
