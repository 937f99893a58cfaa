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

var oobSize = unix.CmsgSpace(4)

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

// drops reads the SO_RXQ_OVFL count from a datagram's control messages.
func drops(oob []byte) (int64, bool) {
	ms, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return 0, false
	}
	for _, m := range ms {
		if m.Header.Level == unix.SOL_SOCKET && m.Header.Type == unix.SO_RXQ_OVFL && len(m.Data) >= 4 {
			return int64(binary.NativeEndian.Uint32(m.Data)), true
		}
	}
	return 0, false
}

// readBuffer is the receive buffer the kernel granted.
func readBuffer(c *net.UDPConn) int {
	n := 0
	if rc, err := c.SyscallConn(); err == nil {
		_ = rc.Control(func(fd uintptr) { n, _ = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF) })
	}
	return n
}
