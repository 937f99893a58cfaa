package dvbapi_test

import (
	"context"
	"fmt"

	"github.com/tsdescramble/tsdescramble/keys"
	"github.com/tsdescramble/tsdescramble/keyserver/dvbapi"
)

// A DVBAPI client gets the keys of a service from OSCam's dvbapi module (a listening port):
// it is a pipeline.SectionSink, so a run with pipeline.LiveKeys{Source: live, Sections: client}
// hands it the PMTs and the sections the server filters.
func ExampleClient() {
	live := keys.NewLive()
	client := dvbapi.NewClient(dvbapi.Config{Addr: "127.0.0.1:9000", Log: func(s string) { fmt.Println(s) }}, live)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go client.Run(ctx)
	client.SetServices([]dvbapi.CAPMTService{{ProgramNumber: 1, PMTPID: 0x1000,
		CA:      []byte{0x09, 0x04, 0x0B, 0x00, 0xE5, 0x00}, // Conax, ECM PID 0x500
		Streams: []dvbapi.CAPMTStream{{Type: 0x02, PID: 0x100}}}})
	// ... client.Section(pid, section) for the sections of client.WantedPIDs() ...
}
