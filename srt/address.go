package srt

import (
	"fmt"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
)

// Mode is how an end takes part in the connection's handshake.
type Mode int

const (
	// Caller connects to a listener at HOST:PORT: srt://HOST:PORT.
	Caller Mode = iota
	// Listener waits on PORT for a caller: srt://:PORT, or srt://HOST:PORT?mode=listener to
	// listen on one local address.
	Listener
)

func (m Mode) String() string {
	if m == Listener {
		return "listener"
	}
	return "caller"
}

// Limits of the options, from the SRT library's documentation of its socket options
// (SRTO_PASSPHRASE, SRTO_PBKEYLEN, SRTO_STREAMID).
const (
	minPassphrase = 10  // characters
	maxPassphrase = 79  // characters
	maxStreamID   = 512 // bytes
	// maxLatency bounds latency=: a minute is far past any live use, and keeps the value an
	// int32 of milliseconds as the library takes it.
	maxLatency = 60_000
)

// Address is a parsed srt:// URL:
//
//	srt://HOST:PORT                 call a listener at HOST:PORT (mode caller)
//	srt://:PORT                     listen on PORT of every IPv4 address (mode listener)
//	srt://HOST:PORT?mode=listener   listen on one local address of this machine
//
// as srt-live-transmit, TSDuck and ffmpeg users write them: the mode is caller when a host is
// given and listener when it is not (or is 0.0.0.0 or [::], which no caller can reach), as
// srt-live-transmit decides (ffmpeg's default is always caller); mode=client and mode=server are taken for caller and listener as srt-live-transmit
// takes them. Rendezvous mode is not offered. IPv6 addresses go in brackets:
// srt://[::1]:9000; srt://[::]:PORT listens on every IPv6 and IPv4 address.
//
// Options, after '?', joined by '&', their values percent-decoded ('+' stays '+'; write '&' as
// %26, '%' as %25):
//
//	mode=caller|listener   see above
//	latency=MS             the receiver's buffer in milliseconds, 0 to 60000 (SRTO_LATENCY;
//	                       default 120, the library's). Milliseconds, as srt-live-transmit and
//	                       TSDuck take it: ffmpeg's latency= is in microseconds
//	passphrase=SECRET      AES encryption, 10 to 79 characters; both ends must give the same
//	                       one, or neither
//	pbkeylen=16|24|32      the AES key length in bytes when this end sends (the caller's or
//	                       sender's choice wins); default 16. Needs passphrase=
//	streamid=ID            what a caller sends the listener to say which stream it wants or
//	                       brings, up to 512 bytes, taken as written ('#' included: the access
//	                       control syntax, #!::r=NAME,m=publish, needs no escaping but for '&')
type Address struct {
	Host       string // IP literal or host name; empty for a listener on every address
	Port       int    // 1 to 65535
	Mode       Mode
	Latency    int    // milliseconds; -1 for the library's default (120 ms)
	Passphrase string // empty: no encryption
	KeyLength  int    // pbkeylen: 16, 24 or 32; 0 for the default
	StreamID   string
}

// IsURL reports whether s is written as an srt:// URL rather than a file path or another
// scheme, so that a command can tell them apart before parsing.
func IsURL(s string) bool { return len(s) >= 6 && strings.EqualFold(s[:6], "srt://") }

