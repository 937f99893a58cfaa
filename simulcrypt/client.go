// Package simulcrypt is the SCS side of the DVB SimulCrypt ECMG⇔SCS protocol (ETSI TS 103 197,
// protocol versions 2 and 3): a Client opens a channel and one ECM stream to an ECM generator
// over TCP, provides the control words of each crypto period and receives the ECMs built from
// them. What the ECMG says of the channel comes as ChannelParams, its refusals as *ErrorReply
// with their error_status in the specification's words, and the loss of the connection as an
// error that wraps ErrLost.
package simulcrypt

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	wire "github.com/tsdescramble/tsdescramble/internal/wire/simulcrypt"
)

// Config says how a Client reaches its ECMG and what it asks of it.
type Config struct {
	// Addr is the ECMG's HOST:PORT.
	Addr string
	// Version is the protocol version, 2 or 3 (0 means 2). Both carry ECM_id in stream_setup.
	Version uint8
	// SuperCASID is the Super_CAS_id: the CA_system_id in its top 16 bits, the
	// CA_subsystem_id in its low 16.
	SuperCASID uint32
	// Channel, Stream and ECMID are the ECM_channel_id, ECM_stream_id and ECM_id to use.
	Channel, Stream, ECMID uint16
	// NominalCPDuration is the crypto period told in stream_setup (in units of 100 ms on the wire).
	NominalCPDuration time.Duration
	// Timeout bounds connecting, each write and each awaited reply (0: 5 s).
	Timeout time.Duration
	// KeepAlive is how often a channel_test goes out; the channel counts as lost when nothing
	// has come from the ECMG for KeepAlive+Timeout (0: 10 s; negative: no channel_test).
	KeepAlive time.Duration
}

func (c *Config) version() uint8 {
	if c.Version == 0 {
		return 2
	}
	return c.Version
}

func (c *Config) timeout() time.Duration {
	if c.Timeout <= 0 {
		return 5 * time.Second
	}
	return c.Timeout
}

// ErrLost is wrapped by the errors that say the connection to the ECMG is gone.
var ErrLost = errors.New("connection to the ECMG lost")

// Client is the SCS end of one ECMG⇔SCS channel carrying one ECM stream. Dial sets both up;
// Provide sends the control words of a crypto period and the ECM comes back on ECMs. Errors
// the ECMG reports after set-up, and the loss of the connection, come on Errors; Done is
// closed when the connection is gone. A Client's methods may be called from any goroutine.
type Client struct {
	cfg     Config
	version uint8
	conn    net.Conn
	params  ChannelParams

	wmu     sync.Mutex
	replies chan wire.Message // channel_status, stream_status, stream_close_response
	ecms    chan ECM
	errs    chan error
	done    chan struct{}
	closing chan struct{}
	once    sync.Once
	err     error // why reading ended, set before done is closed

	lastRecv      atomic.Int64 // unix nanoseconds of the last message received
	statusMu      sync.Mutex
	channelStatus []byte // the last channel_status and stream_status received, echoed to tests
	streamStatus  []byte
	dropped       atomic.Int64
	why           atomic.Pointer[error] // set by keepAlive before it closes the connection
	answered      atomic.Int64          // channel_test and stream_test of the ECMG answered
}

// Dial connects to the ECMG, sets up the channel (channel_setup, channel_status) and the
// stream (stream_setup, stream_status), and returns a Client ready for Provide. An ECMG that
// answers with channel_error or stream_error gives an *ErrorReply.
func Dial(ctx context.Context, cfg Config) (*Client, error) {
	if v := cfg.version(); v != 2 && v != 3 {
		return nil, fmt.Errorf("simulcrypt: protocol version %d: want 2 or 3", v)
	}
	to := cfg.timeout()
	d := net.Dialer{Timeout: to}
	conn, err := d.DialContext(ctx, "tcp", cfg.Addr)
	if err != nil {
		return nil, err
	}
	c := &Client{cfg: cfg, version: cfg.version(), conn: conn,
		replies: make(chan wire.Message, 8), ecms: make(chan ECM, 64), errs: make(chan error, 16),
		done: make(chan struct{}), closing: make(chan struct{})}
	c.lastRecv.Store(time.Now().UnixNano())
	go c.read()

	fail := func(err error) (*Client, error) {
		c.shut()
		return nil, err
	}
	if err := c.send(wire.NewChannelSetup(c.version, cfg.Channel, cfg.SuperCASID)); err != nil {
		return fail(err)
	}
	m, err := c.await(ctx, wire.ChannelStatus)
	if err != nil {
		return fail(fmt.Errorf("channel_setup: %w", err))
	}
	if c.params, err = parseChannelStatus(&m); err != nil {
		return fail(err)
	}
	cp := uint16(min(cfg.NominalCPDuration/(100*time.Millisecond), 0xFFFF))
	if err := c.send(wire.NewStreamSetup(c.version, cfg.Channel, cfg.Stream, cfg.ECMID, cp)); err != nil {
		return fail(err)
	}
	if _, err := c.await(ctx, wire.StreamStatus); err != nil {
		return fail(fmt.Errorf("stream_setup: %w", err))
	}
	if cfg.KeepAlive >= 0 {
		go c.keepAlive()
	}
	return c, nil
}

