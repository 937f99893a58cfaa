package newcamd_test

import (
	"bytes"
	"crypto/cipher"
	"crypto/des"
	"encoding/hex"
	"errors"
	"math/bits"
	"testing"

	"github.com/tsdescramble/tsdescramble/internal/wire/newcamd"
)

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The MD5-crypt of passwords with the newcamd salt, from "openssl passwd -1 -salt abcdefgh
// PASSWORD" (OpenSSL 3.0); OSCam r11757 logged the same string for tsdpass.
func TestCrypt(t *testing.T) {
	for _, c := range []struct{ pw, want string }{
		{"pass", "$1$abcdefgh$1s0bv7.OjNizlrMAOIQD7."},
		{"tsdpass", "$1$abcdefgh$XDPyAsh3S5O2bG9AaweCp/"},
		{"", "$1$abcdefgh$M55TzYaaccxVGbptZWaxX/"},
		{"x", "$1$abcdefgh$znAnv9M.XU2pRYfmSs46h/"},
		{"a password longer than sixteen bytes", "$1$abcdefgh$k0S14asoqhPM.Yig4HXT00"},
	} {
		if got := newcamd.Crypt(c.pw); got != c.want {
			t.Errorf("Crypt(%q) = %s, want %s", c.pw, got, c.want)
		}
	}
}

// Spread keeps the 112 key bits in order, 7 to a byte, and gives each byte odd parity.
func TestSpread(t *testing.T) {
	for _, k := range []newcamd.DESKey{newcamd.DefaultDESKey, {}, {0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF},
		{0x80, 0, 0, 0, 0, 0, 0x01, 0xA5, 0x5A, 0, 0, 0, 0, 0x01}} {
		s := newcamd.Spread(k)
		var got []byte
		var acc uint32
		n := 0
		for i, b := range s {
			if bits.OnesCount8(b)%2 != 1 {
				t.Errorf("key %X: byte %d of the spread key %X has even parity", k, i, s)
			}
			acc = acc<<7 | uint32(b>>1)
			for n += 7; n >= 8; n -= 8 {
				got = append(got, byte(acc>>(n-8)))
			}
		}
		if !bytes.Equal(got, k[:]) {
			t.Errorf("key %X spread to %X, whose key bits are %X", k, s, got)
		}
	}
	// The default key's first bytes, worked by hand: 0x01's top 7 bits (0000000) and parity
	// 1; its last bit and 0x02's top 6 (1 000000) and parity 0; 0x03's low 5 bits and 0x04's
	// top 2 (00011 00) and parity 1; 0x07's low 7 bits (0000111) and parity 0.
	if s := newcamd.Spread(newcamd.DefaultDESKey); s[0] != 0x01 || s[1] != 0x80 || s[3] != 0x61 || s[7] != 0x0E {
		t.Errorf("spread of the default key %X", s)
	}
}

// Messages OSCam r11757 (oscam-emu/oscam-svn, trunk of March 2024) sent this package's client
// on loopback, with its newcamd port on the default key, the account tsd/tsdpass and a constcw
// reader: each decrypts, under the key the protocol says, to what OSCam meant.
func TestOSCamMessages(t *testing.T) {
	session := newcamd.NewCodec(newcamd.SessionKey(newcamd.DefaultDESKey, newcamd.Crypt("tsdpass")))
	loginKey := func(random string) *newcamd.Codec {
		var r [14]byte
		copy(r[:], unhex(t, random))
		return newcamd.NewCodec(newcamd.LoginKey(newcamd.DefaultDESKey, r))
	}
	cw := unhex(t, "11223366445566FFA1B2C316D4E5F6AF")
	for _, c := range []struct {
		name  string
		codec *newcamd.Codec
		frame string
		want  newcamd.Message
	}{
		{"login accepted", loginKey("C16187B1BAD17EE1912A8EC184DD"), "00180230872B78E753BBA78D9C322442059835560A74B396F79F",
			newcamd.Message{Cmd: newcamd.CmdLoginACK}},
		{"login refused (wrong password)", loginKey("FF7A96DBC0E80B40141B37001ED3"), "0018F1B0D454425A0C833789A44E4954EDDC1DA639C5D5E608D3",
			newcamd.Message{Cmd: newcamd.CmdLoginNAK}},
		{"card data", session, "003084079918F0538C02D8B299CC4E60DAD59A6BF2FA8F6F3DEFFC205D390F1D5CC8979901F42E3C9DF9F0428A448F8998DC",
			newcamd.Message{MsgID: 1, Cmd: newcamd.CmdCardData, Data: unhex(t, "0C0B000000000000000000010000000000000000000000")}},
		{"ECM answer", session, "00283EC29F6449AE72EB7EA8B74D1F926E7B04CAB32F4F50FF210DE954D38F181FD7D77B626C13AD2181",
			newcamd.Message{MsgID: 2, Cmd: 0x80, Flags: 0x10, Data: cw}},
		{"ECM not found", session, "00182016A199759EC205ED65C464DA978E3C2B30F2D96AA3671A",
			newcamd.Message{MsgID: 4, Cmd: 0x80}},
		{"keep-alive", session, "0018615D3C229E257F5A41EFE5B0A418258C7750F1A44C87E987",
			newcamd.Message{MsgID: 9, Cmd: newcamd.CmdKeepAlive}},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, err := c.codec.Read(bytes.NewReader(unhex(t, c.frame)), make([]byte, newcamd.MaxFrame))
			if err != nil {
				t.Fatal(err)
			}
			if m.MsgID != c.want.MsgID || m.ServiceID != 0 || m.CAID != 0 || m.ProviderID != 0 || m.Cmd != c.want.Cmd ||
				m.Flags != c.want.Flags || !bytes.Equal(m.Data, c.want.Data) {
				t.Fatalf("got %+v, want %+v", m, c.want)
			}
		})
	}
	cd, err := newcamd.ParseCardData(unhex(t, "0C0B000000000000000000010000000000000000000000"))
	if err != nil || cd.UserID != 12 || cd.CAID != 0x0B00 || len(cd.Providers) != 1 || cd.Providers[0].ID != 0 {
		t.Fatalf("OSCam's card data: %+v %v", cd, err)
	}
	// Under another password the checksum fails.
	other := newcamd.NewCodec(newcamd.SessionKey(newcamd.DefaultDESKey, newcamd.Crypt("tsdpas")))
	if _, err := other.Read(bytes.NewReader(unhex(t, "00283EC29F6449AE72EB7EA8B74D1F926E7B04CAB32F4F50FF210DE954D38F181FD7D77B626C13AD2181")),
		make([]byte, newcamd.MaxFrame)); !errors.Is(err, newcamd.ErrChecksum) {
		t.Fatalf("under another key: %v", err)
	}
}

