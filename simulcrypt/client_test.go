package simulcrypt

import (
	"context"
	"errors"
	"net"
	"os"
	"testing"
	"time"

	"github.com/tsdescramble/tsdescramble/internal/testsupport/ecmgtest"
	wire "github.com/tsdescramble/tsdescramble/internal/wire/simulcrypt"
)

// TestRealECMG sets up a channel and a stream with the example ECMG of libbitstream, provides
// the CWs of two crypto periods as its lead_CW and CW_per_msg ask, and reads its ECMs back:
// sections of table_id 0x80 | (CP & 1) whose 16 bytes are the even and odd CW XORed with its key.
func TestRealECMG(t *testing.T) {
	addr := ecmgtest.Start(t)
	for _, version := range []uint8{2, 3} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c, err := Dial(ctx, Config{Addr: addr, Version: version, SuperCASID: 0x4ADC0000, Channel: 1, Stream: 2, ECMID: 3,
			NominalCPDuration: 10 * time.Second, Timeout: 3 * time.Second})
		if err != nil {
			t.Fatalf("version %d: %v", version, err)
		}
		p := c.Params()
		if p.DelayStart != ecmgtest.DelayStart || p.RepPeriod != ecmgtest.RepPeriod || p.LeadCW != ecmgtest.LeadCW ||
			p.CWPerMsg != ecmgtest.CWPerMsg || p.MaxCompTime != ecmgtest.MaxCompTime || p.Packets || p.Channel != 1 {
			t.Fatalf("channel_status: %+v", p)
		}
		cws := [][]byte{{1, 2, 3, 6, 5, 6, 7, 18}, {9, 8, 7, 24, 6, 5, 4, 15}, {0x11, 0x22, 0x33, 0x66, 0x44, 0x55, 0x66, 0xFF}}
		for cp := uint16(0); cp < 2; cp++ {
			if err := c.Provide(cp, []CPCW{{cp, cws[cp]}, {cp + 1, cws[cp+1]}}, 10*time.Second, nil); err != nil {
				t.Fatal(err)
			}
			var e ECM
			select {
			case e = <-c.ECMs():
			case err := <-c.Errors():
				t.Fatalf("CP %d: %v", cp, err)
			case <-time.After(3 * time.Second):
				t.Fatalf("CP %d: no ECM", cp)
			}
			if e.CP != cp || e.Stream != 2 || len(e.Datagram) != 19 || e.Datagram[0] != 0x80|byte(cp&1) {
				t.Fatalf("CP %d: ECM %+v", cp, e)
			}
			even, odd := cws[cp], cws[cp+1]
			if cp&1 == 1 {
				even, odd = odd, even
			}
			for i := range 8 {
				if e.Datagram[3+i]^ecmgtest.XORKey[i] != even[i] || e.Datagram[11+i]^ecmgtest.XORKey[i] != odd[i] {
					t.Fatalf("CP %d: ECM % X does not carry even %X odd %X", cp, e.Datagram, even, odd)
				}
			}
		}
		if err := c.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
	}
}

