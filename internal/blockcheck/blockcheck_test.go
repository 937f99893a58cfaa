package blockcheck

import "testing"

// panics reports whether f panics, and with which message.
func panics(f func()) (msg string, ok bool) {
	defer func() {
		if r := recover(); r != nil {
			msg, ok = r.(string), true
		}
	}()
	f()
	return "", false
}

func TestBlock(t *testing.T) {
	buf := make([]byte, 64)
	for _, tc := range []struct {
		name     string
		dst, src []byte
		want     string // the panic message, or "" for none
	}{
		{"distinct", buf[:16], buf[16:32], ""},
		{"in place", buf[:16], buf[:16], ""},
		{"adjacent", buf[16:32], buf[:16], ""},
		{"longer buffers, first blocks apart", buf[16:], buf[:32], ""},
		{"short src", buf[:16], buf[16:31], "x: input not full block"},
		{"short dst", buf[:15], buf[16:32], "x: output not full block"},
		{"dst one byte on", buf[1:17], buf[:16], "x: invalid buffer overlap"},
		{"src one byte on", buf[:16], buf[15:31], "x: invalid buffer overlap"},
	} {
		msg, ok := panics(func() { Block("x", 16, tc.dst, tc.src) })
		if ok != (tc.want != "") || msg != tc.want {
			t.Errorf("%s: panic %q (%v), want %q", tc.name, msg, ok, tc.want)
		}
	}
}

func TestBlocks(t *testing.T) {
	buf := make([]byte, 128)
	for _, tc := range []struct {
		name     string
		dst, src []byte
		want     string
	}{
		{"empty", nil, nil, ""},
		{"empty src, overlapping dst", buf[3:], buf[:0], ""},
		{"distinct", buf[:64], buf[64:], ""},
		{"in place", buf[:64], buf[:64], ""},
		{"longer dst", buf[64:], buf[:48], ""},
		{"adjacent", buf[32:64], buf[:32], ""},
		{"partial block", buf[64:], buf[:33], "x: input not full blocks"},
		{"short dst", buf[:16], buf[32:64], "x: output smaller than input"},
		{"dst one block on", buf[16:], buf[:64], "x: invalid buffer overlap"},
		{"src one byte on", buf[:64], buf[1:65], "x: invalid buffer overlap"},
		{"last byte shared", buf[63:], buf[:64], "x: invalid buffer overlap"},
	} {
		msg, ok := panics(func() { Blocks("x", 16, tc.dst, tc.src) })
		if ok != (tc.want != "") || msg != tc.want {
			t.Errorf("%s: panic %q (%v), want %q", tc.name, msg, ok, tc.want)
		}
	}
}
