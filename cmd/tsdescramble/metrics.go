package main

import (
	"net"
	"net/url"
	"strings"

	"github.com/tsdescramble/tsdescramble/web"
)

// metricsOnOutput is the -metrics value that serves /metrics and /healthz on the listener of
// the HTTP output (-out http://…), so that one port is enough to watch a relay.
const metricsOnOutput = "out"

// metricsPaths are the paths -metrics serves; on the HTTP output's listener, the stream may not
// take one of them.
var metricsPaths = []string{"/metrics", "/healthz", "/readyz", "/livez"}

// checkMetricsAddr refuses a -metrics value that is no [HOST]:PORT, nor out, as a usage error
// (exit 2): a bare port would otherwise reach the listener and fail as a runtime error (exit
// 1), which says the flag was right and the machine wrong. On the HTTP output's listener, the
// stream's path must leave /metrics and /healthz free.
func checkMetricsAddr(addr, out string) error {
	if addr == metricsOnOutput || sharesListener(addr, out) {
		if !web.IsURL(out) {
			return usageErr("-metrics out serves the metrics on the listener of the HTTP output: give -out http://[HOST]:PORT/PATH, or -metrics [HOST]:PORT")
		}
		_, path, err := relayAddress(out)
		if err != nil {
			return err
		}
		if p, err := url.PathUnescape(path); err == nil {
			for _, m := range metricsPaths {
				if strings.TrimSuffix(p, "/") == m {
					return usageErr("-out %s: the stream's path %s is where -metrics %s serves %s on the same listener: serve the stream at another path, such as /stream.ts", web.Redacted(out), path, addr, m)
				}
			}
		}
		return nil
	}
	_, port, err := net.SplitHostPort(addr)
	switch {
	case err != nil && addr != "" && strings.Trim(addr, "0123456789") == "":
		return usageErr("-metrics %s: want [HOST]:PORT: to listen on every address, write :%s", addr, addr)
	case err != nil || port == "":
		return usageErr("-metrics %q: want [HOST]:PORT (:9400, 127.0.0.1:9400, [::1]:9400), or out for the HTTP output's listener", addr)
	}
	return nil
}

// metricsOnRelay reports whether the metrics are served on the HTTP output's listener: as
// -metrics out asks, or because -metrics names the very address -out http://… listens on,
// which two listeners could not both take.
func metricsOnRelay(c *config) bool {
	return c.metrics == metricsOnOutput || sharesListener(c.metrics, c.out)
}

// sharesListener reports whether addr, [HOST]:PORT, is the address the HTTP output out listens
// on: the same host, as written, and the same port.
func sharesListener(addr, out string) bool {
	if !web.IsURL(out) {
		return false
	}
	raddr, _, err := relayAddress(out)
	if err != nil {
		return false
	}
	h1, p1, err1 := net.SplitHostPort(addr)
	h2, p2, err2 := net.SplitHostPort(raddr)
	return err1 == nil && err2 == nil && p1 == p2 && strings.EqualFold(h1, h2)
}
