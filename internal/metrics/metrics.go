// Package metrics serves a run's counts while it goes, in the Prometheus text exposition format
// (version 0.0.4), and /healthz for a scheduler's probes. Each scrape reads what the summary and
// -stats read: a snapshot of the run's counts (pipeline.Observer, published once per unit of
// work), and the network input's and output's own counts (live.Reader.Stats, live.Writer.Stats);
// no count is kept twice, and a scrape adds no work per packet. The format is written here rather
// than with the Prometheus client library: a dozen counters read from a snapshot need no
// registry, and the library would bring its own dependencies (protobuf among them) into the
// command's build.
package metrics

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tsdescramble/tsdescramble/keyserver"
	"github.com/tsdescramble/tsdescramble/live"
	"github.com/tsdescramble/tsdescramble/pipeline"
)

// HealthWindow is how far back /readyz (and /healthz) looks: packets must have come, and when
// scrambled ones came, some must have been descrambled, and unit starts must have checked good
// if any was checked, within it.
const HealthWindow = 5 * time.Second

// livenessStall is how long the run's counts may stand still while packets wait in it before
// /livez says the process is stuck: far above any latency bound or key wait, so that only a
// run that no longer moves is restarted, never one whose feed or key server is away.
var livenessStall = 60 * time.Second

// Server serves /metrics and /healthz for one run: on a listener of its own (Serve), or on
// another's (New, Handlers).
type Server struct {
	counts func() pipeline.Stats       // a snapshot of the run's counts
	in     atomic.Pointer[live.Reader] // the network input, once open
	out    atomic.Pointer[live.Writer] // the network output, once open
	extra  atomic.Pointer[func(*strings.Builder)]
	srv    *http.Server // nil without a listener of its own
	addr   net.Addr     // where it listens (Addr)
	start  time.Time

	mu      sync.Mutex
	samples []healthSample // one a second, the last HealthWindow of them
	moved   time.Time      // the sample at which the run last read or wrote a packet
	stop    chan struct{}
}

type healthSample struct {
	at                 time.Time
	packets, good, bad int64
	scrambledIn        int64 // packets that came marked scrambled
	descrambled        int64
	written            int64 // packet units written
}

// The server's bounds. A scraper or a probe sends one small request and reads a few kB, so
// nothing it does needs more; without them every idle keep-alive connection was kept for
// ever, and 20,000 of them took 340 MB and every file descriptor of the run.
const (
	metricsMaxConns      = 256 // connections open at once
	metricsHeaderTimeout = 5 * time.Second
	metricsReadTimeout   = 10 * time.Second
	metricsWriteTimeout  = 30 * time.Second
)

// IdleTimeout is how long a keep-alive connection may wait for its next request: a
// Prometheus scrape every 15 s or 30 s reuses its connection. A variable for the tests.
var IdleTimeout = 30 * time.Second

// Serve listens on addr and serves the counts of a run, as counts returns them (the run's
// pipeline.Observer.Snapshot), until Close is called. What goes wrong with the
// server (connections refused at the cap, accept errors) goes to logf as the run's other
// errors, once per streak.
func Serve(addr string, counts func() pipeline.Stats, logf func(string)) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("cannot listen on %s: %v", addr, errors.Unwrap(err))
	}
	m := New(counts)
	m.addr = ln.Addr()
	mux := http.NewServeMux()
	for pattern, h := range m.Handlers() {
		mux.Handle(pattern, h)
	}
	capped := &connCap{Listener: ln, max: metricsMaxConns, conns: map[net.Conn]connInfo{},
		log: logf}
	m.srv = &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: metricsHeaderTimeout,
		ReadTimeout:       metricsReadTimeout,
		WriteTimeout:      metricsWriteTimeout,
		IdleTimeout:       IdleTimeout,
		ConnState:         capped.state,
		ErrorLog:          log.New(httpErrors(logf), "", 0),
	}
	go m.srv.Serve(capped)
	return m, nil
}

// New returns the server of a run's counts, as counts returns them, without a listener: its
// Handlers are served on a listener of the caller's (the HTTP output's, which has bounds of
// its own), from when it opens. Close stops it.
func New(counts func() pipeline.Stats) *Server {
	m := &Server{counts: counts, start: time.Now(), stop: make(chan struct{})}
	m.sample(m.start)
	go func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case now := <-t.C:
				m.sample(now)
			case <-m.stop:
				return
			}
		}
	}()
	return m
}

