package camdouble

import (
	"crypto/rand"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/tsdescramble/tsdescramble/internal/wire/cs378x"
	"github.com/tsdescramble/tsdescramble/internal/wire/newcamd"
)

// Newcamd is the server side of the newcamd protocol (525) for tests, one port of one CA
// system as OSCam serves it with a constcw reader (checked against OSCam r11757 on loopback,
// see TestNewcamdOSCamExchange): 14 random bytes; a login the port's DES key cannot decrypt
// gets nothing and the connection closes 3 s later; a wrong user or password gets a refusal
// (0xE2) and the connection closes; then the card data (the CA system, one provider 000000, no
// unique address, the user number 10 + the connection's count); each ECM gets what Answer says
// after Delay, the 16 CW bytes or, not found, none, with the request's message id and table_id
// and nothing else in the header; an ECM whose header names another CA system is not found; a
// keep-alive gets one. What the CWs of an ECM are is SetAnswer's (by default the test CA
// system's card, TestCAAnswer); ConstantCW answers as a constcw reader.
type Newcamd struct {
	tcpServer

	user, crypted string
	key           newcamd.DESKey
	caid          uint16

	answers
	maxIdle    time.Duration
	badKeyWait time.Duration
	requests   []NewcamdRequest
	logins     int
	refused    int
	badKey     int
	keepAlives int
	idleClosed int
	conns      int
}

// NewcamdRequest is an ECM request the server received.
type NewcamdRequest struct {
	Msg     newcamd.Message // Data is a copy
	Section []byte          // the ECM section it carries
	When    time.Time
}

// NewNewcamd starts a server on a loopback port for the account user, password, whose port
// serves caid under the DES key (14 bytes; nil for the default key); the test's cleanup stops
// it.
func NewNewcamd(t testing.TB, user, password string, key []byte, caid uint16) *Newcamd {
	return NewNewcamdAt(t, "127.0.0.1:0", user, password, key, caid)
}

// NewNewcamdAt starts a server like NewNewcamd on the given loopback address (a server coming
// back on the port of one that stopped).
func NewNewcamdAt(t testing.TB, addr, user, password string, key []byte, caid uint16) *Newcamd {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	s := &Newcamd{user: user, crypted: newcamd.Crypt(password), key: newcamd.DefaultDESKey, caid: caid,
		answers: answers{answer: TestCAAnswer}, badKeyWait: 3 * time.Second}
	if key != nil {
		if len(key) != newcamd.DESKeySize {
			t.Fatalf("a DES key of %d bytes", len(key))
		}
		copy(s.key[:], key)
	}
	s.serve(ln, s.handle)
	t.Cleanup(s.Stop)
	return s
}

// SetMaxIdle makes the server close a connection that sent nothing for d, as OSCam does with
// clientmaxidle when its newcamd keepalive is off (0, the default: never).
func (s *Newcamd) SetMaxIdle(d time.Duration) {
	s.mu.Lock()
	s.maxIdle = d
	s.mu.Unlock()
}

// SetBadKeyWait sets how long a connection whose login does not decrypt stays open before
// the server closes it (3 s by default, as OSCam r11757 did: it sleeps 2 s after a message it
// cannot decrypt, and closed the connection 3.0 s after the login, every time).
func (s *Newcamd) SetBadKeyWait(d time.Duration) {
	s.mu.Lock()
	s.badKeyWait = d
	s.mu.Unlock()
}

// Requests returns the ECM requests received so far, in order.
func (s *Newcamd) Requests() []NewcamdRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]NewcamdRequest(nil), s.requests...)
}

// NewcamdCounts counts what happened at the server.
type NewcamdCounts struct {
	Logins     int // accepted
	Refused    int // wrong user or password
	BadKey     int // logins that did not decrypt under the port's key
	KeepAlives int // answered
	IdleClosed int // connections closed for SetMaxIdle
}

// Counts returns the counts so far.
func (s *Newcamd) Counts() NewcamdCounts {
	s.mu.Lock()
	defer s.mu.Unlock()
	return NewcamdCounts{Logins: s.logins, Refused: s.refused, BadKey: s.badKey, KeepAlives: s.keepAlives, IdleClosed: s.idleClosed}
}

