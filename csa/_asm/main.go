// Command _asm generates code for package csa: the stream S-box circuits
// in Go (streamsbox.go), the rounds of both ciphers in Go (rounds.go) and,
// with avo, the AVX2 and AVX-512 kernels (csa_amd64.s), and, as text, the
// NEON kernels for arm64 (csa_arm64.s). The rounds are described once, in
// round.go, and emitted to every target.
//
// Run it with go generate in this directory.
package main

import (
	"log"
	"os"
)

//go:generate go run . -go ../streamsbox.go
//go:generate go run . -rounds ../rounds.go
//go:generate go run . -out ../csa_amd64.s -pkg csa
//go:generate go run . -neon ../csa_arm64.s
//go:generate go run . -blockcircuit ../blocksbox_circuit_test.go

func main() {
	if len(os.Args) == 3 && os.Args[1] == "-blockcircuit" {
		if err := writeBlockCircuit(os.Args[2]); err != nil {
			log.Fatal(err)
		}
		return
	}
	if len(os.Args) == 3 && os.Args[1] == "-rounds" {
		if err := writeGoRounds(os.Args[2]); err != nil {
			log.Fatal(err)
		}
		return
	}
	circuits := synthesize()
	if len(os.Args) == 3 && os.Args[1] == "-neon" {
		if err := writeNEON(os.Args[2], circuits); err != nil {
			log.Fatal(err)
		}
		return
	}
	if len(os.Args) == 3 && os.Args[1] == "-go" {
		if err := writeGo(os.Args[2], circuits); err != nil {
			log.Fatal(err)
		}
		return
	}
	writeAsm(circuits)
}
