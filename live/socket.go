package live

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"syscall"

	"golang.org/x/net/ipv4"
	"golang.org/x/net/ipv6"
)

// DefaultBuffer is the receive buffer asked for when buffer= is not given. Systems default to
// about 200 KB, a fraction of a second of a 20 Mbit/s stream: a pause of the reading goroutine
// (a garbage collection, a slow disk) then drops datagrams, the continuity errors TSDuck's
// users report (tsduck#1104, #1357). What a buffer holds is counted in the kernel's memory per
// datagram, 2304 bytes for one of 1316 bytes on loopback: 64 MiB (the kernel grants twice
// what is asked) holds 58,000 such datagrams, half a minute of a 20 Mbit/s stream and at
// 2 Gbit/s 300 ms, what a process on a busy machine may wait for a CPU (16 MiB, the default
// before, held 77 ms at 2 Gbit/s, and a loaded two-core machine lost datagrams).
// Linux grants it only up to net.core.rmem_max unless the process has CAP_NET_ADMIN, and takes
// the memory only while datagrams wait in it.
const DefaultBuffer = 64 << 20

// batchConn is what ipv4.PacketConn and ipv6.PacketConn share: recvmmsg and sendmmsg on Linux,
// one datagram per call elsewhere.
type batchConn interface {
	ReadBatch(ms []ipv4.Message, flags int) (int, error)
	WriteBatch(ms []ipv4.Message, flags int) (int, error)
}

func newBatchConn(c *net.UDPConn) batchConn {
	if la, ok := c.LocalAddr().(*net.UDPAddr); ok && la.IP.To4() != nil {
		return ipv4.NewPacketConn(c)
	}
	return ipv6.NewPacketConn(c)
}

// resolve returns the address of a host: an IP literal as it is, a name through the resolver.
func resolve(ctx context.Context, a *Address) (netip.Addr, error) {
	if ip := a.IP(); ip.IsValid() || a.Host == "" {
		return ip, nil
	}
	ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", a.Host)
	if err != nil || len(ips) == 0 {
		return netip.Addr{}, fmt.Errorf("%s: cannot resolve host %q; check the name or give an IP address", a, a.Host)
	}
	for _, ip := range ips { // IPv4 first: the one most networks carry streams on
		if ip.Is4() || ip.Is4In6() {
			return ip.Unmap(), nil
		}
	}
	return ips[0], nil
}

// findInterface returns the interface an iface= option names, by name or by one of its
// addresses.
func findInterface(a *Address) (*net.Interface, error) {
	if a.Iface == "" {
		return nil, nil
	}
	if ip, err := netip.ParseAddr(a.Iface); err == nil {
		ifs, err := net.Interfaces()
		if err != nil {
			return nil, fmt.Errorf("%s: cannot list the network interfaces: %v", a, err)
		}
		for i := range ifs {
			addrs, _ := ifs[i].Addrs()
			for _, ad := range addrs {
				if n, ok := ad.(*net.IPNet); ok {
					if x, ok := netip.AddrFromSlice(n.IP); ok && x.Unmap() == ip.Unmap() {
						return &ifs[i], nil
					}
				}
			}
		}
		return nil, fmt.Errorf("%s: no interface has the address %s; give one of this machine's addresses or an interface name (%s)", a, a.Iface, interfaceNames())
	}
	ifi, err := net.InterfaceByName(a.Iface)
	if err != nil {
		return nil, fmt.Errorf("%s: no interface named %q; the interfaces here are %s", a, a.Iface, interfaceNames())
	}
	return ifi, nil
}

func interfaceNames() string {
	ifs, err := net.Interfaces()
	if err != nil || len(ifs) == 0 {
		return "unknown"
	}
	names := make([]string, len(ifs))
	for i, ifi := range ifs {
		names[i] = ifi.Name
	}
	return strings.Join(names, ", ")
}

// ifaceAddr returns the address iface= gives, if it gives one rather than a name.
func ifaceAddr(a *Address) netip.Addr {
	ip, err := netip.ParseAddr(a.Iface)
	if err != nil {
		return netip.Addr{}
	}
	return ip.Unmap()
}

// network is "udp4" or "udp6" for an address of that family, "udp" (both) for none.
func network(ip netip.Addr) string {
	switch {
	case !ip.IsValid():
		return "udp"
	case ip.Is4():
		return "udp4"
	default:
		return "udp6"
	}
}

// sockaddr formats an IP and port for net.Listen*, the empty IP meaning every address.
func sockaddr(ip netip.Addr, port int) string {
	if !ip.IsValid() {
		return fmt.Sprintf(":%d", port)
	}
	return netip.AddrPortFrom(ip, uint16(port)).String()
}

// control returns the net.ListenConfig hook that sets the options that must precede bind.
func control(o sockOpts) func(network, address string, c syscall.RawConn) error {
	return func(_, _ string, c syscall.RawConn) error {
		var err error
		if cerr := c.Control(func(fd uintptr) { err = setSockOpts(int(fd), o) }); cerr != nil {
			return cerr
		}
		return err
	}
}

// sockOpts are the socket options set before bind.
type sockOpts struct {
	reuse     bool   // several receivers of one group on one host
	rcvbuf    int    // receive buffer
	device    string // SO_BINDTODEVICE: receive only what arrives on this interface
	noMcAll   bool   // deliver only the groups this socket joined
	dropCount bool   // SO_RXQ_OVFL: the kernel counts datagrams dropped for a full buffer
}
