// Package dvbapi is a client of the DVBAPI network protocol, version 3, by which a CAM daemon
// (OSCam's dvbapi module with a listening port, as tvheadend, Enigma2 and minisatip use it)
// descrambles a service for its client: the client sends the service's CA PMT, the server asks
// for the ECM and EMM sections it needs with section filters, and sends the keys back, per
// descrambler index, with the PIDs each index serves.
//
// A Client is a pipeline.SectionSink: the pipeline gives it the services of the PMTs (Tables)
// and the sections of the PIDs it wants (Section), and it sets the keys the server sends in a
// keys.Live. Config.Recorder, when set, is given each ECM the server answered with the CWs of
// its answer, for an ECM cache (DVB-CSA keys only: an ECM cache holds CSA control words).
//
// # Descrambler modes
//
// Each descrambler index (a keys.Live key slot) has a mode, DVB-CSA until CA_SET_DESCR_MODE
// sets another: every algorithm and cipher mode of OSCam's enum ca_descr_algo and
// ca_descr_cipher_mode (module-dvbapi.h). A key (CA_SET_DESCR's 8 bytes, or CA_SET_DESCR_DATA's
// key of 8 or 16) takes the mode and IV its slot has when it comes, as the scrambling system
// it keeps (keys.Live.SetFor); a later mode changes the keys after it, not those before. OSCam
// writes the mode before each key (dvbapi_write_cw), and for AES-128 the IV before the key.
//
//	algorithm, mode   key       system                                  tvheadend (capmt.c)
//	CSA, either       8 bytes   the run's input system (csa2 unless     DESCRAMBLER_CSA_CBC
//	                            -cipher says otherwise)
//	DES, ECB          8 bytes   scrambling.DESECB                       DESCRAMBLER_DES_NCB
//	DES, CBC          8 bytes   scrambling.NewDESCBC(IV); without an    DESCRAMBLER_DES_NCB (ECB)
//	                            IV, DESECB as tvheadend
//	AES-128, ECB      16 bytes  scrambling.AESECB                       DESCRAMBLER_AES_ECB, over
//	                                                                    CA_SET_DESCR's 8 bytes *
//	AES-128, CBC      16 bytes  scrambling.NewAESCBC(IV): dvb-cissa     refused ("uknown cipher
//	                            with its IV, or without an IV           mode")
//
// * tvheadend keys AES from CA_SET_DESCR's 8 bytes as a 64-bit AES key, which OpenSSL's
// AES_set_decrypt_key refuses (algo/libaesdec.c); its 16-byte AES keys come from an opcode of
// its own (CA_SET_DESCR_AES) and follow algo/libaes128dec.c, the rule scrambling.AESECB keeps.
// tvheadend reads no CA_SET_DESCR_DATA.
//
// An IV is the slot's, whatever parity its message names: OSCam sets ca_descr_data.parity for
// the key only, so its IV message carries the parity of the key written before it. A mode of
// another algorithm drops the IV. Not supported, refused with one line to Config.Log and
// counted in Stats (ModeRefused, and the keys that follow in KeysRefused): OSCam's CSA-ALT
// (algorithm 3, its CW_ALGO_CSA_ALT, the ECM-dependent key schedule of a patched libdvbcsa),
// any other algorithm or cipher mode value, and a key of a size its mode does not take. Keys
// never reach the log.
package dvbapi

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/tsdescramble/tsdescramble/internal/roundtrip"
	wire "github.com/tsdescramble/tsdescramble/internal/wire/dvbapi"
	"github.com/tsdescramble/tsdescramble/keys"
	"github.com/tsdescramble/tsdescramble/keyserver"
	"github.com/tsdescramble/tsdescramble/psi"
	"github.com/tsdescramble/tsdescramble/scrambling"
)

