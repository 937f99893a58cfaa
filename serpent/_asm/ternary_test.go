package main

import (
	"fmt"
	"testing"
)

// TestTernarySBoxes synthesizes every circuit (synthesize checks each one
// exhaustively) and logs its size and depth.
func TestTernarySBoxes(t *testing.T) {
	sboxes := parseSBoxes("../sbox.go")
	for _, maxDepth := range []int{2, 3, 99} {
		c := ternarySBoxes(sboxes, maxDepth)
		for i := range 8 {
			for _, name := range []string{fmt.Sprintf("sb%d", i), fmt.Sprintf("sb%dInv", i)} {
				t.Logf("max depth %2d: %-7s %2d operations, depth %d", maxDepth, name, len(c[name].ops), circuitDepth(c[name]))
			}
		}
	}
}
