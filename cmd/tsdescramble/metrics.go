package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/tsdescramble/tsdescramble/pipeline"
)

// -metrics ADDR serves a run's counts while it goes, in the Prometheus text exposition format
// (version 0.0.4), and /healthz for a scheduler's probes. The format is written here rather than
// with the Prometheus client library: a dozen counters read from pipeline.Counters need no
// registry, and the library would bring its own dependencies (protobuf among them) into the
// command's build.

// healthWindow is how far back /healthz looks: packets must have come, and unit starts must
// have checked good if any was checked, within it.
const healthWindow = 5 * time.Second

// metricsServer serves /metrics and /healthz for one run.
type metricsServer struct {
	counters *pipeline.Counters
	srv      *http.Server
	addr     net.Addr // where it listens
	start    time.Time

	mu      sync.Mutex
	samples []healthSample // one a second, the last healthWindow of them
	stop    chan struct{}
}

type healthSample struct {
	at                 time.Time
	packets, good, bad int64
}

// serveMetrics listens on addr and serves the counters until close is called.
func serveMetrics(addr string, counters *pipeline.Counters) (*metricsServer, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, failErr("-metrics: cannot listen on %s: %v", addr, errors.Unwrap(err))
	}
	m := &metricsServer{counters: counters, addr: ln.Addr(), start: time.Now(), stop: make(chan struct{})}
	m.sample(m.start)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /metrics", m.metrics)
	mux.HandleFunc("GET /healthz", m.healthz)
	m.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go m.srv.Serve(ln)
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
	return m, nil
}

func (m *metricsServer) close() {
	close(m.stop)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	m.srv.Shutdown(ctx)
}

func (m *metricsServer) sample(now time.Time) {
	s := healthSample{now, m.counters.PacketsIn.Load(), m.counters.PESGood.Load(), m.counters.PESBad.Load()}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.samples = append(m.samples, s)
	for len(m.samples) > 1 && now.Sub(m.samples[1].at) >= healthWindow {
		m.samples = m.samples[1:]
	}
}

// health says whether the run is healthy: packets came within the window, and if unit starts
// were checked in it, some passed (the keys fit).
func (m *metricsServer) health(now time.Time) (bool, string) {
	m.mu.Lock()
	then := m.samples[0]
	m.mu.Unlock()
	packets, good, bad := m.counters.PacketsIn.Load()-then.packets, m.counters.PESGood.Load()-then.good, m.counters.PESBad.Load()-then.bad
	window := now.Sub(then.at).Round(time.Second)
	switch {
	case packets == 0 && m.counters.PacketsIn.Load() == 0:
		return false, fmt.Sprintf("no packet yet in %v", now.Sub(m.start).Round(time.Second))
	case packets == 0:
		return false, fmt.Sprintf("no packet in the last %v", window)
	case good == 0 && bad > 0:
		return false, fmt.Sprintf("the keys do not fit: %d unit starts checked bad, none good, in the last %v", bad, window)
	}
	return true, fmt.Sprintf("%d packets and %d good unit starts in the last %v", packets, good, window)
}

func (m *metricsServer) healthz(w http.ResponseWriter, r *http.Request) {
	ok, why := m.health(time.Now())
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if !ok {
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprintln(w, "unhealthy: "+why)
		return
	}
	fmt.Fprintln(w, "ok: "+why)
}

func (m *metricsServer) metrics(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	writeMetrics(w, m.counters)
}

// writeMetrics writes the counters in the Prometheus text format. Per-PID series carry a pid
// label written as the summaries write PIDs (0x0100); the totals over PIDs are their sums.
func writeMetrics(w io.Writer, c *pipeline.Counters) {
	var b strings.Builder
	metric := func(name, typ, help string) {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, typ)
	}
	value := func(name string, v int64) { fmt.Fprintf(&b, "%s %d\n", name, v) }
	pids := c.PIDs()

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
		if p.PESGood+p.PESBad > 0 {
			fmt.Fprintf(&b, "tsdescramble_unit_start_checks_total{pid=\"%#04x\",result=\"good\"} %d\n", p.PID, p.PESGood)
			fmt.Fprintf(&b, "tsdescramble_unit_start_checks_total{pid=\"%#04x\",result=\"bad\"} %d\n", p.PID, p.PESBad)
		}
	}
	metric("tsdescramble_read_bytes_total", "counter", "Bytes read from the input.")
	value("tsdescramble_read_bytes_total", c.BytesIn.Load())
	metric("tsdescramble_written_packets_total", "counter", "Packet units written to the output.")
	value("tsdescramble_written_packets_total", c.PacketsOut.Load())
	metric("tsdescramble_scrambled_packets_total", "counter", "Packets scrambled or rescrambled.")
	value("tsdescramble_scrambled_packets_total", c.Scrambled.Load())
	metric("tsdescramble_left_scrambled_packets_total", "counter", "Scrambled packets left as they came: no key for their parity, or none fits their crypto period.")
	value("tsdescramble_left_scrambled_packets_total", c.LeftAsCame.Load())
	metric("tsdescramble_key_changes_total", "counter", "Changes of scrambling parity (crypto periods begun).")
	value("tsdescramble_key_changes_total", c.KeyChanges.Load())
	io.WriteString(w, b.String())
}