func TestRoundTrip(t *testing.T) {
	c := newcamd.NewCodec(newcamd.SessionKey(newcamd.DefaultDESKey, newcamd.Crypt("p")))
	ecm := []byte{0x81, 0x70, 5, 1, 2, 3, 4, 5}
	req, err := newcamd.ECMRequest(ecm)
	if err != nil {
		t.Fatal(err)
	}
	req.MsgID, req.ServiceID, req.CAID, req.ProviderID = 0x1234, 7, 0x0B00, 0x123456
	buf := make([]byte, newcamd.MaxFrame)
	for n := 0; n <= 40; n++ {
		m := newcamd.Message{MsgID: uint16(n), Cmd: 0x80, Flags: 0x70, Data: bytes.Repeat([]byte{byte(n)}, n)}
		b, err := c.Append(nil, &m)
		if err != nil {
			t.Fatal(err)
		}
		// Length prefix, the blocks (header, command, data, checksum, padded), the IV.
		if want := 2 + (newcamd.HeaderSize+3+n+1+7)/8*8 + 8; len(b) != want {
			t.Fatalf("%d bytes of data: a frame of %d bytes, want %d", n, len(b), want)
		}
		got, err := c.Read(bytes.NewReader(b), buf)
		if err != nil {
			t.Fatal(err)
		}
		if got.MsgID != m.MsgID || got.Cmd != 0x80 || got.Flags != 0x70 || !bytes.Equal(got.Data, m.Data) {
			t.Fatalf("%+v came back as %+v", m, got)
		}
	}
	b, err := c.Append(nil, &req)
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.Read(bytes.NewReader(b), buf)
	if err != nil {
		t.Fatal(err)
	}
	if got.MsgID != 0x1234 || got.ServiceID != 7 || got.CAID != 0x0B00 || got.ProviderID != 0x123456 || !bytes.Equal(got.Section(), ecm) {
		t.Fatalf("%+v, section %X", got, got.Section())
	}
	if _, err := c.Append(nil, &newcamd.Message{Data: make([]byte, newcamd.MaxData)}); err != nil {
		t.Fatalf("MaxData bytes: %v", err)
	}
	if b, _ := c.Append(nil, &newcamd.Message{Data: make([]byte, newcamd.MaxData)}); len(b) > newcamd.MaxFrame {
		t.Fatalf("a frame of %d bytes", len(b))
	}
	if _, err := c.Append(nil, &newcamd.Message{Data: make([]byte, newcamd.MaxData+1)}); err == nil {
		t.Fatal("more than MaxData bytes encoded")
	}
	for _, bad := range [][]byte{{0x82, 0x70, 0}, {0x80, 0x70, 4, 1, 2, 3}, {0x80}} {
		if _, err := newcamd.ECMRequest(bad); err == nil {
			t.Errorf("ECMRequest(%X) took it", bad)
		}
	}
	user, crypted, err := newcamd.ParseLogin(newcamd.LoginData("user", newcamd.Crypt("p")))
	if err != nil || user != "user" || crypted != newcamd.Crypt("p") {
		t.Fatalf("login: %q %q %v", user, crypted, err)
	}
	cd := newcamd.CardData{UserID: 3, CAID: 0x0B00, UA: [6]byte{1, 2, 3, 4, 5, 6},
		Providers: []newcamd.Provider{{ID: 0x123456, SA: [4]byte{9, 8, 7, 6}}, {ID: 1}}}
	data, err := newcamd.AppendCardData(nil, &cd)
	if err != nil {
		t.Fatal(err)
	}
	got2, err := newcamd.ParseCardData(data)
	if err != nil || got2.UserID != 3 || got2.UA != cd.UA || len(got2.Providers) != 2 || got2.Providers[0] != cd.Providers[0] {
		t.Fatalf("card data %+v %v", got2, err)
	}
	if _, err := newcamd.ParseCardData(data[:len(data)-1]); err == nil {
		t.Fatal("card data cut short was taken")
	}
}

