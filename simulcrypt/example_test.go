package simulcrypt_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/tsdescramble/tsdescramble/simulcrypt"
)

// An SCS asks an ECMG for the ECM of a crypto period: it sets up a channel and a stream,
// provides the period's control words and receives the ECM built from them.
func ExampleDial() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := simulcrypt.Dial(ctx, simulcrypt.Config{Addr: "127.0.0.1:2000", SuperCASID: 0x4ADC0000,
		Channel: 1, Stream: 1, ECMID: 1, NominalCPDuration: 10 * time.Second})
	if err != nil {
		var er *simulcrypt.ErrorReply
		if errors.As(err, &er) {
			fmt.Println("the ECMG refused:", er.Statuses)
		}
		fmt.Println(err)
		return
	}
	defer c.Close()
	// Each CW_provision carries the CWs that the channel_status asked for: here lead_CW 1 and
	// CW_per_msg 2, so period 0's and the next one's (scs.CheckCWs says whether the scrambler
	// can follow what an ECMG asks).
	p := c.Params()
	if p.LeadCW != 1 || p.CWPerMsg != 2 {
		fmt.Printf("lead_CW %d, CW_per_msg %d: not this example's ECMG\n", p.LeadCW, p.CWPerMsg)
		return
	}
	cw0 := []byte{0x11, 0x22, 0x33, 0x66, 0x44, 0x55, 0x66, 0xFF}
	cw1 := []byte{0x01, 0x02, 0x03, 0x06, 0x09, 0x08, 0x07, 0x18}
	if err := c.Provide(0, []simulcrypt.CPCW{{CP: 0, CW: cw0}, {CP: 1, CW: cw1}}, 10*time.Second, nil); err != nil {
		fmt.Println(err)
		return
	}
	select {
	case ecm := <-c.ECMs():
		fmt.Printf("ECM of crypto period %d: %d bytes, on air %v after the period starts\n",
			ecm.CP, len(ecm.Datagram), p.DelayStart)
	case err := <-c.Errors(): // an *ErrorReply, or the loss of the connection (ErrLost)
		fmt.Println(err)
	case <-ctx.Done():
		fmt.Println(ctx.Err())
	}
}

// Error replies read in the specification's words.
func ExampleStatus() {
	fmt.Println(simulcrypt.Status(0x000B))
	// Output: not enough control words to compute ECM (0x000B)
}