// Handlers returns what the server serves, by http.ServeMux pattern: GET /metrics and GET
// /healthz.
func (m *Server) Handlers() map[string]http.Handler {
	return map[string]http.Handler{
		"GET /metrics": http.HandlerFunc(m.metrics),
		// /healthz is /readyz, as it always said whether the run descrambles.
		"GET /healthz": http.HandlerFunc(m.readyz),
		"GET /readyz":  http.HandlerFunc(m.readyz),
		"GET /livez":   http.HandlerFunc(m.livez),
	}
}

// Watch adds the run's network input and output, either of which may be nil, to what
// /metrics serves. They open after the server starts: a live input may take a while.
func (m *Server) Watch(in *live.Reader, out *live.Writer) {
	if in != nil {
		m.in.Store(in)
	}
	if out != nil {
		m.out.Store(out)
	}
}

// Close stops the server.
func (m *Server) Close() {
	close(m.stop)
	if m.srv == nil {
		return // the listener's owner closes it
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	m.srv.Shutdown(ctx)
}

func (m *Server) sample(now time.Time) {
	st := m.counts()
	s := healthSample{at: now, packets: st.Packets, good: st.PESGood, bad: st.PESBad,
		scrambledIn: st.Even + st.Odd, descrambled: st.Descrambled, written: st.PacketsOut}
	m.mu.Lock()
	defer m.mu.Unlock()
	if n := len(m.samples); n == 0 || m.samples[n-1].packets != s.packets || m.samples[n-1].written != s.written {
		m.moved = now // the run read or wrote since the last sample
	}
	m.samples = append(m.samples, s)
	for len(m.samples) > 1 && now.Sub(m.samples[1].at) >= HealthWindow {
		m.samples = m.samples[1:]
	}
}

// Reasons /readyz gives for a run that is not ready, as the tsdescramble_ready_reason gauge
// names them.
const (
	reasonReady        = "ready"
	reasonNoPacket     = "no_packet"
	reasonKeysDontFit  = "keys_do_not_fit"
	reasonNotDescrambl = "nothing_descrambled"
)

// ready says whether the run descrambles now (readiness): packets came within the window; when
// scrambled packets came, some were descrambled; and if unit starts were checked, some passed
// (the keys fit). A run whose feed or key server is away is not ready, and is still alive.
func (m *Server) ready(now time.Time) (ok bool, reason, why string) {
	m.mu.Lock()
	then := m.samples[0]
	m.mu.Unlock()
	st := m.counts()
	packets, good, bad := st.Packets-then.packets, st.PESGood-then.good, st.PESBad-then.bad
	scrambled, descrambled := st.Even+st.Odd-then.scrambledIn, st.Descrambled-then.descrambled
	window := now.Sub(then.at).Round(time.Second)
	switch {
	case packets == 0 && st.Packets == 0:
		return false, reasonNoPacket, fmt.Sprintf("no packet yet in %v", now.Sub(m.start).Round(time.Second))
	case packets == 0:
		return false, reasonNoPacket, fmt.Sprintf("no packet in the last %v", window)
	case good == 0 && bad > 0:
		return false, reasonKeysDontFit, fmt.Sprintf("the keys do not fit: %d unit starts checked bad, none good, in the last %v", bad, window)
	case scrambled > 0 && descrambled == 0 && st.Scrambled == 0:
		// A scrambling run counts the packets that came scrambled already, which it leaves:
		// only a run that descrambles is judged by what it descrambled.
		return false, reasonNotDescrambl, fmt.Sprintf("%d scrambled packets and none descrambled in the last %v (no key for them: is the key server reachable?)", scrambled, window)
	}
	return true, reasonReady, fmt.Sprintf("%d packets, %d descrambled, %d good unit starts in the last %v", packets, descrambled, good, window)
}

// alive says whether the process works (liveness): it serves, and the run is not stuck, its
// counts standing still while it holds packets it read. A feed or a key server that is away is
// no reason to restart the process: it answers ok then.
func (m *Server) alive(now time.Time) (bool, string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	last := m.samples[len(m.samples)-1]
	if held := last.packets - last.written; held > stuckSlack && !m.moved.IsZero() && now.Sub(m.moved) >= livenessStall {
		return false, fmt.Sprintf("no packet read or written for %v while the run holds %d", now.Sub(m.moved).Round(time.Second), held)
	}
	return true, fmt.Sprintf("running for %v", now.Sub(m.start).Round(time.Second))
}

// stuckSlack is how many packets a run may hold read and unwritten when its input is silent:
// a unit of work's worth, and the packets of crypto periods waiting for their key.
const stuckSlack = 1 << 16

func (m *Server) readyz(w http.ResponseWriter, r *http.Request) {
	ok, _, why := m.ready(time.Now())
	answer(w, ok, why)
}

func (m *Server) livez(w http.ResponseWriter, r *http.Request) {
	ok, why := m.alive(time.Now())
	answer(w, ok, why)
}

// answer writes a probe's answer: 200 and "ok: why", or 503 and "not ok: why".
func answer(w http.ResponseWriter, ok bool, why string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if !ok {
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprintln(w, "not ok: "+why)
		return
	}
	fmt.Fprintln(w, "ok: "+why)
}

func (m *Server) metrics(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	var ls *live.Stats
	var ws *live.WriterStats
	if r := m.in.Load(); r != nil {
		s := r.Stats()
		ls = &s
	}
	if o := m.out.Load(); o != nil {
		s := o.Stats()
		ws = &s
	}
	st := m.counts()
	var b strings.Builder
	WriteText(&b, &st, ls, ws)
	ok, reason, _ := m.ready(time.Now())
	fmt.Fprintf(&b, "# HELP tsdescramble_ready Whether the run descrambles now, as /readyz answers: 1 or 0.\n# TYPE tsdescramble_ready gauge\ntsdescramble_ready %d\n", b2i(ok))
	fmt.Fprintf(&b, "# HELP tsdescramble_ready_reason Why /readyz answers as it does: 1 for the reason in force.\n# TYPE tsdescramble_ready_reason gauge\n")
	for _, r := range []string{reasonReady, reasonNoPacket, reasonKeysDontFit, reasonNotDescrambl} {
		fmt.Fprintf(&b, "tsdescramble_ready_reason{reason=%q} %d\n", r, b2i(r == reason))
	}
	if extra := m.extra.Load(); extra != nil {
		(*extra)(&b)
	}
	io.WriteString(w, b.String())
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// SetExtra adds series of the run's other parts (a key server, an ECMG) to what /metrics
// serves: write is called at each scrape, from the server's goroutine, and writes them in the
// text format.
func (m *Server) SetExtra(write func(*strings.Builder)) { m.extra.Store(&write) }

// WriteText writes the counts of a run in the Prometheus text format. Per-PID series carry a pid
// label written as the summaries write PIDs (0x0100); the totals over PIDs are their sums.
// The counts of a network input (in) and output (out) come when the run has them; the RTP
// ones when the input is rtp://.
func WriteText(w io.Writer, st *pipeline.Stats, in *live.Stats, out *live.WriterStats) {
	var b strings.Builder
	metric := func(name, typ, help string) {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, typ)
	}
	value := func(name string, v int64) { fmt.Fprintf(&b, "%s %d\n", name, v) }
	pids := st.PIDs

	metric("tsdescramble_packets_total", "counter", "Packets read, per PID.")
	for _, p := range pids {
		fmt.Fprintf(&b, "tsdescramble_packets_total{pid=\"%#04x\"} %d\n", p.PID, p.Packets)
	}
	metric("tsdescramble_packets_descrambled_total", "counter", "Packets descrambled, per PID.")
	for _, p := range pids {
		fmt.Fprintf(&b, "tsdescramble_packets_descrambled_total{pid=\"%#04x\"} %d\n", p.PID, p.Descrambled)
	}
	metric("tsdescramble_unit_start_checks_total", "counter", "Unit starts (PES headers, section CRCs) checked after descrambling, per PID and result: bad ones mean keys that do not fit, or damage.")
	for _, p := range pids {
		good, bad := p.PESGood[0]+p.PESGood[1], p.PESBad[0]+p.PESBad[1]
		if good+bad > 0 {
			fmt.Fprintf(&b, "tsdescramble_unit_start_checks_total{pid=\"%#04x\",result=\"good\"} %d\n", p.PID, good)
			fmt.Fprintf(&b, "tsdescramble_unit_start_checks_total{pid=\"%#04x\",result=\"bad\"} %d\n", p.PID, bad)
		}
	}
	metric("tsdescramble_continuity_errors_total", "counter", "Continuity-counter errors, per PID: packets lost, repeated or out of order before the input.")
	for _, p := range pids {
		fmt.Fprintf(&b, "tsdescramble_continuity_errors_total{pid=\"%#04x\"} %d\n", p.PID, p.CCErrors)
	}
	metric("tsdescramble_read_bytes_total", "counter", "Bytes read from the input.")
	value("tsdescramble_read_bytes_total", st.BytesIn)
	metric("tsdescramble_written_packets_total", "counter", "Packet units written to the output.")
	value("tsdescramble_written_packets_total", st.PacketsOut)
	metric("tsdescramble_scrambled_packets_total", "counter", "Packets scrambled or rescrambled.")
	value("tsdescramble_scrambled_packets_total", st.Scrambled)
	metric("tsdescramble_left_scrambled_packets_total", "counter", "Scrambled packets left as they came: no key for their parity, or none fits their crypto period.")
	value("tsdescramble_left_scrambled_packets_total", st.NoKey+st.LeftScrambled)
	metric("tsdescramble_key_changes_total", "counter", "Changes of scrambling parity (crypto periods begun).")
	value("tsdescramble_key_changes_total", int64(st.KeyChanges))
	if max := st.LatencyMax; max > 0 {
		seconds := func(name string, d time.Duration) { fmt.Fprintf(&b, "%s %g\n", name, d.Seconds()) }
		metric("tsdescramble_latency_seconds", "gauge", "How long the first packet of the unit of work written last waited in the run, from its arrival to its write.")
		seconds("tsdescramble_latency_seconds", st.Latency)
		metric("tsdescramble_latency_max_seconds", "gauge", "The longest such wait so far.")
		seconds("tsdescramble_latency_max_seconds", max)
	}
	if in != nil {
		metric("tsdescramble_received_datagrams_total", "counter", "Datagrams received from the network input.")
		value("tsdescramble_received_datagrams_total", in.Datagrams)
		metric("tsdescramble_received_datagrams_dropped_total", "counter", "Datagrams the system dropped before the input read them, its receive buffer full (where it coalesces datagrams, it counts a buffer of up to 64 once: a lower bound).")
		value("tsdescramble_received_datagrams_dropped_total", in.Dropped)
		metric("tsdescramble_received_datagrams_unaligned_total", "counter", "Datagrams the input dropped because they were not a whole number of packets (short, cut or padded).")
		value("tsdescramble_received_datagrams_unaligned_total", in.Unaligned)
		if in.RTP > 0 {
			metric("tsdescramble_rtp_datagrams_lost_total", "counter", "RTP datagrams lost: sequence numbers that never came.")
			value("tsdescramble_rtp_datagrams_lost_total", in.Lost)
			metric("tsdescramble_rtp_datagrams_reordered_total", "counter", "RTP datagrams that came out of order and were put back in it.")
			value("tsdescramble_rtp_datagrams_reordered_total", in.Reordered)
			metric("tsdescramble_rtp_datagrams_late_total", "counter", "RTP datagrams that came after their place had been given up, passed on late.")
			value("tsdescramble_rtp_datagrams_late_total", in.Late)
			metric("tsdescramble_rtp_datagrams_duplicated_total", "counter", "RTP datagrams that came twice, the copy dropped.")
			value("tsdescramble_rtp_datagrams_duplicated_total", in.Duplicates)
			metric("tsdescramble_rtp_sequence_jumps_total", "counter", "Jumps of the RTP sequence number too large to be losses (a restarted sender).")
			value("tsdescramble_rtp_sequence_jumps_total", in.Jumps)
			metric("tsdescramble_rtp_datagrams_other_ssrc_total", "counter", "RTP datagrams of another sender (SSRC) than the one followed, dropped.")
			value("tsdescramble_rtp_datagrams_other_ssrc_total", in.OtherSSRC)
			metric("tsdescramble_rtp_new_ssrc_total", "counter", "New senders (SSRC) followed after the one before went silent (a restarted sender).")
			value("tsdescramble_rtp_new_ssrc_total", in.NewSSRC)
		}
	}
	if out != nil {
		metric("tsdescramble_sent_datagrams_total", "counter", "Datagrams sent to the network output.")
		value("tsdescramble_sent_datagrams_total", out.Datagrams)
	}
	io.WriteString(w, b.String())
}

// connCap is a listener that keeps at most max connections open. A connection that comes at
// the cap takes the place of the one idle longest (a keep-alive connection between two
// requests), so that a scraper is answered however many idle connections others hold; when
// none is idle, the new one is closed at once. Refusing at once, rather than leaving it unaccepted
// as a blocking limit does, keeps the kernel's backlog empty: a new connection is answered or
// refused, never left waiting.
type connCap struct {
	net.Listener
	max int
	log func(string)

	mu       sync.Mutex
	conns    map[net.Conn]connInfo
	failing  bool // Accept failed last time: said once until it succeeds again
	refusing bool // at the cap with none idle: said once until a connection is taken again
}

type connInfo struct {
	state http.ConnState
	since time.Time
}

func (l *connCap) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		l.mu.Lock()
		if err != nil {
			first := !l.failing && !errors.Is(err, net.ErrClosed)
			l.failing = true
			l.mu.Unlock()
			if first {
				// Out of file descriptors, most often: the server retries, as net/http does.
				l.log(fmt.Sprintf("cannot accept a connection: %v (said once until one is accepted again)", err))
			}
			return nil, err
		}
		l.failing = false
		if len(l.conns) >= l.max {
			var oldest net.Conn
			var since time.Time
			for o, info := range l.conns {
				if info.state == http.StateIdle && (oldest == nil || info.since.Before(since)) {
					oldest, since = o, info.since
				}
			}
			if oldest == nil {
				first := !l.refusing
				l.refusing = true
				l.mu.Unlock()
				c.Close()
				if first {
					l.log(fmt.Sprintf("%d connections open, none idle: new ones are closed until one ends (said once)", l.max))
				}
				continue
			}
			delete(l.conns, oldest)
			oldest.Close()
		}
		l.refusing = false
		l.conns[c] = connInfo{http.StateNew, time.Now()}
		l.mu.Unlock()
		return c, nil
	}
}

