// Package udpload sends a transport stream over loopback UDP at a set rate and receives one,
// both in batches of datagrams per system call (sendmmsg and recvmmsg on Linux), so that a
// test measuring a program's live throughput is not held back by its own sender or receiver.
//
// The sender cuts a stream looped over and over into datagrams of 7 packets (1316 bytes) and
// paces them in batches of 32 on a running schedule: each batch leaves when the bytes before it
// are due at the rate, so that a late batch is made up by the next ones without a sleep. The
// receiver counts datagrams and bytes and checks each datagram against a looped stream (what
// the program under test should make of the sender's): whole packets, in order, each the one
// expected at its position. A packet that does not continue where the one before ended is
// located again in the loop; the packets skipped are counted lost. Asked to (Coalesce), the
// receiver takes datagrams the kernel coalesced (UDP_GRO) and checks each on its own.
//
// Socket buffers are asked for large (SetReadBuffer, SetWriteBuffer): without CAP_NET_ADMIN
// the kernel caps them at net.core.rmem_max and net.core.wmem_max; with it, the receiver's
// is forced past that limit (SO_RCVBUFFORCE), as the program measured may do with its own.
package udpload

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"time"

	"golang.org/x/net/ipv4"
)

const (
	// PacketSize is the size of a TS packet.
	PacketSize = 188
	// PerDatagram is the TS packets per datagram sent.
	PerDatagram = 7
	// DatagramSize is the payload of a datagram sent.
	DatagramSize = PerDatagram * PacketSize
	// Batch is the datagrams per system call, both ways.
	Batch = 32
	// Buffer is the socket buffer asked for, both ways.
	Buffer = 32 << 20
)

// Sender sends a looped stream to one address.
type Sender struct {
	conn *net.UDPConn
	pc   *ipv4.PacketConn
	loop []byte // the stream PerDatagram times over: a whole number of datagrams
	msgs []ipv4.Message
	gso  bool // each batch goes as one send the kernel cuts into datagrams (UDP_SEGMENT)
}

// Segment has each batch go to the kernel as one send that it cuts into the same datagrams
// (UDP_SEGMENT, Linux 4.18), and reports whether the kernel agreed. On loopback a receiver
// that coalesces (UDP_GRO) then takes a batch as one message, as it would take datagrams a
// network card coalesced.
func (s *Sender) Segment() bool {
	s.gso = enableGSO(s.conn, DatagramSize)
	return s.gso
}

// SendStats is what a Sender sent.
type SendStats struct {
	Datagrams int64
	Bytes     int64
	Batches   int64
	Late      int64         // batches that left more than a batch's time behind the schedule
	Elapsed   time.Duration // from the first batch to the end of the last
	CPU       time.Duration // user and system time of the sending thread
}

// Rate is the bits per second sent.
func (s SendStats) Rate() float64 {
	if s.Elapsed <= 0 {
		return 0
	}
	return float64(s.Bytes*8) / s.Elapsed.Seconds()
}

// NewSender opens a socket on 127.0.0.1 that sends stream (whole packets), looped, to dst.
func NewSender(dst *net.UDPAddr, stream []byte) (*Sender, error) {
	if len(stream) == 0 || len(stream)%PacketSize != 0 {
		return nil, fmt.Errorf("udpload: the stream is %d bytes, not a whole number of packets", len(stream))
	}
	conn, err := net.DialUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)}, dst)
	if err != nil {
		return nil, err
	}
	_ = conn.SetWriteBuffer(Buffer)
	s := &Sender{conn: conn, pc: ipv4.NewPacketConn(conn), loop: bytes.Repeat(stream, PerDatagram)}
	s.msgs = make([]ipv4.Message, Batch)
	for i := range s.msgs {
		s.msgs[i].Buffers = make([][]byte, 1)
	}
	return s, nil
}

// Close closes the socket.
func (s *Sender) Close() error { return s.conn.Close() }

