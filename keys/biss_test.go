package keys

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

func TestParseBISS(t *testing.T) {
	tests := []struct{ in, want string }{
		// tools.md 4.1, checked against tsdecrypt.
		{"01234589ABCD", "0123456989abcd01"},
		{"112233445566", "11223366445566ff"},
		{"11 22 33 44 55 66", "11223366445566ff"},
		{"11:22:33:44:55:66", "11223366445566ff"},
		{"0x112233445566", "11223366445566ff"},
		{"ffffff000000", "fffffffd00000000"}, // the sums wrap modulo 256
		// Sixteen digits are used as given, wrong checksums included.
		{"1122334455667788", "1122334455667788"},
		{"0123456989ABCD01", "0123456989abcd01"},
	}
	for _, tc := range tests {
		got, err := ParseBISS(tc.in)
		if err != nil || !bytes.Equal(got, mustHex(t, tc.want)) {
			t.Errorf("ParseBISS(%q) = %x, %v; want %s", tc.in, got, err, tc.want)
		}
	}
	for _, tc := range []struct{ in, msg string }{
		{"", "want 12 hex digits (a BISS-1 session word) or 16 (a whole CW), found 0"},
		{"1122334455", "want 12 hex digits (a BISS-1 session word) or 16 (a whole CW), found 10"},
		{"11223344556677", "want 12 hex digits (a BISS-1 session word) or 16 (a whole CW), found 14"},
		{"112233445566778899", "want 12 hex digits (a BISS-1 session word) or 16 (a whole CW), found 18"},
		{"11223344556g", "want 12 hex digits (a BISS-1 session word) or 16 (a whole CW), found 'g'"},
		{"1122334455é6", "want 12 hex digits (a BISS-1 session word) or 16 (a whole CW), found 'é'"},
	} {
		if got, err := ParseBISS(tc.in); err == nil || err.Error() != tc.msg {
			t.Errorf("ParseBISS(%q) = %x, %v; want %q", tc.in, got, err, tc.msg)
		}
	}
}

func mustHex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := ParseCW(s, len(s)/2)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestFromEnv(t *testing.T) {
	const name = "TSDESCRAMBLE_TEST_CW"
	t.Setenv(name, " 11:22:33:66:44:55:66:FF ")
	if got, err := FromEnv(name, CWSize); err != nil || !bytes.Equal(got, mustHex(t, "11223366445566ff")) {
		t.Fatalf("FromEnv = %x, %v", got, err)
	}
	tests := []struct {
		value string
		set   bool
		msg   string
	}{
		{"", false, "environment variable TSDESCRAMBLE_TEST_CW is not set (want a control word of 16 hex digits)"},
		{"  ", true, "environment variable TSDESCRAMBLE_TEST_CW is empty (want a control word of 16 hex digits)"},
		{"a1b2c3d4e5f6a7", true, "environment variable TSDESCRAMBLE_TEST_CW holds 14 hex digits, want 16"},
		{"a1b2c3d4e5f6a7b8c9", true, "environment variable TSDESCRAMBLE_TEST_CW holds 18 hex digits, want 16"},
		{"a1b2c3d4e5f6a7bz", true, "environment variable TSDESCRAMBLE_TEST_CW: character 16 is not a hex digit (want a control word of 16 hex digits)"},
		{"0xa1b2c3d4e5f6a7b8", true, ""},
	}
	for _, tc := range tests {
		if tc.set {
			t.Setenv(name, tc.value)
		} else {
			t.Setenv(name, "x")
			unsetenv(t, name)
		}
		got, err := FromEnv(name, CWSize)
		if tc.msg == "" {
			if err != nil || len(got) != CWSize {
				t.Errorf("%q: %x %v", tc.value, got, err)
			}
			continue
		}
		if err == nil || err.Error() != tc.msg {
			t.Errorf("%q: got %v, want %q", tc.value, err, tc.msg)
			continue
		}
		// The message must not give the key away, whole or in part.
		if v := strings.TrimSpace(tc.value); len(v) >= 4 && strings.Contains(err.Error(), v[:4]) {
			t.Errorf("%q: the message shows the key: %v", tc.value, err)
		}
	}
	if got, err := FromEnv(name, 16); err == nil {
		t.Errorf("16-byte key from a short value: %x", got)
	}
}

// unsetenv removes an environment variable for the rest of the test; a t.Setenv before it
// arranges for the old value to be restored.
func unsetenv(t *testing.T, name string) {
	t.Helper()
	if err := os.Unsetenv(name); err != nil {
		t.Fatal(err)
	}
}
