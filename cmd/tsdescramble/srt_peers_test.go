//go:build srt && linux

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tsdescramble/tsdescramble/internal/testsupport/ports"
	"github.com/tsdescramble/tsdescramble/internal/testsupport/proc"
	"github.com/tsdescramble/tsdescramble/srt"
)

// The command's SRT input and output against real peers from Debian, on loopback:
// srt-live-transmit (srt-tools, libsrt with GnuTLS) and ffmpeg (its libsrt, GnuTLS too, where
// the command's is OpenSSL's), each sending to the command and receiving from it, as callers
// and as listeners, with and without a passphrase. The scrambled sample goes in over SRT and
// the clear one comes out over SRT, byte for byte the file path's.

func init() { binaryTags = append(binaryTags, "srt") }

// srtPeer is a program that sends or receives a stream over SRT.
type srtPeer struct {
	name string
	// url writes the peer's srt:// URL for port: a listener's or a caller's, with a
	// passphrase or none, in the peer's own dialect.
	url func(port int, listen bool, pass string) string
	// send starts the peer sending the stream of file to url, from its standard input, a
	// message every half millisecond (21 Mbit/s), then null packets until the test ends: a
	// sender that closes its connection once its input ends drops what the receiver has not
	// played yet (the latency's worth), and the run ends at the sample's last packet
	// (-packets). ready reports whether the command's end of the connection is up.
	send func(t *testing.T, url, file string, ready func() bool) *proc.Proc
	// receive starts the peer receiving from url into out.
	receive func(t *testing.T, url, out string) *proc.Proc
	// finish makes a receiver write all it holds and end.
	finish func(t *testing.T, p *proc.Proc)
}

var srtPeers = []srtPeer{
	{
		name: "srt-live-transmit",
		url: func(port int, listen bool, pass string) string {
			u := fmt.Sprintf("srt://127.0.0.1:%d?latency=40", port)
			if listen {
				u += "&mode=listener"
			}
			if pass != "" {
				u += "&passphrase=" + pass
			}
			return u
		},
		send: func(t *testing.T, url, file string, ready func() bool) *proc.Proc {
			// It reads its input (file://con, a message per read of -chunk bytes) from
			// the start, and drops what it reads before its connection is made: the stream
			// starts once it says it is connected, and the command says so too.
			start := make(chan struct{})
			p := proc.StartInput(t, time.Minute, &messageReader{data: readFile(t, file), gap: time.Millisecond / 2, start: start, end: t.Context().Done()},
				"srt-live-transmit", "-chunk", "1316", "file://con", url)
			go func() {
				defer close(start)
				for end := time.Now().Add(20 * time.Second); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
					if o := p.Output(); (strings.Contains(o, "SRT target connected") || strings.Contains(o, "Accepted SRT target connection")) && ready() {
						return
					}
				}
			}()
			return p
		},
		receive: func(t *testing.T, url, out string) *proc.Proc {
			return proc.Start(t, time.Minute, "sh", "-c", fmt.Sprintf("exec srt-live-transmit -q '%s' file://con > '%s'", url, out))
		},
		finish: func(t *testing.T, p *proc.Proc) {
			// It buffers its standard output and writes the rest when interrupted.
			p.Signal(t, os.Interrupt)
		},
	},
	{
		name: "ffmpeg",
		url: func(port int, listen bool, pass string) string {
			// ffmpeg's latency= is in microseconds.
			u := fmt.Sprintf("srt://127.0.0.1:%d?latency=40000&pkt_size=1316", port)
			if listen {
				u += "&mode=listener"
			}
			if pass != "" {
				u += "&passphrase=" + pass
			}
			return u
		},
		send: func(t *testing.T, url, file string, _ func() bool) *proc.Proc {
			// The exact bytes of its input (the mpegtsraw demuxer, the data muxer), 7
			// packets a message (pkt_size=1316, -flush_packets 0). It opens its output
			// after it has read the start of its input, and keeps what it read meanwhile.
			return proc.StartInput(t, time.Minute, &messageReader{data: readFile(t, file), gap: time.Millisecond / 2, end: t.Context().Done()},
				"ffmpeg", "-v", "error", "-probesize", "32", "-analyzeduration", "0", "-f", "mpegtsraw", "-i", "pipe:0",
				"-flush_packets", "0", "-map", "0", "-c", "copy", "-f", "data", url)
		},
		receive: func(t *testing.T, url, out string) *proc.Proc {
			return proc.Start(t, time.Minute, "ffmpeg", "-v", "error", "-f", "mpegtsraw", "-i", url, "-map", "0", "-c", "copy", "-f", "data", out)
		},
		finish: func(t *testing.T, p *proc.Proc) {
			// It ends when the sender closes the connection.
			if !p.Ended(10 * time.Second) {
				p.Signal(t, os.Interrupt)
			}
		},
	},
}