// Run sends at rate bits per second for d, or until ctx is done. A rate of 0 sends as fast as
// the socket takes the datagrams.
func (s *Sender) Run(ctx context.Context, rate float64, d time.Duration) (SendStats, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cpu0 := threadCPU()
	var st SendStats
	per := Batch * DatagramSize
	var interval time.Duration
	if rate > 0 {
		interval = time.Duration(float64(per*8) / rate * float64(time.Second))
	}
	n := len(s.loop) / DatagramSize
	next := 0 // the datagram of the loop sent next
	t0 := time.Now()
	end := t0.Add(d)
	var err error
	for ctx.Err() == nil {
		now := time.Now()
		if !now.Before(end) {
			break
		}
		if interval > 0 {
			due := t0.Add(time.Duration(st.Batches) * interval)
			if wait := due.Sub(now); wait > 0 {
				time.Sleep(wait)
			} else if -wait > interval {
				st.Late++
			}
		}
		if s.gso {
			// The batch's datagrams lie one after the other in the loop, or in two runs
			// where it wraps.
			for left := Batch; left > 0 && err == nil; {
				k := min(left, n-next)
				_, err = s.conn.Write(s.loop[next*DatagramSize : (next+k)*DatagramSize])
				if err == nil {
					st.Datagrams += int64(k)
					st.Bytes += int64(k * DatagramSize)
					left -= k
					next = (next + k) % n
				}
			}
			if err != nil {
				break
			}
			st.Batches++
			continue
		}
		for i := range s.msgs {
			s.msgs[i].Buffers[0] = s.loop[next*DatagramSize : (next+1)*DatagramSize]
			next = (next + 1) % n
		}
		ms := s.msgs
		for len(ms) > 0 {
			var k int
			k, err = s.pc.WriteBatch(ms, 0)
			st.Datagrams += int64(k)
			st.Bytes += int64(k * DatagramSize)
			if err != nil {
				break
			}
			ms = ms[k:]
		}
		if err != nil {
			break
		}
		st.Batches++
	}
	st.Elapsed = time.Since(t0)
	st.CPU = threadCPU() - cpu0
	return st, err
}

// Receiver receives datagrams on 127.0.0.1 and checks them against a looped stream.
type Receiver struct {
	conn   *net.UDPConn
	pc     *ipv4.PacketConn
	want   []byte
	n      int              // packets in want
	starts map[string][]int // the positions in want of each distinct packet
	msgs   []ipv4.Message
	gro    bool
}

// RecvStats is what a Receiver received.
type RecvStats struct {
	Datagrams int64
	Bytes     int64
	Packets   int64
	Wrong     int64 // datagrams not whole packets, or with a packet found nowhere in the loop
	// FirstWrong is the first packet found nowhere in the loop (a copy), for a test to tell
	// what it is.
	FirstWrong []byte
	Skips      int64 // packets that did not continue where the one before ended
	Lost       int64 // packets skipped over by those datagrams (modulo the loop's length)
	Dropped    int64 // datagrams the kernel dropped, the socket's buffer full (SO_RXQ_OVFL)
	Buffer     int   // the receive buffer granted, bytes
	Messages   int64 // messages received: fewer than Datagrams when the kernel coalesced them
	Elapsed    time.Duration
	CPU        time.Duration // user and system time of the receiving thread
}

// Listen opens a receiver on a port of 127.0.0.1 the kernel picks, which expects want (whole
// packets) looped from its first packet on.
func Listen(want []byte) (*Receiver, error) {
	if len(want) == 0 || len(want)%PacketSize != 0 {
		return nil, fmt.Errorf("udpload: the expected stream is %d bytes, not a whole number of packets", len(want))
	}
	conn, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return nil, err
	}
	_ = conn.SetReadBuffer(Buffer)
	setSocket(conn)
	r := &Receiver{conn: conn, pc: ipv4.NewPacketConn(conn), want: want, n: len(want) / PacketSize, starts: map[string][]int{}}
	for i := range r.n {
		k := string(want[i*PacketSize : (i+1)*PacketSize])
		r.starts[k] = append(r.starts[k], i)
	}
	r.msgs = make([]ipv4.Message, Batch)
	mem := make([]byte, Batch*(1<<16))
	for i := range r.msgs {
		r.msgs[i].Buffers = [][]byte{mem[i<<16 : (i+1)<<16]}
		r.msgs[i].OOB = make([]byte, oobSize)
	}
	return r, nil
}