// Params returns what the ECMG said of the channel in its channel_status.
func (c *Client) Params() ChannelParams { return c.params }

// ECMs delivers the ECM_responses, in the order they came.
func (c *Client) ECMs() <-chan ECM { return c.ecms }

// Errors delivers the channel_error and stream_error replies (as *ErrorReply) and the loss of
// the connection (wrapping ErrLost). It holds 16; those that find it full are counted by Dropped.
func (c *Client) Errors() <-chan error { return c.errs }

// Dropped returns how many errors found Errors full.
func (c *Client) Dropped() int64 { return c.dropped.Load() }

// Done is closed when the connection is gone; Err then says why.
func (c *Client) Done() <-chan struct{} { return c.done }

// Err returns why the connection ended, once Done is closed.
func (c *Client) Err() error {
	select {
	case <-c.done:
		return c.err
	default:
		return nil
	}
}

// CPCW is one CP_CW_combination: a crypto period's number and its control word.
type CPCW struct {
	CP uint16
	CW []byte
}

// Provide sends the CW_provision of crypto period cp: the CP_CW_combinations cws, the period's
// duration when not 0, and the access criteria when not empty. The ECM comes on ECMs.
func (c *Client) Provide(cp uint16, cws []CPCW, duration time.Duration, accessCriteria []byte) error {
	d := uint16(min(duration/(100*time.Millisecond), 0xFFFF))
	wcws := make([]wire.CPCW, len(cws)) // the same fields: the codec's own type keeps it free of this package
	for i, cw := range cws {
		wcws[i] = wire.CPCW(cw)
	}
	return c.send(wire.NewCWProvision(c.version, c.cfg.Channel, c.cfg.Stream, cp, wcws, d, accessCriteria))
}

// Close ends the stream and the channel (stream_close_request, awaiting stream_close_response
// for up to the timeout, then channel_close) and closes the connection. It returns the error of
// the closing exchange, if any.
func (c *Client) Close() error {
	var err error
	select {
	case <-c.done:
	default:
		if err = c.send(wire.NewStreamCloseRequest(c.version, c.cfg.Channel, c.cfg.Stream)); err == nil {
			ctx, cancel := context.WithTimeout(context.Background(), c.cfg.timeout())
			_, err = c.await(ctx, wire.StreamCloseResponse)
			cancel()
		}
		if e := c.send(wire.NewChannelClose(c.version, c.cfg.Channel)); err == nil {
			err = e
		}
	}
	c.shut()
	return err
}

// shut closes the connection and waits for the reader to end.
func (c *Client) shut() {
	c.once.Do(func() {
		close(c.closing)
		c.conn.Close()
	})
	<-c.done
}

// send writes one message within the timeout.
func (c *Client) send(m wire.Message) error {
	b := m.Append(nil)
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.conn.SetWriteDeadline(time.Now().Add(c.cfg.timeout()))
	if _, err := c.conn.Write(b); err != nil {
		return fmt.Errorf("%w: sending %s: %v", ErrLost, m.Type, err)
	}
	return nil
}

// await waits for a reply of type t, an error reply, the loss of the connection, or the timeout.
func (c *Client) await(ctx context.Context, t wire.MessageType) (wire.Message, error) {
	timer := time.NewTimer(c.cfg.timeout())
	defer timer.Stop()
	for {
		select {
		case m := <-c.replies:
			if m.Type == t {
				return m, nil
			}
		case err := <-c.errs:
			if m, ok := c.queued(t); ok {
				return m, nil
			}
			return wire.Message{}, err
		case <-c.done:
			if m, ok := c.queued(t); ok {
				return m, nil
			}
			return wire.Message{}, c.err
		case <-timer.C:
			return wire.Message{}, fmt.Errorf("no %s from the ECMG within %v", t, c.cfg.timeout())
		case <-ctx.Done():
			return wire.Message{}, ctx.Err()
		}
	}
}

