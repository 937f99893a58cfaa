package batcher_test

import (
	"fmt"

	"github.com/tsdescramble/tsdescramble/batcher"
)

func ExampleBatcher() {
	// Payloads of a unit of work and the keys they take: a key change at the fourth, and a
	// payload too short for the system to change.
	payloads := [][]byte{make([]byte, 184), make([]byte, 184), make([]byte, 184),
		make([]byte, 184), make([]byte, 4), make([]byte, 100), make([]byte, 184)}
	keys := []int32{0, 0, 0, 1, 1, 0, 1}

	var b batcher.Batcher
	b.Start(2, 8) // an engine of 2 lanes that leaves payloads under 8 bytes clear
	for i, p := range payloads {
		b.Add(keys[i], p)
	}
	for _, bt := range b.Flush() {
		fmt.Printf("key %d: %d payloads\n", bt.Key, len(bt.Payloads))
	}
	// Output:
	// key 0: 2 payloads
	// key 0: 2 payloads
	// key 1: 2 payloads
}