// state is the server's ConnState: it follows the connections this listener handed out.
func (l *connCap) state(c net.Conn, s http.ConnState) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.conns[c]; !ok {
		return // closed here to make room
	}
	if s == http.StateClosed || s == http.StateHijacked {
		delete(l.conns, c)
		return
	}
	l.conns[c] = connInfo{s, time.Now()}
}

// httpErrors writes net/http's own error lines as the run's errors. Its accept errors are
// left out: it logs one at each retry, and connCap says it once per streak.
type httpErrors func(string)

func (h httpErrors) Write(p []byte) (int, error) {
	line := strings.TrimSpace(string(p))
	if !strings.HasPrefix(line, "http: Accept error") {
		h(strings.TrimPrefix(line, "http: "))
	}
	return len(p), nil
}

// Addr is the address the server listens on, nil when it has no listener of its own.
func (m *Server) Addr() net.Addr { return m.addr }

// WriteKeyServer writes the series of a key server's client in the text format: the ECMs sent
// and how each ended, the CWs set, the round trip, and whether the last exchange failed. proto
// names the protocol (a label).
func WriteKeyServer(b *strings.Builder, proto string, st keyserver.Stats) {
	fmt.Fprintf(b, "# HELP tsdescramble_key_server_ecms_total ECMs sent to the key server, by how their request ended (sent counts them all).\n# TYPE tsdescramble_key_server_ecms_total counter\n")
	for _, r := range []struct {
		name string
		n    int64
	}{{"sent", st.Sent}, {"answered", st.Answers}, {"not_found", st.NotFound}, {"no_card", st.NoCard}, {"timeout", st.Timeouts}, {"error", st.Errors}} {
		fmt.Fprintf(b, "tsdescramble_key_server_ecms_total{protocol=%q,result=%q} %d\n", proto, r.name, r.n)
	}
	fmt.Fprintf(b, "# HELP tsdescramble_key_server_cws_total CWs the key server set in the key source.\n# TYPE tsdescramble_key_server_cws_total counter\n")
	fmt.Fprintf(b, "tsdescramble_key_server_cws_total{protocol=%q} %d\n", proto, st.CWs)
	fmt.Fprintf(b, "# HELP tsdescramble_key_server_refused_total CWs, IVs or modes of the key server not used.\n# TYPE tsdescramble_key_server_refused_total counter\n")
	fmt.Fprintf(b, "tsdescramble_key_server_refused_total{protocol=%q} %d\n", proto, st.Refused)
	fmt.Fprintf(b, "# HELP tsdescramble_key_server_round_trip_seconds Time from sending an ECM to its answer: median and largest so far.\n# TYPE tsdescramble_key_server_round_trip_seconds gauge\n")
	fmt.Fprintf(b, "tsdescramble_key_server_round_trip_seconds{protocol=%q,stat=\"median\"} %g\n", proto, st.RTTMedian.Seconds())
	fmt.Fprintf(b, "tsdescramble_key_server_round_trip_seconds{protocol=%q,stat=\"max\"} %g\n", proto, st.RTTMax.Seconds())
}

