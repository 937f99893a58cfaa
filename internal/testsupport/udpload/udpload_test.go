package udpload

import (
	"bytes"
	"context"
	"testing"
	"time"
)

// stream is n distinct packets: a sync byte and the packet's index.
func stream(n int) []byte {
	b := make([]byte, n*PacketSize)
	for i := range n {
		p := b[i*PacketSize : (i+1)*PacketSize]
		p[0], p[4], p[5] = 0x47, byte(i>>8), byte(i)
	}
	return b
}

// The sender's datagrams reach the receiver whole and in order, the stream looped across
// datagram boundaries (its length is not a multiple of 7 packets), at about the rate asked.
func TestSendReceive(t *testing.T) {
	s := stream(100)
	r, err := Listen(s)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	snd, err := NewSender(r.Addr(), s)
	if err != nil {
		t.Fatal(err)
	}
	defer snd.Close()
	got := make(chan RecvStats, 1)
	go func() { got <- r.Run(context.Background(), 300*time.Millisecond, 10*time.Second) }()
	const rate = 50e6
	st, err := snd.Run(context.Background(), rate, 400*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	rs := <-got
	if st.Datagrams == 0 || st.Datagrams%Batch != 0 || st.Bytes != st.Datagrams*DatagramSize {
		t.Fatalf("sent %+v", st)
	}
	if r := st.Rate(); r < rate/2 || r > rate*1.2 {
		t.Errorf("sent at %.1f Mbit/s, asked %.1f", r/1e6, rate/1e6)
	}
	if rs.Datagrams != st.Datagrams || rs.Bytes != st.Bytes || rs.Wrong != 0 || rs.Skips != 0 || rs.Lost != 0 || rs.Dropped != 0 {
		t.Fatalf("sent %+v, received %+v", st, rs)
	}
	if rs.Buffer == 0 {
		t.Error("the receive buffer is not known")
	}
}

// A packet that does not continue where the one before ended, in a datagram or across two, is
// found again in the loop and the packets between counted lost; a datagram with a packet that
// is nowhere in it, or not whole packets, is wrong.
func TestCheck(t *testing.T) {
	s := stream(10)
	r, err := Listen(s)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var st RecvStats
	pos := r.check(s[0:3*PacketSize], 0, &st)                                                                 // 0-2
	pos = r.check(s[5*PacketSize:], pos, &st)                                                                 // 5-9: 3, 4 lost
	pos = r.check(append(bytes.Clone(s[9*PacketSize:]), s[:PacketSize]...), pos, &st)                         // 9, 0: 0-8 lost
	pos = r.check(append(bytes.Clone(s[PacketSize:2*PacketSize]), s[4*PacketSize:6*PacketSize]...), pos, &st) // 1, 4, 5: 2, 3 lost
	if pos != 6 || st.Skips != 3 || st.Lost != 2+9+2 || st.Wrong != 0 || st.Packets != 3+5+2+3 {
		t.Fatalf("at %d: %+v", pos, st)
	}
	bad := bytes.Clone(s[6*PacketSize : 7*PacketSize])
	bad[100] ^= 1
	pos = r.check(bad, pos, &st)
	pos = r.check(s[6*PacketSize:6*PacketSize+100], pos, &st)
	if pos != 6 || st.Wrong != 2 {
		t.Fatalf("at %d: %+v", pos, st)
	}
}
