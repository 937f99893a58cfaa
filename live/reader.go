package live

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/net/ipv4"
	"golang.org/x/net/ipv6"
)

const (
	// batchSize datagrams at most are taken from the kernel per system call (recvmmsg on
	// Linux): at 7 packets a datagram and 100 Mbit/s the syscall rate falls from 9500/s to
	// 600/s. A Reader that fell behind (the process waited for a CPU) catches up in a quarter
	// of the calls and hand-overs that 16 took, while it is most at risk of the kernel
	// dropping datagrams; the buffers (64 KiB each, for coalesced datagrams) take 4 MiB.
	batchSize = 64
	// maxDatagram is the largest UDP payload over IPv4; a larger IPv6 datagram is counted and dropped.
	maxDatagram = 65507
	// recvBuffer is the room for one received message: above any UDP payload, so that
	// datagrams the kernel coalesced (UDP_GRO, up to 64 KiB) are never cut.
	recvBuffer = 1 << 16
	// maxHold bounds the wait for a datagram missing from the sequence while later ones are
	// held: a datagram lost on a quiet stream must not hold the ones after it for long.
	maxHold = 50 * time.Millisecond
	// senderTimeout is how long the RTP sender followed must have sent nothing before a new
	// SSRC is followed instead (a restarted sender draws a new one): longer than the time
	// between two datagrams of the slowest streams (64 kbit/s at 7 packets a datagram sends
	// one every 165 ms), so that two senders at once never take turns.
	senderTimeout = 500 * time.Millisecond
)

// Stats counts what a Reader received. Datagrams and bytes count from Listen; the RTP figures
// only for datagrams with an RTP header. A datagram is passed on whole or not at all: one whose
// TS bytes are not a whole number of packets of one framing is dropped (Unaligned), never
// joined to its neighbours.
type Stats struct {
	Datagrams int64 `json:"datagrams"` // datagrams received
	Bytes     int64 `json:"bytes"`     // TS bytes passed on to Read (RTP headers excluded)

	RTP        int64   `json:"rtp"`                               // datagrams with an RTP header (all of them on an rtp:// input)
	Lost       int64   `json:"rtp_lost"`                          // RTP sequence numbers that never arrived
	Reordered  int64   `json:"rtp_reordered"`                     // RTP datagrams that arrived out of order and were put back in order
	Late       int64   `json:"rtp_late"`                          // RTP datagrams that came after their place was given up, passed on late
	Duplicates int64   `json:"rtp_duplicates"`                    // RTP datagrams received twice, the copy dropped
	Jumps      int64   `json:"rtp_jumps"`                         // RTP sequence jumps taken as the sender starting over (not counted lost)
	OtherSSRC  int64   `json:"rtp_other_ssrc"`                    // RTP datagrams of another sender (SSRC) than the one followed while it sends, dropped
	NewSSRC    int64   `json:"rtp_new_ssrc"`                      // times a new SSRC was followed, the one before silent for half a second (a restarted sender)
	OtherPT    int64   `json:"rtp_other_payload_type"`            // RTP datagrams whose payload type is not 33 (MP2T); passed on all the same
	OtherPTs   []uint8 `json:"rtp_other_payload_types,omitempty"` // the payload types other than 33 seen, in order of first sight
	NotRTP     int64   `json:"not_rtp"`                           // datagrams on an rtp:// input without an RTP header (or whole packets as they are), taken as plain

	// Unaligned counts the datagrams dropped because their TS bytes (after the RTP header) are
	// not a whole number of packets of one framing (188, 192 or 204 bytes, each with its sync
	// byte in place): short, cut or padded datagrams.
	Unaligned int64 `json:"unaligned"`
	Truncated int64 `json:"truncated"` // datagrams dropped because their RTP header ran past their end, or cut by the buffer
	// Dropped is what the kernel dropped because the socket buffer was full (Linux): datagrams,
	// but when it coalesces them (Coalesced), buffers of up to 64 datagrams, each counted once,
	// so the count of datagrams lost is then at least Dropped (RTP's Lost counts them exactly).
	Dropped int64 `json:"dropped_by_system"`

	SocketBuffer int  `json:"socket_buffer"`       // the receive buffer the kernel granted, in bytes
	Coalesced    bool `json:"coalesced,omitempty"` // the kernel hands over datagrams of one size coalesced (UDP_GRO)
}

// ErrIdle is the error Read returns, wrapped in an *IdleError, when no datagram arrived for the
// idle timeout. The Reader stays usable: a later Read waits again.
var ErrIdle = errors.New("no datagram received")

