package srt_test

import (
	"fmt"
	"log"

	"github.com/tsdescramble/tsdescramble/srt"
)

// An address without a host listens; a passphrase never shows in what is printed.
func ExampleParseAddress() {
	a, err := srt.ParseAddress("srt://:9000?latency=20&passphrase=correct-horse")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(a.Mode, a.Port, a.Latency, a)
	fmt.Println(srt.Redacted("srt://box:9000?passphrase=correct-horse&streamid=feed1"))
	// Output:
	// listener 9000 20 srt://:9000?latency=20&passphrase=xxxxx
	// srt://box:9000?passphrase=xxxxx&streamid=feed1
}
