package main

import (
	"net"
	"strings"
)

// checkMetricsAddr refuses a -metrics value that is no [HOST]:PORT as a usage error (exit 2):
// a bare port would otherwise reach the listener and fail as a runtime error (exit 1), which
// says the flag was right and the machine wrong.
func checkMetricsAddr(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	switch {
	case err != nil && !strings.Contains(addr, ":") && addr != "":
		return usageErr("-metrics %s: want [HOST]:PORT: to listen on every address, write :%s", addr, addr)
	case err != nil || port == "":
		return usageErr("-metrics %q: want [HOST]:PORT (:9400, 127.0.0.1:9400, [::1]:9400)", addr)
	}
	return nil
}
