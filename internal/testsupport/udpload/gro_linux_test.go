package udpload

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A send the kernel cuts into datagrams (UDP_SEGMENT) reaches a coalescing receiver as one
// message, and the receiver still counts and checks each datagram: three of 7 packets and a
// last, shorter one of 2.
func TestCoalesce(t *testing.T) {
	s := stream(100)
	r, err := Listen(s)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if !r.Coalesce() {
		t.Skip("the kernel does not coalesce UDP datagrams (UDP_GRO, Linux 5.0)")
	}
	c, err := net.DialUDP("udp4", nil, r.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	oob := make([]byte, unix.CmsgSpace(2))
	h := (*unix.Cmsghdr)(unsafe.Pointer(&oob[0]))
	h.Level, h.Type = unix.IPPROTO_UDP, unix.UDP_SEGMENT
	h.SetLen(unix.CmsgLen(2))
	binary.NativeEndian.PutUint16(oob[unix.CmsgLen(0):], DatagramSize)
	const packets = 3*PerDatagram + 2
	if _, _, err := c.WriteMsgUDP(s[:packets*PacketSize], oob, nil); err != nil {
		t.Skipf("the kernel does not segment UDP sends (UDP_SEGMENT, Linux 4.18): %v", err)
	}
	rs := r.Run(context.Background(), 200*time.Millisecond, 5*time.Second)
	if rs.Datagrams != 4 || rs.Packets != packets || rs.Messages != 1 || rs.Wrong != 0 || rs.Skips != 0 {
		t.Fatalf("want 4 datagrams, %d packets in one message; received %+v", packets, rs)
	}
}

// A segmenting sender's batches arrive as the same datagrams, in order, across the loop's
// wrap: one a message at a plain receiver, coalesced at one that coalesces.
func TestSegmentedSender(t *testing.T) {
	for _, coalesce := range []bool{false, true} {
		t.Run(fmt.Sprintf("coalesce=%v", coalesce), func(t *testing.T) {
			s := stream(100)
			r, err := Listen(s)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if coalesce && !r.Coalesce() {
				t.Skip("the kernel does not coalesce UDP datagrams (UDP_GRO, Linux 5.0)")
			}
			snd, err := NewSender(r.Addr(), s)
			if err != nil {
				t.Fatal(err)
			}
			defer snd.Close()
			if !snd.Segment() {
				t.Skip("the kernel does not segment UDP sends (UDP_SEGMENT, Linux 4.18)")
			}
			got := make(chan RecvStats, 1)
			go func() { got <- r.Run(context.Background(), 300*time.Millisecond, 10*time.Second) }()
			st, err := snd.Run(context.Background(), 20e6, 200*time.Millisecond)
			if err != nil {
				t.Fatal(err)
			}
			rs := <-got
			if st.Datagrams == 0 || st.Datagrams%Batch != 0 || rs.Datagrams != st.Datagrams || rs.Bytes != st.Bytes ||
				rs.Wrong != 0 || rs.Skips != 0 || rs.Lost != 0 || rs.Dropped != 0 {
				t.Fatalf("sent %+v, received %+v", st, rs)
			}
			if coalesce != (rs.Messages < rs.Datagrams) {
				t.Errorf("coalescing %v: %d datagrams in %d messages", coalesce, rs.Datagrams, rs.Messages)
			}
		})
	}
}