// queued returns a reply of type t that the reader queued before the error or the loss that
// await was woken by: the reader queues in the order of the stream, but select picks at random
// among the cases ready, and an ECMG that answers and then closes the connection has answered.
func (c *Client) queued(t wire.MessageType) (wire.Message, bool) {
	for {
		select {
		case m := <-c.replies:
			if m.Type == t {
				return m, true
			}
		default:
			return wire.Message{}, false
		}
	}
}

// report hands an error to Errors without ever blocking the reader.
func (c *Client) report(err error) {
	select {
	case c.errs <- err:
	default:
		c.dropped.Add(1)
	}
}

// read reads the ECMG's messages until the connection ends.
func (c *Client) read() {
	defer close(c.done)
	var hdr [wire.HeaderSize]byte
	for {
		if _, err := io.ReadFull(c.conn, hdr[:]); err != nil {
			c.end(err)
			return
		}
		n := int(binary.BigEndian.Uint16(hdr[3:]))
		buf := make([]byte, wire.HeaderSize+n)
		copy(buf, hdr[:])
		if _, err := io.ReadFull(c.conn, buf[wire.HeaderSize:]); err != nil {
			c.end(err)
			return
		}
		c.lastRecv.Store(time.Now().UnixNano())
		m, _, err := wire.Parse(buf)
		if err != nil {
			c.report(err)
			continue
		}
		c.handle(&m, buf)
	}
}

// end records why reading stopped and reports it, unless Close asked for it.
func (c *Client) end(err error) {
	select {
	case <-c.closing:
		c.err = net.ErrClosed
		return
	default:
	}
	if w := c.why.Load(); w != nil {
		err = *w
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		err = fmt.Errorf("%w: the ECMG closed the connection", ErrLost)
	} else if !errors.Is(err, ErrLost) {
		err = fmt.Errorf("%w: %v", ErrLost, err)
	}
	c.err = err
	c.report(err)
}

func (c *Client) handle(m *wire.Message, raw []byte) {
	switch m.Type {
	case wire.ChannelStatus, wire.StreamStatus, wire.StreamCloseResponse:
		if m.Type != wire.StreamCloseResponse {
			c.statusMu.Lock()
			if m.Type == wire.ChannelStatus {
				c.channelStatus = raw
			} else {
				c.streamStatus = raw
			}
			c.statusMu.Unlock()
		}
		select {
		case c.replies <- *m:
		default: // keep-alive answers nobody waits for
		}
	case wire.ChannelError, wire.StreamError:
		c.report(parseErrorReply(m))
	case wire.ChannelTest, wire.StreamTest:
		// The ECMG checks that we are alive: answer with the status it last gave us, as the
		// SCS holds no channel parameters of its own.
		c.statusMu.Lock()
		raw := c.channelStatus
		if m.Type == wire.StreamTest {
			raw = c.streamStatus
		}
		c.statusMu.Unlock()
		if raw != nil {
			c.wmu.Lock()
			c.conn.SetWriteDeadline(time.Now().Add(c.cfg.timeout()))
			if _, err := c.conn.Write(raw); err == nil {
				c.answered.Add(1)
			}
			c.wmu.Unlock()
		}
	case wire.ECMResponse:
		e, err := parseECMResponse(m)
		if err != nil {
			c.report(fmt.Errorf("simulcrypt: %v", err))
			return
		}
		select {
		case c.ecms <- e:
		case <-c.closing:
		}
	default:
		c.report(fmt.Errorf("simulcrypt: unexpected %s from the ECMG", m.Type))
	}
}

// keepAlive sends channel_test every KeepAlive, and ends the connection when the ECMG has said
// nothing for KeepAlive+Timeout.
func (c *Client) keepAlive() {
	every := c.cfg.KeepAlive
	if every == 0 {
		every = 10 * time.Second
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-c.done:
			return
		case <-t.C:
		}
		if quiet := time.Since(time.Unix(0, c.lastRecv.Load())); quiet > every+c.cfg.timeout() {
			why := fmt.Errorf("%w: no answer to channel_test for %v", ErrLost, quiet.Round(time.Millisecond))
			c.why.Store(&why)
			c.conn.Close()
			return
		}
		if err := c.send(wire.NewChannelTest(c.version, c.cfg.Channel)); err != nil {
			c.conn.Close()
			return
		}
	}
}
