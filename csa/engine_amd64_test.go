//go:build amd64 && gc && !purego

package csa

func asmTestEngines() []testEngine { return nil }
