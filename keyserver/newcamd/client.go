// Package newcamd is a client of the newcamd protocol (version 525), by which a card server
// such as OSCam answers ECMs with control words: Client logs in, asks for the card data of the
// port, sends each ECM section as a request and returns the answer's CW pair, or why there is
// none.
//
// A server serves one CA system per port, under a 14-byte DES key shared by the port's
// clients (DefaultDESKey unless configured otherwise). A wrong user name or password is told
// by the server (ErrLoginRefused); a wrong DES key only by a server that closes the
// connection, or stays silent, at the login. While idle the client sends keep-alives, which
// a server that disconnects idle clients needs (OSCam's clientmaxidle, unless its newcamd
// keepalive is on). This is the protocol as OSCam's newcamd module serves it, and as tsdecrypt
// and tvheadend speak it.
package newcamd

import (
	"cmp"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"syscall"
	"time"

	wire "github.com/tsdescramble/tsdescramble/internal/wire/newcamd"
	"github.com/tsdescramble/tsdescramble/keyserver"
)

// DefaultDESKey is the DES key of a server whose port names none, in hex: the key newcamd
// servers and clients use unless told otherwise.
const DefaultDESKey = "0102030405060708091011121314"

// DESKeySize is the size of a DES key: 28 hex digits.
const DESKeySize = wire.DESKeySize

// Errors of a request.
var (
	// ErrNotFound is the server's answer without a CW.
	ErrNotFound = fmt.Errorf("newcamd: %w", keyserver.ErrNotFound)
	// ErrTimeout is returned when the server did not answer an ECM within Config.Timeout.
	ErrTimeout = fmt.Errorf("newcamd: %w", keyserver.ErrTimeout)
	// ErrUnreachable is returned while the client waits to connect again after a connection
	// attempt failed.
	ErrUnreachable = fmt.Errorf("newcamd: the key server is unreachable, %w", keyserver.ErrNotSent)
	// ErrLoginRefused is the server's answer to a login it refuses: it knows no such user, the
	// password is another, or (OSCam) the reader of the port is not ready yet.
	ErrLoginRefused = errors.New("newcamd: the key server refused the login")
	// ErrNoLoginAnswer is returned when the server closes the connection at the login, or
	// does not answer it in time, as a server does that cannot decrypt it: the DES key is
	// another (or the server does not speak newcamd).
	ErrNoLoginAnswer = errors.New("newcamd: no answer to the login")
	// ErrDESKey is returned for a Config.DESKey that is not 14 bytes.
	ErrDESKey = errors.New("newcamd: the DES key must be 14 bytes (28 hex digits)")
)

// Config says how to reach a server.
type Config struct {
	Addr     string // host:port
	User     string
	Password string
	// DESKey is the port's 14-byte key; nil for DefaultDESKey.
	DESKey []byte
	// CAID and ProviderID, when not 0, go in every request's header. A server serves one CA
	// system per port, and takes the port's for a request whose header names none, as
	// OSCam's and tsdecrypt's clients send theirs; naming one asks a server that serves more.
	CAID       uint16
	ProviderID uint32
	// ClientID names the client in the login (0, OSCam's "generic", by default).
	ClientID uint16
	// Timeout bounds each ECM, from sending to its answer, and each connection with its login
	// (default 3 s). A request that times out closes the connection: the next connects again.
	Timeout time.Duration
	// MinBackoff and MaxBackoff bound the wait before connecting again after a connection
	// attempt or a login failed, doubling from the first to the second at each failure in a
	// row (defaults 100 ms, 10 s). Requests in the meantime fail at once, with the failure.
	MinBackoff, MaxBackoff time.Duration
	// KeepAlive is how long a connection stays idle before the client sends a keep-alive
	// (default DefaultKeepAlive); less than 0 sends none. A keep-alive that gets no answer
	// within Timeout closes the connection.
	KeepAlive time.Duration
}

// DefaultKeepAlive is the idle time before a keep-alive, well within OSCam's default
// clientmaxidle (120 s), after which it disconnects a newcamd client that sends nothing; it is
// tvheadend's interval too (cwc.c, CWC_KEEPALIVE_INTERVAL).
const DefaultKeepAlive = 30 * time.Second

// Client sends ECM requests to a newcamd server, one at a time, connecting and logging in when
// needed and again, after a backoff, when the connection fails. It is safe for concurrent
// use; requests are serialised.
type Client struct {
	cfg     Config
	key     wire.DESKey
	keyErr  error
	crypted string // the MD5-crypt of the password, sent at login, from which the session key comes

	mu         sync.Mutex
	conn       net.Conn
	codec      *wire.Codec // the session's
	buf        []byte
	out        []byte
	msgID      uint16
	card       wire.CardData
	idle       time.Time     // when the connection was last used
	stopKA     chan struct{} // closed when the connection's keep-alive must stop
	kaWG       sync.WaitGroup
	redial     *keyserver.Redial
	logins     int64
	keepAlives int64
}

