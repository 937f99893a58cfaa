package simulcrypt

import (
	"bytes"
	"encoding/hex"
	"strings"
	"testing"
)

// unhex reads hex digits, ignoring spaces and '|' (which mark the parameters below).
func unhex(t *testing.T, s string) []byte {
	t.Helper()
	s = strings.NewReplacer(" ", "", "|", "", "\n", "", "\t", "").Replace(s)
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestMessagesWeSend checks every message an SCS sends against TLVs written out by hand from the
// layouts of TS 103 197 (5.5, 5.6): version, message_type, message_length, then each parameter's
// type, length and value.
func TestMessagesWeSend(t *testing.T) {
	cw0 := []byte{0x11, 0x22, 0x33, 0x66, 0x44, 0x55, 0x66, 0xFF}
	cw1 := []byte{0x01, 0x02, 0x03, 0x06, 0x09, 0x08, 0x07, 0x18}
	for _, tc := range []struct {
		name string
		m    Message
		want string
	}{
		{"channel_setup v2", NewChannelSetup(2, 0x0102, 0x4ADC0001),
			"02 0001 000E | 000E 0002 0102 | 0001 0004 4ADC0001"},
		{"channel_setup v3", NewChannelSetup(3, 7, 0x0B000000),
			"03 0001 000E | 000E 0002 0007 | 0001 0004 0B000000"},
		{"channel_test", NewChannelTest(2, 7), "02 0002 0006 | 000E 0002 0007"},
		{"channel_close", NewChannelClose(3, 7), "03 0004 0006 | 000E 0002 0007"},
		{"channel_error", NewChannelError(2, 7, 0x7000), "02 0005 000C | 000E 0002 0007 | 7000 0002 7000"},
		{"stream_setup", NewStreamSetup(2, 7, 3, 0x1234, 100),
			"02 0101 0018 | 000E 0002 0007 | 000F 0002 0003 | 0019 0002 1234 | 0010 0002 0064"},
		{"stream_test", NewStreamTest(2, 7, 3), "02 0102 000C | 000E 0002 0007 | 000F 0002 0003"},
		{"stream_close_request", NewStreamCloseRequest(3, 7, 3), "03 0104 000C | 000E 0002 0007 | 000F 0002 0003"},
		{"stream_error", NewStreamError(2, 7, 3, 0x000B),
			"02 0106 0012 | 000E 0002 0007 | 000F 0002 0003 | 7000 0002 000B"},
		{"CW_provision lead 1, 2 CWs", NewCWProvision(2, 7, 3, 0x0010, []CPCW{{0x0010, cw0}, {0x0011, cw1}}, 0, nil),
			"02 0201 002E | 000E 0002 0007 | 000F 0002 0003 | 0012 0002 0010" +
				" | 0014 000A 0010 11223366445566FF | 0014 000A 0011 0102030609080718"},
		{"CW_provision with CP_duration and access criteria", NewCWProvision(3, 7, 3, 1, []CPCW{{1, cw1}}, 100, []byte{0xAB, 0xCD, 0xEF}),
			"03 0201 002D | 000E 0002 0007 | 000F 0002 0003 | 0012 0002 0001" +
				" | 0014 000A 0001 0102030609080718 | 0013 0002 0064 | 000D 0003 ABCDEF"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.m.Append(nil)
			want := unhex(t, tc.want)
			if !bytes.Equal(got, want) {
				t.Fatalf("got  % X\nwant % X", got, want)
			}
			// And it reads back as it was built.
			m, n, err := Parse(got)
			if err != nil || n != len(got) {
				t.Fatalf("Parse: %v, %d of %d bytes", err, n, len(got))
			}
			if m.Version != tc.m.Version || m.Type != tc.m.Type || len(m.Params) != len(tc.m.Params) {
				t.Fatalf("Parse gives %+v", m)
			}
			for i, p := range m.Params {
				if p.Type != tc.m.Params[i].Type || !bytes.Equal(p.Value, tc.m.Params[i].Value) {
					t.Fatalf("parameter %d: %+v, want %+v", i, p, tc.m.Params[i])
				}
			}
		})
	}
}

func TestParseRejects(t *testing.T) {
	for name, s := range map[string]string{
		"param past end":      "02 0003 0006 | 000E 0003 0007",
		"tail too short":      "02 0003 0008 | 000E 0002 0007 | 00 01",
		"length past message": "02 0003 0004 | 000E 0002",
	} {
		_, _, err := Parse(unhex(t, s))
		if err == nil || err == ErrShort {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, _, err := Parse(unhex(t, "02 0003 0008 | 000E 0002")); err != ErrShort {
		t.Errorf("a message still coming: %v", err)
	}
}

// FuzzParse: whatever the bytes, Parse never panics, never reads past the message it reports,
// and what it accepts encodes back to the same bytes. (FuzzReplies in the simulcrypt package
// reads the same messages as the client's replies.)
func FuzzParse(f *testing.F) {
	f.Add([]byte{2, 0, 3, 0, 6, 0, 0x0E, 0, 2, 0, 7})
	f.Add([]byte{2, 2, 2, 0, 0})
	f.Add([]byte{3, 0, 1, 0xFF, 0xFF})
	f.Fuzz(func(t *testing.T, b []byte) {
		m, n, err := Parse(b)
		if err != nil {
			return
		}
		if n < HeaderSize || n > len(b) {
			t.Fatalf("took %d of %d bytes", n, len(b))
		}
		if again := m.Append(nil); !bytes.Equal(again, b[:n]) {
			t.Fatalf("re-encoded % X, read % X", again, b[:n])
		}
		for _, p := range m.Params {
			m.Uint(p.Type, len(p.Value))
		}
	})
}