// ParseAddress parses an srt:// URL (see Address). Its errors name the URL redacted: a
// passphrase, and the value of an option it does not know (a misspelt passphrase=), never
// show.
func ParseAddress(s string) (*Address, error) {
	if !IsURL(s) {
		return nil, fmt.Errorf("%s: not an srt:// URL", Redacted(s))
	}
	fail := func(format string, args ...any) error {
		return fmt.Errorf("%s: %s", Redacted(s), fmt.Sprintf(format, args...))
	}
	rest := s[len("srt://"):]
	hostport, query, _ := strings.Cut(rest, "?")
	if hostport, _ = strings.CutSuffix(hostport, "/"); strings.Contains(hostport, "/") {
		return nil, fail("an SRT URL has no path: want srt://HOST:PORT or srt://:PORT, options after '?'")
	}
	if strings.Contains(hostport, "@") {
		return nil, fail("an SRT URL has no user:password@: give passphrase= for encryption")
	}
	a := &Address{Latency: -1}
	host, port, err := splitHostPort(hostport)
	if err != nil {
		return nil, fail("%v", err)
	}
	a.Host, a.Port = host, port
	a.Mode = Caller
	if ip, err := netip.ParseAddr(host); host == "" || err == nil && ip.IsUnspecified() {
		a.Mode = Listener // no host to call
	}
	seen := map[string]bool{}
	if query != "" {
		for _, kv := range strings.Split(query, "&") {
			key, raw, hasValue := strings.Cut(kv, "=")
			if !hasValue && !knownOption(key) {
				// Not named: it may be a passphrase pasted without its key.
				return nil, fail("an option without '=': want mode=, latency=, passphrase=, pbkeylen= or streamid=")
			}
			if !knownOption(key) {
				return nil, fail("unknown option %q: want mode=, latency=, passphrase=, pbkeylen= or streamid=", shortKey(key))
			}
			if seen[key] {
				return nil, fail("%s= is given twice: give it once", key)
			}
			seen[key] = true
			v, err := url.PathUnescape(raw)
			if err != nil || !hasValue {
				return nil, fail("%s= wants a value, percent-encoded where it holds '&' or '%%'", key)
			}
			switch key {
			case "mode":
				switch strings.ToLower(v) {
				case "caller", "client":
					a.Mode = Caller
				case "listener", "server":
					a.Mode = Listener
				case "rendezvous":
					return nil, fail("mode=rendezvous is not supported: one end listens (mode=listener), the other calls (mode=caller)")
				default:
					return nil, fail("mode=%s: want caller or listener", v)
				}
			case "latency":
				n, err := strconv.Atoi(v)
				if err != nil || n < 0 || n > maxLatency {
					return nil, fail("latency=%s: want milliseconds from 0 to %d (ffmpeg's latency= is in microseconds: divide by 1000)", v, maxLatency)
				}
				a.Latency = n
			case "passphrase":
				if n := len(v); n < minPassphrase || n > maxPassphrase {
					return nil, fail("passphrase= has %d characters: SRT wants %d to %d", n, minPassphrase, maxPassphrase)
				}
				a.Passphrase = v
			case "pbkeylen":
				n, err := strconv.Atoi(v)
				if err != nil || n != 16 && n != 24 && n != 32 {
					return nil, fail("pbkeylen=%s: want 16, 24 or 32 (bytes of AES key)", v)
				}
				a.KeyLength = n
			case "streamid":
				if len(v) > maxStreamID {
					return nil, fail("streamid= has %d bytes: SRT takes at most %d", len(v), maxStreamID)
				}
				a.StreamID = v
			}
		}
	}
	switch {
	case a.Mode == Caller && a.unspecified():
		return nil, fail("a caller needs the listener's host: srt://HOST:%d (srt://:%d listens)", a.Port, a.Port)
	case a.KeyLength != 0 && a.Passphrase == "":
		return nil, fail("pbkeylen= sets the key length of the encryption that passphrase= turns on: give both, or neither")
	case a.Mode == Listener && a.StreamID != "":
		return nil, fail("streamid= is what a caller sends; a listener takes every caller's")
	}
	return a, nil
}

// splitHostPort splits HOST:PORT, [IPv6]:PORT or :PORT.
func splitHostPort(s string) (host string, port int, err error) {
	i := strings.LastIndexByte(s, ':')
	if i < 0 {
		return "", 0, fmt.Errorf("no port: want srt://HOST:PORT (caller) or srt://:PORT (listener)")
	}
	host, ps := s[:i], s[i+1:]
	if strings.HasPrefix(host, "[") || strings.HasSuffix(host, "]") {
		inner, ok := strings.CutPrefix(host, "[")
		if inner, ok2 := strings.CutSuffix(inner, "]"); ok && ok2 {
			ip, err := netip.ParseAddr(inner)
			if err != nil || !ip.Is6() || ip.Zone() != "" {
				return "", 0, fmt.Errorf("[%s] is not an IPv6 address", inner)
			}
			host = inner
		} else {
			return "", 0, fmt.Errorf("unbalanced brackets in %q: write an IPv6 address as [ADDR]:PORT", s)
		}
	} else if strings.Contains(host, ":") {
		return "", 0, fmt.Errorf("an IPv6 address goes in brackets: srt://[ADDR]:PORT")
	} else if host != "" && !validHostName(host) {
		return "", 0, fmt.Errorf("%q is not a host name or an IP address", host)
	}
	port, err = strconv.Atoi(ps)
	if err != nil || port < 1 || port > 65535 || ps[0] == '+' {
		return "", 0, fmt.Errorf("port %q: want 1 to 65535", ps)
	}
	return host, port, nil
}

