package main

import (
	"os"

	"golang.org/x/term"
)

func main() {
	env := Env{
		Stdin:  os.Stdin,
		Stdout: os.Stdout,
		Stderr: os.Stderr,
		IsTerminal: func(f *os.File) bool {
			return term.IsTerminal(int(f.Fd()))
		},
	}
	os.Exit(Main(os.Args, env))
}
