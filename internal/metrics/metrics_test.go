package metrics

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tsdescramble/tsdescramble/keyserver"
	"github.com/tsdescramble/tsdescramble/pipeline"
)

// get fetches a path of the metrics server at addr.
func get(t *testing.T, addr, path string) (int, string) {
	t.Helper()
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get("http://" + addr + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// counts stands for a run's Observer: the test sets what its snapshots say.
type counts struct {
	mu sync.Mutex
	st pipeline.Stats
}

func (c *counts) snapshot() pipeline.Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.st
}

func (c *counts) set(packets, good, bad int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.st.Packets, c.st.PESGood, c.st.PESBad = packets, good, bad
}

// readyState is ready without the reason's name, for the tests.
func (m *Server) readyState(now time.Time) (bool, string) {
	ok, _, why := m.ready(now)
	return ok, why
}

func TestHealthz(t *testing.T) {
	var c counts
	m, err := Serve("127.0.0.1:0", c.snapshot, func(string) {})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	addr := m.Addr().String()
	if code, body := get(t, addr, "/healthz"); code != 503 || !strings.Contains(body, "no packet yet") {
		t.Errorf("before any packet: %d %s", code, body)
	}
	c.set(1000, 10, 0)
	for _, path := range []string{"/healthz", "/readyz"} {
		if code, body := get(t, addr, path); code != 200 || !strings.HasPrefix(body, "ok: 1000 packets, 0 descrambled, 10 good") {
			t.Errorf("%s, packets and good checks: %d %s", path, code, body)
		}
	}
	if code, body := get(t, addr, "/livez"); code != 200 || !strings.HasPrefix(body, "ok: running") {
		t.Errorf("/livez: %d %s", code, body)
	}

	// The windows, on a server of the test's own clock: health compares with the newest
	// sample at least HealthWindow old.
	var lc counts
	t0 := time.Now()
	h := &Server{counts: lc.snapshot, start: t0}
	h.sample(t0)
	lc.set(1000, 10, 0)
	h.sample(t0.Add(HealthWindow))
	if ok, why := h.readyState(t0.Add(HealthWindow + time.Second)); !ok {
		t.Errorf("packets and good checks in the window: %s", why)
	}
	// Packets came, but every check failed: the keys stopped fitting.
	lc.set(2000, 10, 7)
	h.sample(t0.Add(2 * HealthWindow))
	if ok, why := h.readyState(t0.Add(2*HealthWindow + time.Second)); ok || !strings.Contains(why, "the keys do not fit: 7 unit starts checked bad, none good, in the last 6s") {
		t.Errorf("bad checks only: %v %s", ok, why)
	}
	// Nothing came.
	h.sample(t0.Add(3 * HealthWindow))
	if ok, why := h.readyState(t0.Add(3*HealthWindow + time.Second)); ok || !strings.Contains(why, "no packet in the last 6s") {
		t.Errorf("no packets: %v %s", ok, why)
	}
	// Packets came, scrambled, and none was descrambled: a key server away. Not ready, and
	// alive: a restart would not bring the keys.
	lc.mu.Lock()
	lc.st.Packets, lc.st.Even, lc.st.Odd = 3000, 600, 400
	lc.mu.Unlock()
	h.sample(t0.Add(4 * HealthWindow))
	if ok, why := h.readyState(t0.Add(4*HealthWindow + time.Second)); ok || !strings.Contains(why, "1000 scrambled packets and none descrambled") {
		t.Errorf("scrambled, none descrambled: %v %s", ok, why)
	}
	if ok, why := h.alive(t0.Add(4*HealthWindow + time.Second)); !ok {
		t.Errorf("a run without keys is alive: %s", why)
	}
	lc.mu.Lock()
	lc.st.Packets, lc.st.Even, lc.st.Descrambled, lc.st.PESGood = 4000, 1200, 500, 20
	lc.mu.Unlock()
	h.sample(t0.Add(5 * HealthWindow))
	if ok, why := h.readyState(t0.Add(5*HealthWindow + time.Second)); !ok {
		t.Errorf("descrambling again: %s", why)
	}
	if _, err := Serve(addr, c.snapshot, func(string) {}); err == nil || !strings.Contains(err.Error(), "cannot listen on "+addr) {
		t.Errorf("a second server on %s: %v", addr, err)
	}
}

// A keep-alive connection that asks nothing more is closed after the idle timeout (shortened
// here from 30 s), and one that never asks after the header timeout.
func TestMetricsIdleTimeout(t *testing.T) {
	old := IdleTimeout
	IdleTimeout = 300 * time.Millisecond
	t.Cleanup(func() { IdleTimeout = old })
	var c counts
	m, err := Serve("127.0.0.1:0", c.snapshot, func(string) {})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	var conns []net.Conn
	for range 5 {
		c, err := net.DialTimeout("tcp", m.Addr().String(), time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.Write([]byte("GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n"))
		r := bufio.NewReader(c)
		resp, err := http.ReadResponse(r, nil)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		conns = append(conns, c)
	}
	start := time.Now()
	for i, c := range conns {
		c.SetReadDeadline(start.Add(3 * time.Second))
		var b [1]byte
		if _, err := c.Read(b[:]); err != io.EOF {
			t.Errorf("idle connection %d: want it closed by the server (EOF), got %v after %v", i, err, time.Since(start))
		}
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("idle connections closed after %v, want about %v", d, IdleTimeout)
	}
}

// /livez fails only for a run that holds packets and has moved none for livenessStall.
func TestLivez(t *testing.T) {
	var lc counts
	t0 := time.Now()
	h := &Server{counts: lc.snapshot, start: t0}
	h.sample(t0)
	if ok, why := h.alive(t0.Add(2 * livenessStall)); !ok {
		t.Errorf("a run with no packet yet (a feed not started): %s", why)
	}
	lc.mu.Lock()
	lc.st.Packets, lc.st.PacketsOut = 200000, 200000-stuckSlack-1
	lc.mu.Unlock()
	for i := range 3 {
		h.sample(t0.Add(time.Duration(i) * livenessStall))
	}
	if ok, why := h.alive(t0.Add(2*livenessStall + time.Second)); ok || !strings.Contains(why, "no packet read or written for") {
		t.Errorf("a stuck run: %v %s", ok, why)
	}
	lc.mu.Lock()
	lc.st.PacketsOut = 200000 // all written: a silent feed, nothing held
	lc.mu.Unlock()
	h.sample(t0.Add(3 * livenessStall))
	if ok, why := h.alive(t0.Add(3*livenessStall + time.Second)); !ok {
		t.Errorf("a silent feed, everything written: %s", why)
	}
}

// TestExtraSeries: the ECMG's series and the key waits, set with SetExtra, are served at each
// scrape with the counts of that moment.
func TestExtraSeries(t *testing.T) {
	var c counts
	m, err := Serve("127.0.0.1:0", c.snapshot, func(string) {})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	var mu sync.Mutex
	e := ECMG{Connected: true, Replaced: 5, Inserted: 2, Refused: 1}
	waited, gaveUp := int64(3), int64(0)
	state := keyserver.Connecting
	applied := []pipeline.PIDCount{{PID: 0x100, N: 2}, {PID: 0x1abc, N: 7}}
	m.SetExtra(func(b *strings.Builder) {
		mu.Lock()
		defer mu.Unlock()
		WriteECMG(b, e)
		WriteKeyWaits(b, waited, gaveUp)
		WriteKeyServerState(b, "newcamd", "127.0.0.1:15050", state)
		WriteCWsApplied(b, applied)
	})
	want := func(lines ...string) {
		t.Helper()
		_, body := get(t, m.Addr().String(), "/metrics")
		for _, l := range lines {
			if !strings.Contains(body, "\n"+l+"\n") {
				t.Errorf("/metrics has no %q:\n%s", l, body)
			}
		}
	}
	want("tsdescramble_ecmg_connected 1", `tsdescramble_ecm_packets_total{place="replaced"} 5`,
		`tsdescramble_ecm_packets_total{place="inserted"} 2`, "tsdescramble_ecmg_ecms_refused_total 1",
		`tsdescramble_key_wait_periods_total{result="waited"} 3`, `tsdescramble_key_wait_periods_total{result="given_up"} 0`,
		`tsdescramble_key_server_connection{protocol="newcamd",server="127.0.0.1:15050",state="connecting"} 1`,
		`tsdescramble_key_server_connection{protocol="newcamd",server="127.0.0.1:15050",state="connected"} 0`,
		`tsdescramble_key_server_connection{protocol="newcamd",server="127.0.0.1:15050",state="refused"} 0`,
		`tsdescramble_key_server_connection{protocol="newcamd",server="127.0.0.1:15050",state="down"} 0`,
		`tsdescramble_cws_applied_total{pid="0x0100"} 2`, `tsdescramble_cws_applied_total{pid="0x1abc"} 7`)
	mu.Lock()
	e.Connected, e.Inserted, gaveUp, state = false, 4, 2, keyserver.Refused
	applied[0].N = 3
	mu.Unlock()
	want("tsdescramble_ecmg_connected 0", `tsdescramble_ecm_packets_total{place="inserted"} 4`,
		`tsdescramble_key_wait_periods_total{result="given_up"} 2`,
		`tsdescramble_key_server_connection{protocol="newcamd",server="127.0.0.1:15050",state="connecting"} 0`,
		`tsdescramble_key_server_connection{protocol="newcamd",server="127.0.0.1:15050",state="refused"} 1`,
		`tsdescramble_cws_applied_total{pid="0x0100"} 3`)
}
