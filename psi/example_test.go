package psi_test

import (
	"fmt"
	"os"
	"slices"

	"github.com/tsdescramble/tsdescramble/psi"
)

// The Tracker sits beside the main loop: every packet goes past Wants, only those of the PAT
// and the PMTs are fed, and the selected PIDs are worked out again when Generation moves.
func Example() {
	ts, err := os.ReadFile("testdata/two-programs.ts")
	if err != nil {
		fmt.Println(err)
		return
	}
	tr := psi.NewTracker()
	var gen uint64
	var selected []uint16
	for pkt := range slices.Chunk(ts, psi.PacketSize) {
		pid := uint16(pkt[1]&0x1F)<<8 | uint16(pkt[2])
		if tr.Wants(pid) {
			tr.Feed(pkt)
			if tr.Generation() != gen {
				gen = tr.Generation()
				selected, _ = tr.ServicePIDs(2)
			}
		}
	}
	for _, s := range tr.Services() {
		fmt.Printf("service %d: PMT PID %#x, PCR PID %#x\n", s.Number, s.PMTPID, s.PCRPID)
		for _, ca := range s.CA {
			fmt.Printf("  CA system %#04x, ECM PID %#x\n", ca.SystemID, ca.PID)
		}
		for _, st := range s.Streams {
			fmt.Printf("  stream PID %#x type %#02x\n", st.PID, st.Type)
		}
	}
	fmt.Printf("PIDs of service 2: %#x\n", selected)
	// Output:
	// service 1: PMT PID 0x1000, PCR PID 0x100
	//   CA system 0x2600, ECM PID 0x1ff0
	//   stream PID 0x100 type 0x02
	//   stream PID 0x101 type 0x03
	// service 2: PMT PID 0x1001, PCR PID 0x102
	//   stream PID 0x102 type 0x02
	//   stream PID 0x103 type 0x03
	// PIDs of service 2: [0x102 0x103 0x1001]
}

func ExampleParsePIDList() {
	pids, err := psi.ParsePIDList("0x100-0x103, 0x200, 512")
	fmt.Printf("%#x %v\n", pids, err)
	_, err = psi.ParsePIDList("0x100,0x2000")
	fmt.Println(err)
	// Output:
	// [0x100 0x101 0x102 0x103 0x200] <nil>
	// PID "0x2000" is out of range: PIDs go from 0 to 0x1FFF (8191)
}
