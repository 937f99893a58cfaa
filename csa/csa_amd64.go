//go:build amd64 && gc && !purego

package csa

// asmEngine has no kernel yet on amd64.
type asmEngine struct{}

func (*asmEngine) decrypt(*Key, *batch) { panic("csa: no assembly kernel") }
func (*asmEngine) encrypt(*Key, *batch) { panic("csa: no assembly kernel") }

func bestLanes() int { return 64 }

func implFor(lanes int) (engineImpl, bool) {
	switch lanes {
	case 32:
		return implGeneric32, true
	case 64, 128, 256:
		return implGeneric64, true
	}
	return 0, false
}
