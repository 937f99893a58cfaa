package keyserver

import (
	"context"
	"net"
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

// Failed records a failure, one more in a row, and returns the backoff before the next attempt
// and whether the failure is the first in a row.
func (r *Redial) Failed(err error) (wait time.Duration, first bool) {
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
}

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
