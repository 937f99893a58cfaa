package keyserver

import (
	"context"
	"net"
	"sync/atomic"
	"time"
)

// Defaults of a Redial's bounds.
const (
	DefaultTimeout    = 3 * time.Second
	DefaultMinBackoff = 100 * time.Millisecond
	DefaultMaxBackoff = 10 * time.Second
)

// Redial is how a key server client connects, and connects again: each attempt is bounded in
// time, and after a failure the next attempt waits a backoff that doubles at each failure in a
// row, so that a server that is down is not hammered and one that comes back is found soon.
// A client that connects when a request needs one (cs378x, newcamd) asks Backoff whether it
// may try yet; one that runs a connection after another (DVBAPI) waits out each backoff with
// Wait. It is not safe for concurrent use: its client serialises the calls.
type Redial struct {
	Addr string // host:port
	// Timeout bounds each connection attempt.
	Timeout time.Duration
	// MinBackoff is the wait after the first failure in a row; it doubles at each next one,
	// up to MaxBackoff.
	MinBackoff, MaxBackoff time.Duration

	failures int       // in a row, since the last Connected
	retryAt  time.Time // when the next attempt may be made
	lastErr  error     // the last failure's error, nil after Connected
	dialer   net.Dialer
	state    atomic.Int32 // a ConnState, read from any goroutine (State)
}

// ConnState is where a client's connection to its key server stands, as Redial follows it.
type ConnState int32

const (
	// Connecting: no connection yet, or the last one ended and the next is to be made (at
	// the next request, for a client that connects when one needs it).
	Connecting ConnState = iota
	// Connected: a connection is up, its handshake (a login) done.
	Connected
	// Refused: the server was reached and turned the client away (a login refused or never
	// answered): trying again brings the same answer until the credentials are mended.
	Refused
	// Down: the server could not be reached (connection refused, no answer in time); the
	// client tries again after its backoff.
	Down
)

// ConnStates are the states in the order a metric lists them.
var ConnStates = []ConnState{Connecting, Connected, Refused, Down}

// String names the state as a metric's label does: connecting, connected, refused or down.
func (s ConnState) String() string {
	switch s {
	case Connected:
		return "connected"
	case Refused:
		return "refused"
	case Down:
		return "down"
	}
	return "connecting"
}

// NewRedial returns a Redial for addr; a bound of 0 or less takes its default (DefaultTimeout,
// DefaultMinBackoff, DefaultMaxBackoff), and a MaxBackoff below MinBackoff becomes the larger
// of DefaultMaxBackoff and MinBackoff.
func NewRedial(addr string, timeout, minBackoff, maxBackoff time.Duration) *Redial {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	if minBackoff <= 0 {
		minBackoff = DefaultMinBackoff
	}
	if maxBackoff < minBackoff {
		maxBackoff = max(DefaultMaxBackoff, minBackoff)
	}
	return &Redial{Addr: addr, Timeout: timeout, MinBackoff: minBackoff, MaxBackoff: maxBackoff}
}

// Dial connects to Addr over TCP within Timeout (or ctx, if it ends first). It counts nothing:
// the caller says how the attempt ended with Failed or Connected, once its handshake is done.
func (r *Redial) Dial(ctx context.Context) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, r.Timeout)
	defer cancel()
	return r.dialer.DialContext(ctx, "tcp", r.Addr)
}

// Failed records a failure to reach the server, one more in a row (the state is Down), and
// returns the backoff before the next attempt and whether the failure is the first in a row.
func (r *Redial) Failed(err error) (wait time.Duration, first bool) {
	r.state.Store(int32(Down))
	return r.failed(err)
}

// Rejected is Failed for a server that was reached and turned the client away (the state is
// Refused): a login refused, or never answered.
func (r *Redial) Rejected(err error) (wait time.Duration, first bool) {
	r.state.Store(int32(Refused))
	return r.failed(err)
}

func (r *Redial) failed(err error) (wait time.Duration, first bool) {
	wait = min(r.MinBackoff<<min(r.failures, 16), r.MaxBackoff)
	first = r.failures == 0
	r.failures++
	r.lastErr = err
	r.retryAt = time.Now().Add(wait)
	return wait, first
}

// Connected ends a run of failures: the next failure waits MinBackoff again.
func (r *Redial) Connected() {
	r.failures, r.lastErr = 0, nil
	r.state.Store(int32(Connected))
}

// Lost records that a connection that was up has ended (the server closed it, an exchange on it
// failed): the client is to connect again. A failure of that attempt makes the state Down.
func (r *Redial) Lost() {
	if ConnState(r.state.Load()) == Connected {
		r.state.Store(int32(Connecting))
	}
}

// State returns where the connection stands. Unlike the other methods, it may be called from
// any goroutine.
func (r *Redial) State() ConnState { return ConnState(r.state.Load()) }

// Backoff returns, while the backoff after a failure runs, the time left and the failure's
// error; else 0 and nil.
func (r *Redial) Backoff() (time.Duration, error) {
	if wait := time.Until(r.retryAt); r.lastErr != nil && wait > 0 {
		return wait, r.lastErr
	}
	return 0, nil
}

// Wait waits until the next attempt may be made, or ctx is done; it returns ctx's error then.
func (r *Redial) Wait(ctx context.Context) error {
	t := time.NewTimer(time.Until(r.retryAt))
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
