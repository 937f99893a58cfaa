package live

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/tsdescramble/tsdescramble/ts"
	"golang.org/x/net/ipv4"
	"golang.org/x/net/ipv6"
)

// sendBatch datagrams go to the kernel per system call (sendmmsg on Linux).
const sendBatch = 64

const (
	// maxSegments bounds the datagrams of one segmented send (UDP_MAX_SEGMENTS in Linux 4.18).
	maxSegments = 64
	// maxSegmented bounds the bytes of one segmented send: the kernel builds it as one UDP
	// datagram before it cuts it, so it must fit the 16-bit lengths of UDP and IPv4.
	maxSegmented = maxDatagram
)

// WriterStats counts what a Writer sent.
type WriterStats struct {
	Datagrams int64 `json:"datagrams"`       // datagrams sent
	Bytes     int64 `json:"bytes"`           // TS bytes sent (RTP headers excluded)
	Partial   int64 `json:"short_datagrams"` // datagrams sent short of pkts packets by Flush
}

// Writer sends a transport stream to a udp:// or rtp:// address, Address.Packets TS packets
// per datagram, in the order written. Its input is TS bytes in 188-byte packets, as a stream:
// a Write need not hold whole packets or whole datagrams, the rest waits for the next Write or
// Flush. Methods must not be called concurrently, except Stats.
type Writer struct {
	addr *Address
	conn *net.UDPConn
	bc   batchConn
	dst  *net.UDPAddr
	rtp  bool
	size int // TS bytes per full datagram

	pend []byte // bytes of the datagram being filled
	msgs []ipv4.Message
	hdrs []byte // an RTP header per message
	nmsg int

	// Segmentation offload (UDP_SEGMENT): the queued datagrams go to the kernel as a few large
	// messages, which it cuts back into the same datagrams, in one pass through the stack
	// instead of one per datagram. gso turns false for good when the kernel refuses it.
	gso   bool
	gmsgs []ipv4.Message // a message per group of datagrams of one size
	gbufs [][]byte       // the buffers of the groups' datagrams, in order
	gctl  []byte         // a UDP_SEGMENT control message per group
	gfrom []int          // the index in msgs of each group's first datagram, and the end
	sent  int64          // TS bytes handed to the queue so far: the position of the next datagram

	clock ts.PCRClock
	seq   uint16
	ssrc  uint32
	tsOff uint32 // random timestamp offset (RFC 3550, 5.1)
	start time.Time

	datagrams, bytes, partial atomic.Int64
}

// Dial opens addr for sending. For rtp:// the first sequence number and the SSRC are random
// (the SSRC as given by ssrc= if it is), as RFC 3550 asks, so that receivers tell a restarted
// sender from loss.
func Dial(addr *Address) (*Writer, error) {
	if !addr.CanSend() {
		return nil, fmt.Errorf("%s is an address to listen on; to send, name the destination: %s://HOST:%d (a host or a multicast group, without '@')", addr, addr.Scheme, addr.Port)
	}
	ip, err := resolve(context.Background(), addr)
	if err != nil {
		return nil, err
	}
	ifi, err := findInterface(addr)
	if err != nil {
		return nil, err
	}
	local := ifaceAddr(addr)
	if local.IsValid() && local.Is4() != ip.Is4() {
		return nil, fmt.Errorf("%s: iface=%s and the destination %s are not of the same IP version; give an interface name or an address of the same version", addr, local, ip)
	}
	conn, err := net.ListenUDP(network(ip), &net.UDPAddr{IP: local.AsSlice()})
	if err != nil {
		return nil, fmt.Errorf("%s: cannot open a socket to send from: %v", addr, unwrapOp(err))
	}
	if err := setSendOpts(conn, addr, ip, ifi); err != nil {
		conn.Close()
		return nil, err
	}
	w := &Writer{
		addr:  addr,
		conn:  conn,
		bc:    newBatchConn(conn),
		dst:   &net.UDPAddr{IP: ip.AsSlice(), Port: addr.Port},
		rtp:   addr.RTP(),
		size:  addr.Packets * 188,
		msgs:  make([]ipv4.Message, sendBatch),
		hdrs:  make([]byte, sendBatch*rtpHeaderSize),
		seq:   uint16(rand.Uint32()),
		ssrc:  rand.Uint32(),
		tsOff: rand.Uint32(),
		start: time.Now(),
		gso:   gsoControlSize > 0,
		gmsgs: make([]ipv4.Message, sendBatch),
		gbufs: make([][]byte, 2*sendBatch),
		gctl:  make([]byte, sendBatch*gsoControlSize),
		gfrom: make([]int, 0, sendBatch+1),
	}
	if addr.HasSSRC {
		w.ssrc = addr.SSRC
	}
	w.pend = make([]byte, 0, w.size)
	for i := range w.msgs {
		w.msgs[i].Buffers = make([][]byte, 0, 2)
		w.msgs[i].Addr = w.dst
	}
	return w, nil
}

