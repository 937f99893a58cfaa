package camdouble

import (
	"io"
	"net"
	"testing"
	"time"

	"github.com/tsdescramble/tsdescramble/internal/wire/cs378x"
)

// CS378x is the server side of the cs378x protocol for tests: it answers each ECM request with
// what Answer says, after Delay.
type CS378x struct {
	tcpServer

	codec *cs378x.Codec

	answers
	requests []Request
	badCRC   int
}

// Request is an ECM request the server received.
type Request struct {
	Msg  cs378x.Message // Data is a copy
	Raw  []byte         // the request as it came: token and encrypted message
	When time.Time
}

// NewCS378x starts a server on a loopback port for the account user, password; the test's
// cleanup stops it.
func NewCS378x(t testing.TB, user, password string) *CS378x {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return start(t, ln, user, password)
}

func start(t testing.TB, ln net.Listener, user, password string) *CS378x {
	s := &CS378x{codec: cs378x.NewCodec(user, password), answers: answers{answer: TestCAAnswer}}
	s.serve(ln, s.handle)
	t.Cleanup(s.Stop)
	return s
}

// AnswerFunc decides the answer to an ECM: the command (cs378x.CmdCW with the CW pair, or
// cs378x.CmdNotFound, cs378x.CmdNoCard), or drop true to send nothing.
type AnswerFunc func(ecm []byte) (cmd byte, cw [16]byte, drop bool)

// TestCAAnswer answers as a card of the test CA system: the pair a test ECM carries, not found
// for anything else. It is a server's answer until SetAnswer.
func TestCAAnswer(ecm []byte) (byte, [16]byte, bool) {
	cw, err := AnswerECM(ecm)
	if err != nil {
		return cs378x.CmdNotFound, cw, false
	}
	return cs378x.CmdCW, cw, false
}

// Requests returns the ECM requests received so far, in order.
func (s *CS378x) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// BadCRC returns the number of requests whose header CRC was not that of their data.
func (s *CS378x) BadCRC() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.badCRC
}

func (s *CS378x) handle(c net.Conn) {
	buf := make([]byte, cs378x.MaxMessage+4)
	var out []byte
	rec := &recorder{r: c}
	for {
		rec.b = rec.b[:0]
		m, err := s.codec.Read(rec, buf)
		if err != nil {
			return // another account's token, or the client went away
		}
		if m.Cmd != cs378x.CmdECM {
			continue // EMMs: nothing to answer
		}
		s.mu.Lock()
		if !m.CRCOK() {
			s.badCRC++
		}
		msg := m
		msg.Data = append([]byte(nil), m.Data...)
		s.requests = append(s.requests, Request{Msg: msg, Raw: append([]byte(nil), rec.b...), When: time.Now()})
		delay, answer := s.delay, s.answer
		s.mu.Unlock()
		cmd, cw, drop := answer(msg.Data)
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
		ans := cs378x.Message{Cmd: cmd, ServiceID: m.ServiceID, CAID: m.CAID, ProviderID: m.ProviderID,
			MsgID: m.MsgID, ECMPID: m.ECMPID}
		if cmd == cs378x.CmdCW {
			ans.Data = cw[:]
		}
		out, _ = s.codec.Append(out[:0], &ans)
		if _, err := c.Write(out); err != nil {
			return
		}
	}
}

// NewCS378xAt starts a server like NewCS378x on the given loopback address (a server coming
// back on the port of one that stopped).
func NewCS378xAt(t testing.TB, addr, user, password string) *CS378x {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	return start(t, ln, user, password)
}

// recorder keeps the bytes read through it.
type recorder struct {
	r io.Reader
	b []byte
}

func (r *recorder) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	r.b = append(r.b, p[:n]...)
	return n, err
}
