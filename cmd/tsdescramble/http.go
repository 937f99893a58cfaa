package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/tsdescramble/tsdescramble/live"
	"github.com/tsdescramble/tsdescramble/relay"
	"github.com/tsdescramble/tsdescramble/srt"
	"github.com/tsdescramble/tsdescramble/web"
)

// HTTP transports: -in http(s)://… reads a stream or follows an HLS playlist (package web);
// -out http://[HOST]:PORT/PATH serves the output stream to any number of clients (package
// relay).

// openWebInput opens an HTTP stream or an HLS playlist. A live source that drops the
// connection is reconnected, the gap counted; the URL's password never shows in a message.
func openWebInput(path string) (*input, error) {
	r, err := web.Open(context.Background(), path)
	if err != nil {
		return nil, failErr("cannot open the input: %v", err)
	}
	return &input{Reader: r, size: -1, web: r}, nil
}

// isNetwork reports whether a -in or -out value names a network end rather than a file: an
// address (live.go), an HTTP URL or an SRT one (srt.go).
func isNetwork(s string) bool { return live.IsAddress(s) || web.IsURL(s) || srt.IsURL(s) }

// relayAddress parses -out http://[HOST]:PORT/PATH: the address to listen on and the path the
// stream is served at ("/" when none is given).
func relayAddress(s string) (addr, path string, err error) {
	u, perr := url.Parse(s)
	switch {
	case perr == nil && strings.EqualFold(u.Scheme, "https"):
		return "", "", usageErr("-out %s: the stream is served over plain HTTP only: write http://[HOST]:PORT/PATH (a TLS proxy in front serves https)", u.Redacted())
	case perr != nil || u.Port() == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "":
		return "", "", usageErr("-out %s: want http://[HOST]:PORT/PATH, the address and path to serve the stream at (http://:PORT/PATH listens on every interface)", web.Redacted(s))
	}
	path = u.EscapedPath()
	if path == "" {
		path = "/"
	}
	return net.JoinHostPort(u.Hostname(), u.Port()), path, nil
}

// openRelayOutput serves the output stream at -out http://[HOST]:PORT/PATH: a client joins at
// the next PAT, and one too slow to keep up is dropped rather than slow the run. From a
// regular file the stream is paced by its PCR, as to a network address. handlers (/metrics and
// /healthz, for -metrics out) are served on the same listener.
func openRelayOutput(path string, env Env, pace bool, handlers map[string]http.Handler) (*output, error) {
	addr, p, err := relayAddress(path)
	if err != nil {
		return nil, err
	}
	// The relay says only what goes wrong: a client dropped or refused, the server's errors.
	srv, err := relay.Listen(addr, p, relay.Options{Handlers: handlers, Log: func(msg string) {
		logWarn(env.Stderr, "-out: "+msg)
	}})
	if err != nil {
		return nil, failErr("cannot open the output: %v", err)
	}
	o := &output{net: &netOutput{relay: srv}}
	var dst io.Writer = srv
	if pace {
		// Bursts of 7 packets, as a datagram of a network output carries.
		o.net.pacer = live.NewPacer(srv, 7)
		dst = o.net.pacer
	}
	o.w = namedWriter{path, dst, o}
	return o, nil
}