// Config says how to reach a server.
type Config struct {
	Addr string // host:port
	Name string // the client's name in CLIENT_INFO (default "tsdescramble")
	// ServiceID, when not 0, is the only service Tables sends; else every service with a CA
	// descriptor.
	ServiceID uint16
	// Timeout bounds connecting and the handshake (default 3 s).
	Timeout time.Duration
	// MinBackoff and MaxBackoff bound the wait before connecting again after the connection
	// failed, doubling at each failure in a row (defaults 100 ms, 10 s).
	MinBackoff, MaxBackoff time.Duration
	// Log, when set, receives one line for each thing a user should know: a refused
	// descrambling mode or key (each once), a lost connection. Never keys.
	Log func(string)
	// Recorder, when set, is given each ECM the server answered with a key, with the CWs its
	// descrambler index holds once the answer is applied: a server sends CA_SET_DESCR only for
	// the parity whose CW changed, so the other is the one the index held, which the ECM
	// carries as well. An answer is the CA_SET_DESCR messages that name the ECM's
	// FILTER_DATA by its message id, in a row; an ECM answered by none (no change, or an id
	// that names no ECM sent) is not recorded.
	Recorder keyserver.Recorder
}

// Stats counts what a Client did: the counts every key server client keeps, with those of
// the DVBAPI protocol. Of the shared ones, ECMs counts the ECM sections sent (table_id 0x80 or
// 0x81), each of which is also Sent, as the server never says it has no key; Refused is
// ModeRefused plus KeysRefused; CWs counts the keys (CA_SET_DESCR, or CA_SET_DESCR_DATA of
// the key type) set in the key source, whatever their mode; RTTMedian and RTTMax run from
// sending an ECM to the next key (a server says nothing when an ECM brings no new key, so the
// figure covers the ECMs that changed a key, as they were answered).
type Stats struct {
	keyserver.Stats
	Connects     int64 // connections that completed the handshake
	Filters      int64 // DMX_SET_FILTER received
	Sections     int64 // FILTER_DATA sent
	QueueDropped int64 // messages dropped because the connection could not take them
	PIDsSet      int64 // CA_SET_PID received
	Modes        int64 // CA_SET_DESCR_MODE accepted: CSA, DES or AES-128, ECB or CBC
	// ModeRefused counts the CA_SET_DESCR_MODE refused: CSA-ALT, an unknown algorithm or
	// cipher mode, an index out of range.
	ModeRefused int64
	IVs         int64 // CA_SET_DESCR_DATA IVs kept for the keys that follow them
	// KeysRefused counts the keys and IVs not used: for a slot whose mode was refused, of a
	// size the mode does not take, all zero, with an index or parity out of range, or
	// CA_SET_DESCR_DATA of an unknown data type.
	KeysRefused   int64
	ECMInfo       int64 // ECM_INFO received
	Replayed      int64 // sections that came before the server set their filter, sent when it did
	ServerECMTime time.Duration
}

// maxOutQueue bounds the messages waiting to be written to the server.
const maxOutQueue = 256

// maxFilters bounds the section filters a server may set.
const maxFilters = 256

// maxPendingECMs bounds the ECMs remembered as waiting for their answer.
const maxPendingECMs = 64

// sentECM is an ECM section sent to the server: its message id, and when; and, for
// Config.Recorder, the ECM.
type sentECM struct {
	msgID uint32
	at    time.Time
	ecm   *keyserver.ECM
}

// answer is an ECM answered with CA_SET_DESCR on a descrambler index, for Config.Recorder.
type answer struct {
	msgID     uint32
	index     int32
	ecm       *keyserver.ECM
	even, odd [8]byte // the CWs the index holds once the answer is applied
}

type filterKey struct{ demux, filter uint8 }

type filter struct {
	pid  uint16
	f    wire.Filter
	last []byte // the last section sent through this filter: a repeat is not sent again
}

// Client is a DVBAPI network client: it tells the server the services (Tables), offers it the
// sections of the PIDs it filters (Section), and sets the keys it sends in a keys.Live.
type Client struct {
	cfg    Config
	live   *keys.Live
	redial *keyserver.Redial // Run's alone

	mu       sync.Mutex
	services []wire.CAPMTService
	filters  map[filterKey]*filter
	// early holds the last section of each ECM PID the services' CA descriptors name, for a
	// filter the server sets after it came (see Section).
	early   map[uint16][]byte
	gen     uint64
	out     chan []byte // to the current connection's writer; nil when not connected
	msgID   uint32
	modes   map[int32]*slotMode // descrambler index to its mode; absent: CSA
	told    map[string]bool
	st      Stats
	ecmSent time.Time
	pending []sentECM // the ECMs sent that no CA_SET_DESCR answered yet, oldest first
	// For Config.Recorder: the CWs each descrambler index holds, the answer being applied,
	// and the answers whose CWs are known, to record.
	held     map[int32]*[2][8]byte
	answer   *answer
	toRecord []answer
	svcsSet  time.Time // when setServices last changed the services
	rtts     roundtrip.Times
	lastErr  error
}

