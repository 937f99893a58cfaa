//go:build gc && !purego

package dfc

// implNames lists the multi-block paths built for this machine type.
var implNames = []string{"avx2", "generic"}

// setImplementation makes the multi-block methods use the named path and
// returns a function that restores the previous choice. ok is false when the
// CPU cannot run that path; nothing is changed then.
func setImplementation(name string) (restore func(), ok bool) {
	saved := useAVX2
	switch name {
	case "avx2":
		if !supportsAVX2 {
			return func() {}, false
		}
		useAVX2 = true
	case "generic":
		useAVX2 = false
	default:
		panic("unknown implementation " + name)
	}
	return func() { useAVX2 = saved }, true
}
