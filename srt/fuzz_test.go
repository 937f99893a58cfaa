package srt

import (
	"strings"
	"testing"
)

// FuzzParseAddress holds the URL parser to its promises, whatever the input: no panic; an
// address it accepts is one the package can use (a port, a mode with a host to call, the
// option limits) and reads back the same from its canonical form; a message shows no
// passphrase, neither the parser's errors nor String nor Redacted.
func FuzzParseAddress(f *testing.F) {
	for _, s := range []string{
		"srt://:9000",
		"srt://127.0.0.1:9000?mode=listener&latency=20",
		"srt://[::1]:9000?passphrase=0123456789&pbkeylen=24",
		"srt://h:1?streamid=#!::r=live,m=publish&latency=0",
		"srt://h:1?passphrase=a%26b%25c%20defgh",
		"srt://h:1?pasphrase=0123456789",
		"srt://u:p@h:1",
		"srt://[::]:1?mode=server",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		red := Redacted(s)
		a, err := ParseAddress(s)
		if err != nil {
			if a != nil {
				t.Fatalf("an address and an error: %+v, %v", a, err)
			}
			if !strings.HasPrefix(err.Error(), red) {
				t.Fatalf("the error %q does not name the URL as Redacted gives it, %q", err, red)
			}
			return
		}
		switch {
		case a.Port < 1 || a.Port > 65535:
			t.Fatalf("port %d", a.Port)
		case a.Mode == Caller && a.unspecified():
			t.Fatalf("a caller without a host: %+v", a)
		case a.Passphrase != "" && (len(a.Passphrase) < minPassphrase || len(a.Passphrase) > maxPassphrase):
			t.Fatalf("passphrase of %d bytes", len(a.Passphrase))
		case a.KeyLength != 0 && a.Passphrase == "":
			t.Fatalf("pbkeylen without a passphrase")
		case a.Latency < -1 || a.Latency > maxLatency:
			t.Fatalf("latency %d", a.Latency)
		}
		b, err := ParseAddress(a.format(false))
		if err != nil || *b != *a {
			t.Fatalf("%q parses to %+v; its canonical form %q to %+v, %v", s, *a, a.format(false), b, err)
		}
		if a.Passphrase != "" {
			// What a message shows does not change with the passphrase: another one in its
			// place, written in the URL or set in the address, shows the same.
			other := *a
			other.Passphrase = strings.Repeat("Q", len(a.Passphrase))
			if a.String() != other.String() {
				t.Fatalf("String shows the passphrase: %q, %q", a.String(), other.String())
			}
			if r2 := Redacted(replacePassphrase(s)); r2 != red {
				t.Fatalf("Redacted shows the passphrase: %q, %q", red, r2)
			}
		}
	})
}

// replacePassphrase writes another value in the place of passphrase='s in the URL s.
func replacePassphrase(s string) string {
	head, query, _ := strings.Cut(s, "?")
	parts := strings.Split(query, "&")
	for i, kv := range parts {
		if k, _, ok := strings.Cut(kv, "="); ok && k == "passphrase" {
			parts[i] = "passphrase=QQQQQQQQQQ"
		}
	}
	return head + "?" + strings.Join(parts, "&")
}
