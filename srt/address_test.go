package srt

import (
	"strings"
	"testing"
)

func TestParseAddress(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Address
		str  string // String(), the canonical form
	}{
		{"srt://:9000", Address{Port: 9000, Mode: Listener, Latency: -1}, "srt://:9000"},
		{"SRT://:9000/", Address{Port: 9000, Mode: Listener, Latency: -1}, "srt://:9000"},
		{"srt://0.0.0.0:9000", Address{Host: "0.0.0.0", Port: 9000, Mode: Listener, Latency: -1}, "srt://0.0.0.0:9000"},
		{"srt://[::]:9000", Address{Host: "::", Port: 9000, Mode: Listener, Latency: -1}, "srt://[::]:9000"},
		{"srt://example.net:9000", Address{Host: "example.net", Port: 9000, Mode: Caller, Latency: -1}, "srt://example.net:9000"},
		{"srt://10.0.0.1:9000?mode=listener", Address{Host: "10.0.0.1", Port: 9000, Mode: Listener, Latency: -1}, "srt://10.0.0.1:9000?mode=listener"},
		{"srt://10.0.0.1:9000?mode=server", Address{Host: "10.0.0.1", Port: 9000, Mode: Listener, Latency: -1}, "srt://10.0.0.1:9000?mode=listener"},
		{"srt://10.0.0.1:9000?mode=client&latency=0", Address{Host: "10.0.0.1", Port: 9000, Mode: Caller, Latency: 0}, "srt://10.0.0.1:9000?latency=0"},
		{"srt://[::1]:9000?latency=20", Address{Host: "::1", Port: 9000, Mode: Caller, Latency: 20}, "srt://[::1]:9000?latency=20"},
		{"srt://:9000?passphrase=0123456789&pbkeylen=32", Address{Port: 9000, Mode: Listener, Latency: -1, Passphrase: "0123456789", KeyLength: 32},
			"srt://:9000?passphrase=xxxxx&pbkeylen=32"},
		{"srt://h:1?passphrase=a%26b%25c+d%20efgh", Address{Host: "h", Port: 1, Mode: Caller, Latency: -1, Passphrase: "a&b%c+d efgh"}, "srt://h:1?passphrase=xxxxx"},
		{"srt://h:1?streamid=#!::r=live/feed,m=request", Address{Host: "h", Port: 1, Mode: Caller, Latency: -1, StreamID: "#!::r=live/feed,m=request"},
			"srt://h:1?streamid=#!::r=live/feed,m=request"},
	} {
		t.Run(c.in, func(t *testing.T) {
			a, err := ParseAddress(c.in)
			if err != nil {
				t.Fatal(err)
			}
			if *a != c.want {
				t.Errorf("got %+v, want %+v", *a, c.want)
			}
			if s := a.String(); s != c.str {
				t.Errorf("String() = %q, want %q", s, c.str)
			}
			b, err := ParseAddress(a.format(false))
			if err != nil || *b != *a {
				t.Errorf("%q reads back as %+v, %v", a.format(false), b, err)
			}
		})
	}
}

// Every error names what is wrong and never the passphrase, whatever key it was given under.
func TestParseAddressErrors(t *testing.T) {
	const secret = "s3cretPhrase"
	for _, c := range []struct{ in, want string }{
		{"udp://:9000", "not an srt:// URL"},
		{"srt://", "no port"},
		{"srt://host", "no port"},
		{"srt://host:0", "want 1 to 65535"},
		{"srt://host:65536", "want 1 to 65535"},
		{"srt://host:+9", "want 1 to 65535"},
		{"srt://host:9000/live", "no path"},
		{"srt://user:" + secret + "@host:9000", "no user:password@"},
		{"srt://::1:9000", "in brackets"},
		{"srt://[::1:9000", "unbalanced brackets"},
		{"srt://[10.0.0.1]:9000", "not an IPv6 address"},
		{"srt://bad host:9000", "not a host name"},
		{"srt://:9000?mode=caller", "a caller needs the listener's host"},
		{"srt://[::]:9000?mode=caller", "a caller needs the listener's host"},
		{"srt://h:9000?mode=rendezvous", "rendezvous is not supported"},
		{"srt://h:9000?mode=push", "want caller or listener"},
		{"srt://h:9000?latency=-1", "from 0 to 60000"},
		{"srt://h:9000?latency=120000", "microseconds"},
		{"srt://h:9000?passphrase=short", "has 5 characters"},
		{"srt://h:9000?passphrase=" + strings.Repeat("x", 80), "has 80 characters"},
		{"srt://h:9000?passphrase", "wants a value"},
		{"srt://h:9000?passphrase=" + secret + "%zz", "wants a value"},
		{"srt://h:9000?passphrase=" + secret + "&passphrase=" + secret, "given twice"},
		{"srt://h:9000?pbkeylen=16", "give both, or neither"},
		{"srt://h:9000?passphrase=" + secret + "&pbkeylen=20", "want 16, 24 or 32"},
		{"srt://:9000?streamid=abc", "a listener takes every caller's"},
		{"srt://h:9000?streamid=" + strings.Repeat("x", 513), "at most 512"},
		{"srt://h:9000?pasphrase=" + secret, `unknown option "pasphrase"`},
		{"srt://h:9000?" + secret, "an option without '='"},
		{"srt://h:9000?" + secret + secret + "=1", "unknown option"},
		{"srt://h:9000?latency=20&&mode=caller", "an option without '='"},
	} {
		t.Run(c.in, func(t *testing.T) {
			_, err := ParseAddress(c.in)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one saying %q", err, c.want)
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("the error shows the secret: %v", err)
			}
		})
	}
}

func TestRedacted(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"srt://h:1?passphrase=0123456789", "srt://h:1?passphrase=xxxxx"},
		{"srt://h:1?mode=caller&latency=20&passphrase=0123456789&pbkeylen=16&streamid=a,b", "srt://h:1?mode=caller&latency=20&passphrase=xxxxx&pbkeylen=16&streamid=a,b"},
		{"srt://h:1?pasphrase=0123456789", "srt://h:1?pasphrase=xxxxx"},
		{"srt://h:1?0123456789", "srt://h:1?xxxxx"},
		{"srt://h:1?averyverylongpastedsecret=x", "srt://h:1?aver…=xxxxx"},
		{"srt://u:0123456789@h:1", "srt://xxxxx@h:1"},
		{"srt://h:1", "srt://h:1"},
		{"srt://h:1?", "srt://h:1?"},
		{"rec.ts", "rec.ts"},
	} {
		if got := Redacted(c.in); got != c.want {
			t.Errorf("Redacted(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestIsURL(t *testing.T) {
	for s, want := range map[string]bool{"srt://:1": true, "SRT://h:1": true, "srt:/x": false, "udp://@:1": false, "srt": false, "./srt://x": false} {
		if IsURL(s) != want {
			t.Errorf("IsURL(%q) = %v", s, !want)
		}
	}
}
