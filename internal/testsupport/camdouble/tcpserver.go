package camdouble

import (
	"net"
	"sync"
)

// tcpServer is what the doubles share: a loopback listener, a goroutine per connection, and a
// Stop that closes them all and waits for the goroutines.
type tcpServer struct {
	Addr string // 127.0.0.1:port

	ln   net.Listener
	done chan struct{} // closed by Stop

	connMu sync.Mutex
	conns  map[net.Conn]bool
	wg     sync.WaitGroup
}

// serve accepts connections on ln, each handled by handle in a goroutine of its own, until
// Stop; a connection is closed when handle returns.
func (s *tcpServer) serve(ln net.Listener, handle func(net.Conn)) {
	s.Addr, s.ln, s.done, s.conns = ln.Addr().String(), ln, make(chan struct{}), map[net.Conn]bool{}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := s.ln.Accept()
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
				handle(c)
			}()
		}
	}()
}

// Stop closes the listener and every connection, and waits for the server's goroutines.
func (s *tcpServer) Stop() {
	s.ln.Close()
	s.connMu.Lock()
	select {
	case <-s.done:
	default:
		close(s.done)
	}
	for c := range s.conns {
		c.Close()
	}
	s.connMu.Unlock()
	s.wg.Wait()
}
