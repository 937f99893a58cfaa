package live

import (
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/net/ipv4"
	"golang.org/x/sys/unix"
)

// With segmentation offload the Writer still puts the same datagrams on the wire: full ones of
// pkts packets, the short one Flush makes, each with its own RTP header, as a plain socket
// receives them.
func TestSegmentedSendKeepsDatagrams(t *testing.T) {
	for _, c := range []struct {
		scheme string
		pkts   int
	}{{"udp", 7}, {"rtp", 7}, {"udp", 1}, {"rtp", 3}} {
		t.Run(c.scheme+"-"+itoa(c.pkts), func(t *testing.T) {
			pc, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
			if err != nil {
				t.Fatal(err)
			}
			defer pc.Close()
			pc.SetReadBuffer(8 << 20)
			w := dialT(t, c.scheme+"://"+pc.LocalAddr().String()+"?pkts="+itoa(c.pkts))
			const n = 500 // more than a send's worth of datagrams, and a short one at the end
			stream := makeStream(n, 0, 1)
			if _, err := w.Write(stream); err != nil {
				t.Fatal(err)
			}
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
			hdr := 0
			if c.scheme == "rtp" {
				hdr = rtpHeaderSize
			}
			buf := make([]byte, 1<<16)
			pc.SetReadDeadline(time.Now().Add(5 * time.Second))
			var got []byte
			var seq uint16
			for i := 0; len(got) < len(stream); i++ {
				k, err := pc.Read(buf)
				if err != nil {
					t.Fatalf("after %d datagrams: %v", i, err)
				}
				want := hdr + min(c.pkts*188, len(stream)-len(got))
				if k != want {
					t.Fatalf("datagram %d: %d bytes, want %d", i, k, want)
				}
				if hdr > 0 {
					s := binary.BigEndian.Uint16(buf[2:])
					if i > 0 && s != seq+1 {
						t.Fatalf("datagram %d: sequence number %d after %d", i, s, seq)
					}
					seq = s
				}
				got = append(got, buf[hdr:k]...)
			}
			if string(got) != string(stream) {
				t.Fatalf("received stream differs: %s", firstDiff(got, stream))
			}
			dgrams := int64((n + c.pkts - 1) / c.pkts)
			short := int64(min(1, n%c.pkts))
			if s := w.Stats(); s.Datagrams != dgrams || s.Bytes != int64(len(stream)) || s.Partial != short {
				t.Errorf("writer stats %+v, want %d datagrams, %d short", s, dgrams, short)
			}
			if !w.gso {
				t.Skip("the kernel refused UDP_SEGMENT (Linux 4.18 and later have it): the datagrams were checked on the path without it")
			}
		})
	}
}

// Datagrams the kernel coalesced for the Reader (UDP_GRO) are taken apart again and counted one
// by one: from the Writer's segmented sends, loopback carries them as 64 KiB buffers.
func TestCoalescedReceive(t *testing.T) {
	for _, scheme := range []string{"udp", "rtp"} {
		t.Run(scheme, func(t *testing.T) {
			r := listenT(t, scheme+"://@127.0.0.1:0")
			w := dialT(t, scheme+"://127.0.0.1:"+itoa(port(r)))
			stream := makeStream(7*300+3, 0, 1)
			w.Write(stream)
			w.Flush()
			got := readN(t, r, len(stream), time.Second, 10*time.Second)
			if string(got) != string(stream) {
				t.Fatalf("received stream differs: %s", firstDiff(got, stream))
			}
			s := r.Stats()
			if s.Datagrams != 301 || s.Bytes != int64(len(stream)) || s.Lost+s.Reordered+s.Late+s.Duplicates+s.Unaligned+s.Truncated != 0 {
				t.Errorf("stats %+v, want 301 datagrams", s)
			}
			if scheme == "rtp" && s.RTP != 301 {
				t.Errorf("%d RTP datagrams, want 301", s.RTP)
			}
			r.mu.Lock()
			msgs := r.messages
			r.mu.Unlock()
			switch {
			case !r.gro || !w.gso:
				t.Skipf("the kernel refused UDP_GRO or UDP_SEGMENT (gro %v, gso %v; Linux 5.0 and later have both): the datagrams were checked one by one", r.gro, w.gso)
			case msgs*4 > s.Datagrams:
				t.Errorf("%d datagrams came in %d messages: the kernel did not coalesce them", s.Datagrams, msgs)
			}
		})
	}
}

// refusingConn stands for a kernel without segmentation offload: it fails a message with a
// UDP_SEGMENT control message as Linux does (EINVAL, EIO), and records what it sends.
type refusingConn struct {
	batchConn
	err   error
	calls int
	sizes []int // the size of each datagram sent
}

func (c *refusingConn) WriteBatch(ms []ipv4.Message, flags int) (int, error) {
	c.calls++
	for i := range ms {
		if len(ms[i].OOB) > 0 {
			return i, &os.SyscallError{Syscall: "sendmmsg", Err: c.err}
		}
		c.sizes = append(c.sizes, datagramLen(&ms[i]))
	}
	return len(ms), nil
}