// NewClient returns a client for cfg that sets the keys it receives in live. Run connects it.
func NewClient(cfg Config, live *keys.Live) *Client {
	if cfg.Name == "" {
		cfg.Name = "tsdescramble"
	}
	r := keyserver.NewRedial(cfg.Addr, cfg.Timeout, cfg.MinBackoff, cfg.MaxBackoff)
	cfg.Timeout, cfg.MinBackoff, cfg.MaxBackoff = r.Timeout, r.MinBackoff, r.MaxBackoff
	return &Client{cfg: cfg, live: live, redial: r, filters: map[filterKey]*filter{}, early: map[uint16][]byte{},
		modes: map[int32]*slotMode{}, told: map[string]bool{}}
}

// SetLog sets Config.Log: a program that makes the client before it has a log gives it one
// before Run.
func (c *Client) SetLog(log func(string)) {
	c.mu.Lock()
	c.cfg.Log = log
	c.mu.Unlock()
}

// setServices sets the services to descramble, each with the demux index the server will name
// (their index in the list); it sends their CA PMTs now if connected, else on connecting.
func (c *Client) setServices(svcs []wire.CAPMTService) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.services = slices.Clone(svcs)
	c.svcsSet = time.Now()
	for i := range c.services {
		c.services[i].Demux = uint8(i)
	}
	// Keep the sections of the ECM PIDs the services name, and only theirs.
	pids := c.ecmPIDs()
	for pid := range c.early {
		if !slices.Contains(pids, pid) {
			delete(c.early, pid)
		}
	}
	for _, pid := range pids {
		if _, ok := c.early[pid]; !ok {
			c.early[pid] = nil
		}
	}
	c.gen++
	if c.out != nil {
		c.sendServices()
	}
}

// sendServices queues the CA PMTs of the whole list, which replaces the server's (EN 50221 list
// management: only, or first, more, last); c.mu is held.
func (c *Client) sendServices() {
	n := len(c.services)
	for i := range c.services {
		lm := uint8(wire.ListMore)
		switch {
		case n == 1:
			lm = wire.ListOnly
		case i == 0:
			lm = wire.ListFirst
		case i == n-1:
			lm = wire.ListLast
		}
		c.msgID++
		b, err := wire.AppendCAPMT(nil, c.msgID, lm, &c.services[i])
		if err != nil {
			c.logOnce(err.Error())
			continue
		}
		c.send(b)
	}
}

// send queues a message for the connection's writer without blocking; c.mu is held.
func (c *Client) send(b []byte) {
	select {
	case c.out <- b:
	default:
		c.st.QueueDropped++
	}
}

// ecmPIDs returns the ECM PIDs of the services' CA descriptors (at most maxFilters); c.mu is
// held.
// ECMPIDs returns how many ECM PIDs the services' CA descriptors name: none for a stream
// without a CA descriptor, whose services the server can give no key for.
func (c *Client) ECMPIDs() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.ecmPIDs())
}

func (c *Client) ecmPIDs() []uint16 {
	var pids []uint16
	add := func(loop []byte) {
		for tag, body := range psi.EachDescriptor(loop) {
			if tag != 0x09 || len(body) < 4 {
				continue
			}
			if pid := uint16(body[2]&0x1F)<<8 | uint16(body[3]); len(pids) < maxFilters && !slices.Contains(pids, pid) {
				pids = append(pids, pid)
			}
		}
	}
	for _, svc := range c.services {
		add(svc.CA)
		for _, es := range svc.Streams {
			add(es.CA)
		}
	}
	return pids
}

