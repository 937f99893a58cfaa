module github.com/tsdescramble/tsdescramble/csa/_asm

go 1.26.0

require (
	github.com/mmcloughlin/avo v0.5.0
	github.com/tsdescramble/tsdescramble v0.0.0
)

require (
	golang.org/x/mod v0.23.0 // indirect
	golang.org/x/sync v0.11.0 // indirect
	golang.org/x/sys v0.50.0 // indirect
	// avo v0.5.0 asks for x/tools v0.2.0, whose go/packages crashes
	// type-checking package csa with Go 1.26; v0.30.0 works.
	golang.org/x/tools v0.30.0 // indirect
)

replace github.com/tsdescramble/tsdescramble => ../..