// WriteKeyServerState writes where the connection to a key server stands, one series per state
// (connecting, connected, refused, down) with 1 for the one in force: a fixed set of series per
// server, labelled with its protocol and HOST:PORT, never its user or password.
func WriteKeyServerState(b *strings.Builder, proto, server string, state keyserver.ConnState) {
	fmt.Fprintf(b, "# HELP tsdescramble_key_server_connection Where the connection to the key server stands: 1 for the state in force (connecting, connected, refused: reached and turned away, down: not reached).\n# TYPE tsdescramble_key_server_connection gauge\n")
	for _, s := range keyserver.ConnStates {
		fmt.Fprintf(b, "tsdescramble_key_server_connection{protocol=%q,server=%q,state=%q} %d\n", proto, server, s, b2i(s == state))
	}
}

// WriteCWsApplied writes the CWs a run's key source applied so far, per PID (as
// pipeline.Observer.CWsApplied gives them, PIDs in order), with a pid label written as the
// summaries write PIDs (0x0100).
func WriteCWsApplied(b *strings.Builder, applied []pipeline.PIDCount) {
	fmt.Fprintf(b, "# HELP tsdescramble_cws_applied_total Crypto periods that took a CW from the key source (the key server, the ECM cache or the CW log) while the run went, per PID; one taken back because it did not fit counts too.\n# TYPE tsdescramble_cws_applied_total counter\n")
	for _, a := range applied {
		fmt.Fprintf(b, "tsdescramble_cws_applied_total{pid=\"%#04x\"} %d\n", a.PID, a.N)
	}
}

