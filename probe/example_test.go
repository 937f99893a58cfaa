package probe_test

import (
	"fmt"
	"os"

	"github.com/tsdescramble/tsdescramble/probe"
)

// Probe reads a whole stream and reports its services, their CA systems, and the scrambling
// state of every PID.
func ExampleProbe() {
	f, err := os.Open("testdata/two-services.ts")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer f.Close()
	rep, err := probe.Probe(f)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%d packets of %d bytes, %.2f s\n", rep.Packets, rep.Framing, rep.Timing.DurationSeconds)
	for _, s := range rep.Services {
		fmt.Printf("service %d %q, PMT PID %#x\n", s.Number, s.Name, s.PMTPID)
		for _, ca := range s.CA {
			fmt.Printf("  %s (%#04x), ECM PID %#x\n", ca.SystemName, ca.SystemID, ca.ECMPID)
		}
		for _, st := range s.Streams {
			fmt.Printf("  PID %#x: %s\n", st.PID, st.TypeName)
		}
	}
	for _, e := range rep.EMM {
		fmt.Printf("EMM: %s, PID %#x\n", e.SystemName, e.EMMPID)
	}
	for _, p := range rep.PIDs {
		if p.Even+p.Odd > 0 {
			fmt.Printf("PID %#x: %d even, %d odd; crypto periods: %d\n", p.PID, p.Even, p.Odd, p.CryptoPeriods)
		}
	}
	// Output:
	// 375 packets of 188 bytes, 0.44 s
	// service 1 "Unicode Über", PMT PID 0x100
	//   Conax (0x0b00), ECM PID 0x200
	//   PID 0x101: H.264 video
	//   PID 0x102: AC-3 audio
	// service 2 "Two", PMT PID 0x110
	//   PID 0x111: MPEG-2 video
	//   PID 0x112: AAC audio
	// EMM: Conax, PID 0x300
	// EMM: Viaccess, PID 0x301
	// PID 0x101: 90 even, 30 odd; crypto periods: 2
	// PID 0x102: 0 even, 120 odd; crypto periods: 1
	// PID 0x112: 4 even, 0 odd; crypto periods: 1
}
