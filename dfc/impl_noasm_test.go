//go:build !amd64 || !gc || purego

package dfc

// implNames lists the multi-block paths built for this machine type.
var implNames = []string{"generic"}

// setImplementation accepts only "generic", the one path built here.
func setImplementation(name string) (restore func(), ok bool) {
	if name != "generic" {
		panic("unknown implementation " + name)
	}
	return func() {}, true
}

// missingFeatures is never called here: every path built runs anywhere.
func missingFeatures(name string) string { return "" }
