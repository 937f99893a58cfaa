package live

import (
	"encoding/binary"
	"errors"
	"net"
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/net/ipv4"
	"golang.org/x/sys/unix"
)

func setSockOpts(fd int, o sockOpts) error {
	if o.reuse {
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1); err != nil {
			return err
		}
	}
	if o.rcvbuf > 0 {
		// SO_RCVBUFFORCE passes net.core.rmem_max when the process may (CAP_NET_ADMIN); the
		// kernel doubles the value either way, for its bookkeeping.
		if unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, o.rcvbuf) != nil {
			_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, o.rcvbuf)
		}
	}
	if o.device != "" {
		if err := unix.BindToDevice(fd, o.device); err != nil {
			return err
		}
	}
	if o.noMcAll {
		// Without this, Linux hands a socket bound to a port the datagrams of every group any
		// socket of the host joined on that port; it fails harmlessly on the other family.
		_ = unix.SetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_MULTICAST_ALL, 0)
		_ = unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_MULTICAST_ALL, 0)
	}
	if o.dropCount {
		_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RXQ_OVFL, 1)
	}
	return nil
}

func getRcvBuf(fd int) int {
	n, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF)
	if err != nil {
		return 0
	}
	return n
}

// enableGRO asks the kernel to hand the socket datagrams of one sender and one size coalesced,
// up to 64 KiB per receive, with the size in a UDP_GRO control message (Linux 5.0). A GSO
// sender's datagrams then cross loopback as one buffer, and the receive buffer holds several
// times more of them. It reports whether the kernel agreed.
func enableGRO(fd int) bool {
	return unix.SetsockoptInt(fd, unix.IPPROTO_UDP, unix.UDP_GRO, 1) == nil
}

// oobSize is the control-message space per received message: one SO_RXQ_OVFL message and one
// UDP_GRO message.
var oobSize = 2 * unix.CmsgSpace(4)

// controls are what the control messages of a received message carry.
type controls struct {
	drops    uint32 // SO_RXQ_OVFL: the kernel's count of datagrams dropped on the socket
	hasDrops bool
	segment  int // UDP_GRO: the size of each coalesced datagram but the last; 0 for one datagram
}

// parseControls reads the control messages of a received message. It walks them in place,
// without the allocations of unix.ParseSocketControlMessage: it runs for every message.
func parseControls(oob []byte) controls {
	var c controls
	for len(oob) >= unix.SizeofCmsghdr {
		h := (*unix.Cmsghdr)(unsafe.Pointer(&oob[0]))
		l := int(h.Len)
		if l < unix.SizeofCmsghdr || l > len(oob) {
			break
		}
		data := oob[unix.CmsgLen(0):l]
		switch {
		case h.Level == unix.SOL_SOCKET && h.Type == unix.SO_RXQ_OVFL && len(data) >= 4:
			c.drops, c.hasDrops = binary.NativeEndian.Uint32(data), true
		case h.Level == unix.IPPROTO_UDP && h.Type == unix.UDP_GRO && len(data) >= 4:
			c.segment = int(int32(binary.NativeEndian.Uint32(data)))
		}
		l = unix.CmsgSpace(l - unix.CmsgLen(0))
		if l > len(oob) {
			break
		}
		oob = oob[l:]
	}
	return c
}

// gsoControlSize is the space of a UDP_SEGMENT control message.
var gsoControlSize = unix.CmsgSpace(2)

// putGSOControl writes into b (gsoControlSize bytes) the UDP_SEGMENT control message that has
// the kernel cut a send into datagrams of size bytes, the last one possibly shorter (Linux
// 4.18), and returns b.
func putGSOControl(b []byte, size int) []byte {
	b = b[:gsoControlSize]
	clear(b)
	h := (*unix.Cmsghdr)(unsafe.Pointer(&b[0]))
	h.Level, h.Type = unix.IPPROTO_UDP, unix.UDP_SEGMENT
	h.SetLen(unix.CmsgLen(2))
	binary.NativeEndian.PutUint16(b[unix.CmsgLen(0):], uint16(size))
	return b
}

// gsoRefused reports whether a send error means that the kernel or the route does not do
// segmentation offload (an old kernel, a device without checksum offload, a segment above the
// MTU), so the send can be made again one datagram per message.
func gsoRefused(err error) bool {
	return errors.Is(err, unix.EINVAL) || errors.Is(err, unix.EIO) || errors.Is(err, unix.EOPNOTSUPP) ||
		errors.Is(err, unix.ENOPROTOOPT) || errors.Is(err, unix.EMSGSIZE)
}

// batchReceiver takes datagrams from a socket in batches (recvmmsg) into the buffers of a
// fixed set of messages. It is what ipv4.PacketConn.ReadBatch does, less what the Reader
// never uses and pays for on every datagram at line rate: the sender's address parsed into a
// new net.UDPAddr, and the kernel's message headers built again for every call.
type batchReceiver struct {
	rc   syscall.RawConn
	ms   []ipv4.Message
	hdrs []unix.Mmsghdr
	iovs []unix.Iovec
	recv func(fd uintptr) bool // b.recvmmsg, bound once: RawConn.Read takes a func
	n    int
	errn syscall.Errno
}

// newBatchReceiver prepares the kernel's headers for ms, each message one buffer and its OOB:
// receive fills those and sets each message's N, NN and Flags.
func newBatchReceiver(c *net.UDPConn, ms []ipv4.Message) (*batchReceiver, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return nil, err
	}
	b := &batchReceiver{rc: rc, ms: ms, hdrs: make([]unix.Mmsghdr, len(ms)), iovs: make([]unix.Iovec, len(ms))}
	for i := range ms {
		buf := ms[i].Buffers[0]
		b.iovs[i].Base = &buf[0]
		b.iovs[i].SetLen(len(buf))
		b.hdrs[i].Hdr.Iov = &b.iovs[i]
		b.hdrs[i].Hdr.SetIovlen(1)
		if len(ms[i].OOB) > 0 {
			b.hdrs[i].Hdr.Control = &ms[i].OOB[0]
		}
	}
	b.recv = b.recvmmsg
	return b, nil
}

// receive waits for datagrams (as the socket's read deadline allows) and takes up to
// len(ms) of them. Its errors are those of a net.Conn's Read: a deadline passed, the socket
// closed, or the system call's.
func (b *batchReceiver) receive() (int, error) {
	for i := range b.hdrs {
		// The kernel wrote the lengths it used: give it the whole space again.
		b.hdrs[i].Hdr.SetControllen(len(b.ms[i].OOB))
		b.hdrs[i].Hdr.Flags = 0
	}
	b.n, b.errn = 0, 0
	if err := b.rc.Read(b.recv); err != nil {
		return 0, err
	}
	if b.errn != 0 {
		return 0, os.NewSyscallError("recvmmsg", b.errn)
	}
	for i := range b.n {
		h := &b.hdrs[i]
		b.ms[i].N, b.ms[i].NN, b.ms[i].Flags = int(h.Len), int(h.Hdr.Controllen), int(h.Hdr.Flags)
	}
	return b.n, nil
}

// recvmmsg is the system call, made when the poller says the socket is readable; it returns
// false to wait again when nothing was there after all.
func (b *batchReceiver) recvmmsg(fd uintptr) bool {
	for {
		n, _, e := unix.Syscall6(unix.SYS_RECVMMSG, fd, uintptr(unsafe.Pointer(&b.hdrs[0])), uintptr(len(b.hdrs)), 0, 0, 0)
		switch e {
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			return false
		}
		b.n, b.errn = int(n), e
		return true
	}
}