// ECMG is what a SimulCrypt scrambler's ECMG did so far, for WriteECMG.
type ECMG struct {
	Connected bool  // the channel is up
	Replaced  int64 // ECM packets put in the stream in the place of null packets
	Inserted  int64 // and between the input's packets
	Refused   int64 // ECMs refused: bad size, bad TS packets, a crypto period not asked for
}

// WriteECMG writes the series of a SimulCrypt scrambler's ECMG in the text format: whether its
// channel is up, the ECM packets put in the stream by where they went, and the ECMs refused.
func WriteECMG(b *strings.Builder, e ECMG) {
	fmt.Fprintf(b, "# HELP tsdescramble_ecmg_connected Whether the channel to the ECMG is up: 1 or 0.\n# TYPE tsdescramble_ecmg_connected gauge\n")
	fmt.Fprintf(b, "tsdescramble_ecmg_connected %d\n", b2i(e.Connected))
	fmt.Fprintf(b, "# HELP tsdescramble_ecm_packets_total ECM packets put in the stream, by where: in the place of null packets (replaced) or between the input's packets (inserted).\n# TYPE tsdescramble_ecm_packets_total counter\n")
	fmt.Fprintf(b, "tsdescramble_ecm_packets_total{place=\"replaced\"} %d\n", e.Replaced)
	fmt.Fprintf(b, "tsdescramble_ecm_packets_total{place=\"inserted\"} %d\n", e.Inserted)
	fmt.Fprintf(b, "# HELP tsdescramble_ecmg_ecms_refused_total ECMs of the ECMG refused: bad size, bad TS packets, a crypto period not asked for.\n# TYPE tsdescramble_ecmg_ecms_refused_total counter\n")
	fmt.Fprintf(b, "tsdescramble_ecmg_ecms_refused_total %d\n", e.Refused)
}