func setSendOpts(conn *net.UDPConn, a *Address, ip netip.Addr, ifi *net.Interface) error {
	fail := func(what string, err error) error {
		return fmt.Errorf("%s: cannot set the %s: %v", a, what, unwrapOp(err))
	}
	if a.Buffer > 0 {
		if err := conn.SetWriteBuffer(a.Buffer); err != nil {
			return fail("send buffer", err)
		}
	}
	if ip.Is4() {
		p := ipv4.NewConn(conn)
		pc := ipv4.NewPacketConn(conn)
		if ip.IsMulticast() {
			if a.TTL > 0 {
				if err := pc.SetMulticastTTL(a.TTL); err != nil {
					return fail("multicast TTL", err)
				}
			}
			if ifi != nil {
				if err := pc.SetMulticastInterface(ifi); err != nil {
					return fail("multicast interface", err)
				}
			}
		} else if a.TTL > 0 {
			if err := p.SetTTL(a.TTL); err != nil {
				return fail("TTL", err)
			}
		}
		if a.TOS >= 0 {
			if err := p.SetTOS(a.TOS); err != nil {
				return fail("TOS", err)
			}
		}
		return nil
	}
	pc := ipv6.NewPacketConn(conn)
	if ip.IsMulticast() {
		if a.TTL > 0 {
			if err := pc.SetMulticastHopLimit(a.TTL); err != nil {
				return fail("multicast hop limit", err)
			}
		}
		if ifi != nil {
			if err := pc.SetMulticastInterface(ifi); err != nil {
				return fail("multicast interface", err)
			}
		}
	} else if a.TTL > 0 {
		if err := pc.SetHopLimit(a.TTL); err != nil {
			return fail("hop limit", err)
		}
	}
	if a.TOS >= 0 {
		if err := pc.SetTrafficClass(a.TOS); err != nil {
			return fail("traffic class", err)
		}
	}
	return nil
}

// LocalAddr returns the address datagrams are sent from.
func (w *Writer) LocalAddr() net.Addr { return w.conn.LocalAddr() }

// Stats returns the counts so far.
func (w *Writer) Stats() WriterStats {
	return WriterStats{Datagrams: w.datagrams.Load(), Bytes: w.bytes.Load(), Partial: w.partial.Load()}
}

// Write sends every full datagram p completes and keeps the rest for the next Write or Flush.
// Full datagrams in p are sent from p itself, without a copy.
func (w *Writer) Write(p []byte) (int, error) {
	n := len(p)
	if len(w.pend) > 0 {
		k := min(w.size-len(w.pend), len(p))
		w.pend = append(w.pend, p[:k]...)
		p = p[k:]
		if len(w.pend) < w.size {
			return n, nil
		}
		if err := w.queue(w.pend); err != nil {
			return 0, err
		}
	}
	for len(p) >= w.size {
		if err := w.queue(p[:w.size]); err != nil {
			return 0, err
		}
		p = p[w.size:]
	}
	if err := w.send(); err != nil {
		return 0, err
	}
	w.pend = append(w.pend[:0], p...)
	return n, nil
}

// Flush sends the bytes waiting for a full datagram as a shorter one, so that a quiet stream
// is not held back by the datagram size: the latency bound of a live output.
func (w *Writer) Flush() error {
	if len(w.pend) > 0 {
		w.partial.Add(1)
		if err := w.queue(w.pend); err != nil {
			return err
		}
	}
	if err := w.send(); err != nil {
		return err
	}
	w.pend = w.pend[:0]
	return nil
}

// Close flushes what is waiting and closes the socket.
func (w *Writer) Close() error {
	err := w.Flush()
	if cerr := w.conn.Close(); err == nil {
		err = cerr
	}
	return err
}

