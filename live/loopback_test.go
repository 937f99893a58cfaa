package live

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tsdescramble/tsdescramble/ts"
)

// Writer to Reader on loopback, both families, both schemes, writes cut at random sizes.
func TestLoopback(t *testing.T) {
	stream := makeStream(2000, 20, 2_000_000)
	for _, c := range []struct{ listen, send string }{
		{"udp://@127.0.0.1:0", "udp://127.0.0.1:%d"},
		{"rtp://@127.0.0.1:0", "rtp://127.0.0.1:%d?ssrc=99"},
		{"udp://@[::1]:0", "udp://[::1]:%d?pkts=21"},
		{"rtp://@[::1]:0", "rtp://[::1]:%d?pkts=1"},
		{"udp://@:0", "rtp://127.0.0.1:%d"}, // RTP recognised on a udp:// input
	} {
		t.Run(c.listen+"<-"+c.send, func(t *testing.T) {
			r := listenT(t, c.listen)
			w := dialT(t, strings.Replace(c.send, "%d", itoa(port(r)), 1))
			rng := rand.New(rand.NewPCG(1, 2))
			for rest := stream; len(rest) > 0; {
				n := min(len(rest), rng.IntN(5000))
				if _, err := w.Write(rest[:n]); err != nil {
					t.Fatal(err)
				}
				rest = rest[n:]
			}
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
			got := readN(t, r, len(stream), time.Second, 10*time.Second)
			if string(got) != string(stream) {
				t.Fatalf("received stream differs: %s", firstDiff(got, stream))
			}
			ws, s := w.Stats(), r.Stats()
			per := w.addr.Packets
			dgrams := int64((2000 + per - 1) / per)
			if ws.Datagrams != dgrams || ws.Bytes != int64(len(stream)) || s.Datagrams != dgrams || s.Bytes != int64(len(stream)) {
				t.Errorf("writer %+v, reader %+v, want %d datagrams", ws, s, dgrams)
			}
			wantRTP := int64(0)
			if w.rtp {
				wantRTP = dgrams
			}
			if s.RTP != wantRTP || s.Lost+s.Reordered+s.Late+s.Duplicates+s.Jumps+s.OtherPT+s.NotRTP+s.Unaligned+s.Truncated+s.Dropped != 0 {
				t.Errorf("stats %+v", s)
			}
			if s.SocketBuffer < 256<<10 {
				t.Logf("receive buffer only %d bytes", s.SocketBuffer)
			}
		})
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// Flush sends a short datagram at once; without it a partial datagram waits.
func TestFlush(t *testing.T) {
	r := listenT(t, "udp://@127.0.0.1:0")
	w := dialT(t, "udp://127.0.0.1:"+itoa(port(r)))
	stream := makeStream(10, 0, 1)
	w.Write(stream[:3*188])
	if got := readN(t, r, 1, 100*time.Millisecond, time.Second); len(got) != 0 {
		t.Fatalf("%d bytes before Flush", len(got))
	}
	w.Flush()
	if got := readN(t, r, 3*188, time.Second, 5*time.Second); string(got) != string(stream[:3*188]) {
		t.Fatalf("after Flush: %s", firstDiff(got, stream[:3*188]))
	}
	w.Write(stream[3*188:])
	w.Close()
	if got := readN(t, r, 7*188, time.Second, 5*time.Second); string(got) != string(stream[3*188:]) {
		t.Fatalf("after Close: %s", firstDiff(got, stream[3*188:]))
	}
	if s := w.Stats(); s.Partial != 1 || s.Datagrams != 2 {
		t.Errorf("writer stats %+v", s)
	}
}

// Datagrams that wait in the socket while the caller is busy for longer than the idle timeout
// are read, not taken for silence.
func TestIdleTimeoutBusyCaller(t *testing.T) {
	r := listenT(t, "udp://@127.0.0.1:0")
	r.SetIdleTimeout(50 * time.Millisecond)
	pkt := makeStream(1, 0, 1)
	sendRaw(t, r.LocalAddr(), pkt)
	time.Sleep(200 * time.Millisecond) // four idle timeouts without a Read
	buf := make([]byte, 188)
	if n, err := r.Read(buf); n != 188 || err != nil || string(buf) != string(pkt) {
		t.Fatalf("Read = %d, %v after a busy spell, want the datagram waiting", n, err)
	}
	if _, err := r.Read(buf); !errors.Is(err, ErrIdle) {
		t.Fatalf("then Read = %v, want the idle timeout", err)
	}
}

// The idle timeout is a typed error, and the Reader goes on after it.
func TestIdleTimeout(t *testing.T) {
	r := listenT(t, "udp://@127.0.0.1:0")
	r.SetIdleTimeout(50 * time.Millisecond)
	start := time.Now()
	n, err := r.Read(make([]byte, 188))
	var ie *IdleError
	if n != 0 || !errors.Is(err, ErrIdle) || !errors.As(err, &ie) || ie.Idle != 50*time.Millisecond {
		t.Fatalf("Read = %d, %v", n, err)
	}
	if el := time.Since(start); el > 2*time.Second { // the idle time counts from Listen
		t.Errorf("idle after %v", el)
	}
	if !strings.Contains(err.Error(), "127.0.0.1") || strings.Contains(err.Error(), "\n") {
		t.Errorf("message %q", err)
	}
	pkt := makeStream(1, 0, 1)
	sendRaw(t, r.LocalAddr(), pkt)
	if got := readN(t, r, 188, time.Second, 5*time.Second); string(got) != string(pkt) {
		t.Fatalf("after an idle error: %d bytes", len(got))
	}
}

// Close and the context end a blocked Read with io.EOF after the bytes already received,
// including those held behind a gap in the sequence.
func TestCloseEndsRead(t *testing.T) {
	for _, how := range []string{"Close", "context"} {
		t.Run(how, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			r, err := Listen(ctx, mustParse(t, "rtp://@127.0.0.1:0"))
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			// Sequence 1 then 3: 3 is held behind the gap when the Reader closes.
			pkt := makeStream(2, 0, 1)
			sendRaw(t, r.LocalAddr(), rtpDatagram(1, 33, pkt[:188]), rtpDatagram(3, 33, pkt[188:]))
			done := make(chan []byte, 1)
			go func() {
				b, _ := io.ReadAll(r)
				done <- b
			}()
			for i := 0; i < 500 && r.Stats().Datagrams < 2; i++ {
				time.Sleep(10 * time.Millisecond)
			}
			if how == "Close" {
				r.Close()
			} else {
				cancel()
			}
			select {
			case b := <-done:
				if string(b) != string(pkt) {
					t.Errorf("got %d bytes, want both packets", len(b))
				}
			case <-time.After(5 * time.Second):
				t.Fatal("Read did not end")
			}
		})
	}
}

// A datagram lost on a quiet stream holds the later ones no longer than maxHold.
func TestHoldBounded(t *testing.T) {
	r := listenT(t, "rtp://@127.0.0.1:0")
	pkt := makeStream(2, 0, 1)
	sendRaw(t, r.LocalAddr(), rtpDatagram(10, 33, pkt[:188]), rtpDatagram(12, 33, pkt[188:]))
	start := time.Now()
	got := readN(t, r, 2*188, time.Second, 5*time.Second)
	if string(got) != string(pkt) {
		t.Fatalf("got %d bytes", len(got))
	}
	if el := time.Since(start); el > maxHold+500*time.Millisecond {
		t.Errorf("held for %v", el)
	}
	if s := r.Stats(); s.Lost != 1 {
		t.Errorf("stats %+v", s)
	}
}

// What senders get wrong is passed on where it can be and counted either way; a datagram that
// is not whole packets is dropped whole.
func TestOddDatagrams(t *testing.T) {
	pkts := makeStream(4, 0, 1)
	t.Run("rtp", func(t *testing.T) {
		r := listenT(t, "rtp://@127.0.0.1:0")
		sendRaw(t, r.LocalAddr(),
			rtpDatagram(1, 96, pkts[:188]),    // another payload type: passed, counted
			pkts[188:376],                     // no RTP header: passed as plain
			rtpDatagram(2, 33, nil)[:8],       // truncated header: dropped
			rtpDatagram(2, 33, pkts[376:]),    // fine
			rtpDatagram(3, 14, pkts[376:400]), // a cut packet: dropped
		)
		got := readN(t, r, len(pkts), 300*time.Millisecond, 5*time.Second)
		if string(got) != string(pkts) {
			t.Fatalf("got %d bytes, want %d", len(got), len(pkts))
		}
		s := r.Stats()
		if s.Datagrams != 5 || s.RTP != 3 || s.OtherPT != 1 || len(s.OtherPTs) != 1 || s.OtherPTs[0] != 96 ||
			s.NotRTP != 1 || s.Truncated != 1 || s.Unaligned != 1 || s.Lost != 0 {
			t.Errorf("stats %+v", s)
		}
	})
	t.Run("udp", func(t *testing.T) {
		r := listenT(t, "udp://@127.0.0.1:0")
		sendRaw(t, r.LocalAddr(), pkts[:100], pkts[100:188], rtpDatagram(5, 33, pkts[188:]))
		got := readN(t, r, len(pkts)-188, 300*time.Millisecond, 5*time.Second)
		if string(got) != string(pkts[188:]) {
			t.Fatalf("got %d bytes, want the %d of the RTP datagram", len(got), len(pkts)-188)
		}
		if s := r.Stats(); s.Datagrams != 3 || s.Unaligned != 2 || s.RTP != 1 {
			t.Errorf("stats %+v", s)
		}
	})
}

// The RTP headers of the Writer, read by a plain socket: RFC 3551 / RFC 2250.
func TestRTPHeaders(t *testing.T) {
	const bitrate = 3_000_000
	for _, pcr := range []bool{true, false} {
		c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		u := "rtp://" + c.LocalAddr().String() + "?pkts=5"
		if pcr {
			u += "&ssrc=305419896"
		}
		w := dialT(t, u)
		every := 0
		if pcr {
			every = 10
		}
		stream := makeStream(100, every, bitrate)
		start := time.Now()
		w.Write(stream[:50*188])
		time.Sleep(30 * time.Millisecond)
		w.Write(stream[50*188:])
		w.Flush()
		elapsed := time.Since(start)
		buf := make([]byte, 2000)
		var first, last []byte
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		for i := range 20 {
			n, err := c.Read(buf)
			if err != nil {
				t.Fatal(err)
			}
			h := buf[:12]
			if n != 12+5*188 || h[0] != 0x80 || h[1] != 33 {
				t.Fatalf("datagram %d: %d bytes, header % x", i, n, h)
			}
			if pcr && binary.BigEndian.Uint32(h[8:]) != 305419896 {
				t.Fatalf("SSRC %x", h[8:12])
			}
			if i == 0 {
				first = append([]byte(nil), h...)
			} else if binary.BigEndian.Uint16(h[2:]) != binary.BigEndian.Uint16(last[2:])+1 ||
				string(h[8:12]) != string(last[8:12]) {
				t.Fatalf("datagram %d: header % x after % x", i, h, last)
			}
			last = append(last[:0], h...)
		}
		dt := binary.BigEndian.Uint32(last[4:]) - binary.BigEndian.Uint32(first[4:])
		if pcr {
			// 95 packets from the first datagram's start to the last's, at 90 kHz.
			want := uint32(95 * 188 * 8 * 90000 / bitrate)
			if dt < want-1 || dt > want+1 {
				t.Errorf("timestamp span %d, want %d (from the PCR)", dt, want)
			}
		} else if d := time.Duration(dt) * time.Second / 90000; d < 25*time.Millisecond || d > elapsed+10*time.Millisecond {
			t.Errorf("timestamp span %v over %v of wall clock", d, elapsed)
		}
	}
}

func TestListenDialErrors(t *testing.T) {
	taken := listenT(t, "udp://@127.0.0.1:0")
	for _, c := range []struct {
		addr, says string
		listen     bool
	}{
		{"udp://127.0.0.1:5000", "names a destination", true},
		{"udp://@:5000", "address to listen on", false},
		{"udp://@127.0.0.1:" + itoa(port(taken)), "cannot listen", true},
		{"udp://@239.1.2.3:5000?iface=nosuchif0", "no interface named", true},
		{"udp://@239.1.2.3:5000?iface=192.0.2.77", "no interface has the address", true},
		{"udp://239.1.2.3:5000?iface=::1", "not of the same IP version", false},
		{"udp://no-such-host.invalid:5000", "cannot resolve", false},
	} {
		a := mustParse(t, c.addr)
		var err error
		if c.listen {
			var r *Reader
			if r, err = Listen(context.Background(), a); err == nil {
				r.Close()
			}
		} else {
			var w *Writer
			if w, err = Dial(a); err == nil {
				w.Close()
			}
		}
		if err == nil || !strings.Contains(err.Error(), c.says) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v, want one line saying %q", c.addr, err, c.says)
		}
	}
}