// WriteKeyWaits writes the crypto periods of a run with keys from a key server that waited
// for their key (waited) and those that gave up waiting (given_up), so far.
func WriteKeyWaits(b *strings.Builder, waited, gaveUp int64) {
	fmt.Fprintf(b, "# HELP tsdescramble_key_wait_periods_total Crypto periods whose key came after their first packet (waited), and those whose key never came in time (given_up).\n# TYPE tsdescramble_key_wait_periods_total counter\n")
	fmt.Fprintf(b, "tsdescramble_key_wait_periods_total{result=\"waited\"} %d\n", waited)
	fmt.Fprintf(b, "tsdescramble_key_wait_periods_total{result=\"given_up\"} %d\n", gaveUp)
}

// Service is what one service of a run over a whole multiplex did so far, for WriteServices.
type Service struct {
	Number        uint16
	Packets       int64 // written to its output
	Descrambled   int64
	LeftScrambled int64 // scrambled packets of crypto periods no key fitted
	KeyFailures   int
	Good, Bad     int64 // unit starts that descrambled to a valid header, and those that did not
}

// WriteServices writes the series of each service of a run over a whole multiplex, labelled
// by its number, so that one service whose keys stopped fitting shows beside those that run.
func WriteServices(b *strings.Builder, svcs []Service) {
	if len(svcs) == 0 {
		return
	}
	counter := func(name, help string, value func(Service) int64) {
		fmt.Fprintf(b, "# HELP %s %s\n# TYPE %s counter\n", name, help, name)
		for _, s := range svcs {
			fmt.Fprintf(b, "%s{service=\"%d\"} %d\n", name, s.Number, value(s))
		}
	}
	counter("tsdescramble_service_packets_total", "Packets written to each service's output.",
		func(s Service) int64 { return s.Packets })
	counter("tsdescramble_service_descrambled_packets_total", "Packets of each service descrambled.",
		func(s Service) int64 { return s.Descrambled })
	counter("tsdescramble_service_left_scrambled_packets_total", "Scrambled packets of each service that no key fitted, passed as they came.",
		func(s Service) int64 { return s.LeftScrambled })
	fmt.Fprintf(b, "# HELP tsdescramble_service_unit_start_checks_total Scrambled unit starts of each service checked after descrambling: good (a valid PES header or section) or bad.\n# TYPE tsdescramble_service_unit_start_checks_total counter\n")
	for _, s := range svcs {
		fmt.Fprintf(b, "tsdescramble_service_unit_start_checks_total{service=\"%d\",result=\"good\"} %d\n", s.Number, s.Good)
		fmt.Fprintf(b, "tsdescramble_service_unit_start_checks_total{service=\"%d\",result=\"bad\"} %d\n", s.Number, s.Bad)
	}
	counter("tsdescramble_service_key_failures_total", "Unit starts of each service that did not fit their crypto period's key.",
		func(s Service) int64 { return int64(s.KeyFailures) })
}

// WriteReloads writes the rereadings of a multiplex run's config file on SIGHUP: applied, and
// refused (a file that did not read or check; the run went on with the config it had).
func WriteReloads(b *strings.Builder, applied, refused int64) {
	fmt.Fprintf(b, "# HELP tsdescramble_config_reloads_total Rereadings of the config file on SIGHUP, applied or refused.\n# TYPE tsdescramble_config_reloads_total counter\n")
	fmt.Fprintf(b, "tsdescramble_config_reloads_total{result=\"applied\"} %d\n", applied)
	fmt.Fprintf(b, "tsdescramble_config_reloads_total{result=\"refused\"} %d\n", refused)
}
