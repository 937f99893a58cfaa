// Command _asm generates the stream S-box circuits of package csa, in Go
// (streamsbox.go) and, with avo, in AVX2 assembly (csa_amd64.s).
//
// Run it with go generate in this directory.
package main

import (
	"flag"
	"log"
)

//go:generate go run . -go ../streamsbox.go

func main() {
	goOut := flag.String("go", "", "write the generic Go S-box function to this file")
	flag.Parse()
	cs := synthesize()
	if *goOut != "" {
		if err := writeGo(*goOut, cs); err != nil {
			log.Fatal(err)
		}
	}
}
