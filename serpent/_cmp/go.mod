module github.com/tsdescramble/tsdescramble/serpent/_cmp

go 1.26.0

require github.com/tsdescramble/tsdescramble v0.0.0-00010101000000-000000000000

require (
	github.com/aead/serpent v0.0.0-20160714141033-fba169763ea6
	golang.org/x/sys v0.50.0 // indirect
)

replace github.com/tsdescramble/tsdescramble => ../..
