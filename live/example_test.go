package live_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"time"

	"github.com/tsdescramble/tsdescramble/live"
)

// A relay: receive a stream on one address and send it on to another, as RTP, with the
// statistics of the input at the end.
func Example() {
	in, err := live.ParseAddress("udp://@127.0.0.1:0") // port 0: any free port
	if err != nil {
		log.Fatal(err)
	}
	out, err := live.ParseAddress("rtp://127.0.0.1:5004?pkts=7&ttl=4")
	if err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	r, err := live.Listen(ctx, in) // the input ends when ctx does
	if err != nil {
		log.Fatal(err)
	}
	defer r.Close()
	w, err := live.Dial(out)
	if err != nil {
		log.Fatal(err)
	}
	defer w.Close()
	r.SetIdleTimeout(5 * time.Second)
	if _, err := io.Copy(w, r); err != nil {
		log.Fatal(err)
	}
	s := r.Stats()
	fmt.Printf("%d datagrams, %d lost, %d reordered\n", s.Datagrams, s.Lost, s.Reordered)
	// Output: 0 datagrams, 0 lost, 0 reordered
}

func ExampleParseAddress() {
	for _, s := range []string{
		"udp://@:5000",
		"udp://10.0.0.1@232.1.1.1:5000?iface=eth0",
		"rtp://[ff15::1]:5004?ttl=8&ssrc=0x1234",
		"udp://239.1.1.1",
	} {
		a, err := live.ParseAddress(s)
		if err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Printf("%s listen=%v send=%v multicast=%v\n", a, a.CanListen(), a.CanSend(), a.Multicast())
	}
	// Output:
	// udp://@:5000 listen=true send=false multicast=false
	// udp://10.0.0.1@232.1.1.1:5000?iface=eth0 listen=true send=false multicast=true
	// rtp://[ff15::1]:5004?ttl=8&ssrc=4660 listen=true send=true multicast=true
	// address "udp://239.1.1.1": no port; write HOST:PORT, for example udp://239.1.1.1:5000 (IPv6 in brackets: [ff15::1]:5000)
}
