// Package cs378x is a client of the cs378x protocol (camd35 over TCP), by which a card server
// such as OSCam answers ECMs with control words: Client sends each ECM section as a request and
// returns the answer's CW pair, or why there is none.
//
// The protocol has no login: every message is encrypted with AES-128 under the MD5 of the
// password and starts with a token derived from the user name, and a server that does not know
// the user, or holds another password, does not answer or answers garbage. A wrong user name is
// told by ErrToken, a wrong password only by answers that make no sense. This is the protocol
// as OSCam's camd35 module and tsdecrypt's camd-cs378x.c speak it.
package cs378x

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	wire "github.com/tsdescramble/tsdescramble/internal/wire/cs378x"
	"github.com/tsdescramble/tsdescramble/keyserver"
)

// Errors of a request that the server answered.
var (
	// ErrNotFound is the server's answer 0x44: it found no CW for the ECM.
	ErrNotFound = fmt.Errorf("cs378x: %w", keyserver.ErrNotFound)
	// ErrNoCard is the server's answer 0x08: it has no card or reader for the CA system.
	ErrNoCard = fmt.Errorf("cs378x: %w", keyserver.ErrNoCard)
	// ErrTimeout is returned when the server did not answer an ECM within Config.Timeout.
	ErrTimeout = fmt.Errorf("cs378x: %w", keyserver.ErrTimeout)
	// ErrUnreachable is returned while the client waits to connect again after a connection
	// attempt failed.
	ErrUnreachable = fmt.Errorf("cs378x: the key server is unreachable, %w", keyserver.ErrNotSent)
	// ErrToken is returned for an answer that starts with another account's token: the
	// server does not know Config.User, or does not speak cs378x.
	ErrToken = wire.ErrToken
)

// Config says how to reach a server.
type Config struct {
	Addr     string // host:port
	User     string
	Password string
	// Timeout bounds each ECM, from sending to its answer (default 3 s). A request that
	// times out closes the connection: an answer that comes later would be out of step.
	Timeout time.Duration
	// MinBackoff and MaxBackoff bound the wait before connecting again after a connection
	// attempt failed, doubling from the first to the second at each failure in a row
	// (defaults 100 ms, 10 s). Requests in the meantime fail at once with ErrUnreachable, so
	// that a server that is down costs a stream nothing but its keys.
	MinBackoff, MaxBackoff time.Duration
}

// Client sends ECM requests to a cs378x server, one at a time, connecting when needed and
// again, after a backoff, when the connection fails. It is safe for concurrent use; requests
// are serialised.
type Client struct {
	cfg   Config
	codec *wire.Codec

	mu     sync.Mutex
	conn   net.Conn
	buf    []byte
	out    []byte
	msgID  uint16
	redial *keyserver.Redial // the backoff after failed connection attempts
}

// NewClient returns a client for cfg; it connects on the first request.
func NewClient(cfg Config) *Client {
	r := keyserver.NewRedial(cfg.Addr, cfg.Timeout, cfg.MinBackoff, cfg.MaxBackoff)
	cfg.Timeout, cfg.MinBackoff, cfg.MaxBackoff = r.Timeout, r.MinBackoff, r.MaxBackoff
	return &Client{cfg: cfg, codec: wire.NewCodec(cfg.User, cfg.Password), buf: make([]byte, wire.MaxMessage+4), redial: r}
}

// Request is an ECM to send.
type Request struct {
	Section    []byte // the ECM section, table_id first; at most 255 bytes
	ServiceID  uint16
	CAID       uint16
	ProviderID uint32
	PID        uint16 // the ECM PID
}

// maxSkipped bounds the messages read while waiting for one answer that are not it (EMM
// requests, late answers to requests that timed out).
const maxSkipped = 32