// WantedPIDs returns the PIDs whose sections the client wants: those the server filters, and
// the ECM PIDs of the services' CA descriptors (see Section); and a number that changes when
// they do.
func (c *Client) WantedPIDs() (pids []uint16, generation uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for pid := range c.early {
		pids = append(pids, pid)
	}
	for _, f := range c.filters {
		if !slices.Contains(pids, f.pid) {
			pids = append(pids, f.pid)
		}
	}
	slices.Sort(pids)
	return pids, c.gen
}

// Filters returns the PIDs the server has set section filters on, in order.
func (c *Client) Filters() []uint16 {
	c.mu.Lock()
	defer c.mu.Unlock()
	var pids []uint16
	for _, f := range c.filters {
		if !slices.Contains(pids, f.pid) {
			pids = append(pids, f.pid)
		}
	}
	slices.Sort(pids)
	return pids
}

// Generation returns the number WantedPIDs returns, cheaply.
func (c *Client) Generation() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gen
}

// Section offers a whole section of pid from the stream: it goes to the server through every
// filter of that PID it matches, unless it repeats the last section sent through that filter.
// It never blocks.
//
// The last section of each ECM PID the services name is kept, and sent through a filter the
// server sets on that PID later, if it matches: the ECM on air when the filter is set, which a
// receiver's demultiplexer would deliver at its next repetition. A live input's reader has
// read on while the CA PMT went to the server and its filter came back, and without this the
// server would see the first ECM one repetition later (or, when the period ends first, only
// the next period's).
func (c *Client) Section(pid uint16, section []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if kept, ok := c.early[pid]; ok {
		c.early[pid] = append(kept[:0], section...)
	}
	if c.out == nil {
		return
	}
	for k, f := range c.filters {
		if f.pid == pid {
			c.through(k, f, section)
		}
	}
}

// through sends section to the server through filter k if it matches and is not the last
// section sent through it; c.mu is held and the client connected.
func (c *Client) through(k filterKey, f *filter, section []byte) bool {
	if !f.f.Match(section) || bytes.Equal(f.last, section) {
		return false
	}
	f.last = append(f.last[:0], section...)
	c.msgID++
	c.send(wire.AppendFilterData(nil, c.msgID, k.demux, k.filter, section))
	c.st.Sections++
	if len(section) > 0 && section[0]&0xFE == 0x80 {
		c.st.ECMs++
		now := time.Now()
		if c.ecmSent.IsZero() {
			c.ecmSent = now
		}
		if len(c.pending) >= maxPendingECMs {
			c.pending = c.pending[1:]
		}
		e := sentECM{msgID: c.msgID, at: now}
		if c.cfg.Recorder != nil {
			e.ecm = &keyserver.ECM{Section: bytes.Clone(section), PID: f.pid, CAID: c.caidOf(f.pid)}
		}
		c.pending = append(c.pending, e)
	}
	return true
}

// Run connects to the server and serves it until ctx is done, connecting again after a backoff
// when the connection fails. It returns ctx's error.
func (c *Client) Run(ctx context.Context) error {
	for {
		err := c.session(ctx)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		c.mu.Lock()
		c.lastErr = err
		c.mu.Unlock()
		failed := c.redial.Failed
		if errors.Is(err, ErrFraming) {
			failed = c.redial.Rejected // not a DVBAPI server: it will not become one
		}
		if _, first := failed(err); first && c.cfg.Log != nil {
			c.cfg.Log(fmt.Sprintf("dvbapi: connection to the key server lost: %v; connecting again", err))
		}
		if err := c.redial.Wait(ctx); err != nil {
			return err
		}
	}
}

// State returns where the connection to the server stands; it may be called from any
// goroutine.
func (c *Client) State() keyserver.ConnState { return c.redial.State() }

// ErrFraming is wrapped by the error that ends a connection on which the server sent bytes
// that do not start a DVBAPI message (an address that is not a DVBAPI port, say).
var ErrFraming = wire.ErrFraming

// LastError returns the error that ended the last connection, or nil; it wraps ErrFraming when
// the server did not speak the protocol.
func (c *Client) LastError() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lastErr
}

