module github.com/tsdescramble/tsdescramble/internal/aesblocks/_asm

go 1.26.0

require (
	github.com/mmcloughlin/avo v0.5.0
	github.com/tsdescramble/tsdescramble v0.0.0-00010101000000-000000000000
)

require (
	golang.org/x/mod v0.29.0 // indirect
	golang.org/x/sync v0.17.0 // indirect
	golang.org/x/sys v0.50.0 // indirect
	golang.org/x/tools v0.38.0 // indirect
)

replace github.com/tsdescramble/tsdescramble => ../../..
