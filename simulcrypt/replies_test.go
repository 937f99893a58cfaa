package simulcrypt

import (
	"encoding/binary"
	"encoding/hex"
	"strings"
	"testing"

	wire "github.com/tsdescramble/tsdescramble/internal/wire/simulcrypt"
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

func u8(v uint8) []byte   { return []byte{v} }
func u16(v uint16) []byte { return binary.BigEndian.AppendUint16(nil, v) }

// TestChannelStatus reads a channel_status as the example ECMG builds it (dvb_ecmg.c,
// send_channel_status) and one with the optional delays.
func TestChannelStatus(t *testing.T) {
	raw := unhex(t, "02 0003 003F | 000E 0002 0007 | 0002 0001 00 | 0003 0002 00C8 | 0004 0002 0000"+
		" | 0007 0002 012C | 0008 0002 01F4 | 0009 0002 0003 | 000A 0001 01 | 000B 0001 02 | 000C 0002 0064"+
		" | 0016 0002 FF38")
	m, _, err := wire.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	p, err := parseChannelStatus(&m)
	if err != nil {
		t.Fatal(err)
	}
	if p.Channel != 7 || p.Packets || p.DelayStart.Milliseconds() != 200 || p.DelayStop != 0 ||
		p.RepPeriod.Milliseconds() != 300 || p.MaxStreams != 500 || p.MinCPDuration.Milliseconds() != 300 ||
		p.LeadCW != 1 || p.CWPerMsg != 2 || p.MaxCompTime.Milliseconds() != 100 ||
		p.ACDelayStart == nil || p.ACDelayStart.Milliseconds() != -200 || p.ACDelayStop != nil {
		t.Fatalf("got %+v", p)
	}
	// Without a mandatory parameter: an error that names it.
	m.Params = m.Params[:3]
	if _, err := parseChannelStatus(&m); err == nil || !strings.Contains(err.Error(), "0x0004") {
		t.Fatalf("missing delay_stop: %v", err)
	}
}

func TestErrorReplyInWords(t *testing.T) {
	m, _, err := wire.Parse(unhex(t, "02 0106 0012 | 000E 0002 0007 | 000F 0002 0003 | 7000 0002 000B"))
	if err != nil {
		t.Fatal(err)
	}
	got := parseErrorReply(&m).Error()
	want := "ECMG stream_error on channel 7 stream 3: not enough control words to compute ECM (0x000B)"
	if got != want {
		t.Fatalf("got %q\nwant %q", got, want)
	}
	for s, w := range map[Status]string{6: "unknown ECM_channel_id value (0x0006)", 0x8001: "ECMG-specific error 0x8001", 0x0042: "error status 0x0042"} {
		if s.String() != w {
			t.Errorf("%d: %q, want %q", s, s.String(), w)
		}
	}
}

// FuzzReplies: whatever message the codec accepts, the readers of the ECMG's replies never
// panic.
func FuzzReplies(f *testing.F) {
	f.Add([]byte{2, 0, 3, 0, 6, 0, 0x0E, 0, 2, 0, 7})
	f.Add([]byte{2, 2, 2, 0, 0})
	f.Add([]byte{3, 0, 1, 0xFF, 0xFF})
	f.Fuzz(func(t *testing.T, b []byte) {
		m, _, err := wire.Parse(b)
		if err != nil {
			return
		}
		parseErrorReply(&m)
		parseChannelStatus(&m)
		parseECMResponse(&m)
	})
}