// session runs one connection: handshake, CA PMTs, then the server's messages.
func (c *Client) session(ctx context.Context) error {
	conn, err := c.redial.Dial(ctx)
	if err != nil {
		return fmt.Errorf("connecting: %w", err)
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()

	conn.SetDeadline(time.Now().Add(c.cfg.Timeout))
	if _, err := conn.Write(wire.AppendClientInfo(nil, c.cfg.Name)); err != nil {
		return err
	}
	br := bufio.NewReader(conn)
	rd := wire.NewReader(br)
	m, err := rd.Next()
	if err != nil {
		return fmt.Errorf("reading SERVER_INFO: %w", err)
	}
	if m.Opcode != wire.OpServerInfo {
		return fmt.Errorf("the server answered the greeting with opcode %#08x, not SERVER_INFO", m.Opcode)
	}
	if m.Version < wire.ProtocolVersion {
		c.logOnce(fmt.Sprintf("dvbapi: the key server speaks protocol version %d; this client speaks %d", m.Version, wire.ProtocolVersion))
	}
	conn.SetDeadline(time.Time{})
	// A connection that completed the handshake ends a run of failures: when it is lost, the
	// loss is told, and the client tries again after the shortest backoff.
	c.redial.Connected()

	out := make(chan []byte, maxOutQueue)
	werr := make(chan error, 1)
	go func() {
		for b := range out {
			conn.SetWriteDeadline(time.Now().Add(c.cfg.Timeout))
			if _, err := conn.Write(b); err != nil {
				werr <- err
				conn.Close()
				for range out {
				}
				return
			}
		}
		werr <- nil
	}()
	c.mu.Lock()
	c.out = out
	clear(c.filters) // a new connection: the server sets its filters again
	clear(c.modes)   // and its modes: a slot is CSA until it does
	c.gen++
	c.st.Connects++
	c.sendServices()
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.out = nil
		clear(c.filters)
		c.gen++
		c.ecmSent = time.Time{}
		c.pending = c.pending[:0]
		c.mu.Unlock()
		close(out)
		<-werr
	}()
	defer c.record()
	for {
		m, err := rd.Next()
		if err != nil {
			return err
		}
		if err := c.handle(&m); err != nil {
			return err
		}
		if br.Buffered() == 0 {
			// The server's messages so far are read: an answer's CA_SET_DESCR come together.
			c.record()
		}
	}
}

// handle applies one server message.
func (c *Client) handle(m *wire.Message) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if a := c.answer; a != nil && (m.Opcode != wire.OpCASetDescr || m.MsgID != a.msgID || m.Index != a.index) {
		c.answerDone() // another message than the answer's next CA_SET_DESCR: the answer is whole
	}
	switch m.Opcode {
	case wire.OpDMXSetFilter:
		c.st.Filters++
		k := filterKey{m.Demux, m.Filter}
		if _, ok := c.filters[k]; !ok && len(c.filters) >= maxFilters {
			return fmt.Errorf("the server set more than %d section filters", maxFilters)
		}
		f := &filter{pid: m.PID, f: m.Filt}
		c.filters[k] = f
		c.gen++
		if sec := c.early[m.PID]; len(sec) > 0 && c.out != nil && c.through(k, f, sec) {
			c.st.Replayed++
		}
	case wire.OpDMXStop:
		delete(c.filters, filterKey{m.Demux, m.Filter})
		c.gen++
	case wire.OpCASetPID:
		c.st.PIDsSet++
		if m.Index >= 0 && !c.live.MapPID(m.PID, int(m.Index)) {
			c.st.KeysRefused++
		}
	case wire.OpCASetDescrMode:
		c.setMode(m)
	case wire.OpCASetDescr:
		ecm := c.keyArrived(m.MsgID)
		if c.setKey(m.Index, m.Parity, m.CW[:]) {
			c.hold(m, ecm)
		}
	case wire.OpCASetDescrData:
		switch m.DataType {
		case wire.DataKey:
			c.keyArrived(m.MsgID)
			c.setKey(m.Index, m.Parity, m.Data)
		case wire.DataIV:
			if m.Index < 0 || m.Index >= keys.MaxLiveSlots || len(m.Data) == 0 {
				c.st.KeysRefused++
				break
			}
			// The parity is not read: OSCam's IV message carries the parity of the key
			// written before it, not of the one it goes with (see the package doc).
			c.slot(m.Index).iv = bytes.Clone(m.Data)
			c.st.IVs++
		default:
			c.st.KeysRefused++
			c.logOnce(fmt.Sprintf("dvbapi: the key server sends CA_SET_DESCR_DATA of data type %d, neither a key nor an IV: not used", m.DataType))
		}
	case wire.OpECMInfo:
		c.st.ECMInfo++
		c.st.ServerECMTime = time.Duration(m.ECMTime) * time.Millisecond
	case wire.OpServerInfo:
	default:
		return errors.New("unexpected message")
	}
	return nil
}

