package ts_test

import (
	"bytes"
	"fmt"

	"github.com/tsdescramble/tsdescramble/ts"
)

// A program that frames many inputs in turn releases each framer once done with it, so that
// the next framer reuses its buffer.
func ExampleFramer_Release() {
	for _, packets := range []int{3, 5} {
		input := bytes.Repeat(append([]byte{ts.SyncByte, 0x01, 0x00, 0x10}, make([]byte, ts.PacketSize-4)...), packets)
		fr := ts.NewFramer(bytes.NewReader(input))
		n := 0
		for {
			if _, err := fr.Next(); err != nil {
				break
			}
			n++
		}
		fr.Release() // fr and its packets are not used after this
		fmt.Println(n, "packets")
	}
	// Output:
	// 3 packets
	// 5 packets
}
