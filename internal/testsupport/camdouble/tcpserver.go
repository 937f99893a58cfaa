package camdouble

import (
	"net"
	"sync"
	"time"
)

// tcpServer is what the doubles share: a loopback listener, a goroutine per connection, a Stop
// that closes them all and waits for the goroutines, and a Restart that goes away for a while.
type tcpServer struct {
	Addr string // 127.0.0.1:port

	done   chan struct{} // closed by Stop
	handle func(net.Conn)

	connMu sync.Mutex
	ln     net.Listener
	conns  map[net.Conn]bool
	wg     sync.WaitGroup
}

// serve accepts connections on ln, each handled by handle in a goroutine of its own, until
// Stop; a connection is closed when handle returns.
func (s *tcpServer) serve(ln net.Listener, handle func(net.Conn)) {
	s.Addr, s.ln, s.done, s.conns, s.handle = ln.Addr().String(), ln, make(chan struct{}), map[net.Conn]bool{}, handle
	s.accept(ln)
}

func (s *tcpServer) accept(ln net.Listener) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.connMu.Lock()
			s.conns[c] = true
			s.connMu.Unlock()
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				defer func() {
					c.Close()
					s.connMu.Lock()
					delete(s.conns, c)
					s.connMu.Unlock()
				}()
				s.handle(c)
			}()
		}
	}()
}

// closeAll closes the listener and every connection.
func (s *tcpServer) closeAll() {
	s.ln.Close()
	for c := range s.conns {
		c.Close()
	}
}

// Stop closes the listener and every connection, and waits for the server's goroutines.
func (s *tcpServer) Stop() {
	s.connMu.Lock()
	select {
	case <-s.done:
	default:
		close(s.done)
	}
	s.closeAll()
	s.connMu.Unlock()
	s.wg.Wait()
}

// Restart closes the listener and every connection, as a server that goes away (a crash, a
// restart), and after down listens again on the same address, as one that comes back, unless
// Stop came first. With down 0 the listener stays: the connections close, and a client that
// connects again at once is accepted. It may be called from a handler, in a goroutine of its
// own: it returns once the server listens again, or with the error that prevented it.
func (s *tcpServer) Restart(down time.Duration) error {
	s.connMu.Lock()
	if down <= 0 {
		for c := range s.conns {
			c.Close()
		}
		s.connMu.Unlock()
		return nil
	}
	s.closeAll()
	s.connMu.Unlock()
	select {
	case <-time.After(down):
	case <-s.done:
		return nil
	}
	s.connMu.Lock()
	defer s.connMu.Unlock()
	select {
	case <-s.done:
		return nil
	default:
	}
	ln, err := net.Listen("tcp", s.Addr)
	if err != nil {
		return err
	}
	s.ln = ln
	s.accept(ln)
	return nil
}

// answers is what decides a double's answers to ECMs, which a test may change while the double
// runs: who gives the CWs of an ECM (a cs378x.CmdCW answer; for any other, a double answers
// as its protocol says a card that found nothing does) and how long the double waits before
// each answer. Its mu guards the rest of the double's state too.
type answers struct {
	mu     sync.Mutex
	answer AnswerFunc
	delay  time.Duration
}

// SetAnswer makes f decide the answers from now on.
func (a *answers) SetAnswer(f AnswerFunc) {
	a.mu.Lock()
	a.answer = f
	a.mu.Unlock()
}

// SetDelay makes the server wait d before each answer.
func (a *answers) SetDelay(d time.Duration) {
	a.mu.Lock()
	a.delay = d
	a.mu.Unlock()
}
