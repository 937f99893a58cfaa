package keyserver_test

import (
	"bytes"
	"context"
	"fmt"
	"os"

	"github.com/tsdescramble/tsdescramble/keys"
	"github.com/tsdescramble/tsdescramble/keyserver"
	"github.com/tsdescramble/tsdescramble/keyserver/cs378x"
	"github.com/tsdescramble/tsdescramble/pipeline"
	"github.com/tsdescramble/tsdescramble/ts"
)

// Descrambling a recording with the keys a cs378x server gives for its ECMs.
func Example() {
	live := keys.NewLive()
	client := cs378x.NewClient(cs378x.Config{Addr: "127.0.0.1:15000", User: "user", Password: os.Getenv("CS378X_PASSWORD")})
	defer client.Close()
	feeder := keyserver.NewFeeder(live, client)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go feeder.Run(ctx)

	in, err := os.Open("recording.ts")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer in.Close()
	var out bytes.Buffer
	st, err := pipeline.Run(ctx, ts.NewSource(in), &out, pipeline.Options{LiveKeys: &pipeline.LiveKeys{
		Source:    live,
		Sections:  keyserver.NewECMSink(feeder, keyserver.Choice{}), // every service's first CA system
		FileInput: true,                                             // read ahead: wait for the server
	}})
	if err != nil {
		fmt.Println(err)
		return
	}
	fs := feeder.Stats()
	fmt.Printf("%d packets descrambled; %d ECMs sent, round trip median %v\n", st.Descrambled, fs.Sent, fs.RTTMedian)
}

// Following where a client's connection stands: a server that cannot be reached is down until
// an attempt gets through.
func ExampleRedial_State() {
	r := keyserver.NewRedial("127.0.0.1:15000", 0, 0, 0)
	fmt.Println(r.State())
	r.Failed(fmt.Errorf("connection refused"))
	fmt.Println(r.State())
	r.Connected()
	fmt.Println(r.State())
	// Output:
	// connecting
	// down
	// connected
}