// validHostName reports whether h can be a DNS name or an IPv4 literal: letters, digits,
// '-', '_' and '.', no empty label.
func validHostName(h string) bool {
	if len(h) > 253 {
		return false
	}
	for _, label := range strings.Split(h, ".") {
		if label == "" || len(label) > 63 {
			return false
		}
		for _, c := range []byte(label) {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}

// knownOption reports whether key is an option ParseAddress reads.
func knownOption(key string) bool {
	switch key {
	case "mode", "latency", "passphrase", "pbkeylen", "streamid":
		return true
	}
	return false
}

// shownOptions are the options whose values a message may show: the others hide a passphrase,
// or may (a misspelt key).
func shownOption(key string) bool {
	switch key {
	case "mode", "latency", "pbkeylen", "streamid":
		return true
	}
	return false
}

// shortKey is key for a message: cut, so that a passphrase pasted without its key does not show
// whole.
func shortKey(key string) string {
	if len(key) > 12 {
		return key[:4] + "…"
	}
	return key
}

// hidden replaces what a message must not show.
const hidden = "xxxxx"

// Redacted returns s, an srt:// URL as given, for a message: the value of passphrase= is
// hidden, and so is the value of any option but mode=, latency=, pbkeylen= and streamid=
// (a misspelt passphrase= must not show either), and any part of the query without '=' (a
// passphrase pasted without its key). It works on a URL too broken to parse. Other strings come
// back as they are.
func Redacted(s string) string {
	if !IsURL(s) {
		return s
	}
	head, query, ok := strings.Cut(s, "?")
	if at := strings.LastIndexByte(head, '@'); at >= 0 {
		head = head[:len("srt://")] + hidden + head[at:] // a user:password@ that has no place here
	}
	if !ok {
		return head
	}
	parts := strings.Split(query, "&")
	for i, kv := range parts {
		key, _, hasValue := strings.Cut(kv, "=")
		switch {
		case !hasValue && kv != "":
			parts[i] = hidden
		case hasValue && !shownOption(key):
			parts[i] = shortKey(key) + "=" + hidden
		}
	}
	return head + "?" + strings.Join(parts, "&")
}

// unspecified reports whether the host names no one address: empty, 0.0.0.0 or ::.
func (a *Address) unspecified() bool {
	ip, err := netip.ParseAddr(a.Host)
	return a.Host == "" || err == nil && ip.IsUnspecified()
}

// String returns the address as ParseAddress reads it back, the passphrase hidden: the form
// for messages.
func (a *Address) String() string { return a.format(true) }

// format writes the address in its canonical form, with the options that differ from the
// defaults; hide replaces the passphrase.
func (a *Address) format(hide bool) string {
	var b strings.Builder
	b.WriteString("srt://")
	if ip, err := netip.ParseAddr(a.Host); err == nil && ip.Is6() {
		b.WriteString("[" + a.Host + "]")
	} else {
		b.WriteString(a.Host)
	}
	b.WriteString(":" + strconv.Itoa(a.Port))
	var opts []string
	if a.Mode == Listener && !a.unspecified() {
		opts = append(opts, "mode="+a.Mode.String())
	}
	if a.Latency >= 0 {
		opts = append(opts, "latency="+strconv.Itoa(a.Latency))
	}
	if a.Passphrase != "" {
		p := hidden
		if !hide {
			p = escape(a.Passphrase)
		}
		opts = append(opts, "passphrase="+p)
	}
	if a.KeyLength != 0 {
		opts = append(opts, "pbkeylen="+strconv.Itoa(a.KeyLength))
	}
	if a.StreamID != "" {
		opts = append(opts, "streamid="+escape(a.StreamID))
	}
	if len(opts) > 0 {
		b.WriteString("?" + strings.Join(opts, "&"))
	}
	return b.String()
}

// escape percent-encodes what ParseAddress would not read back as it is: '%', '&', and bytes
// that are not printable ASCII.
func escape(s string) string {
	var b strings.Builder
	for _, c := range []byte(s) {
		if c == '%' || c == '&' || c <= ' ' || c >= 0x7f {
			fmt.Fprintf(&b, "%%%02X", c)
		} else {
			b.WriteByte(c)
		}
	}
	return b.String()
}
