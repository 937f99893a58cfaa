package udpload

import (
	"encoding/binary"
	"net"
	"time"

	"golang.org/x/sys/unix"
)

// threadCPU is the user and system time of the calling thread.
func threadCPU() time.Duration {
	var ru unix.Rusage
	if unix.Getrusage(unix.RUSAGE_THREAD, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// oobSize is the control-message space of a message: the drop count and the size of
// coalesced datagrams.
var oobSize = 2 * unix.CmsgSpace(4)

// enableGRO asks the kernel to hand over datagrams of one sender and one size coalesced
// (UDP_GRO) and reports whether it agreed.
func enableGRO(c *net.UDPConn) bool {
	ok := false
	if rc, err := c.SyscallConn(); err == nil {
		_ = rc.Control(func(fd uintptr) { ok = unix.SetsockoptInt(int(fd), unix.IPPROTO_UDP, unix.UDP_GRO, 1) == nil })
	}
	return ok
}

// setSocket forces the receive buffer to Buffer when the process may (CAP_NET_ADMIN; else
// SetReadBuffer's, capped by net.core.rmem_max, stays) and asks for the socket's drop counter
// with each datagram (SO_RXQ_OVFL).
func setSocket(c *net.UDPConn) {
	if rc, err := c.SyscallConn(); err == nil {
		_ = rc.Control(func(fd uintptr) {
			_ = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, Buffer)
			_ = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RXQ_OVFL, 1)
		})
	}
}

// enableGSO has the kernel cut every send of the socket into datagrams of size bytes
// (UDP_SEGMENT as a socket option) and reports whether it agreed.
func enableGSO(c *net.UDPConn, size int) bool {
	ok := false
	if rc, err := c.SyscallConn(); err == nil {
		_ = rc.Control(func(fd uintptr) { ok = unix.SetsockoptInt(int(fd), unix.IPPROTO_UDP, unix.UDP_SEGMENT, size) == nil })
	}
	return ok
}

// controls reads a message's control messages: the SO_RXQ_OVFL drop count, and with UDP_GRO
// the size of each coalesced datagram but the last (0 for a message of one datagram).
func controls(oob []byte) (drops int64, hasDrops bool, segment int) {
	ms, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return 0, false, 0
	}
	for _, m := range ms {
		switch {
		case m.Header.Level == unix.SOL_SOCKET && m.Header.Type == unix.SO_RXQ_OVFL && len(m.Data) >= 4:
			drops, hasDrops = int64(binary.NativeEndian.Uint32(m.Data)), true
		case m.Header.Level == unix.IPPROTO_UDP && m.Header.Type == unix.UDP_GRO && len(m.Data) >= 4:
			segment = int(int32(binary.NativeEndian.Uint32(m.Data)))
		}
	}
	return drops, hasDrops, segment
}

// readBuffer is the receive buffer the kernel granted.
func readBuffer(c *net.UDPConn) int {
	n := 0
	if rc, err := c.SyscallConn(); err == nil {
		_ = rc.Control(func(fd uintptr) { n, _ = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF) })
	}
	return n
}
