//go:build !amd64 || !gc || purego

package csa

// asmEngine has no kernel here: every width runs the portable code.
type asmEngine struct{}

func (*asmEngine) decrypt(*Key, *batch, bool) { panic("csa: no assembly kernel") }
func (*asmEngine) encrypt(*Key, *batch, bool) { panic("csa: no assembly kernel") }

// bestLanes is the default width: 64 lanes is the fastest portable kernel
// per payload.
func bestLanes() int { return 64 }

// implFor picks the kernel for a lane count.
func implFor(lanes int) (engineImpl, bool) {
	switch lanes {
	case 32:
		return implGeneric32, true
	case 64, 128, 256:
		return implGeneric64, true
	}
	return 0, false
}
