//go:build !amd64 || !gc || purego

package csa

func asmTestEngines() []testEngine { return nil }

// missingFeatures is never called here: every engine built runs anywhere.
func missingFeatures(engineImpl) string { return "" }
