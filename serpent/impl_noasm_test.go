//go:build !amd64 || !gc || purego

package serpent

func archImplementations() []implAvail { return nil }

func archSingleImplementations() []singleImpl { return nil }
