package cs378x_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/tsdescramble/tsdescramble/internal/wire/cs378x"
)

var (
	even = []byte{0x11, 0x22, 0x33, 0x66, 0x44, 0x55, 0x66, 0xFF}
	odd  = []byte{0xA1, 0xB2, 0xC3, 0x16, 0xD4, 0xE5, 0xF6, 0xAF}
)

func TestCodecRoundTrip(t *testing.T) {
	c := cs378x.NewCodec("u", "p")
	m := cs378x.Message{Cmd: cs378x.CmdCW, ServiceID: 1, CAID: 2, ProviderID: 3, MsgID: 4, ECMPID: 5, Data: append(even, odd...)}
	b, err := c.Append(nil, &m)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != 4+48 {
		t.Fatalf("%d bytes, want 4+48", len(b))
	}
	got, err := c.Read(bytes.NewReader(b), make([]byte, cs378x.MaxMessage+4))
	if err != nil {
		t.Fatal(err)
	}
	if got.Cmd != m.Cmd || got.MsgID != 4 || got.ECMPID != 5 || !bytes.Equal(got.Data, m.Data) || !got.CRCOK() {
		t.Fatalf("%+v", got)
	}
	if _, err := cs378x.NewCodec("other", "p").Read(bytes.NewReader(b), make([]byte, cs378x.MaxMessage+4)); !errors.Is(err, cs378x.ErrToken) {
		t.Fatalf("another user's token: %v", err)
	}
	if _, err := c.Append(nil, &cs378x.Message{Data: make([]byte, 256)}); err == nil {
		t.Fatal("256 bytes of data encoded")
	}
}

// FuzzRead feeds the decoder any bytes: it must not panic, read past what one message needs, or
// return data longer than MaxData.
func FuzzRead(f *testing.F) {
	c := cs378x.NewCodec("user", "pass")
	b, _ := c.Append(nil, &cs378x.Message{Cmd: cs378x.CmdCW, Data: append(even, odd...)})
	f.Add(b)
	f.Add(b[:20])
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, in []byte) {
		r := bytes.NewReader(in)
		for range 4 {
			m, err := c.Read(r, make([]byte, cs378x.MaxMessage+4))
			if err != nil {
				break
			}
			if len(m.Data) > cs378x.MaxData {
				t.Fatalf("%d bytes of data", len(m.Data))
			}
		}
		if m, err := cs378x.Parse(in); err == nil && len(m.Data) > len(in)-cs378x.HeaderSize {
			t.Fatal("data beyond the message")
		}
	})
}
