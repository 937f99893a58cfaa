// Command tsdescramble descrambles MPEG transport streams scrambled with DVB-CSA2.
//
//	tsdescramble -in scrambled.ts -out clear.ts -cw 11223366445566ff
//	cat scrambled.ts | tsdescramble -cw-file keys.txt > clear.ts
//
// It reads 188, 192 and 204-byte packets from a file or stdin, regains sync after garbage,
// descrambles the payloads of packets with TSC 10 (even key) and 11 (odd key), clears their
// scrambling bits and writes every packet, in order and in its framing, to a file or stdout.
// Messages go to stderr; stdout carries only TS data.
//
// Exit status: 0 success; 1 runtime failure (I/O, input with no transport stream);
// 2 usage error (bad flag, bad key, unreadable key file).
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