func (s *Newcamd) handle(c net.Conn) {
	var random [newcamd.DESKeySize]byte
	rand.Read(random[:])
	if _, err := c.Write(random[:]); err != nil {
		return
	}
	buf := make([]byte, newcamd.MaxFrame)
	var out []byte
	send := func(codec *newcamd.Codec, m *newcamd.Message) bool {
		out, _ = codec.Append(out[:0], m)
		_, err := c.Write(out)
		return err == nil
	}
	lk := newcamd.NewCodec(newcamd.LoginKey(s.key, random))
	m, err := lk.Read(c, buf)
	if err != nil && !errors.Is(err, newcamd.ErrChecksum) {
		return // the client went away
	}
	var user, crypted string
	if err == nil && m.Cmd == newcamd.CmdLogin {
		user, crypted, err = newcamd.ParseLogin(m.Data)
	} else if err == nil {
		err = errors.New("not a login")
	}
	if err != nil {
		// A login that does not decrypt (or, one time in 256 under another key, decrypts to
		// garbage that passes the checksum) is not answered.
		s.mu.Lock()
		s.badKey++
		wait := s.badKeyWait
		s.mu.Unlock()
		select {
		case <-time.After(wait):
		case <-s.done:
		}
		return
	}
	if user != s.user || crypted != s.crypted {
		s.mu.Lock()
		s.refused++
		s.mu.Unlock()
		send(lk, &newcamd.Message{MsgID: m.MsgID, Cmd: newcamd.CmdLoginNAK})
		return
	}
	s.mu.Lock()
	s.logins++
	s.conns++
	userNo := byte(10 + s.conns)
	s.mu.Unlock()
	if !send(lk, &newcamd.Message{MsgID: m.MsgID, Cmd: newcamd.CmdLoginACK}) {
		return
	}
	sk := newcamd.NewCodec(newcamd.SessionKey(s.key, crypted))
	for {
		s.mu.Lock()
		idle := s.maxIdle
		s.mu.Unlock()
		if idle > 0 {
			c.SetReadDeadline(time.Now().Add(idle))
		} else {
			c.SetReadDeadline(time.Time{})
		}
		m, err := sk.Read(c, buf)
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				s.mu.Lock()
				s.idleClosed++
				s.mu.Unlock()
			}
			return
		}
		switch {
		case m.Cmd == newcamd.CmdCardDataReq:
			data, _ := newcamd.AppendCardData(nil, &newcamd.CardData{UserID: userNo, CAID: s.caid, Providers: []newcamd.Provider{{}}})
			if !send(sk, &newcamd.Message{MsgID: m.MsgID, Cmd: newcamd.CmdCardData, Data: data}) {
				return
			}
		case m.Cmd == newcamd.CmdKeepAlive:
			s.mu.Lock()
			s.keepAlives++
			s.mu.Unlock()
			if !send(sk, &newcamd.Message{MsgID: m.MsgID, Cmd: newcamd.CmdKeepAlive}) {
				return
			}
		case newcamd.IsECM(m.Cmd):
			section := m.Section()
			s.mu.Lock()
			req := m
			req.Data = append([]byte(nil), m.Data...)
			s.requests = append(s.requests, NewcamdRequest{Msg: req, Section: section, When: time.Now()})
			delay, answer := s.delay, s.answer
			s.mu.Unlock()
			cmd, cw, drop := answer(section)
			if drop {
				continue
			}
			if delay > 0 {
				select {
				case <-time.After(delay):
				case <-s.done:
					return
				}
			}
			a := newcamd.Message{MsgID: m.MsgID, Cmd: m.Cmd}
			if cmd == cs378x.CmdCW && (m.CAID == 0 || m.CAID == s.caid) {
				a.Flags, a.Data = 0x10, cw[:]
			}
			if !send(sk, &a) {
				return
			}
		case m.Cmd > 0x81 && m.Cmd < 0x92:
			// An EMM: OSCam answers each, with the flags 0x10 and no data.
			if !send(sk, &newcamd.Message{MsgID: m.MsgID, Cmd: m.Cmd, Flags: 0x10}) {
				return
			}
		}
	}
}