// queue adds one datagram's payload to the batch, sending the batch when it is full. The
// payload must stay untouched until the next send.
func (w *Writer) queue(b []byte) error {
	if w.nmsg == len(w.msgs) {
		if err := w.send(); err != nil {
			return err
		}
	}
	m := &w.msgs[w.nmsg]
	m.Buffers = m.Buffers[:0]
	if w.rtp {
		h := w.hdrs[w.nmsg*rtpHeaderSize : (w.nmsg+1)*rtpHeaderSize]
		putRTPHeader(h, w.seq, w.timestamp(b), w.ssrc)
		w.seq++
		m.Buffers = append(m.Buffers, h)
	}
	m.Buffers = append(m.Buffers, b)
	w.sent += int64(len(b))
	w.nmsg++
	return nil
}

// timestamp is the RTP timestamp of a datagram: the 90 kHz PCR time of its first packet when
// the stream has a PCR (RFC 2250: the target transmission time), else the wall clock.
func (w *Writer) timestamp(b []byte) uint32 {
	first := (w.sent + 187) / 188
	for off := int(first*188 - w.sent); off+188 <= len(b); off += 188 {
		observePCR(&w.clock, b[off:off+188], (w.sent+int64(off))/188)
	}
	if pcr, ok := w.clock.PCRAt(w.sent / 188); ok {
		return uint32(pcr/300) + w.tsOff
	}
	return uint32(time.Since(w.start)*90_000/time.Second) + w.tsOff
}

// send hands the queued datagrams to the kernel.
func (w *Writer) send() error {
	done := 0
	if w.gso && w.nmsg > 1 {
		var err error
		// When the kernel refuses segmentation offload, the rest go one datagram per message.
		if done, err = w.sendSegmented(); err != nil {
			w.nmsg = 0
			return err
		}
	}
	err := w.sendEach(w.msgs[done:w.nmsg])
	w.nmsg = 0
	return err
}

// sendSegmented sends the queued datagrams as messages of up to maxSegments datagrams of one
// size (the last of a message may be shorter), each cut into datagrams by the kernel, so that
// what goes on the wire is what sendEach sends. It returns how many datagrams it sent, and an
// error only for a failure that is not the kernel refusing the offload (which turns gso off).
func (w *Writer) sendSegmented() (int, error) {
	ms := w.msgs[:w.nmsg]
	w.gfrom = w.gfrom[:0]
	nb := 0
	var g int
	for i := 0; i < len(ms); g++ {
		w.gfrom = append(w.gfrom, i)
		seg := datagramLen(&ms[i])
		first := nb
		total, j := 0, i
		for j < len(ms) && j-i < maxSegments {
			l := datagramLen(&ms[j])
			if l > seg || total+l > maxSegmented {
				break
			}
			nb += copy(w.gbufs[nb:], ms[j].Buffers)
			total += l
			j++
			if l < seg {
				break // a shorter datagram ends its message
			}
		}
		m := &w.gmsgs[g]
		m.Buffers, m.Addr, m.OOB = w.gbufs[first:nb], w.dst, nil
		if j-i > 1 {
			m.OOB = putGSOControl(w.gctl[g*gsoControlSize:], seg)
		}
		i = j
	}
	w.gfrom = append(w.gfrom, len(ms))
	gms := w.gmsgs[:g]
	sent := 0
	for len(gms) > 0 {
		n, err := w.bc.WriteBatch(gms, 0)
		for k := range n {
			w.count(ms[w.gfrom[sent+k]:w.gfrom[sent+k+1]])
		}
		sent += n
		if err != nil {
			if gsoRefused(err) {
				w.gso = false
				return w.gfrom[sent], nil
			}
			return w.gfrom[sent], fmt.Errorf("%s: send failed: %v", w.addr, unwrapOp(err))
		}
		gms = gms[n:]
	}
	return len(ms), nil
}

// datagramLen is the size of the datagram a queued message makes, RTP header included.
func datagramLen(m *ipv4.Message) int {
	n := 0
	for _, b := range m.Buffers {
		n += len(b)
	}
	return n
}

// count adds sent datagrams to the statistics.
func (w *Writer) count(ms []ipv4.Message) {
	var b int64
	for i := range ms {
		b += int64(len(ms[i].Buffers[len(ms[i].Buffers)-1]))
	}
	w.datagrams.Add(int64(len(ms)))
	w.bytes.Add(b)
}

// sendEach sends datagrams one per message.
func (w *Writer) sendEach(ms []ipv4.Message) error {
	for len(ms) > 0 {
		n, err := w.bc.WriteBatch(ms, 0)
		w.count(ms[:n])
		if err != nil {
			return fmt.Errorf("%s: send failed: %v", w.addr, unwrapOp(err))
		}
		ms = ms[n:]
	}
	return nil
}