// messageReader reads data a message (1316 bytes) at a time, a message every gap, from when
// start is closed (nil: at once); then null packets, a message every gap, until end.
// srt-live-transmit reads a message from its input each time the input wakes it, so that
// messages that came together wait in the pipe for the next to come: the null packets also
// push the last of data through.
type messageReader struct {
	data  []byte
	off   int
	gap   time.Duration
	start <-chan struct{}
	end   <-chan struct{}
}

func (p *messageReader) Read(b []byte) (int, error) {
	if p.start != nil {
		<-p.start // closed within 20 s
		p.start = nil
	} else {
		select {
		case <-p.end:
			return 0, io.EOF
		case <-time.After(p.gap):
		}
	}
	b = b[:min(len(b), srt.MessageSize)]
	if p.off == len(p.data) {
		return copy(b, nullPackets(7)), nil
	}
	n := copy(b, p.data[p.off:])
	p.off += n
	return n, nil
}

// paddedSample writes the scrambled sample followed by 9 null packets, a whole number of
// messages: a sender that sends only full messages (srt-live-transmit's reads of -chunk
// bytes) sends all of the sample, and one that closes its connection at once after its last
// message (ffmpeg) loses no packet of it; -packets ends the run at its last packet.
func paddedSample(t *testing.T) string {
	t.Helper()
	b := append(readFile(t, demoScrambled), nullPackets(9)...)
	return writeFile(t, t.TempDir(), "padded.ts", b)
}

// inConnected reports whether the run's stderr says its SRT input is connected: a caller
// accepted by its listener, or its call answered. r is nil until the run starts.
func inConnected(r *liveRun) bool {
	return r != nil && regexp.MustCompile(`-in: \S+: (caller \S+ )?connected`).MatchString(r.stderr.String())
}

// waitLine waits up to limit for a line of the run's stderr that matches re.
func waitLine(t *testing.T, r *liveRun, re string, limit time.Duration) {
	t.Helper()
	rx := regexp.MustCompile(re)
	for end := time.Now().Add(limit); !rx.MatchString(r.stderr.String()); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("no line matching %q within %v:\n%s", re, limit, r.stderr.String())
		}
	}
}

// TestSRTPeers sends the scrambled sample from a peer to the command's SRT input and
// receives its SRT output with the same peer: with each peer calling the command's listeners,
// and listening for the command's calls; with no passphrase and with one (the command's
// OpenSSL libsrt and the peers' GnuTLS one must agree on the keys). The output is the file
// path's, byte for byte; the passphrase shows neither on stderr nor in -stats.
func TestSRTPeers(t *testing.T) {
	for _, peer := range srtPeers {
		t.Run("peer="+peer.name, func(t *testing.T) {
			needTool(t, peer.name)
			for _, peerListens := range []bool{false, true} {
				for _, pass := range []string{"", "Peer-Pa55phrase-9"} {
					name := fmt.Sprintf("peer listens=%v/passphrase=%v", peerListens, pass != "")
					t.Run(name, func(t *testing.T) { srtPeerRun(t, peer, peerListens, pass) })
				}
			}
		})
	}
}

func srtPeerRun(t *testing.T, peer srtPeer, peerListens bool, pass string) {
	dir := t.TempDir()
	in, out := ports.UDP(t), ports.UDP(t)
	got, stats := filepath.Join(dir, "got.ts"), filepath.Join(dir, "stats.json")
	opts := ""
	if pass != "" {
		opts = "&passphrase=" + pass
	}
	// The command's ends: the listeners the peer calls, or callers of the peer's listeners.
	tsdIn := fmt.Sprintf("srt://127.0.0.1:%d?mode=listener%s", in, opts)
	tsdOut := fmt.Sprintf("srt://127.0.0.1:%d?mode=listener%s", out, opts)
	if peerListens {
		tsdIn = fmt.Sprintf("srt://127.0.0.1:%d?latency=40%s", in, opts)
		tsdOut = fmt.Sprintf("srt://127.0.0.1:%d?latency=40%s", out, opts)
	}
	args := []string{"-in", tsdIn, "-out", tsdOut, "-cw-file", demoKeys, "-packets", fmt.Sprint(demoPackets), "-stats", stats}
	var r *liveRun
	var started atomic.Pointer[liveRun] // r, for the sender's goroutine
	ready := func() bool { return inConnected(started.Load()) }
	var snd, recv *proc.Proc
	if peerListens {
		recv = peer.receive(t, peer.url(out, true, pass), got)
		waitListening(t, out)
		snd = peer.send(t, peer.url(in, true, pass), paddedSample(t), ready)
		waitListening(t, in)
		r = startLive(t, args...)
		started.Store(r)
	} else {
		r = startLive(t, args...)
		started.Store(r)
		waitListening(t, in)
		waitListening(t, out)
		recv = peer.receive(t, peer.url(out, false, pass), got)
		// What comes before a caller is there is dropped.
		waitLine(t, r, `-out: \S+: caller 127\.0\.0\.1:\d+ connected`, 10*time.Second)
		snd = peer.send(t, peer.url(in, false, pass), paddedSample(t), ready)
	}
	res := r.wait(t, 30*time.Second)
	if res.code != 0 {
		t.Fatalf("%s\npeer sending: %s\npeer receiving: %s", describe(res), snd.Output(), recv.Output())
	}
	peer.finish(t, recv)
	if b, clear := readFile(t, got), readFile(t, demoClear); !bytes.Equal(b, clear) {
		t.Logf("what came out starts at packet %d of the sample; the command:\n%s", indexOfPacket(b, clear)/188, res.stderr)
		sameBytes(t, "sent by "+peer.name+", descrambled, received by "+peer.name, b, clear, 188)
	}
	st := readFile(t, stats)
	if pass != "" && (strings.Contains(res.stderr, pass) || bytes.Contains(st, []byte(pass))) {
		t.Errorf("the passphrase shows:\n%s\n%s", res.stderr, st)
	}
	var doc struct {
		Live struct {
			In  srt.Stats       `json:"srt_input"`
			Out srt.WriterStats `json:"srt_output"`
		} `json:"live"`
	}
	if err := json.Unmarshal(st, &doc); err != nil {
		t.Fatal(err)
	}
	if in, out := doc.Live.In, doc.Live.Out; in.Packets < demoPackets || in.Connections != 1 || in.Dropped != 0 ||
		out.Packets != demoPackets || out.Connections != 1 || out.Unconnected+out.Full != 0 {
		t.Errorf("the -stats figures: %+v, %+v", in, out)
	}
	summaryHas(t, res.stderr, `SRT input \((caller|listener)\): \d+ messages`, `SRT output \((caller|listener)\): \d+ messages`)
}