// answered forgets the ECMs a CA_SET_DESCR answers, and returns the one it names, for
// Config.Recorder (nil without one); c.mu is held. A server of protocol version 3 answers with
// the message id of the FILTER_DATA that carried the ECM, and answers in order: that ECM and
// those before it are done, the later ones still wait. An id that names no ECM sent (a server
// that does not repeat them) answers them all; which ECM it answers is not known. The second
// CA_SET_DESCR of an answer names an ECM the first made done: the answer being applied has it.
func (c *Client) answered(msgID uint32) *keyserver.ECM {
	i := slices.IndexFunc(c.pending, func(e sentECM) bool { return e.msgID == msgID })
	if i < 0 {
		c.pending = c.pending[:0]
		if a := c.answer; a != nil && a.msgID == msgID {
			return a.ecm
		}
		return nil
	}
	ecm := c.pending[i].ecm
	c.pending = c.pending[:copy(c.pending, c.pending[i+1:])]
	return ecm
}

// hold notes a CW set on a descrambler index by a CA_SET_DESCR that answers ecm (nil: none
// known), for Config.Recorder; c.mu is held.
func (c *Client) hold(m *wire.Message, ecm *keyserver.ECM) {
	if c.cfg.Recorder == nil {
		return
	}
	if c.held == nil {
		c.held = map[int32]*[2][8]byte{}
	}
	h := c.held[m.Index]
	if h == nil {
		if len(c.held) >= maxFilters {
			return // a server that names indexes without end
		}
		h = new([2][8]byte)
		c.held[m.Index] = h
	}
	h[m.Parity] = m.CW
	if ecm != nil && c.answer == nil {
		c.answer = &answer{msgID: m.MsgID, index: m.Index, ecm: ecm}
	}
}

// answerDone takes the CWs of the answer being applied, which is whole, to record; c.mu is
// held.
func (c *Client) answerDone() {
	a := c.answer
	c.answer = nil
	if h := c.held[a.index]; h != nil && len(c.toRecord) < maxPendingECMs {
		a.even, a.odd = h[0], h[1]
		c.toRecord = append(c.toRecord, *a)
	}
}

// record gives Config.Recorder the answers that are whole, the one being applied included: it
// is called when the server's messages read so far are all applied.
func (c *Client) record() {
	c.mu.Lock()
	if c.answer != nil {
		c.answerDone()
	}
	done := c.toRecord
	c.toRecord = nil
	c.mu.Unlock()
	for _, a := range done {
		c.cfg.Recorder.Record(*a.ecm, a.even[:], a.odd[:])
	}
}

// caidOf returns the CA system of the services' CA descriptor that names ECM PID pid, or 0;
// c.mu is held.
func (c *Client) caidOf(pid uint16) uint16 {
	for _, svc := range c.services {
		loops := [][]byte{svc.CA}
		for _, es := range svc.Streams {
			loops = append(loops, es.CA)
		}
		for _, loop := range loops {
			for tag, body := range psi.EachDescriptor(loop) {
				if tag == 0x09 && len(body) >= 4 && uint16(body[2]&0x1F)<<8|uint16(body[3]) == pid {
					return uint16(body[0])<<8 | uint16(body[1])
				}
			}
		}
	}
	return 0
}

// keyArrived measures the round trip of the ECM a key answers, forgets the ECMs it answers and
// returns the one it answers, or nil; c.mu is held.
func (c *Client) keyArrived(msgID uint32) *keyserver.ECM {
	if !c.ecmSent.IsZero() {
		c.rtts.Add(time.Since(c.ecmSent))
		c.ecmSent = time.Time{}
	}
	return c.answered(msgID)
}

