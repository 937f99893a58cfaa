package cs378x_test

import (
	"context"
	"fmt"
	"time"

	"github.com/tsdescramble/tsdescramble/keyserver/cs378x"
)

// Asking a cs378x server for the control words of one ECM section.
func ExampleClient_ECM() {
	client := cs378x.NewClient(cs378x.Config{Addr: "127.0.0.1:15000", User: "user", Password: "pass", Timeout: 2 * time.Second})
	defer client.Close()
	ecm := []byte{0x80, 0x70, 0x03, 0x01, 0x02, 0x03} // an ECM section as the stream carries it
	even, odd, err := client.ECM(context.Background(), cs378x.Request{Section: ecm, ServiceID: 1, CAID: 0x0B00, PID: 0x500})
	if err != nil {
		fmt.Println(err) // cs378x: the key server found no control word for the ECM, ...
		return
	}
	fmt.Println(len(even), len(odd))
}
