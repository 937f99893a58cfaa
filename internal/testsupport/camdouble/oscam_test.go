package camdouble

import (
	"bufio"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/tsdescramble/tsdescramble/internal/wire/dvbapi"
)

// TestDVBAPIOSCamMessages pins SetOSCam to the messages OSCam's DVBAPI module sent a client on
// loopback (OSCam svn trunk, March 2024; a constcw reader answering every ECM with one pair;
// boxtype pc, listen_port): after the CA PMT, the ECM filter on tables 0x80 and 0x81; for the
// first ECM the filter on the other table at once, then CA_SET_PID -1 and 0 for each stream,
// CA_SET_DESCR even and odd, ECM_INFO; for every later ECM the filter on the other table and
// nothing else, as each answer repeats the pair; an ECM of the table just asked for (a repeat)
// only has the filter set again.
func TestDVBAPIOSCamMessages(t *testing.T) {
	srv := NewDVBAPI(t)
	srv.SetOSCam(true)
	even := []byte{0x11, 0x22, 0x33, 0x66, 0x44, 0x55, 0x66, 0xFF}
	odd := []byte{0xA1, 0xB2, 0xC3, 0x16, 0xD4, 0xE5, 0xF6, 0xAF}
	srv.SetAnswer(ConstantCW(even, odd))
	c, err := net.Dial("tcp", srv.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReader(c)
	read := func() string {
		t.Helper()
		m, err := dvbapi.ReadMessage(r)
		if err != nil {
			t.Fatal(err)
		}
		switch m.Opcode {
		case dvbapi.OpServerInfo:
			return "SERVER_INFO"
		case dvbapi.OpDMXSetFilter:
			return fmt.Sprintf("DMX_SET_FILTER %04X %02X/%02X", m.PID, m.Filt.Value[0], m.Filt.Mask[0])
		case dvbapi.OpCASetPID:
			return fmt.Sprintf("CA_SET_PID %04X %d", m.PID, m.Index)
		case dvbapi.OpCASetDescr:
			return fmt.Sprintf("CA_SET_DESCR %d %d %X", m.Index, m.Parity, m.CW)
		case dvbapi.OpECMInfo:
			return fmt.Sprintf("ECM_INFO %04X %04X %04X", m.ServiceID, m.CAID, m.ECMPID)
		}
		return fmt.Sprintf("opcode %08X", m.Opcode)
	}
	expect := func(want ...string) {
		t.Helper()
		for _, w := range want {
			if got := read(); got != w {
				t.Fatalf("got %s, want %s", got, w)
			}
		}
	}
	if _, err := c.Write(dvbapi.AppendClientInfo(nil, "test")); err != nil {
		t.Fatal(err)
	}
	expect("SERVER_INFO")
	capmt, err := dvbapi.AppendCAPMT(nil, 1, dvbapi.ListOnly, &dvbapi.CAPMTService{
		ProgramNumber: ServiceID, PMTPID: PMTPID, CA: CADescriptor(TestCAID, ECMPID),
		Streams: []dvbapi.CAPMTStream{{Type: 0x1B, PID: 0x100}, {Type: 0x0F, PID: 0x101}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write(capmt); err != nil {
		t.Fatal(err)
	}
	expect("DMX_SET_FILTER 0500 80/F0")
	send := func(id uint32, section []byte) {
		t.Helper()
		if _, err := c.Write(dvbapi.AppendFilterData(nil, id, 0, 0, section)); err != nil {
			t.Fatal(err)
		}
	}
	zero := make([]byte, 8)
	send(2, ECM(0x80, even, zero, 0))
	expect("DMX_SET_FILTER 0500 81/FF",
		"CA_SET_PID 0100 -1", "CA_SET_PID 0100 0", "CA_SET_PID 0101 -1", "CA_SET_PID 0101 0",
		"CA_SET_DESCR 0 0 11223366445566FF", "CA_SET_DESCR 0 1 A1B2C316D4E5F6AF",
		"ECM_INFO 0001 0B00 0500")
	send(3, ECM(0x81, even, odd, 1))
	expect("DMX_SET_FILTER 0500 80/FF")
	send(4, ECM(0x81, even, odd, 1)) // a repeat of the table last asked for
	expect("DMX_SET_FILTER 0500 80/FF")
	send(5, ECM(0x80, even, odd, 2))
	expect("DMX_SET_FILTER 0500 81/FF")
	// The pair changes in one half: that half alone is written.
	srv.SetAnswer(ConstantCW([]byte{1, 2, 3, 6, 4, 5, 6, 15}, odd))
	send(6, ECM(0x81, even, odd, 3))
	expect("DMX_SET_FILTER 0500 80/FF", "CA_SET_DESCR 0 0 010203060405060F", "ECM_INFO 0001 0B00 0500")
	// Every message was counted.
	c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	if b, err := r.Peek(1); err == nil {
		t.Fatalf("more than expected from the server: % X", b)
	}
	n := 0
	for _, op := range srv.SentOps() {
		if op == dvbapi.OpCASetDescr {
			n++
		}
	}
	if n != 3 {
		t.Fatalf("SentOps counts %d CA_SET_DESCR, want 3: %08X", n, srv.SentOps())
	}
}