// slotMode is what the server set of a descrambler index's mode: CA_SET_DESCR_MODE's algorithm
// and cipher mode, and the last IV of CA_SET_DESCR_DATA. The keys that follow take it.
type slotMode struct {
	algo, cipher uint32
	refused      bool   // the last mode asked for one not supported: the keys that follow are not used
	iv           []byte // the last IV since the algorithm was set, or nil
}

// slot returns the mode of descrambler index i (0 <= i < keys.MaxLiveSlots), CSA until the
// server sets one; c.mu is held.
func (c *Client) slot(i int32) *slotMode {
	sm := c.modes[i]
	if sm == nil {
		sm = &slotMode{algo: wire.AlgoCSA, cipher: wire.ModeCBC}
		c.modes[i] = sm
	}
	return sm
}

// setMode applies CA_SET_DESCR_MODE; c.mu is held.
func (c *Client) setMode(m *wire.Message) {
	if m.Index < 0 || m.Index >= keys.MaxLiveSlots {
		c.st.ModeRefused++
		c.logOnce(fmt.Sprintf("dvbapi: the key server sets the mode of descrambler index %d, out of range (0 to %d): not used", m.Index, keys.MaxLiveSlots-1))
		return
	}
	sm := c.slot(m.Index)
	var why string
	switch {
	case m.Algo == wire.AlgoCSAAlt:
		why = "CSA-ALT (OSCam's CW_ALGO_CSA_ALT, the ECM-dependent key schedule of a patched libdvbcsa)"
	case m.Algo > wire.AlgoAES128:
		why = fmt.Sprintf("an unknown algorithm, %d", m.Algo)
	case m.CipherMode > wire.ModeCBC:
		why = fmt.Sprintf("%s in an unknown cipher mode, %d", algoName(m.Algo), m.CipherMode)
	}
	if why != "" {
		c.st.ModeRefused++
		sm.refused = true
		c.logOnce(fmt.Sprintf("dvbapi: the key server asks for %s on descrambler index %d: only CSA, DES and AES-128, in ECB or CBC, are supported, so its keys are not used",
			why, m.Index))
		return
	}
	if m.Algo != sm.algo {
		sm.iv = nil // an IV is for the algorithm it came under
	}
	sm.algo, sm.cipher, sm.refused = m.Algo, m.CipherMode, false
	c.st.Modes++
}

// setKey sets a key the server sent for descrambler index i and a parity in the key source,
// with the system its slot's mode gives it, and reports whether it set a DVB-CSA key (the kind
// an ECM cache records); c.mu is held.
func (c *Client) setKey(i int32, parity uint32, cw []byte) (csa bool) {
	if i < 0 || i >= keys.MaxLiveSlots || parity > 1 || !slices.ContainsFunc(cw, func(b byte) bool { return b != 0 }) {
		c.st.KeysRefused++
		return false
	}
	sm := c.slot(i)
	if sm.refused {
		c.st.KeysRefused++
		return false
	}
	sys, err := sm.system(len(cw))
	if err != nil {
		c.st.KeysRefused++
		c.logOnce(fmt.Sprintf("dvbapi: descrambler index %d: %v: not used", i, err))
		return false
	}
	if !c.live.SetFor(int(i), parity == 1, sys, cw) {
		c.st.KeysRefused++
		return false
	}
	c.st.CWs++
	return sys == nil
}

// system returns the scrambling system of a key of n bytes in the slot's mode (nil: CSA, the
// run's input system), or why the key cannot be used.
func (sm *slotMode) system(n int) (scrambling.System, error) {
	want := 8
	if sm.algo == wire.AlgoAES128 {
		want = 16
	}
	if n != want {
		return nil, fmt.Errorf("a key of %d bytes for %s, want %d", n, algoName(sm.algo), want)
	}
	switch {
	case sm.algo == wire.AlgoCSA:
		return nil, nil
	case sm.algo == wire.AlgoDES && (sm.cipher == wire.ModeECB || sm.iv == nil):
		// tvheadend descrambles every DES slot in ECB (capmt.c, capmt_send_key), and OSCam
		// leaves an answer's mode at its default, CBC, unless its reader sets one: a DES key
		// in CBC without an IV is taken as ECB; one with an IV as CBC from it.
		return scrambling.DESECB(), nil
	case sm.algo == wire.AlgoDES:
		return scrambling.NewDESCBC(sm.iv)
	case sm.cipher == wire.ModeECB:
		return scrambling.AESECB(), nil
	case sm.iv == nil:
		// DVB's AES-128-CBC profile, DVB-CISSA, which OSCam's AES-128 CBC answers (BISS2)
		// name with its IV anyway.
		return scrambling.NewAESCBC([]byte("DVBTMCPTAESCISSA"))
	}
	return scrambling.NewAESCBC(sm.iv)
}