// NewClient returns a client for cfg; it connects on the first request.
func NewClient(cfg Config) *Client {
	r := keyserver.NewRedial(cfg.Addr, cfg.Timeout, cfg.MinBackoff, cfg.MaxBackoff)
	cfg.Timeout, cfg.MinBackoff, cfg.MaxBackoff = r.Timeout, r.MinBackoff, r.MaxBackoff
	if cfg.KeepAlive == 0 {
		cfg.KeepAlive = DefaultKeepAlive
	}
	c := &Client{cfg: cfg, crypted: wire.Crypt(cfg.Password), buf: make([]byte, wire.MaxFrame), redial: r}
	switch len(cfg.DESKey) {
	case 0:
		k, _ := hex.DecodeString(DefaultDESKey)
		copy(c.key[:], k)
	case DESKeySize:
		copy(c.key[:], cfg.DESKey)
	default:
		c.keyErr = ErrDESKey
	}
	return c
}

// Request is an ECM to send.
type Request struct {
	Section   []byte // the ECM section, table_id first
	ServiceID uint16
	// CAID is the ECM's CA system: it does not go in the request (Config.CAID does), but an
	// answer without a CW to an ECM of another CA system than the port's says so.
	CAID uint16
	// ProviderID goes in the request's header unless Config.ProviderID does.
	ProviderID uint32
}

// maxSkipped bounds the messages read while waiting for one answer that are not it (late
// answers to requests that timed out, messages of extensions this client does not speak).
const maxSkipped = 32