// TestRealECMGErrors: the example ECMG refuses a second channel_setup of another channel id, and
// a CW_provision with one CW where it needs two; both come back as errors in words. When the
// connection ends, Done closes and Err wraps ErrLost.
func TestRealECMGErrors(t *testing.T) {
	addr := ecmgtest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := Dial(ctx, Config{Addr: addr, SuperCASID: 0x4ADC0000, Channel: 1, Stream: 1, Timeout: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	wantErr := func(want string) {
		t.Helper()
		select {
		case err := <-c.Errors():
			var er *ErrorReply
			if !errors.As(err, &er) || err.Error() != want {
				t.Fatalf("got %v\nwant %s", err, want)
			}
		case <-time.After(3 * time.Second):
			t.Fatalf("no error reply, want %s", want)
		}
	}
	if err := c.send(wire.NewChannelSetup(2, 9, 0x4ADC0000)); err != nil {
		t.Fatal(err)
	}
	wantErr("ECMG channel_error on channel 9: unknown ECM_channel_id value (0x0006)")
	if err := c.Provide(0, []CPCW{{0, make([]byte, 8)}}, 0, nil); err != nil {
		t.Fatal(err)
	}
	wantErr("ECMG stream_error on channel 1 stream 1: not enough control words to compute ECM (0x000B)")
}

// TestLostECMG: a peer that accepts the channel and then closes the connection ends the client
// with ErrLost; one that stops answering is found out by the keep-alive.
func TestLostECMG(t *testing.T) {
	for _, silent := range []bool{false, true} {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		go fakeECMG(l, silent)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c, err := Dial(ctx, Config{Addr: l.Addr().String(), SuperCASID: 1, Timeout: 300 * time.Millisecond, KeepAlive: 100 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		select {
		case <-c.Done():
		case <-time.After(5 * time.Second):
			t.Fatal("the loss went unnoticed")
		}
		if !errors.Is(c.Err(), ErrLost) {
			t.Fatalf("silent %v: %v", silent, c.Err())
		}
		c.Close()
	}
}

// fakeECMG answers channel_setup and stream_setup on one connection, then closes it or, when
// silent, reads on without a word.
func fakeECMG(l net.Listener, silent bool) {
	conn, err := l.Accept()
	if err != nil {
		return
	}
	defer conn.Close()
	status := wire.Message{Version: 2, Type: wire.ChannelStatus}
	status.Add(wire.ParamECMChannelID, u16(0)).Add(wire.ParamSectionTSPkt, u8(0)).Add(wire.ParamDelayStart, u16(0)).
		Add(wire.ParamDelayStop, u16(0)).Add(wire.ParamECMRepPeriod, u16(100)).Add(wire.ParamMaxStreams, u16(1)).
		Add(wire.ParamMinCPDuration, u16(1)).Add(wire.ParamLeadCW, u8(1)).Add(wire.ParamCWPerMsg, u8(2)).Add(wire.ParamMaxCompTime, u16(10))
	stream := wire.Message{Version: 2, Type: wire.StreamStatus}
	stream.Add(wire.ParamECMChannelID, u16(0)).Add(wire.ParamECMStreamID, u16(0)).Add(wire.ParamECMID, u16(0)).Add(wire.ParamACTransferMode, u8(1))
	buf := make([]byte, 0, 4096)
	tmp := make([]byte, 4096)
	answered := 0
	for answered < 2 {
		n, err := conn.Read(tmp)
		if err != nil {
			return
		}
		buf = append(buf, tmp[:n]...)
		for {
			m, used, err := wire.Parse(buf)
			if err != nil {
				break
			}
			buf = buf[used:]
			switch m.Type {
			case wire.ChannelSetup:
				conn.Write(status.Append(nil))
				answered++
			case wire.StreamSetup:
				conn.Write(stream.Append(nil))
				answered++
			}
		}
	}
	if silent {
		conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		for {
			if _, err := conn.Read(tmp); err != nil {
				return
			}
		}
	}
}

// TestRealECMGKeepAlive: the example ECMG answers our channel_test with channel_status, so a
// client that sends one every 100 ms with a timeout of 300 ms stays up; and (with TSD_LONG=1)
// after 10 s of silence the ECMG sends channel_test itself, which we answer, and the channel
// still works.
func TestRealECMGKeepAlive(t *testing.T) {
	addr := ecmgtest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	keep := 100 * time.Millisecond
	wait := time.Second
	if os.Getenv("TSD_LONG") == "1" {
		keep, wait = -1, 12*time.Second // no channel_test of ours: the ECMG's after 10 s
	}
	c, err := Dial(ctx, Config{Addr: addr, SuperCASID: 0x4ADC0000, Channel: 1, Stream: 1, Timeout: 300 * time.Millisecond, KeepAlive: keep})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	select {
	case <-c.Done():
		t.Fatalf("lost: %v", c.Err())
	case err := <-c.Errors():
		t.Fatalf("error: %v", err)
	case <-time.After(wait):
	}
	if keep < 0 && c.answered.Load() == 0 {
		t.Fatal("the ECMG's channel_test went unanswered")
	}
	if err := c.Provide(0, []CPCW{{0, make([]byte, 8)}, {1, make([]byte, 8)}}, 0, nil); err != nil {
		t.Fatal(err)
	}
	select {
	case e := <-c.ECMs():
		if e.CP != 0 {
			t.Fatalf("ECM of CP %d", e.CP)
		}
	case err := <-c.Errors():
		t.Fatalf("error: %v", err)
	case <-time.After(3 * time.Second):
		t.Fatal("no ECM after the silence")
	}
}
