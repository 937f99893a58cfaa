package scs_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/tsdescramble/tsdescramble/scs"
	"github.com/tsdescramble/tsdescramble/ts"
)

// Crypto periods of two seconds of stream time, read from the PCRs of a 20-second recording,
// without an ECMG: OnPeriod says at which packet each begins (pipeline.PeriodFeed.Start takes
// the same arguments). The Stage is handed the units of a framer, as a ts.Source hands them.
func ExampleNew() {
	f, err := os.Open("../samples/demo-clear.ts")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer f.Close()
	cw := []byte{0x11, 0x22, 0x33, 0x66, 0x44, 0x55, 0x66, 0xFF}
	starts := 0
	s, err := scs.New(context.Background(), scs.Config{
		CPDuration: 2 * time.Second,
		NextCW:     func() ([]byte, error) { return cw, nil },
		OnPeriod:   func(packet int64, cw []byte) { starts++ },
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	fr := ts.NewFramer(f)
	var out ts.Units // what the Source would hand its reader
	for {
		unit, err := fr.Next()
		if err == io.EOF {
			break
		}
		if err == nil {
			err = s.Packet(unit, fr.Framing(), &out)
		}
		if err != nil {
			fmt.Println(err)
			return
		}
	}
	// The packets after the last PCR are still held: the end of the input places them.
	err = s.End(&out)
	fmt.Println(out.Len(), "packets,", starts, "crypto periods,", err)
	// Output: 4611 packets, 10 crypto periods, <nil>
}