// ECM sends the ECM of req and returns the server's CW pair: even, then odd (8 bytes each). An
// all-zero CW means the server gave none for that parity. The error is ErrNotFound or
// ErrTimeout when the server said so or kept silent; while a failed connection attempt's
// backoff runs, it wraps ErrUnreachable, ErrLoginRefused or ErrNoLoginAnswer; or a connection
// or protocol error. After a connection error or a timeout the next request connects again.
func (c *Client) ECM(ctx context.Context, req Request) (even, odd []byte, err error) {
	if c.keyErr != nil {
		return nil, nil, c.keyErr
	}
	m, err := wire.ECMRequest(req.Section)
	if err != nil {
		return nil, nil, err
	}
	if len(m.Data) > wire.MaxData {
		return nil, nil, fmt.Errorf("newcamd: an ECM of %d bytes, at most %d fit a request", len(req.Section), wire.MaxData+3)
	}
	m.ServiceID, m.CAID, m.ProviderID = req.ServiceID, c.cfg.CAID, req.ProviderID
	if c.cfg.ProviderID != 0 {
		m.ProviderID = c.cfg.ProviderID
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	// A connection the server closed while it was idle (a restart, its idle limit) is found
	// closed by the next request: that request connects again once, rather than fail.
	for retry := true; ; retry = false {
		reused := c.conn != nil
		if err := c.connect(ctx); err != nil {
			return nil, nil, err
		}
		a, err := c.exchange(ctx, &m)
		if err != nil {
			if retry && reused && isEOF(err) && ctx.Err() == nil {
				c.drop()
				continue
			}
			return nil, nil, c.fail(ctx, err)
		}
		switch len(a) {
		case 16:
			return append([]byte(nil), a[:8]...), append([]byte(nil), a[8:]...), nil
		case 0:
			if caid := cmp.Or(m.CAID, req.CAID); c.card.CAID != 0 && caid != 0 && caid != c.card.CAID {
				return nil, nil, fmt.Errorf("%w (the port serves CA system %#04x, the ECM is of %#04x)", ErrNotFound, c.card.CAID, caid)
			}
			return nil, nil, ErrNotFound
		}
		return nil, nil, c.fail(ctx, fmt.Errorf("newcamd: an answer of %d bytes, a CW pair is 16", len(a)))
	}
}

// exchange sends the ECM request m under the next message id and returns the data of its
// answer, which shares the client's buffer.
func (c *Client) exchange(ctx context.Context, m *wire.Message) ([]byte, error) {
	stop := c.deadline(ctx)
	defer stop()
	c.msgID++
	m.MsgID = c.msgID
	var err error
	if c.out, err = c.codec.Append(c.out[:0], m); err != nil {
		return nil, err
	}
	if _, err := c.conn.Write(c.out); err != nil {
		return nil, err
	}
	c.idle = time.Now()
	for range maxSkipped {
		a, err := c.codec.Read(c.conn, c.buf)
		if err != nil {
			return nil, err
		}
		if wire.IsECM(a.Cmd) && a.MsgID == m.MsgID {
			return a.Data, nil
		}
		// A keep-alive, a late answer, an extension's message.
	}
	return nil, fmt.Errorf("newcamd: %d messages without the answer", maxSkipped)
}

// Connect connects and logs in now, unless connected, so that the first ECM does not wait for
// the login; its error is the one the next request would meet during the backoff.
func (c *Client) Connect(ctx context.Context) error {
	if c.keyErr != nil {
		return c.keyErr
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.connect(ctx)
}

// Answer implements keyserver.Answerer.
func (c *Client) Answer(ctx context.Context, e keyserver.ECM) (even, odd []byte, err error) {
	return c.ECM(ctx, Request{Section: e.Section, ServiceID: e.ServiceID, CAID: e.CAID, ProviderID: e.ProviderID})
}

// CardData is what the server said of its port at the last login.
type CardData struct {
	CAID      uint16
	Providers []uint32
}

// CardData returns the card data of the last login, and whether there was one.
func (c *Client) CardData() (CardData, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.logins == 0 {
		return CardData{}, false
	}
	cd := CardData{CAID: c.card.CAID}
	for _, p := range c.card.Providers {
		cd.Providers = append(cd.Providers, p.ID)
	}
	return cd, true
}

// Counts returns the logins the server accepted and the keep-alives it answered.
func (c *Client) Counts() (logins, keepAlives int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.logins, c.keepAlives
}

// deadline bounds the connection's next exchange by Timeout and by ctx, and returns the
// function that stops watching ctx.
func (c *Client) deadline(ctx context.Context) func() bool {
	deadline := time.Now().Add(c.cfg.Timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	conn := c.conn
	conn.SetDeadline(deadline)
	return context.AfterFunc(ctx, func() { conn.SetDeadline(time.Now()) })
}

// connect dials the server and logs in unless connected, after the backoff of the failures
// before.
func (c *Client) connect(ctx context.Context) error {
	if c.conn != nil {
		return nil
	}
	if wait, err := c.redial.Backoff(); err != nil {
		if errors.Is(err, ErrLoginRefused) || errors.Is(err, ErrNoLoginAnswer) {
			return err // as it came: the server was reached, and would answer the same
		}
		return fmt.Errorf("%w (%v); next attempt in %v", ErrUnreachable, err, wait.Round(time.Millisecond))
	}
	conn, err := c.redial.Dial(ctx)
	if err != nil {
		c.redial.Failed(err)
		return fmt.Errorf("newcamd: connecting to the server: %w; %w", err, keyserver.ErrNotSent)
	}
	c.conn = conn
	if err := c.login(ctx); err != nil {
		conn.Close()
		c.conn = nil
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if errors.Is(err, ErrLoginRefused) || errors.Is(err, ErrNoLoginAnswer) {
			c.redial.Rejected(err)
		} else {
			c.redial.Failed(err)
		}
		return err
	}
	c.redial.Connected()
	c.logins++
	c.idle = time.Now()
	if c.cfg.KeepAlive > 0 {
		c.stopKA = make(chan struct{})
		c.kaWG.Add(1)
		go c.keepAlive(conn, c.stopKA)
	}
	return nil
}

// login reads the server's random bytes, logs in under the login key and asks for the card
// data under the session key.
func (c *Client) login(ctx context.Context) error {
	stop := c.deadline(ctx)
	defer stop()
	// A server that cannot decrypt the login, under another DES key, closes the connection
	// (OSCam after 3 s) or says nothing.
	noAnswer := func(err error) error {
		var ne net.Error
		switch {
		case isEOF(err):
			return fmt.Errorf("%w: the key server closed the connection (a wrong DES key?)", ErrNoLoginAnswer)
		case errors.As(err, &ne) && ne.Timeout():
			return fmt.Errorf("%w within %v (a wrong DES key?)", ErrNoLoginAnswer, c.cfg.Timeout)
		case errors.Is(err, wire.ErrChecksum):
			return fmt.Errorf("%w that decrypts (a wrong DES key?)", ErrNoLoginAnswer)
		}
		return fmt.Errorf("newcamd: logging in: %w", err)
	}
	random, err := wire.ReadRandom(c.conn)
	if err != nil {
		return fmt.Errorf("newcamd: the server sent no greeting (not a newcamd server?): %w", err)
	}
	lk := wire.NewCodec(wire.LoginKey(c.key, random))
	c.msgID = 0
	c.out, err = lk.Append(c.out[:0], &wire.Message{ServiceID: c.cfg.ClientID, Cmd: wire.CmdLogin, Data: wire.LoginData(c.cfg.User, c.crypted)})
	if err != nil {
		return err
	}
	if _, err := c.conn.Write(c.out); err != nil {
		return noAnswer(err)
	}
	m, err := lk.Read(c.conn, c.buf)
	if err != nil {
		return noAnswer(err)
	}
	switch m.Cmd {
	case wire.CmdLoginACK:
	case wire.CmdLoginNAK:
		return fmt.Errorf("%w of user %q (wrong user name or password?)", ErrLoginRefused, c.cfg.User)
	default:
		return fmt.Errorf("newcamd: an answer to the login with command %#02x", m.Cmd)
	}
	c.codec = wire.NewCodec(wire.SessionKey(c.key, c.crypted))
	c.msgID++
	if c.out, err = c.codec.Append(c.out[:0], &wire.Message{MsgID: c.msgID, Cmd: wire.CmdCardDataReq}); err != nil {
		return err
	}
	if _, err := c.conn.Write(c.out); err != nil {
		return fmt.Errorf("newcamd: asking for the card data: %w", err)
	}
	for range maxSkipped {
		m, err := c.codec.Read(c.conn, c.buf)
		if err != nil {
			return fmt.Errorf("newcamd: reading the card data: %w", err)
		}
		if m.Cmd != wire.CmdCardData {
			continue
		}
		cd, err := wire.ParseCardData(m.Data)
		if err != nil {
			return err
		}
		c.card = cd
		return nil
	}
	return fmt.Errorf("newcamd: %d messages without the card data", maxSkipped)
}

// isEOF reports whether err is the end of the connection: closed by the server, or reset.
func isEOF(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET)
}

// keepAlive sends a keep-alive on conn whenever it has been idle for KeepAlive, until stop
// is closed or the connection is another; one without an answer in time closes it.
func (c *Client) keepAlive(conn net.Conn, stop chan struct{}) {
	defer c.kaWG.Done()
	t := time.NewTimer(c.cfg.KeepAlive)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		c.mu.Lock()
		if c.conn != conn {
			c.mu.Unlock()
			return
		}
		wait := c.cfg.KeepAlive - time.Since(c.idle)
		if wait <= 0 {
			if err := c.sendKeepAlive(); err != nil {
				c.drop()
				c.mu.Unlock()
				return
			}
			c.keepAlives++
			c.idle = time.Now()
			wait = c.cfg.KeepAlive
		}
		c.mu.Unlock()
		t.Reset(wait)
	}
}

// sendKeepAlive sends a keep-alive and reads the server's.
func (c *Client) sendKeepAlive() error {
	stop := c.deadline(context.Background())
	defer stop()
	c.msgID++
	var err error
	if c.out, err = c.codec.Append(c.out[:0], &wire.Message{MsgID: c.msgID, Cmd: wire.CmdKeepAlive}); err != nil {
		return err
	}
	if _, err := c.conn.Write(c.out); err != nil {
		return err
	}
	for range maxSkipped {
		m, err := c.codec.Read(c.conn, c.buf)
		if err != nil {
			return err
		}
		if m.Cmd == wire.CmdKeepAlive {
			return nil
		}
	}
	return fmt.Errorf("newcamd: %d messages without the keep-alive's answer", maxSkipped)
}

// drop closes the connection and stops its keep-alive; the next request connects again.
func (c *Client) drop() {
	if c.stopKA != nil {
		close(c.stopKA)
		c.stopKA = nil
	}
	c.conn.Close()
	c.conn = nil
	c.redial.Lost()
}

// fail closes the connection after an error and returns the error to report.
func (c *Client) fail(ctx context.Context, err error) error {
	c.drop()
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
	if isEOF(err) {
		return fmt.Errorf("newcamd: the key server closed the connection: %w", err)
	}
	return err
}

// State returns where the connection to the server stands; it may be called from any
// goroutine, while a request waits.
func (c *Client) State() keyserver.ConnState { return c.redial.State() }

// Close closes the connection, if any, and waits for its keep-alive to stop.
func (c *Client) Close() error {
	c.mu.Lock()
	var err error
	if c.conn != nil {
		if c.stopKA != nil {
			close(c.stopKA)
			c.stopKA = nil
		}
		err = c.conn.Close()
		c.conn = nil
	}
	c.mu.Unlock()
	c.kaWG.Wait()
	return err
}
