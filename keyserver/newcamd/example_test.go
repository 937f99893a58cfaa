package newcamd_test

import (
	"context"
	"encoding/hex"
	"fmt"
	"os"
	"time"

	"github.com/tsdescramble/tsdescramble/keyserver/newcamd"
)

// Asking a newcamd server for the control words of one ECM section. The DES key is the port's
// (here OSCam's [newcamd] key, the protocol's usual one); the password comes from the
// environment, so that it stays out of the process list.
func ExampleClient_ECM() {
	key, _ := hex.DecodeString(newcamd.DefaultDESKey)
	client := newcamd.NewClient(newcamd.Config{Addr: "127.0.0.1:15050", User: "user", Password: os.Getenv("NEWCAMD_PASSWORD"),
		DESKey: key, Timeout: 2 * time.Second})
	defer client.Close()
	ecm := []byte{0x80, 0x70, 0x03, 0x01, 0x02, 0x03} // an ECM section as the stream carries it
	even, odd, err := client.ECM(context.Background(), newcamd.Request{Section: ecm, ServiceID: 1, CAID: 0x0B00})
	if err != nil {
		fmt.Println(err) // newcamd: the key server found no control word for the ECM, ...
		return
	}
	fmt.Println(len(even), len(odd))
}