// Coalesce asks the kernel to hand the receiver datagrams of one size coalesced, up to 64 KiB
// a message (UDP_GRO, Linux 5.0), and reports whether it agreed. On loopback a sender's
// segmented sends (UDP_SEGMENT) then reach the receiver whole, as a network card that
// segments in hardware and a receiver's card that coalesces would have them: the sender no
// longer pays for the kernel cutting them up for a receiver that cannot take them whole.
// Each datagram is still counted and checked on its own.
func (r *Receiver) Coalesce() bool {
	r.gro = enableGRO(r.conn)
	return r.gro
}

// Addr is the address the receiver listens on.
func (r *Receiver) Addr() *net.UDPAddr { return r.conn.LocalAddr().(*net.UDPAddr) }

// Close closes the socket.
func (r *Receiver) Close() error { return r.conn.Close() }

// Run receives until ctx is done, or idle passes without a datagram once one came, or limit
// passes, and returns the counts.
func (r *Receiver) Run(ctx context.Context, idle, limit time.Duration) RecvStats {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cpu0 := threadCPU()
	st := RecvStats{Buffer: readBuffer(r.conn)}
	t0 := time.Now()
	end := t0.Add(limit)
	pos := 0 // the packet of want expected next
	var last time.Time
	stop := context.AfterFunc(ctx, func() { r.conn.SetReadDeadline(time.Unix(1, 0)) })
	defer stop()
	for ctx.Err() == nil {
		dl := end
		if !last.IsZero() && last.Add(idle).Before(dl) {
			dl = last.Add(idle)
		}
		if !time.Now().Before(dl) {
			break
		}
		r.conn.SetReadDeadline(dl)
		k, err := r.pc.ReadBatch(r.msgs, 0)
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, os.ErrDeadlineExceeded) {
				continue
			}
			break
		}
		last = time.Now()
		st.Messages += int64(k)
		for i := range k {
			m := &r.msgs[i]
			b := m.Buffers[0][:m.N]
			d, ok, seg := controls(m.OOB[:m.NN])
			if ok && i == k-1 { // the count is the socket's so far: the batch's last has the latest
				st.Dropped = d
			}
			if !r.gro || seg <= 0 {
				seg = len(b)
			}
			for len(b) > 0 {
				g := b[:min(seg, len(b))]
				b = b[len(g):]
				st.Datagrams++
				st.Bytes += int64(len(g))
				pos = r.check(g, pos, &st)
			}
		}
	}
	st.Elapsed = time.Since(t0)
	st.CPU = threadCPU() - cpu0
	return st
}

// check checks one datagram expected at packet pos of the loop and returns the position after
// it. Packet by packet: a datagram the program under test made after a loss on its input may
// hold packets from both sides of the gap.
func (r *Receiver) check(b []byte, pos int, st *RecvStats) int {
	if len(b) == 0 || len(b)%PacketSize != 0 {
		st.Wrong++
		return pos
	}
	st.Packets += int64(len(b) / PacketSize)
	if r.at(b, pos) {
		return (pos + len(b)/PacketSize) % r.n
	}
	wrong := false
	for ; len(b) > 0; b = b[PacketSize:] {
		p := b[:PacketSize]
		if r.at(p, pos) {
			pos = (pos + 1) % r.n
			continue
		}
		// Found again: the nearest position after pos that holds this packet.
		best := -1
		for _, q := range r.starts[string(p)] {
			if best < 0 || (q-pos+r.n)%r.n < (best-pos+r.n)%r.n {
				best = q
			}
		}
		if best < 0 {
			if st.FirstWrong == nil {
				st.FirstWrong = bytes.Clone(p)
			}
			wrong = true
			continue
		}
		st.Skips++
		st.Lost += int64((best - pos + r.n) % r.n)
		pos = (best + 1) % r.n
	}
	if wrong {
		st.Wrong++
	}
	return pos
}

// at reports whether b is the loop's packets from packet p on.
func (r *Receiver) at(b []byte, p int) bool {
	for len(b) > 0 {
		k := min(len(b), len(r.want)-p*PacketSize)
		if !bytes.Equal(b[:k], r.want[p*PacketSize:p*PacketSize+k]) {
			return false
		}
		b, p = b[k:], 0
	}
	return true
}