// IdleError is returned by Read when the idle timeout passed without a datagram.
type IdleError struct {
	Addr string        // the address listened on
	Idle time.Duration // the timeout that passed
}

func (e *IdleError) Error() string {
	return fmt.Sprintf("no datagram on %s for %v; check that the sender is running, the address and port, and for multicast the interface and routes", e.Addr, e.Idle)
}

// Is makes errors.Is(err, ErrIdle) true.
func (e *IdleError) Is(target error) bool { return target == ErrIdle }

// Timeout reports true, as a net.Error timeout does.
func (e *IdleError) Timeout() bool { return true }

// Reader receives a transport stream from a udp:// or rtp:// address. Read returns the TS bytes
// of the datagrams, RTP headers removed, concatenated in sequence order. Each datagram is
// checked on its own: only those that hold a whole number of packets of one framing are passed
// on, so that a packet is never made of bytes of two datagrams. Whether a datagram carries RTP
// is decided for each (on a udp:// input too); RTP datagrams are put back in order among
// themselves, from one sender (SSRC) at a time, and a plain datagram is passed on where it
// came. Read must be called from one goroutine at a time; Stats, SetIdleTimeout and Close may
// be called from any.
type Reader struct {
	addr *Address
	conn *net.UDPConn
	recv *batchReceiver
	rtp  bool
	gro  bool        // the kernel may coalesce datagrams (UDP_GRO)
	stop func() bool // unregisters the context's AfterFunc

	msgs  []ipv4.Message
	ready []byte // TS bytes received and not yet returned
	off   int    // ready[off:] is unread
	eof   bool

	idle        atomic.Int64 // time.Duration; 0 = wait forever
	lastArrival time.Time
	heldSince   time.Time
	heldFirst   uint16
	deadline    time.Time   // the read deadline set on the socket
	redo        atomic.Bool // SetIdleTimeout moved the socket's deadline: deadline is stale

	closeOnce sync.Once
	closed    atomic.Bool
	closeErr  error

	mu       sync.Mutex // guards what Stats copies: st, seq's counters, pts
	st       Stats
	messages int64 // messages received: fewer than datagrams when the kernel coalesced them
	seq      sequencer
	ptSet    [128]bool

	ssrc     uint32    // the RTP sender followed
	hasSSRC  bool      // an RTP datagram of whole packets came: ssrc is set
	ssrcSeen time.Time // when the sender followed last sent
}

// Listen opens addr for reading: it binds the port and, for a multicast group, joins it (from
// one source when the address names one). The Reader ends (Read returns io.EOF once the
// datagrams already received are read) when ctx is done or Close is called.
func Listen(ctx context.Context, addr *Address) (*Reader, error) {
	if !addr.CanListen() {
		return nil, fmt.Errorf("%s names a destination; to receive, write %s://@:%d (every address) or %s://@%s:%d", addr, addr.Scheme, addr.Port, addr.Scheme, bracket(addr.Host), addr.Port)
	}
	ip, err := resolve(ctx, addr)
	if err != nil {
		return nil, err
	}
	ifi, err := findInterface(addr)
	if err != nil {
		return nil, err
	}
	buf := addr.Buffer
	if buf == 0 {
		buf = DefaultBuffer
	}
	o := sockOpts{rcvbuf: buf, dropCount: true}
	bind := ip
	switch {
	case ip.IsMulticast():
		// Bound to the group, the socket gets that group's datagrams and no other traffic
		// to the port; the reuse lets several programs on the host receive one group.
		o.reuse, o.noMcAll = true, true
	case ifi != nil && !ip.IsValid():
		if x := ifaceAddr(addr); x.IsValid() {
			bind = x
		} else {
			o.device = ifi.Name
		}
	}
	lc := net.ListenConfig{Control: control(o)}
	pc, err := lc.ListenPacket(ctx, network(bind), sockaddr(bind, addr.Port))
	if err != nil {
		return nil, fmt.Errorf("%s: cannot listen: %v; check that the port is free and the address is this machine's (or a multicast group)", addr, unwrapOp(err))
	}
	conn := pc.(*net.UDPConn)
	if ip.IsMulticast() {
		if err := join(conn, addr, ip, ifi); err != nil {
			conn.Close()
			return nil, err
		}
	}
	r := &Reader{addr: addr, conn: conn, rtp: addr.RTP(), lastArrival: time.Now()}
	r.seq.emit = r.emit
	r.st.SocketBuffer = rcvBuf(conn)
	if rc, err := conn.SyscallConn(); err == nil {
		_ = rc.Control(func(fd uintptr) { r.gro = enableGRO(int(fd)) })
	}
	r.st.Coalesced = r.gro
	r.msgs = make([]ipv4.Message, batchSize)
	mem := make([]byte, batchSize*recvBuffer)
	oob := make([]byte, batchSize*oobSize)
	for i := range r.msgs {
		// More room than the largest IPv4 datagram, so a longer one shows (len > max).
		r.msgs[i].Buffers = [][]byte{mem[i*recvBuffer : (i+1)*recvBuffer]}
		r.msgs[i].OOB = oob[i*oobSize : (i+1)*oobSize]
	}
	if r.recv, err = newBatchReceiver(conn, r.msgs); err != nil {
		conn.Close()
		return nil, fmt.Errorf("%s: %v", addr, err)
	}
	r.stop = context.AfterFunc(ctx, func() { r.shutdown() })
	return r, nil
}

