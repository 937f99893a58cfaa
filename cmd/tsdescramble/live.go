package main

import (
	"context"
	"io"
	"net"
	"net/netip"
	"time"

	"github.com/tsdescramble/tsdescramble/internal/report"
	"github.com/tsdescramble/tsdescramble/live"
	"github.com/tsdescramble/tsdescramble/pipeline"
	"github.com/tsdescramble/tsdescramble/relay"
	"github.com/tsdescramble/tsdescramble/srt"
)

// Live streams: -in and -out take udp:// and rtp:// addresses beside files (see package live),
// and these flags bound what a live run adds and how long it lasts.

// defaultLatency is the latency bound of a run whose input is not a regular file.
const defaultLatency = 50 * time.Millisecond

// peekLive bounds the look-ahead for the PMTs on a network input (system_detect.go): a feed
// without a PAT must not hold its first packets back for long.
const peekLive = time.Second

// checkAddress parses the address of flag name (-in or -out), which must be one to receive on
// or to send to as the flag says.
func checkAddress(name, s string) (*live.Address, error) {
	a, err := live.ParseAddress(s)
	if err != nil {
		return nil, usageErr("-%s: %v", name, err)
	}
	switch {
	case name == "in" && !a.CanListen():
		return nil, usageErr("-in %s names a destination: to receive, write %s://@:%d (every local address), %s://@HOST:%d or a multicast group", s, a.Scheme, a.Port, a.Scheme, a.Port)
	case name == "out" && !a.CanSend():
		return nil, usageErr("-out %s is an address to listen on: to send, name the destination, %s://HOST:%d (without '@')", s, a.Scheme, a.Port)
	}
	return a, nil
}

// sendsToItself reports whether an output address would reach the port the input listens on,
// on this machine: the run would read what it writes.
func sendsToItself(in, out *live.Address) bool {
	if in.Port != out.Port {
		return false
	}
	oip := out.IP()
	if oip.IsMulticast() {
		return in.IP() == oip
	}
	if !oip.IsLoopback() && !isLocalAddr(oip) {
		return false
	}
	iip := in.IP()
	return !iip.IsValid() || iip.IsUnspecified() || iip == oip || iip.IsLoopback() && oip.IsLoopback()
}

// isLocalAddr reports whether ip is an address of this machine.
func isLocalAddr(ip netip.Addr) bool {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return false
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok {
			if x, ok := netip.AddrFromSlice(n.IP); ok && x.Unmap() == ip.Unmap() {
				return true
			}
		}
	}
	return false
}

// openLiveInput listens on a checked address.
func openLiveInput(path string) (*input, error) {
	a, err := checkAddress("in", path)
	if err != nil {
		return nil, err
	}
	r, err := live.Listen(context.Background(), a)
	if err != nil {
		return nil, failErr("cannot open the input: %v", err)
	}
	return &input{Reader: r, size: -1, live: r}, nil
}

// netOutput is a network output: the Writer (a UDP or RTP destination), the relay (HTTP
// clients) or an SRT Writer, and the Pacer before it when the run paces.
type netOutput struct {
	w     *live.Writer
	relay *relay.Server
	srt   *srt.Writer
	pacer *live.Pacer
}

// openLiveOutput opens a checked address for sending.
func openLiveOutput(path string, pace bool) (*output, error) {
	a, err := checkAddress("out", path)
	if err != nil {
		return nil, err
	}
	w, err := live.Dial(a)
	if err != nil {
		return nil, failErr("cannot open the output: %v", err)
	}
	o := &output{net: &netOutput{w: w}}
	var dst io.Writer = w
	if pace {
		o.net.pacer = live.NewPacer(w, a.Packets)
		dst = o.net.pacer
	}
	o.w = namedWriter{path, dst, o}
	return o, nil
}

// close sends what waits and closes the socket, or ends the clients' responses.
func (n *netOutput) close() error {
	var err error
	if n.pacer != nil {
		err = n.pacer.Flush()
	}
	var cerr error
	switch {
	case n.w != nil:
		cerr = n.w.Close()
	case n.srt != nil:
		cerr = n.srt.Close()
	default:
		cerr = n.relay.Close()
	}
	if err == nil {
		err = cerr
	}
	return err
}

// collectLive gathers the figures of the run's network ends, or returns nil when it has none.
// While the run goes on (final false) it leaves out the pacer's, which only the run may read.
func collectLive(in *input, out *output, st *pipeline.Stats, final bool) *report.Live {
	if !in.network() && out.net == nil {
		return nil
	}
	ls := &report.Live{}
	if in.live != nil {
		s := in.live.Stats()
		ls.In = &s
	}
	if in.web != nil {
		s := in.web.Stats()
		ls.Web = &s
	}
	if in.srt != nil {
		s := in.srt.Stats()
		ls.SRTIn = &s
	}
	// The bitrate counts from the first bytes: a live run may wait long for its feed.
	if first := in.first.Load(); first > 0 {
		end := time.Now()
		if last := in.last.Load(); last > 0 && in.idleEnded.Load() {
			end = time.Unix(0, last) // -end-on-idle: the silence that ended the input is left out
		}
		if d := end.Sub(time.Unix(0, first)); d > 0 {
			ls.InputBitrate = float64(st.BytesIn) * 8 / d.Seconds()
		}
	}
	if out.net != nil && out.net.w != nil {
		s := out.net.w.Stats()
		ls.Out = &s
	}
	if out.net != nil && out.net.relay != nil {
		s := out.net.relay.Stats()
		ls.Relay = &s
	}
	if out.net != nil && out.net.srt != nil {
		s := out.net.srt.Stats()
		ls.SRTOut = &s
	}
	if out.net != nil && out.net.pacer != nil && final {
		ls.PaceResets = out.net.pacer.Resets()
	}
	return ls
}