func algoName(a uint32) string {
	switch a {
	case wire.AlgoCSA:
		return "CSA"
	case wire.AlgoDES:
		return "DES"
	case wire.AlgoAES128:
		return "AES-128"
	}
	return fmt.Sprintf("algorithm %d", a)
}

// logOnce logs a message the first time it comes; c.mu is held.
func (c *Client) logOnce(s string) {
	if c.told[s] || c.cfg.Log == nil {
		return
	}
	c.told[s] = true
	c.cfg.Log(s)
}

// Stats returns the counts so far.
func (c *Client) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.st
	st.Sent, st.Refused = st.ECMs, st.ModeRefused+st.KeysRefused
	st.RTTMedian, st.RTTMax = c.rtts.Summary()
	return st
}

// Tables implements pipeline.SectionSink: the services with a CA descriptor (or only the one
// Config.ServiceID names) become the CA PMTs sent to the server, when they change. A program
// that runs no pipeline gives it the services a psi.Tracker has read.
func (c *Client) Tables(services []psi.Service) {
	var svcs []wire.CAPMTService
	for _, svc := range services {
		if !svc.PMTSeen || c.cfg.ServiceID != 0 && svc.Number != c.cfg.ServiceID {
			continue
		}
		s := wire.CAPMTService{ProgramNumber: svc.Number, Version: svc.Version, PMTPID: svc.PMTPID, CA: caDescriptors(svc.Descriptors)}
		hasCA := len(s.CA) > 0
		for _, es := range svc.Streams {
			cs := wire.CAPMTStream{Type: es.Type, PID: es.PID, CA: caDescriptors(es.Descriptors)}
			hasCA = hasCA || len(cs.CA) > 0
			s.Streams = append(s.Streams, cs)
		}
		if hasCA || c.cfg.ServiceID != 0 {
			svcs = append(svcs, s)
		}
	}
	c.mu.Lock()
	same := slices.EqualFunc(svcs, c.services, func(a, b wire.CAPMTService) bool {
		return a.ProgramNumber == b.ProgramNumber && a.Version == b.Version && a.PMTPID == b.PMTPID && bytes.Equal(a.CA, b.CA) &&
			slices.EqualFunc(a.Streams, b.Streams, func(x, y wire.CAPMTStream) bool {
				return x.Type == y.Type && x.PID == y.PID && bytes.Equal(x.CA, y.CA)
			})
	})
	c.mu.Unlock()
	if !same {
		c.setServices(svcs)
	}
}

// caDescriptors returns the CA descriptors (tag 9) of a descriptor loop, as they are.
func caDescriptors(loop []byte) []byte {
	var out []byte
	for tag, body := range psi.EachDescriptor(loop) {
		if tag == 0x09 {
			out = append(out, 0x09, byte(len(body)))
			out = append(out, body...)
		}
	}
	return out
}

// Busy implements pipeline.SectionSink: an ECM that no CA_SET_DESCR answered yet was sent
// less than Config.Timeout ago, or services were set less than Config.Timeout ago and the
// server has not set its filters yet (connecting, or reading the CA PMT). An answer to an
// earlier ECM leaves the later ones waiting (the message ids tell them apart). A server stays
// silent after an ECM that changes no key: the wait is bounded by the timeout, never longer.
func (c *Client) Busy() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.services) > 0 && len(c.filters) == 0 && time.Since(c.svcsSet) < c.cfg.Timeout {
		return true
	}
	n := len(c.pending)
	return c.out != nil && n > 0 && time.Since(c.pending[n-1].at) < c.cfg.Timeout
}