func join(conn *net.UDPConn, addr *Address, group netip.Addr, ifi *net.Interface) error {
	g := &net.UDPAddr{IP: group.AsSlice()}
	var err error
	if group.Is4() {
		p := ipv4.NewPacketConn(conn)
		if addr.Source.IsValid() {
			err = p.JoinSourceSpecificGroup(ifi, g, &net.UDPAddr{IP: addr.Source.AsSlice()})
		} else {
			err = p.JoinGroup(ifi, g)
		}
	} else {
		p := ipv6.NewPacketConn(conn)
		if addr.Source.IsValid() {
			err = p.JoinSourceSpecificGroup(ifi, g, &net.UDPAddr{IP: addr.Source.AsSlice()})
		} else {
			err = p.JoinGroup(ifi, g)
		}
	}
	if err != nil {
		how := "name the interface with ?iface=NAME, or add a multicast route (ip route add 224.0.0.0/4 dev IFACE)"
		if !group.Is4() {
			how = "name the interface with ?iface=NAME, or add a multicast route (ip -6 route add ff00::/8 dev IFACE table local)"
		}
		return fmt.Errorf("%s: cannot join group %s: %v; %s", addr, group, unwrapOp(err), how)
	}
	return nil
}

func rcvBuf(c *net.UDPConn) int {
	rc, err := c.SyscallConn()
	if err != nil {
		return 0
	}
	n := 0
	_ = rc.Control(func(fd uintptr) { n = getRcvBuf(int(fd)) })
	return n
}

// LocalAddr returns the address the Reader is bound to (the port chosen for port 0).
func (r *Reader) LocalAddr() net.Addr { return r.conn.LocalAddr() }

// SetIdleTimeout makes Read return an *IdleError (errors.Is ErrIdle) when no datagram has
// arrived for d; 0 waits forever, the default. It may be called while a Read waits (a reader
// that reads ahead in a goroutine of its own): that wait then ends after d at the latest, as
// if it had begun now.
func (r *Reader) SetIdleTimeout(d time.Duration) {
	r.idle.Store(int64(d))
	if d > 0 {
		r.redo.Store(true)
		r.conn.SetReadDeadline(time.Now().Add(d))
	}
}

// Stats returns the counts so far.
func (r *Reader) Stats() Stats {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.st
	s.OtherPTs = append([]uint8(nil), r.st.OtherPTs...)
	s.Lost, s.Reordered, s.Late, s.Duplicates, s.Jumps = r.seq.Lost, r.seq.Reordered, r.seq.Late, r.seq.Duplicates, r.seq.Jumps
	return s
}

// Close stops the Reader: Read returns the bytes it already took from the socket (those held
// behind a gap included), then io.EOF. Datagrams still queued in the socket are dropped.
func (r *Reader) Close() error {
	r.stop()
	return r.shutdown()
}

// shutdown closes the socket once; the context's AfterFunc calls it too.
func (r *Reader) shutdown() error {
	r.closeOnce.Do(func() {
		r.closed.Store(true)
		r.closeErr = r.conn.Close()
	})
	return r.closeErr
}

// Read reads TS bytes. It blocks until a datagram arrives, the idle timeout passes (an
// *IdleError), or the Reader is closed (io.EOF, after the bytes already received).
func (r *Reader) Read(p []byte) (int, error) {
	for {
		if r.off < len(r.ready) {
			n := copy(p, r.ready[r.off:])
			r.off += n
			return n, nil
		}
		r.ready, r.off = r.ready[:0], 0
		if r.eof {
			return 0, io.EOF
		}
		if err := r.fill(); err != nil {
			return 0, err
		}
	}
}