// A passphrase is never printed, nor written to -stats: not when a call is refused for it,
// not when an input stays silent past -timeout, not in the connection lines.
func TestSRTPassphraseNeverShown(t *testing.T) {
	t.Parallel()
	port := ports.UDP(t)
	l, err := srt.Open(t.Context(), mustSRT(t, fmt.Sprintf("srt://127.0.0.1:%d?mode=listener&passphrase=the-listeners-own", port)))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	dir := t.TempDir()
	stats := filepath.Join(dir, "stats.json")
	for _, c := range []struct {
		args  []string
		code  int
		want  string
		stats string // what the statistics say; "": none are written
	}{
		{[]string{"-in", fmt.Sprintf("srt://127.0.0.1:%d?passphrase=%s", port, srtSecret), "-out", filepath.Join(dir, "a.ts")},
			exitFail, "the listener has another passphrase", ""},
		{[]string{"-in", demoScrambled, "-out", fmt.Sprintf("srt://127.0.0.1:%d?passphrase=%s", port, srtSecret)},
			exitFail, "the listener has another passphrase", ""},
		{[]string{"-in", fmt.Sprintf("srt://127.0.0.1:%d?mode=listener&passphrase=%s", ports.UDP(t), srtSecret), "-out", filepath.Join(dir, "b.ts"), "-timeout", "300ms"},
			exitFail, "passphrase=xxxxx for 300ms", `"connections": 0,`},
		{[]string{"-in", demoScrambled, "-out", fmt.Sprintf("srt://127.0.0.1:%d?mode=listener&passphrase=%s", ports.UDP(t), srtSecret), "-packets", "500", "-pace=false"},
			0, "SRT output (listener): 0 messages", `"dropped_unconnected": 500,`},
	} {
		os.Remove(stats)
		r := run(t, nil, append(c.args, "-cw-file", demoKeys, "-stats", stats)...)
		if r.code != c.code || !strings.Contains(r.stderr, c.want) || strings.Contains(r.stderr, srtSecret) {
			t.Errorf("%v: want exit %d saying %q; %s", c.args, c.code, c.want, describe(r))
		}
		b, err := os.ReadFile(stats)
		if (err == nil) != (c.stats != "") || !bytes.Contains(b, []byte(c.stats)) || bytes.Contains(b, []byte(srtSecret)) {
			t.Errorf("%v: statistics (%v), want them to say %q:\n%s", c.args, err, c.stats, b)
		}
	}
}

func mustSRT(t *testing.T, s string) *srt.Address {
	t.Helper()
	a, err := srt.ParseAddress(s)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// An SRT input and output that would meet each other are refused before anything is opened.
func TestSRTLoopsRefused(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, out, want string }{
		{"srt://:9000", "srt://127.0.0.1:9000", "the output would call the input"},
		{"srt://localhost:9000", "srt://:9000", "the input would call the output"},
		{"srt://:9000", "srt://:9000", "both listen on one port"},
	} {
		r := run(t, nil, "-in", c.in, "-out", c.out, "-cw-file", demoKeys)
		if r.code != exitUsage || !strings.Contains(r.stderr, c.want) {
			t.Errorf("-in %s -out %s: %s", c.in, c.out, describe(r))
		}
	}
}
