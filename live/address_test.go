package live

import (
	"strings"
	"testing"
)

func TestParseAddress(t *testing.T) {
	for _, c := range []struct {
		in     string
		want   string // canonical form
		listen bool
		send   bool
	}{
		{"udp://@:5000", "udp://@:5000", true, false},
		{"UDP://@:5000/", "udp://@:5000", true, false},
		{"udp://@239.1.1.1:5000", "udp://@239.1.1.1:5000", true, false},
		{"udp://239.1.1.1:5000", "udp://239.1.1.1:5000", true, true},
		{"udp://10.1.1.1:5000", "udp://10.1.1.1:5000", false, true},
		{"udp://@10.1.1.1:5000", "udp://@10.1.1.1:5000", true, false},
		{"udp://192.168.1.2@232.1.2.3:1234", "udp://192.168.1.2@232.1.2.3:1234", true, false},
		{"udp://[2001:db8::1]@[ff3e::1234]:5000", "udp://2001:db8::1@[ff3e::1234]:5000", true, false},
		{"udp://2001:db8::1@[ff3e::1234]:5000", "udp://2001:db8::1@[ff3e::1234]:5000", true, false},
		{"rtp://@[::1]:5004", "rtp://@[::1]:5004", true, false},
		{"rtp://[::ffff:10.0.0.1]:5004", "rtp://10.0.0.1:5004", false, true},
		{"rtp://example.net:5004", "rtp://example.net:5004", false, true},
		{"udp://@:0", "udp://@:0", true, false},
		{"rtp://239.1.1.1:5004?ttl=8&tos=0xb8&pkts=21&buffer=8388608&ssrc=7&iface=eth0",
			"rtp://239.1.1.1:5004?iface=eth0&ttl=8&tos=184&pkts=21&buffer=8388608&ssrc=7", true, true},
		{"udp://@239.1.1.1:5000?iface=10.0.0.1", "udp://@239.1.1.1:5000?iface=10.0.0.1", true, false},
	} {
		a, err := ParseAddress(c.in)
		if err != nil {
			t.Errorf("%s: %v", c.in, err)
			continue
		}
		if got := a.String(); got != c.want {
			t.Errorf("%s: String() = %s, want %s", c.in, got, c.want)
		}
		if a.CanListen() != c.listen || a.CanSend() != c.send {
			t.Errorf("%s: listen %v send %v, want %v %v", c.in, a.CanListen(), a.CanSend(), c.listen, c.send)
		}
		b, err := ParseAddress(a.String())
		if err != nil || *b != *a {
			t.Errorf("%s: does not read back: %+v, %v", c.in, b, err)
		}
	}
}

func TestParseAddressOptions(t *testing.T) {
	a, err := ParseAddress("rtp://10.0.0.1@232.0.0.1:5004?iface=eth1&ttl=16&tos=184&pkts=14&buffer=1048576&ssrc=0xdeadbeef")
	if err != nil {
		t.Fatal(err)
	}
	if a.Scheme != "rtp" || !a.RTP() || a.Source.String() != "10.0.0.1" || a.Host != "232.0.0.1" || a.Port != 5004 ||
		a.Iface != "eth1" || a.TTL != 16 || a.TOS != 184 || a.Packets != 14 || a.Buffer != 1<<20 || !a.HasSSRC || a.SSRC != 0xdeadbeef {
		t.Errorf("got %+v", a)
	}
	d, _ := ParseAddress("udp://@:1")
	if d.Packets != DefaultPackets || d.TOS != -1 || d.TTL != 0 || d.HasSSRC || d.Buffer != 0 {
		t.Errorf("defaults: %+v", d)
	}
}

// Every error is one line that quotes the address and says what to write.
func TestParseAddressErrors(t *testing.T) {
	for _, c := range []struct{ in, says string }{
		{"file.ts", "not a network address"},
		{"http://x:1", "not a network address"},
		{"udp://239.1.1.1", "no port"},
		{"udp://[ff15::1]", "no port"},
		{"udp://ff15::1:5000", "brackets"},
		{"udp://@:99999", "1 to 65535"},
		{"udp://1.2.3.4:0", "1 to 65535"},
		{"udp://@:x", "1 to 65535"},
		{"udp://:5000", "no host"},
		{"udp://0.0.0.0:5000", "not a destination"},
		{"udp://10.0.0.1@10.0.0.2:5000", "only for a multicast group"},
		{"udp://10.0.0.1@[ff3e::1]:5000", "same IP version"},
		{"udp://239.0.0.1@232.0.0.1:5000", "unicast address of the sender"},
		{"udp://foo@232.0.0.1:5000", "not an IP address"},
		{"udp://@:5000?ttl=0", "ttl=0"},
		{"udp://@:5000?ttl=256", "1 to 255"},
		{"udp://@:5000?tos=-1", "TOS"},
		{"udp://@:5000?pkts=349", "1 to 348"},
		{"udp://@:5000?buffer=12", "buffer size"},
		{"udp://@:5000?ssrc=1", "RTP option"},
		{"rtp://@:5000?ssrc=4294967296", "SSRC"},
		{"udp://@:5000?colour=red", "unknown option"},
		{"udp://@:5000?ttl=1&ttl=2", "given 2 times"},
		{"udp://@:5000?iface=", "iface= is empty"},
		{"udp://@:5000/path", "after the port"},
		{"udp://@[fe80::1%eth0]:5000", "zone"},
	} {
		_, err := ParseAddress(c.in)
		if err == nil {
			t.Errorf("%s: no error", c.in)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, c.says) || !strings.Contains(msg, c.in) || strings.Contains(msg, "\n") {
			t.Errorf("%s: error %q does not say %q in one line naming the address", c.in, msg, c.says)
		}
	}
}

func FuzzParseAddress(f *testing.F) {
	for _, s := range []string{"udp://@:5000", "rtp://1.2.3.4@232.1.1.1:5?ttl=3", "udp://[::1]:9?pkts=2", "udp://@[ff15::1]:1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, err := ParseAddress(s)
		if err != nil {
			return
		}
		b, err := ParseAddress(a.String())
		if err != nil {
			t.Fatalf("%q parsed as %s, which does not parse: %v", s, a, err)
		}
		if *a != *b {
			t.Fatalf("%q: %+v != %+v after a round trip through %s", s, a, b, a)
		}
	})
}