// ReadBlock is Read without the copy out, for a reader that reads ahead into blocks of its own
// (ts.BlockReader): it returns the bytes of the datagrams it took in the buffer it took them
// into, and takes buf, emptied, as the buffer it fills next.
func (r *Reader) ReadBlock(buf []byte) ([]byte, error) {
	for {
		if r.off < len(r.ready) {
			if r.off > 0 {
				// Cannot happen to a reader that reads by blocks alone: a Read left a part.
				out := append(buf[:0], r.ready[r.off:]...)
				r.ready, r.off = r.ready[:0], 0
				return out, nil
			}
			out := r.ready
			r.ready = buf[:0]
			return out, nil
		}
		r.ready, r.off = r.ready[:0], 0
		if r.eof {
			return buf[:0], io.EOF
		}
		if err := r.fill(); err != nil {
			return buf[:0], err
		}
	}
}

// fill receives one batch of datagrams into r.ready, or handles the timeout or close that ends
// the wait. It returns an error only for the caller: the idle timeout or a socket failure.
func (r *Reader) fill() error {
	var dl time.Time
	idle := time.Duration(r.idle.Load())
	if idle > 0 {
		dl = r.lastArrival.Add(idle)
		// Silence counts only while the Reader listens. A deadline already past would fail
		// the read before it looks at the socket (Go checks the deadline first), so datagrams
		// that came while the caller was busy would be taken for silence: after a busy spell,
		// the Reader listens for the whole idle time again.
		if now := time.Now(); dl.Before(now) {
			dl = now.Add(idle)
		}
	}
	holding := r.seq.holding()
	if holding {
		if h := r.heldSince.Add(maxHold); dl.IsZero() || h.Before(dl) {
			dl = h
		}
	}
	if r.redo.Swap(false) || !dl.Equal(r.deadline) {
		if err := r.conn.SetReadDeadline(dl); err != nil && !r.closed.Load() {
			return fmt.Errorf("%s: %v", r.addr, err)
		}
		r.deadline = dl
	}
	n, err := r.recv.receive()
	now := time.Now()
	if n > 0 {
		r.lastArrival = now
		r.take(r.msgs[:n], now)
	}
	if err == nil {
		return nil
	}
	switch {
	case r.closed.Load() || errors.Is(err, net.ErrClosed):
		r.mu.Lock()
		r.seq.flush()
		r.mu.Unlock()
		r.eof = true
		return nil
	case errors.Is(err, os.ErrDeadlineExceeded):
		if holding && !now.Before(r.heldSince.Add(maxHold)) {
			r.mu.Lock()
			r.seq.flush()
			r.mu.Unlock()
			r.heldSince = time.Time{}
			return nil
		}
		if idle > 0 && !now.Before(r.lastArrival.Add(idle)) {
			return &IdleError{Addr: r.addr.String(), Idle: idle}
		}
		return nil
	case errors.Is(err, syscall.EINTR):
		return nil
	}
	return fmt.Errorf("%s: receive failed: %v", r.addr, unwrapOp(err))
}

// take sorts a batch of messages into r.ready, through the sequencer for RTP. A message holds
// one datagram, or with UDP_GRO several of one size (the last may be shorter), which are taken
// apart again: each has its own RTP header, is checked and counts as the datagram it was.
func (r *Reader) take(ms []ipv4.Message, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.messages += int64(len(ms))
	// Room for the whole batch at once: appended datagram by datagram, a buffer handed over
	// small (ReadBlock) grew a quarter at a time, copying what it held each time; at 2 Gbit/s
	// of coalesced datagrams (up to 4 MiB a batch) that was 8 % of the command's time.
	total := 0
	for i := range ms {
		total += ms[i].N
	}
	r.ready = slices.Grow(r.ready, total)
	for i := range ms {
		m := &ms[i]
		b := m.Buffers[0][:m.N]
		if r.gro && m.NN > 0 {
			c := parseControls(m.OOB[:m.NN])
			if c.hasDrops {
				r.st.Dropped = int64(c.drops)
			}
			if seg := c.segment; seg > 0 {
				for ; len(b) > seg; b = b[seg:] {
					r.datagram(b[:seg], now)
				}
			}
		}
		if len(b) > maxDatagram {
			r.st.Datagrams++
			r.st.Truncated++
			continue
		}
		r.datagram(b, now)
	}
	// The drop count is cumulative: the last message of the batch has the latest.
	if last := &ms[len(ms)-1]; !r.gro && last.NN > 0 {
		if c := parseControls(last.OOB[:last.NN]); c.hasDrops {
			r.st.Dropped = int64(c.drops)
		}
	}
	if r.seq.holding() {
		if first := r.seq.held[0].seq; r.heldSince.IsZero() || first != r.heldFirst {
			r.heldSince, r.heldFirst = now, first
		}
	} else {
		r.heldSince = time.Time{}
	}
}

