package ts_test

import (
	"fmt"
	"io"
	"time"

	"github.com/tsdescramble/tsdescramble/ts"
)

// A live input read ahead: the packets that have come are handed out by the deadline, however
// long the input then stays quiet, and the end of the input comes after them.
func ExampleSource_SetDeadline() {
	pr, pw := io.Pipe()
	quiet := make(chan struct{}) // the input stays quiet until the packets sent are out
	go func() {
		pkt := make([]byte, ts.PacketSize)
		pkt[0] = ts.SyncByte
		for range 3 {
			pw.Write(pkt)
		}
		<-quiet
		pw.Write(pkt)
		pw.Close()
	}()
	src := ts.NewSource(pr)
	defer src.Close()
	packets := 0
	for {
		// A packet waits at most 20 ms for the bytes the framer would like to look at
		// after it.
		src.SetDeadline(time.Now().Add(20 * time.Millisecond))
		_, err := src.Next()
		if err == ts.ErrPending {
			if packets == 3 {
				fmt.Println("3 packets out while the input is quiet")
				close(quiet)
				packets++ // say it once
			}
			continue
		}
		if err != nil {
			fmt.Println("end:", err)
			return
		}
		packets++
	}
	// Output:
	// 3 packets out while the input is quiet
	// end: EOF
}
