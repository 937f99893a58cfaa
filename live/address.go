package live

import (
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"sort"
	"strconv"
	"strings"
)

// Address is a parsed udp:// or rtp:// address.
//
// The forms follow VLC's and dvblast's, which broadcast engineers already write:
//
//	udp://@:PORT                listen on every local address (unicast)
//	udp://@HOST:PORT            listen on one local address, or join the multicast group HOST
//	udp://SOURCE@GROUP:PORT     join GROUP for datagrams from SOURCE only (source-specific)
//	udp://GROUP:PORT            as an input: join GROUP; as an output: send to it
//	udp://HOST:PORT             send to HOST
//
// rtp:// takes the same forms. IPv6 addresses go in brackets: udp://@[ff15::1]:5000.
type Address struct {
	Scheme string     // "udp" or "rtp"
	Listen bool       // written with '@': an address to receive on, never to send to
	Source netip.Addr // source-specific multicast: the one sender accepted; invalid if any
	Host   string     // IP literal or host name; empty for "@:PORT" (every local address)
	Port   int        // 0 only when listening: the system picks a free port

	// Iface is the interface to join or send multicast on: a name ("eth0") or one of its
	// addresses, as given in ?iface=. Empty lets the routing table choose.
	Iface string
	// TTL is the hop limit of sent datagrams (ttl=); 0 keeps the system's default, which is
	// 1 for multicast so that a stream does not leave the local network unless asked to.
	TTL int
	// TOS is the IPv4 type-of-service byte or IPv6 traffic class (tos=); -1 leaves it unset.
	TOS int
	// Packets is the number of 188-byte TS packets per sent datagram (pkts=, default 7:
	// 1316 bytes, the largest whole number of packets under Ethernet's 1500-byte MTU).
	Packets int
	// Buffer is the socket buffer size in bytes (buffer=); 0 means the package's default.
	Buffer int
	// SSRC is the RTP synchronisation source of an rtp:// output, when HasSSRC is set
	// (ssrc=); otherwise a random one is drawn.
	SSRC    uint32
	HasSSRC bool
}

// DefaultPackets is the TS packets per datagram when pkts= is not given.
const DefaultPackets = 7

// MaxPackets bounds pkts=: 348 packets and a 12-byte RTP header are the most that fit in the
// 65507-byte payload of an IPv4 UDP datagram.
const MaxPackets = 348

// RTP reports whether the address names an RTP stream.
func (a *Address) RTP() bool { return a.Scheme == "rtp" }

// IP returns the host as an address, or an invalid one if the host is empty or a name.
func (a *Address) IP() netip.Addr {
	ip, err := netip.ParseAddr(a.Host)
	if err != nil {
		return netip.Addr{}
	}
	return ip
}

// Multicast reports whether the host is a multicast group.
func (a *Address) Multicast() bool { return a.IP().IsMulticast() }

// CanListen reports whether the address can be received on: a listening ('@') address, or a
// multicast group.
func (a *Address) CanListen() bool { return a.Listen || a.Multicast() }

// CanSend reports whether the address can be sent to: a host or group written without '@'.
func (a *Address) CanSend() bool { return !a.Listen && a.Host != "" }

// String returns the address in the canonical form ParseAddress reads back, options included
// when they differ from the defaults.
func (a *Address) String() string {
	var b strings.Builder
	b.WriteString(a.Scheme)
	b.WriteString("://")
	if a.Source.IsValid() {
		b.WriteString(a.Source.String())
	}
	if a.Listen {
		b.WriteByte('@')
	}
	host := a.Host
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	b.WriteString(host)
	b.WriteByte(':')
	b.WriteString(strconv.Itoa(a.Port))
	var q []string
	if a.Iface != "" {
		q = append(q, "iface="+url.QueryEscape(a.Iface))
	}
	if a.TTL != 0 {
		q = append(q, "ttl="+strconv.Itoa(a.TTL))
	}
	if a.TOS >= 0 {
		q = append(q, "tos="+strconv.Itoa(a.TOS))
	}
	if a.Packets != DefaultPackets {
		q = append(q, "pkts="+strconv.Itoa(a.Packets))
	}
	if a.Buffer != 0 {
		q = append(q, "buffer="+strconv.Itoa(a.Buffer))
	}
	if a.HasSSRC {
		q = append(q, "ssrc="+strconv.FormatUint(uint64(a.SSRC), 10))
	}
	if len(q) > 0 {
		b.WriteByte('?')
		b.WriteString(strings.Join(q, "&"))
	}
	return b.String()
}

// IsAddress reports whether s is written as a network address (udp:// or rtp://) rather than
// a file path, so that a command can tell the two apart before parsing.
func IsAddress(s string) bool {
	l := strings.ToLower(s)
	return strings.HasPrefix(l, "udp://") || strings.HasPrefix(l, "rtp://")
}

