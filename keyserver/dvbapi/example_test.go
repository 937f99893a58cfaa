package dvbapi_test

import (
	"bytes"
	"context"
	"fmt"
	"os"

	"github.com/tsdescramble/tsdescramble/keys"
	"github.com/tsdescramble/tsdescramble/keyserver/dvbapi"
	"github.com/tsdescramble/tsdescramble/pipeline"
	"github.com/tsdescramble/tsdescramble/ts"
)

// A DVBAPI client gets the keys of a recording's services from OSCam's dvbapi module (a
// listening port). It is a pipeline.SectionSink: the run hands it the PMTs, which become the CA
// PMTs it sends, and the sections the server filters; the keys the server sends go into live,
// where the run finds them.
func ExampleClient() {
	live := keys.NewLive()
	client := dvbapi.NewClient(dvbapi.Config{Addr: "127.0.0.1:9000", Log: func(s string) { fmt.Println(s) }}, live)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go client.Run(ctx)

	in, err := os.Open("recording.ts")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer in.Close()
	var out bytes.Buffer
	st, err := pipeline.Run(ctx, ts.NewSource(in), &out, pipeline.Options{LiveKeys: &pipeline.LiveKeys{
		Source:    live,
		Sections:  client,
		FileInput: true, // read ahead: wait for the server's answers
	}})
	if err != nil {
		fmt.Println(err)
		return
	}
	cs := client.Stats()
	fmt.Printf("%d packets descrambled; %d ECMs sent, %d CWs set, round trip median %v\n",
		st.Descrambled, cs.ECMs, cs.CWs, cs.RTTMedian)
}