// ECM sends the ECM of req and returns the server's CW pair: even, then odd (8 bytes each). An
// all-zero CW means the server gave none for that parity. The error is ErrNotFound, ErrNoCard or
// ErrTimeout when the server said so or kept silent, ErrUnreachable while a failed connection
// attempt's backoff runs, ErrToken when the answer is another account's, or a connection error;
// after a connection error, a timeout or another account's answer, the next request connects
// again.
func (c *Client) ECM(ctx context.Context, req Request) (even, odd []byte, err error) {
	if len(req.Section) > wire.MaxData {
		return nil, nil, fmt.Errorf("cs378x: an ECM of %d bytes, at most %d fit a request", len(req.Section), wire.MaxData)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.connect(ctx); err != nil {
		return nil, nil, err
	}
	c.msgID++
	id := c.msgID
	c.out, err = c.codec.Append(c.out[:0], &wire.Message{Cmd: wire.CmdECM, ServiceID: req.ServiceID, CAID: req.CAID,
		ProviderID: req.ProviderID, MsgID: id, ECMPID: req.PID, Data: req.Section})
	if err != nil {
		return nil, nil, err
	}
	deadline := time.Now().Add(c.cfg.Timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	conn := c.conn
	conn.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Now()) })
	defer stop()
	if _, err := c.conn.Write(c.out); err != nil {
		return nil, nil, c.fail(ctx, err)
	}
	for range maxSkipped {
		m, err := c.codec.Read(c.conn, c.buf)
		if err != nil {
			return nil, nil, c.fail(ctx, err)
		}
		switch {
		case m.Cmd == wire.CmdEMMReq:
			continue // the server asks for EMMs: we send none
		case m.MsgID != id:
			continue // the answer to a request that timed out
		case m.Cmd == wire.CmdCW:
			if len(m.Data) < 16 {
				return nil, nil, fmt.Errorf("cs378x: an answer of %d bytes, a CW pair is 16", len(m.Data))
			}
			return append([]byte(nil), m.Data[:8]...), append([]byte(nil), m.Data[8:16]...), nil
		case m.Cmd == wire.CmdNotFound:
			return nil, nil, ErrNotFound
		case m.Cmd == wire.CmdNoCard:
			return nil, nil, ErrNoCard
		default:
			return nil, nil, c.fail(ctx, fmt.Errorf("cs378x: an answer with unknown command %#02x (wrong password?)", m.Cmd))
		}
	}
	return nil, nil, c.fail(ctx, fmt.Errorf("cs378x: %d messages without the answer", maxSkipped))
}

// Answer implements keyserver.Answerer.
func (c *Client) Answer(ctx context.Context, e keyserver.ECM) (even, odd []byte, err error) {
	return c.ECM(ctx, Request{Section: e.Section, ServiceID: e.ServiceID, CAID: e.CAID, ProviderID: e.ProviderID, PID: e.PID})
}

// connect dials the server unless connected, after the backoff of the failures before.
func (c *Client) connect(ctx context.Context) error {
	if c.conn != nil {
		return nil
	}
	if wait, err := c.redial.Backoff(); err != nil {
		return fmt.Errorf("%w (%v); next attempt in %v", ErrUnreachable, err, wait.Round(time.Millisecond))
	}
	conn, err := c.redial.Dial(ctx)
	if err != nil {
		c.redial.Failed(err)
		return fmt.Errorf("cs378x: connecting to the server: %w; %w", err, keyserver.ErrNotSent)
	}
	c.conn = conn
	c.redial.Connected()
	return nil
}

// fail closes the connection after an error and returns the error to report; the next request
// connects again.
func (c *Client) fail(ctx context.Context, err error) error {
	c.conn.Close()
	c.conn = nil
	c.redial.Lost()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if d, ok := ctx.Deadline(); ok && !time.Now().Before(d) {
		return context.DeadlineExceeded // the connection's deadline was the context's
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return ErrTimeout
	}
	return err
}

// State returns where the connection to the server stands; it may be called from any
// goroutine, while a request waits.
func (c *Client) State() keyserver.ConnState { return c.redial.State() }

// Close closes the connection, if any.
func (c *Client) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn == nil {
		return nil
	}
	err := c.conn.Close()
	c.conn = nil
	return err
}