// ParseAddress parses a udp:// or rtp:// address with its options (see Address). Its errors
// are one line that says what is wrong and what to write instead.
func ParseAddress(s string) (*Address, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("address %q: "+format, append([]any{s}, args...)...)
	}
	scheme, rest, ok := strings.Cut(s, "://")
	scheme = strings.ToLower(scheme)
	if !ok || scheme != "udp" && scheme != "rtp" {
		return nil, bad("not a network address; write udp://HOST:PORT to send, udp://@:PORT to listen, or rtp://… likewise")
	}
	a := &Address{Scheme: scheme, TOS: -1, Packets: DefaultPackets}
	hostport, query, _ := strings.Cut(rest, "?")
	hostport = strings.TrimSuffix(hostport, "/")
	if strings.Contains(hostport, "/") {
		return nil, bad("a path after the port is not understood; options go after '?', as in %s://@:5000?iface=eth0", scheme)
	}
	// The '@' splits the source (of a source-specific join) from the group or local address.
	// An IPv6 literal never holds '@', so the last one is the separator.
	if i := strings.LastIndexByte(hostport, '@'); i >= 0 {
		a.Listen = true
		if src := hostport[:i]; src != "" {
			src = strings.TrimSuffix(strings.TrimPrefix(src, "["), "]")
			ip, err := netip.ParseAddr(src)
			if err != nil {
				return nil, bad("source %q is not an IP address; a source-specific join is written SOURCE@GROUP:PORT with both as addresses", hostport[:i])
			}
			a.Source = ip.Unmap()
		}
		hostport = hostport[i+1:]
	}
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		if !strings.Contains(hostport, ":") || strings.HasSuffix(hostport, "]") {
			return nil, bad("no port; write HOST:PORT, for example %s://239.1.1.1:5000 (IPv6 in brackets: [ff15::1]:5000)", scheme)
		}
		return nil, bad("cannot split host and port (%v); IPv6 addresses go in brackets: %s://@[ff15::1]:5000", errText(err), scheme)
	}
	p, err := strconv.Atoi(port)
	// Port 0 lets the system choose a free port for a listening address (LocalAddr tells it);
	// a destination needs a real one.
	if err != nil || p < 0 || p > 65535 || p == 0 && !a.Listen {
		return nil, bad("port %q is not a number from 1 to 65535", port)
	}
	a.Port = p
	a.Host = host
	ip, ipErr := netip.ParseAddr(host)
	if ipErr == nil {
		if ip.Zone() != "" {
			return nil, bad("a zone (%%%s) is not supported; name the interface with ?iface=%s", ip.Zone(), ip.Zone())
		}
		ip = ip.Unmap()
		a.Host = ip.String()
	} else if strings.Contains(host, "%") || strings.Contains(host, ":") {
		return nil, bad("host %q is not an IP address", host)
	}
	switch {
	case a.Source.IsValid() && !ip.IsMulticast():
		return nil, bad("a source (%s@) is only for a multicast group, and %q is not one; drop the source, or name the group", a.Source, host)
	case a.Source.IsValid() && a.Source.Is4() != ip.Is4():
		return nil, bad("source %s and group %s are not of the same IP version", a.Source, ip)
	case a.Source.IsValid() && (a.Source.IsMulticast() || a.Source.IsUnspecified()):
		return nil, bad("source %s must be the unicast address of the sender", a.Source)
	case !a.Listen && host == "":
		return nil, bad("no host; write %s://HOST:%d to send, or %s://@:%d to listen", scheme, p, scheme, p)
	case !a.Listen && ipErr == nil && ip.IsUnspecified():
		return nil, bad("%s is not a destination; to listen on every address write %s://@:%d", host, scheme, p)
	}
	if err := a.parseOptions(query, bad); err != nil {
		return nil, err
	}
	return a, nil
}

var optionNames = []string{"buffer", "iface", "pkts", "ssrc", "tos", "ttl"}

func (a *Address) parseOptions(query string, bad func(string, ...any) error) error {
	if query == "" {
		return nil
	}
	vals, err := url.ParseQuery(query)
	if err != nil {
		return bad("options after '?' are not NAME=VALUE pairs joined by '&' (%v)", errText(err))
	}
	names := make([]string, 0, len(vals))
	for k := range vals {
		names = append(names, k)
	}
	sort.Strings(names) // one error, the same every time, when several options are wrong
	for _, k := range names {
		v := vals[k]
		if len(v) > 1 {
			return bad("option %s given %d times; give it once", k, len(v))
		}
		val := v[0]
		num := func(lo, hi int64, what string) (int64, error) {
			n, err := strconv.ParseInt(val, 0, 64)
			if err != nil || n < lo || n > hi {
				return 0, bad("%s=%s: %s is a whole number from %d to %d", k, val, what, lo, hi)
			}
			return n, nil
		}
		switch strings.ToLower(k) {
		case "iface":
			if val == "" {
				return bad("iface= is empty; give an interface name (iface=eth0) or one of its addresses")
			}
			a.Iface = val
		case "ttl":
			n, err := num(1, 255, "the TTL")
			if err != nil {
				return err
			}
			a.TTL = int(n)
		case "tos":
			n, err := num(0, 255, "the TOS byte")
			if err != nil {
				return err
			}
			a.TOS = int(n)
		case "pkts":
			n, err := num(1, MaxPackets, "the count of TS packets per datagram")
			if err != nil {
				return err
			}
			a.Packets = int(n)
		case "buffer":
			n, err := num(4096, 1<<30, "the socket buffer size in bytes")
			if err != nil {
				return err
			}
			a.Buffer = int(n)
		case "ssrc":
			if a.Scheme != "rtp" {
				return bad("ssrc= is an RTP option; use rtp:// or drop it")
			}
			n, err := num(0, 1<<32-1, "the RTP SSRC")
			if err != nil {
				return err
			}
			a.SSRC, a.HasSSRC = uint32(n), true
		default:
			return bad("unknown option %q; the options are %s", k, strings.Join(optionNames, ", "))
		}
	}
	return nil
}

// errText is the message of a parse error without the input it quotes again.
func errText(err error) string {
	if ae, ok := err.(*net.AddrError); ok {
		return ae.Err
	}
	if ue, ok := err.(*url.Error); ok {
		return ue.Err.Error()
	}
	return err.Error()
}
