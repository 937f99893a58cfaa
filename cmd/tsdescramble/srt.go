package main

import (
	"context"
	"fmt"
	"io"
	"net/netip"

	"github.com/tsdescramble/tsdescramble/live"
	"github.com/tsdescramble/tsdescramble/srt"
	"github.com/tsdescramble/tsdescramble/web"
)

// SRT transports: -in srt://… and -out srt://… (package srt), as a caller or a listener, in a
// build with the srt tag. A build without it takes the URLs apart all the same, so that the
// message says what to do rather than that the input is not a file.

// checkSRT parses the srt:// URL of flag name (-in or -out); in a build without SRT it says
// how to get one. The errors are usage errors, the passphrase hidden.
func checkSRT(name, s string) (*srt.Address, error) {
	a, err := srt.ParseAddress(s)
	if err != nil {
		return nil, usageErr("-%s: %v", name, err)
	}
	if !srt.Built {
		return nil, usageErr("-%s %s: %v", name, a, srt.ErrNotBuilt)
	}
	return a, nil
}

// srtLog returns the options that write what the SRT end of flag name says of its
// connections, one line each, what went wrong at level warn.
func srtLog(env Env, name string) srt.Options {
	return srt.Options{
		Log:  func(msg string) { fmt.Fprintln(env.Stderr, "tsdescramble: -"+name+": "+msg) },
		Warn: func(msg string) { logWarn(env.Stderr, "-"+name+": "+msg) },
	}
}

// openSRTInput receives over SRT: a caller connects now, and calls again when the connection
// is lost; a listener waits for its callers.
func openSRTInput(path string, env Env) (*input, error) {
	a, err := checkSRT("in", path)
	if err != nil {
		return nil, err
	}
	r, err := srt.Open(context.Background(), a, srtLog(env, "in"))
	if err != nil {
		return nil, failErr("cannot open the input: %v", err)
	}
	return &input{Reader: r, size: -1, srt: r}, nil
}

// openSRTOutput sends over SRT, 7 packets a message, paced by the PCR from a regular file as
// to any network output. A caller connects now; a listener drops the output until a caller
// comes.
func openSRTOutput(path string, env Env, pace bool) (*output, error) {
	a, err := checkSRT("out", path)
	if err != nil {
		return nil, err
	}
	w, err := srt.NewWriter(a, srtLog(env, "out"))
	if err != nil {
		return nil, failErr("cannot open the output: %v", err)
	}
	o := &output{net: &netOutput{srt: w}}
	var dst io.Writer = w
	if pace {
		o.net.pacer = live.NewPacer(w, srt.MessageSize/188)
		dst = o.net.pacer
	}
	o.w = namedWriter{srt.Redacted(path), dst, o}
	return o, nil
}

// redacted returns a -in or -out value for a message: a URL's password or an SRT
// passphrase hidden, a file name as it is.
func redacted(s string) string {
	switch {
	case web.IsURL(s):
		return web.Redacted(s)
	case srt.IsURL(s):
		return srt.Redacted(s)
	}
	return s
}

// srtLoops reports why an SRT input and output given together would make the run receive
// what it sends, or take one port twice, or "".
func srtLoops(in, out *srt.Address) string {
	if in.Port != out.Port {
		return ""
	}
	switch {
	case in.Mode == srt.Listener && out.Mode == srt.Listener:
		return "both listen on one port: give the output another"
	case in.Mode == srt.Listener && out.Mode == srt.Caller && callsHere(out.Host):
		return "the output would call the input: the run would receive what it sends; send to another port"
	case in.Mode == srt.Caller && out.Mode == srt.Listener && callsHere(in.Host):
		return "the input would call the output: the run would receive what it sends; listen on another port"
	}
	return ""
}

// callsHere reports whether a caller of host reaches this machine: a loopback address or
// one of its own (a name is looked up only as localhost).
func callsHere(host string) bool {
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && (ip.IsLoopback() || isLocalAddr(ip))
}