// When the kernel refuses the offload, the Writer sends the same datagrams one per message,
// and does not try again.
func TestSegmentationRefused(t *testing.T) {
	for _, errno := range []error{unix.EINVAL, unix.EIO} {
		r := listenT(t, "udp://@127.0.0.1:0")
		w := dialT(t, "rtp://127.0.0.1:"+itoa(port(r)))
		fake := &refusingConn{batchConn: w.bc, err: errno}
		w.bc = fake
		stream := makeStream(7*100+2, 0, 1)
		w.Write(stream)
		w.Flush()
		w.Write(stream)
		w.Flush()
		if w.gso {
			t.Fatalf("%v: still segmenting", errno)
		}
		want := 2 * 101
		if len(fake.sizes) != want || fake.sizes[0] != rtpHeaderSize+7*188 || fake.sizes[100] != rtpHeaderSize+2*188 {
			t.Errorf("%v: %d datagrams sent, want %d", errno, len(fake.sizes), want)
		}
		if s := w.Stats(); s.Datagrams != int64(want) || s.Bytes != 2*int64(len(stream)) {
			t.Errorf("%v: writer stats %+v", errno, s)
		}
	}
}

// Messages of one size, up to 64 KiB: what sendSegmented groups.
func TestSegmentGroups(t *testing.T) {
	var seen [][]int // per message: its segment size (0: none) and datagram count
	rec := recordingConn(func(ms []ipv4.Message) {
		for i := range ms {
			seg := 0
			if len(ms[i].OOB) > 0 {
				seg = int(binary.NativeEndian.Uint16(ms[i].OOB[unix.CmsgLen(0):]))
			}
			seen = append(seen, []int{seg, datagramLen(&ms[i])})
		}
	})
	w := dialT(t, "udp://127.0.0.1:9?pkts=7")
	w.bc = rec
	stream := makeStream(7*60+5, 0, 1)
	w.Write(stream)
	w.Flush()
	// A short datagram ends the message of the full ones queued before it; a longer one after
	// it starts a message of its own.
	w.queue(stream[:1316])
	w.queue(stream[1316:2632])
	w.queue(stream[2632:3008])
	w.queue(stream[:1316])
	w.send()
	// Write: 60 full datagrams, 49 of which fit in 64 KiB; Flush: the short one alone.
	want := [][]int{{1316, 49 * 1316}, {1316, 11 * 1316}, {0, 5 * 188}, {1316, 2*1316 + 2*188}, {0, 1316}}
	if fmt.Sprint(seen) != fmt.Sprint(want) {
		t.Errorf("messages (segment, bytes) %v, want %v", seen, want)
	}
}

type recordingConn func([]ipv4.Message)

func (f recordingConn) ReadBatch([]ipv4.Message, int) (int, error) { return 0, nil }
func (f recordingConn) WriteBatch(ms []ipv4.Message, _ int) (int, error) {
	f(ms)
	return len(ms), nil
}

// groControl returns the UDP_GRO control message the kernel gives with a message of datagrams
// of seg bytes coalesced.
func groControl(seg int) []byte {
	b := make([]byte, unix.CmsgSpace(4))
	h := (*unix.Cmsghdr)(unsafe.Pointer(&b[0]))
	h.Level, h.Type = unix.IPPROTO_UDP, unix.UDP_GRO
	h.SetLen(unix.CmsgLen(4))
	binary.NativeEndian.PutUint32(b[unix.CmsgLen(0):], uint32(seg))
	return b
}

// The batch receiver takes datagrams whole, in order, each with its length, and
// without an allocation: at line rate a parsed sender address per datagram was a garbage
// collection every few milliseconds.
func TestBatchReceiverNoAlloc(t *testing.T) {
	pc, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	c, err := net.DialUDP("udp4", nil, pc.LocalAddr().(*net.UDPAddr))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ms := make([]ipv4.Message, 8)
	for i := range ms {
		ms[i].Buffers = [][]byte{make([]byte, 2048)}
		ms[i].OOB = make([]byte, oobSize)
	}
	br, err := newBatchReceiver(pc, ms)
	if err != nil {
		t.Fatal(err)
	}
	sizes := []int{188, 1316, 376, 1}
	payload := make([]byte, 1316)
	var fail string
	allocs := testing.AllocsPerRun(50, func() {
		for i, n := range sizes {
			payload[0] = byte(i)
			if _, err := c.Write(payload[:n]); err != nil {
				fail = err.Error()
				return
			}
		}
		pc.SetReadDeadline(time.Now().Add(5 * time.Second))
		for got := 0; got < len(sizes); {
			n, err := br.receive()
			if err != nil {
				fail = err.Error()
				return
			}
			for i := range n {
				if ms[i].N != sizes[got] || ms[i].Buffers[0][0] != byte(got) || ms[i].NN != 0 {
					fail = fmt.Sprintf("datagram %d: %d bytes, first %d, %d bytes of control messages", got, ms[i].N, ms[i].Buffers[0][0], ms[i].NN)
					return
				}
				got++
			}
		}
	})
	if fail != "" {
		t.Fatal(fail)
	}
	if allocs != 0 {
		t.Errorf("%.1f allocations per batch received", allocs)
	}
}
