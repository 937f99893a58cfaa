package live

import (
	"encoding/binary"

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

// oobSize is the control-message space per datagram: one SO_RXQ_OVFL message.
var oobSize = unix.CmsgSpace(4)

// dropCounter returns the kernel's count of datagrams dropped on the socket, carried by the
// SO_RXQ_OVFL control message of a received datagram. The count is cumulative, so the reader
// looks only at the last datagram of each batch.
func dropCounter(oob []byte) (uint32, bool) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return 0, false
	}
	for _, m := range msgs {
		if m.Header.Level == unix.SOL_SOCKET && m.Header.Type == unix.SO_RXQ_OVFL && len(m.Data) >= 4 {
			return binary.NativeEndian.Uint32(m.Data), true
		}
	}
	return 0, false
}