// ReadBlock hands over the bytes Read would give, in order, trading buffers with its caller (a
// ts.ReadAhead) rather than copying; a Read that left a part behind is handed on first.
func TestReadBlock(t *testing.T) {
	stream := makeStream(3000, 20, 2_000_000)
	r := listenT(t, "rtp://@127.0.0.1:0")
	w := dialT(t, "rtp://127.0.0.1:"+itoa(port(r))+"?ssrc=7")
	if _, err := w.Write(stream); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	r.SetIdleTimeout(time.Second)
	part := make([]byte, 100)
	n, err := r.Read(part) // a Read leaves the rest of its batch behind
	if err != nil {
		t.Fatal(err)
	}
	got := append([]byte(nil), part[:n]...)
	var _ ts.BlockReader = r
	buf := make([]byte, 0, 64<<10)
	for len(got) < len(stream) {
		b, err := r.ReadBlock(buf)
		if err != nil {
			t.Fatalf("after %d bytes: %v", len(got), err)
		}
		if len(b) == 0 {
			t.Fatal("ReadBlock returned no byte and no error")
		}
		got = append(got, b...)
		buf = b // handed back: the reader may fill it next
	}
	if string(got) != string(stream) {
		t.Fatalf("received stream differs: %s", firstDiff(got, stream))
	}
}
