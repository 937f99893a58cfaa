package srt

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// MessageSize is the payload of an SRT live-mode message this package sends: 7 TS packets,
// 1316 bytes, the library's default payload size for live mode (SRT_LIVE_DEF_PLSIZE in
// srt.h), the largest whole number of packets that fits an Ethernet MTU with SRT's headers.
const MessageSize = 7 * 188

// maxMessage is the largest payload a live-mode message may carry (SRT_LIVE_MAX_PLSIZE in
// srt.h: a 1500-byte MTU less the UDP, IP and SRT headers): a receive buffer keeps that much
// room for the next message, whatever the peer's payload size.
const maxMessage = 1456

// ErrNotBuilt is the error of every connection in a build without SRT (see the package doc).
var ErrNotBuilt = errors.New("this build has no SRT: build it with -tags srt (cgo and libsrt: apt-get install libsrt-openssl-dev pkg-config)")

// errLost is a connection that ended: the peer closed it, went silent past SRT's peer idle
// timeout, or the socket failed.
var errLost = errors.New("connection ended")

// ConnectError is a connection a caller could not make.
type ConnectError struct {
	Addr   string // the address called, redacted
	Reason string // the library's reason: "wrong password", "connection timeout"
}

func (e *ConnectError) Error() string {
	return fmt.Sprintf("%s: cannot connect: %s", e.Addr, e.Reason)
}

// linkStats are the library's own counts of a connection (srt_bstats, cumulative).
type linkStats struct {
	Lost          int64 // data packets found missing (receiver) or reported lost (sender)
	Retransmitted int64 // data packets retransmitted (sender) or received again (receiver)
	Dropped       int64 // data packets dropped too late to play (receiver) or to send (sender)
	Undecrypted   int64 // data packets that failed to decrypt (receiver)
	RTT           float64
}

func (s *linkStats) add(o linkStats) {
	s.Lost += o.Lost
	s.Retransmitted += o.Retransmitted
	s.Dropped += o.Dropped
	s.Undecrypted += o.Undecrypted
}

// transport is what the package needs of an SRT implementation: libsrt through cgo in a build
// with the srt tag, or a double in the tests of the Reader's and Writer's own logic.
type transport interface {
	// dial connects to a listener as a caller, until ctx is done; it fails with a
	// *ConnectError when the listener refuses or does not answer in time.
	dial(ctx context.Context, a *Address) (conn, error)
	// listen binds a listener's address.
	listen(a *Address) (listener, error)
}

type listener interface {
	// accept waits up to wait for a caller and returns its connection and address, or nil
	// and no error when none came.
	accept(wait time.Duration) (c conn, peer string, err error)
	close()
}

type conn interface {
	// recv receives whole messages into b, which has room for at least maxMessage bytes,
	// until b has no room for another or none is waiting; it waits up to wait for the
	// first. It returns the bytes, messages and TS packets (188-byte units of each message)
	// received, nothing and no error when nothing came in time, and errLost (wrapped in the
	// library's reason) when the connection is gone; bytes received before an error are
	// returned with it.
	recv(b []byte, wait time.Duration) (n, msgs, pkts int, err error)
	// send sends b as messages of at most size bytes without waiting: it returns the bytes
	// the library took; it stops short when its send buffer is full (no error) or the
	// connection is gone (errLost).
	send(b []byte, size int) (int, error)
	// connected reports whether the connection still stands.
	connected() bool
	// unsent returns the messages in the send buffer not yet acknowledged.
	unsent() int
	// peerLatency returns the latency the peer delivers with, as the handshake settled it:
	// how long it holds what it acknowledged before it hands it on.
	peerLatency() time.Duration
	stats() linkStats
	close()
}

// firstBackoff and maxBackoff bound the wait before a caller calls again after a lost
// connection or a failed call: the wait doubles from one to the other while calls keep
// failing, as an HTTP input's does.
const (
	firstBackoff = 100 * time.Millisecond
	maxBackoff   = 5 * time.Second
)

// backoff returns the wait before retry i (0 for the first).
func backoff(i int) time.Duration {
	d := firstBackoff
	for ; i > 0 && d < maxBackoff; i-- {
		d *= 2
	}
	return min(d, maxBackoff)
}

// sleep waits d, or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// poll is how long a goroutine of the package waits in the library before it looks at its
// context again, and how often a listener looks for callers while it serves one: it bounds
// how late a Close is seen and a second caller turned away.
const poll = 100 * time.Millisecond
