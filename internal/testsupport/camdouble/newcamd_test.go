package camdouble

import (
	"bytes"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/tsdescramble/tsdescramble/internal/wire/newcamd"
)

// TestNewcamdOSCamExchange pins the newcamd double to what OSCam r11757 (oscam-emu/oscam-svn,
// trunk of March 2024) sent a client on loopback, with a constcw reader for CAID 0B00 and the
// port "34100@0B00:000000" on the default DES key: 14 random bytes; the login accepted (0xE1)
// with message id 0 and an empty header; the card data (0xE4) with the request's message id:
// the user number, CA system 0B00, no unique address, one provider 000000 with no shared
// address; each ECM answered with the request's message id and table_id, flags 0x10 and the
// constant pair, an ECM sent again with the pair again, an ECM that the reader has no line for
// (another service) or whose header names another CA system with neither flags nor data; a
// keep-alive with one of the same id; a wrong password refused (0xE2) and the connection
// closed; a login under another DES key not answered, the connection closed 3 s later.
func TestNewcamdOSCamExchange(t *testing.T) {
	srv := NewNewcamd(t, "tsd", "tsdpass", nil, TestCAID)
	srv.SetBadKeyWait(200 * time.Millisecond)
	even := []byte{0x11, 0x22, 0x33, 0x66, 0x44, 0x55, 0x66, 0xFF}
	odd := []byte{0xA1, 0xB2, 0xC3, 0x16, 0xD4, 0xE5, 0xF6, 0xAF}
	// A constcw reader whose line names service 1 only.
	constant := ConstantCW(even, odd)
	srv.SetAnswer(func(ecm []byte) (byte, [16]byte, bool) {
		if bytes.Equal(ecm, ECM(0x80, even, odd, 99)) {
			return 0x44, [16]byte{}, false
		}
		return constant(ecm)
	})
	buf := make([]byte, newcamd.MaxFrame)
	login := func(password string, key newcamd.DESKey) (net.Conn, *newcamd.Codec, newcamd.Message, error) {
		t.Helper()
		c, err := net.Dial("tcp", srv.Addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		c.SetDeadline(time.Now().Add(10 * time.Second))
		random, err := newcamd.ReadRandom(c)
		if err != nil {
			t.Fatal(err)
		}
		lk := newcamd.NewCodec(newcamd.LoginKey(key, random))
		out, _ := lk.Append(nil, &newcamd.Message{Cmd: newcamd.CmdLogin, Data: newcamd.LoginData("tsd", newcamd.Crypt(password))})
		if _, err := c.Write(out); err != nil {
			t.Fatal(err)
		}
		m, err := lk.Read(c, buf)
		return c, newcamd.NewCodec(newcamd.SessionKey(key, newcamd.Crypt(password))), m, err
	}
	c, sk, m, err := login("tsdpass", newcamd.DefaultDESKey)
	if err != nil || m.Cmd != newcamd.CmdLoginACK || m.MsgID != 0 || m.ServiceID != 0 || m.CAID != 0 || m.ProviderID != 0 || len(m.Data) != 0 {
		t.Fatalf("login: %+v %v", m, err)
	}
	id := uint16(0)
	ask := func(m newcamd.Message) newcamd.Message {
		t.Helper()
		id++
		m.MsgID = id
		out, _ := sk.Append(nil, &m)
		if _, err := c.Write(out); err != nil {
			t.Fatal(err)
		}
		a, err := sk.Read(c, buf)
		if err != nil {
			t.Fatal(err)
		}
		if a.MsgID != id || a.ServiceID != 0 || a.CAID != 0 || a.ProviderID != 0 {
			t.Fatalf("an answer to message %d with header %+v", id, a)
		}
		return a
	}
	a := ask(newcamd.Message{Cmd: newcamd.CmdCardDataReq})
	cd, err := newcamd.ParseCardData(a.Data)
	if a.Cmd != newcamd.CmdCardData || err != nil || cd.CAID != TestCAID || cd.UA != [6]byte{} ||
		len(cd.Providers) != 1 || cd.Providers[0] != (newcamd.Provider{}) || len(a.Data) != 12+11 {
		t.Fatalf("card data %+v %X: %+v %v", a, a.Data, cd, err)
	}
	ecm := func(section []byte, sid, caid uint16) newcamd.Message {
		m, err := newcamd.ECMRequest(section)
		if err != nil {
			t.Fatal(err)
		}
		m.ServiceID, m.CAID = sid, caid
		return m
	}
	pair := append(append([]byte(nil), even...), odd...)
	for _, c := range []struct {
		name string
		req  newcamd.Message
		cw   bool
	}{
		{"first ECM", ecm(ECM(0x80, even, odd, 1), 1, 0), true},
		{"the same ECM again", ecm(ECM(0x80, even, odd, 1), 1, 0), true},
		{"odd ECM", ecm(ECM(0x81, even, odd, 2), 1, 0), true},
		{"not found", ecm(ECM(0x80, even, odd, 99), 2, 0), false},
		{"another CA system in the header", ecm(ECM(0x81, even, odd, 3), 1, 0x0100), false},
	} {
		a := ask(c.req)
		switch {
		case a.Cmd != c.req.Cmd:
			t.Errorf("%s: answered with command %#02x, want the table_id %#02x", c.name, a.Cmd, c.req.Cmd)
		case c.cw && (a.Flags != 0x10 || !bytes.Equal(a.Data, pair)):
			t.Errorf("%s: flags %#02x, data %X; want 0x10 and the pair", c.name, a.Flags, a.Data)
		case !c.cw && (a.Flags != 0 || len(a.Data) != 0):
			t.Errorf("%s: flags %#02x, data %X; want neither", c.name, a.Flags, a.Data)
		}
	}
	if a := ask(newcamd.Message{Cmd: newcamd.CmdKeepAlive}); a.Cmd != newcamd.CmdKeepAlive || len(a.Data) != 0 {
		t.Fatalf("keep-alive answered with %+v", a)
	}

	c2, _, m, err := login("wrong", newcamd.DefaultDESKey)
	if err != nil || m.Cmd != newcamd.CmdLoginNAK || m.MsgID != 0 {
		t.Fatalf("wrong password: %+v %v", m, err)
	}
	if _, err := c2.Read(buf[:1]); err != io.EOF {
		t.Fatalf("after the refusal: %v, want the connection closed", err)
	}

	other := newcamd.DefaultDESKey
	other[0] ^= 0x80
	start := time.Now()
	_, _, _, err = login("tsdpass", other)
	if !errors.Is(err, io.EOF) || time.Since(start) < 150*time.Millisecond {
		t.Fatalf("another DES key: %v after %v, want the connection closed after the wait", err, time.Since(start))
	}
	if n := srv.Counts(); n.Logins != 1 || n.Refused != 1 || n.BadKey != 1 || n.KeepAlives != 1 {
		t.Fatalf("counts %+v", n)
	}
}