// datagram counts one datagram that came at now and passes its TS bytes on, through the
// sequencer for RTP, if they are whole packets.
func (r *Reader) datagram(b []byte, now time.Time) {
	r.st.Datagrams++
	if !r.rtp && !looksLikeRTP(b) {
		r.plain(b)
		return
	}
	p, status := parseRTP(b)
	switch status {
	case rtpNotRTP:
		r.st.NotRTP++
		r.plain(b)
		return
	case rtpTruncated:
		r.st.Truncated++
		return
	}
	if len(p.payload) > 0 && !wholePackets(p.payload) {
		if wholePackets(b) {
			// Plain packets whose first byte has the version bits of RTP: 192-byte units
			// whose time code starts so, on an rtp:// input.
			r.st.NotRTP++
			r.plain(b)
			return
		}
		r.st.RTP++
		r.st.Unaligned++
		if r.hasSSRC && p.ssrc == r.ssrc {
			r.seq.push(p.seq, nil) // its number came: no loss
		}
		return
	}
	r.st.RTP++
	if !r.follow(p.ssrc, now) {
		r.st.OtherSSRC++
		return
	}
	if p.pt != PayloadTypeMP2T {
		r.st.OtherPT++
		if !r.ptSet[p.pt] {
			r.ptSet[p.pt] = true
			r.st.OtherPTs = append(r.st.OtherPTs, p.pt)
		}
	}
	r.seq.push(p.seq, p.payload)
}

// plain passes on a datagram without an RTP header. The RTP datagrams before it, held or not,
// go first, and the RTP sequence starts again after it: numbers that the plain datagrams of a
// stream that mixes both leave out are not losses.
func (r *Reader) plain(b []byte) {
	if len(b) == 0 {
		return
	}
	if !wholePackets(b) {
		r.st.Unaligned++
		return
	}
	if r.seq.started {
		r.seq.restart()
	}
	r.emit(b)
}

// follow reports whether an RTP datagram of whole packets from the sender ssrc that came at
// now is to be taken. The first such sender is followed (garbage cannot take the stream over);
// another SSRC only once the one followed has sent nothing for senderTimeout, and then from
// its first datagram on, as a new sequence. RFC 3550 tells sources apart by SSRC (5.1) and
// times out a sender silent for two RTCP intervals (6.3.5), seconds: a restarted feed cannot
// wait that long, and the Reader follows a single stream.
func (r *Reader) follow(ssrc uint32, now time.Time) bool {
	switch {
	case !r.hasSSRC:
		r.ssrc, r.hasSSRC = ssrc, true
	case ssrc != r.ssrc:
		if now.Sub(r.ssrcSeen) < senderTimeout {
			return false
		}
		r.seq.restart()
		r.ssrc = ssrc
		r.st.NewSSRC++
	}
	r.ssrcSeen = now
	return true
}

// emit passes one datagram's TS bytes on.
func (r *Reader) emit(b []byte) {
	r.st.Bytes += int64(len(b))
	r.ready = append(r.ready, b...)
}

// wholePackets reports whether b is a whole number of packets of one framing: 188-byte packets,
// 192-byte units with the sync byte after a 4-byte prefix, or 204-byte ones with a 16-byte
// trailer, each with its sync byte in place. It looks at a byte a packet.
func wholePackets(b []byte) bool {
	return len(b) > 0 && (syncsAt(b, 188, 0) || syncsAt(b, 204, 0) || syncsAt(b, 192, 4))
}

// syncsAt reports whether b is a whole number of units of size bytes with a sync byte at
// prefix in each.
func syncsAt(b []byte, size, prefix int) bool {
	if len(b)%size != 0 {
		return false
	}
	for i := prefix; i < len(b); i += size {
		if b[i] != 0x47 {
			return false
		}
	}
	return true
}

func bracket(h string) string {
	if h == "" {
		return "HOST"
	}
	if ip, err := netip.ParseAddr(h); err == nil && ip.Is6() {
		return "[" + h + "]"
	}
	return h
}

// unwrapOp drops the "listen udp 1.2.3.4:5:" prefix a net.OpError repeats, leaving the cause.
func unwrapOp(err error) error {
	var op *net.OpError
	if errors.As(err, &op) && op.Err != nil {
		var sc *os.SyscallError
		if errors.As(op.Err, &sc) {
			return sc.Err
		}
		return op.Err
	}
	return err
}
