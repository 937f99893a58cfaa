module github.com/tsdescramble/tsdescramble/csa/_asm

go 1.26.0

require (
	github.com/mmcloughlin/avo v0.5.0
	github.com/tsdescramble/tsdescramble v0.0.0
)

replace github.com/tsdescramble/tsdescramble => ../..