// seal frames plaintext as a server would send it under key, written apart from the codec:
// whole blocks, the last byte made the checksum, two-key triple DES in CBC mode with a zero
// IV, then the IV and the length in front.
func seal(key newcamd.Key, plain []byte) []byte {
	p := append([]byte(nil), plain...)
	for len(p)%8 != 0 || len(p) == 0 {
		p = append(p, 0)
	}
	var sum byte
	for _, b := range p[:len(p)-1] {
		sum ^= b
	}
	p[len(p)-1] = sum
	block, _ := des.NewTripleDESCipher(append(append([]byte(nil), key[:]...), key[:8]...))
	iv := make([]byte, 8)
	cipher.NewCBCEncrypter(block, iv).CryptBlocks(p, p)
	p = append(p, iv...)
	return append([]byte{byte(len(p) >> 8), byte(len(p))}, p...)
}

// FuzzRead feeds the decoder any bytes, under the session key of OSCam's messages above, as
// they come and sealed as the plaintext of a message: it must not panic, read more than a
// frame, or return data beyond the message or card data beyond its data.
func FuzzRead(f *testing.F) {
	key := newcamd.SessionKey(newcamd.DefaultDESKey, newcamd.Crypt("tsdpass"))
	c := newcamd.NewCodec(key)
	for _, s := range []string{
		"003084079918F0538C02D8B299CC4E60DAD59A6BF2FA8F6F3DEFFC205D390F1D5CC8979901F42E3C9DF9F0428A448F8998DC",
		"00283EC29F6449AE72EB7EA8B74D1F926E7B04CAB32F4F50FF210DE954D38F181FD7D77B626C13AD2181",
		"00182016A199759EC205ED65C464DA978E3C2B30F2D96AA3671A",
	} {
		b, _ := hex.DecodeString(s)
		f.Add(b)
	}
	f.Add([]byte{})
	f.Add([]byte{0x03, 0xFE})
	f.Add(unhex(f, "000100000B0000000000E40017"+"0C0B000000000000000000010000000000000000000000"))
	f.Add(unhex(f, "0002000000000000000080101011223366445566FFA1B2C316D4E5F6AF"))
	f.Fuzz(func(t *testing.T, in []byte) {
		r := bytes.NewReader(append(append([]byte(nil), in...), seal(key, in)...))
		for range 8 {
			before := r.Len()
			m, err := c.Read(r, make([]byte, newcamd.MaxFrame))
			if before-r.Len() > newcamd.MaxFrame {
				t.Fatalf("read %d bytes for one message", before-r.Len())
			}
			if err != nil {
				break
			}
			if len(m.Data) > newcamd.MaxData {
				t.Fatalf("%d bytes of data", len(m.Data))
			}
			if newcamd.IsECM(m.Cmd) && len(m.Section()) != 3+len(m.Data) {
				t.Fatal("section length")
			}
			if m.Cmd == newcamd.CmdCardData {
				if cd, err := newcamd.ParseCardData(m.Data); err == nil && len(cd.Providers) > len(m.Data)/11 {
					t.Fatalf("%d providers in %d bytes", len(cd.Providers), len(m.Data))
				}
			}
		}
		if m, err := newcamd.Parse(in); err == nil && len(m.Data) > len(in)-newcamd.HeaderSize-3-1 {
			t.Fatal("data beyond the message")
		}
	})
}

// A message framed apart from the codec (seal) reads as its plaintext says.
func TestReadSealed(t *testing.T) {
	key := newcamd.SessionKey(newcamd.DefaultDESKey, newcamd.Crypt("tsdpass"))
	c := newcamd.NewCodec(key)
	b := seal(key, unhex(t, "000100000B0012345600E40017"+"0C0B000000000000000000010000000000000000000000"))
	m, err := c.Read(bytes.NewReader(b), make([]byte, newcamd.MaxFrame))
	if err != nil {
		t.Fatal(err)
	}
	if m.MsgID != 1 || m.CAID != 0x0B00 || m.ProviderID != 0x123456 || m.Cmd != newcamd.CmdCardData || len(m.Data) != 23 {
		t.Fatalf("%+v", m)
	}
	// Data that would run into the checksum byte is refused.
	if _, err := c.Read(bytes.NewReader(seal(key, unhex(t, "00000000000000000000800003AABB"))), make([]byte, newcamd.MaxFrame)); err == nil {
		t.Fatal("data beyond the message was taken")
	}
}
