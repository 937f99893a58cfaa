//go:build unix

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tsdescramble/tsdescramble/internal/testsupport/ports"
	"github.com/tsdescramble/tsdescramble/live"
)

// Live streams through the command, on loopback: udp:// and rtp:// as -in and -out, the
// latency bound, -packets, -duration and -timeout. The peers from Debian are in
// live_peers_test.go.

const (
	demoScrambled = "../../samples/demo-scrambled.ts"
	demoClear     = "../../samples/demo-clear.ts"
	demoKeys      = "../../samples/demo-keys.txt"
	demoPackets   = 4611
)

// freeUDPPort returns a UDP port of 127.0.0.1 that was free a moment ago and that no other
// test of this binary is given.
func freeUDPPort(t *testing.T) int {
	t.Helper()
	return ports.UDP(t)
}

// udpSender returns a UDP socket that sends to port on 127.0.0.1, closed when the test ends.
func udpSender(t *testing.T, port int) *net.UDPConn {
	t.Helper()
	c, err := net.DialUDP("udp4", nil, &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: port})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// waitListening waits until something has bound the UDP port, so that nothing is sent before
// the command receives.
func waitListening(t *testing.T, port int) {
	t.Helper()
	hex := fmt.Sprintf(":%04X ", port)
	for range 200 {
		for _, f := range []string{"/proc/net/udp", "/proc/net/udp6"} {
			b, _ := os.ReadFile(f)
			for _, l := range strings.Split(string(b), "\n") {
				if fields := strings.Fields(l); len(fields) > 2 && strings.HasSuffix(fields[1]+" ", hex) {
					return
				}
			}
		}
		time.Sleep(25 * time.Millisecond)
	}
	t.Fatalf("nothing bound UDP port %d within 5 s", port)
}

// sendUDP sends b to url through a live.Writer, a datagram every gap (none: as fast as it
// goes, which loopback and the default receive buffer take for the samples).
func sendUDP(t *testing.T, url string, b []byte, gap time.Duration) {
	t.Helper()
	if err := trySendUDP(url, b, gap, nil); err != nil {
		t.Fatal(err)
	}
}

// trySendUDP is sendUDP, returning its error; it stops early once stop is closed.
func trySendUDP(url string, b []byte, gap time.Duration, stop <-chan struct{}) error {
	a, err := live.ParseAddress(url)
	if err != nil {
		return err
	}
	w, err := live.Dial(a)
	if err != nil {
		return err
	}
	defer w.Close()
	step := a.Packets * 188
	if gap == 0 {
		step = len(b)
	}
	for i := 0; i < len(b); i += step {
		select {
		case <-stop:
			return nil
		default:
		}
		if _, err := w.Write(b[i:min(i+step, len(b))]); err != nil {
			return err
		}
		if gap > 0 {
			w.Flush()
			time.Sleep(gap)
		}
	}
	return nil
}

// liveRun runs the command in a goroutine; wait returns its result.
type liveRun struct {
	done           chan int
	stdout, stderr syncBuffer
}

func startLive(t *testing.T, args ...string) *liveRun {
	t.Helper()
	r := &liveRun{done: make(chan int, 1)}
	env := Env{Stdin: bytes.NewReader(nil), Stdout: &r.stdout, Stderr: &r.stderr, IsTerminal: func(*os.File) bool { return false }}
	go func() { r.done <- Main(append([]string{"tsdescramble"}, args...), env) }()
	return r
}

func (r *liveRun) wait(t *testing.T, limit time.Duration) result {
	t.Helper()
	select {
	case code := <-r.done:
		return result{code: code, stdout: r.stdout.String(), stderr: r.stderr.String()}
	case <-time.After(limit):
		t.Fatalf("the run did not end within %v; stderr:\n%s", limit, r.stderr.String())
		return result{}
	}
}

func TestLiveUsageErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out := filepath.Join(dir, "out.ts")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-in", "udp://@:99999", "-out", out}, "-in: "},
		{[]string{"-in", "udp://239.1.1.1", "-out", out}, "-in: "},
		{[]string{"-in", "udp://127.0.0.1:5000", "-out", out}, "names a destination"},
		{[]string{"-in", demoScrambled, "-out", "udp://@:5000"}, "address to listen on"},
		{[]string{"-in", demoScrambled, "-out", "rtp://127.0.0.1:5000?pkts=0"}, "-out: "},
		{[]string{"-in", "udp://@:5000", "-out", "udp://127.0.0.1:5000"}, "would receive what it sends"},
		{[]string{"-in", demoScrambled, "-out", out, "-timeout", "1s"}, "-timeout watches a network input"},
		{[]string{"-in", demoScrambled, "-out", out, "-pace"}, "-pace paces a network output"},
		{[]string{"-in", demoScrambled, "-out", out, "-latency", "-1s"}, "-latency"},
		{[]string{"-in", demoScrambled, "-out", out, "-packets", "0"}, "-packets"},
		{[]string{"-in", demoScrambled, "-out", out, "-duration", "0s"}, "-duration"},
		{[]string{"-in", demoScrambled, "-out", out, "-stats-interval", "10s"}, "-stats-interval"},
		{[]string{"probe", "udp://@:5000"}, "never ends"},
	} {
		if c.args[0] != "probe" {
			c.args = append(c.args, "-cw-file", demoKeys)
		}
		r := run(t, nil, c.args...)
		if r.code != exitUsage || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%q: %s", c.args, describe(r))
			continue
		}
		oneLine(t, r.stderr)
	}
	if names := dirNames(t, dir); len(names) > 0 {
		t.Errorf("usage errors left %q", names)
	}
}

// A stream received as UDP or RTP comes out as the file path makes it, byte for byte: -packets
// ends the run after the last packet. Sent back out as UDP or RTP, it is the same again.
func TestLiveInAndOut(t *testing.T) {
	t.Parallel()
	stream, want := readFile(t, demoScrambled), readFile(t, demoClear)
	for _, scheme := range []string{"udp", "rtp"} {
		t.Run(scheme+" in", func(t *testing.T) {
			port := freeUDPPort(t)
			out := filepath.Join(t.TempDir(), "out.ts")
			stats := filepath.Join(t.TempDir(), "stats.json")
			r := startLive(t, "-in", fmt.Sprintf("%s://@127.0.0.1:%d", scheme, port), "-out", out, "-cw-file", demoKeys,
				"-packets", fmt.Sprint(demoPackets), "-stats", stats)
			waitListening(t, port)
			sendUDP(t, fmt.Sprintf("%s://127.0.0.1:%d", scheme, port), stream, 0)
			res := r.wait(t, 30*time.Second)
			if res.code != 0 {
				t.Fatal(describe(res))
			}
			sameBytes(t, "received and descrambled", readFile(t, out), want, 188)
			summaryHas(t, res.stderr, `input: 659 datagrams`)
			if scheme == "rtp" {
				summaryHas(t, res.stderr, `RTP: 0 lost, 0 reordered`)
			}
			if s := string(readFile(t, stats)); !strings.Contains(s, `"datagrams": 659`) || !strings.Contains(s, `"input_bitrate"`) {
				t.Errorf("-stats has no live figures:\n%s", s)
			}
		})
		t.Run(scheme+" out", func(t *testing.T) {
			rd, err := live.Listen(t.Context(), &live.Address{Scheme: scheme, Listen: true, Host: "127.0.0.1", Packets: 7, TOS: -1})
			if err != nil {
				t.Fatal(err)
			}
			defer rd.Close()
			port := rd.LocalAddr().(*net.UDPAddr).Port
			res := run(t, nil, "-in", demoScrambled, "-out", fmt.Sprintf("%s://127.0.0.1:%d", scheme, port), "-cw-file", demoKeys, "-pace=false")
			if res.code != 0 {
				t.Fatal(describe(res))
			}
			summaryHas(t, res.stderr, `output: 659 datagrams, 1 of them short`)
			got := make([]byte, len(want))
			rd.SetIdleTimeout(5 * time.Second)
			for n := 0; n < len(got); {
				m, err := rd.Read(got[n:])
				if err != nil {
					t.Fatalf("after %d bytes: %v", n, err)
				}
				n += m
			}
			sameBytes(t, "sent and received", got, want, 188)
			if s := rd.Stats(); s.Lost+s.Reordered+s.Duplicates+s.Dropped != 0 {
				t.Errorf("receiver stats %+v", s)
			}
		})
	}
}

// A regular file sent to an address is paced by its PCR by default: 240 packets of the sample
// are a second of it.
func TestLivePacedByDefault(t *testing.T) {
	rd, err := live.Listen(t.Context(), &live.Address{Scheme: "udp", Listen: true, Host: "127.0.0.1", Packets: 7, TOS: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	url := fmt.Sprintf("udp://127.0.0.1:%d", rd.LocalAddr().(*net.UDPAddr).Port)
	for _, c := range []struct {
		flags    []string
		min, max time.Duration
	}{
		{nil, 700 * time.Millisecond, 10 * time.Second},
		{[]string{"-pace=false"}, 0, 700 * time.Millisecond},
	} {
		t0 := time.Now()
		res := run(t, nil, append([]string{"-in", demoScrambled, "-out", url, "-cw-file", demoKeys, "-packets", "240"}, c.flags...)...)
		if d := time.Since(t0); res.code != 0 || d < c.min || d > c.max {
			t.Errorf("%q: %v, want %v to %v: %s", c.flags, d, c.min, c.max, describe(res))
		}
	}
}

// -timeout ends a run whose input sends nothing with exit 1 and a line that says so; -duration
// ends one that is receiving as its input's end would.
func TestLiveTimeoutAndDuration(t *testing.T) {
	t.Parallel()
	port := freeUDPPort(t)
	out := filepath.Join(t.TempDir(), "out.ts")
	t0 := time.Now()
	r := startLive(t, "-in", fmt.Sprintf("udp://@127.0.0.1:%d", port), "-out", out, "-cw-file", demoKeys, "-timeout", "300ms")
	res := r.wait(t, 10*time.Second)
	if res.code != exitFail || !strings.Contains(res.stderr, "no datagram on udp://@127.0.0.1:") || time.Since(t0) > 5*time.Second {
		t.Errorf("-timeout: %s", describe(res))
	}
	oneLine(t, res.stderr)

	// The sender would send a datagram every 2 ms, 1.3 s of it; the run stops after 400 ms,
	// and the sender once the run has ended.
	port = freeUDPPort(t) // the first run's port was free for anyone once it ended
	r = startLive(t, "-in", fmt.Sprintf("udp://@127.0.0.1:%d", port), "-out", out, "-cw-file", demoKeys, "-duration", "400ms")
	waitListening(t, port)
	sent, stop, stream := make(chan error, 1), make(chan struct{}), readFile(t, demoScrambled)
	go func() { sent <- trySendUDP(fmt.Sprintf("udp://127.0.0.1:%d", port), stream, 2*time.Millisecond, stop) }()
	res = r.wait(t, 10*time.Second)
	close(stop)
	if err := <-sent; err != nil {
		t.Fatal(err)
	}
	if res.code != 0 {
		t.Fatal(describe(res))
	}
	got, want := readFile(t, out), readFile(t, demoClear)
	if len(got) == 0 || len(got) >= len(want) || len(got)%188 != 0 {
		t.Fatalf("-duration: %d bytes out of %d", len(got), len(want))
	}
	sameBytes(t, "what -duration let in", got, want[:len(got)], 188)
}

// A packet that comes into a quiet live input goes out within the latency bound, though the
// unit of work is far from full.
func TestLiveQuietInput(t *testing.T) {
	in, out := freeUDPPort(t), freeUDPPort(t)
	rd, err := live.Listen(t.Context(), &live.Address{Scheme: "udp", Listen: true, Host: "127.0.0.1", Port: out, Packets: 7, TOS: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	r := startLive(t, "-in", fmt.Sprintf("udp://@127.0.0.1:%d", in), "-out", fmt.Sprintf("udp://127.0.0.1:%d", out),
		"-cw-file", demoKeys, "-packets", "70")
	waitListening(t, in)
	stream, want := readFile(t, demoScrambled)[:70*188], readFile(t, demoClear)[:70*188]
	a, _ := live.ParseAddress(fmt.Sprintf("udp://127.0.0.1:%d", in))
	w, err := live.Dial(a)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	rd.SetIdleTimeout(5 * time.Second)
	got := make([]byte, 0, len(want))
	buf := make([]byte, 1<<16)
	for i := 0; i < 10; i++ {
		w.Write(stream[i*7*188 : (i+1)*7*188])
		// Nothing more is sent until these 7 packets have come back: without the latency
		// bound they would wait for 1024 more.
		for len(got) < (i+1)*7*188 {
			n, err := rd.Read(buf)
			if err != nil {
				t.Fatalf("datagram %d: %v after %d bytes", i, err, len(got))
			}
			got = append(got, buf[:n]...)
		}
	}
	sameBytes(t, "sent one datagram at a time", got, want, 188)
	if res := r.wait(t, 10*time.Second); res.code != 0 {
		t.Fatal(describe(res))
	}
}

// RTP datagrams of the scrambled sample, lost, duplicated and swapped on purpose on their way
// to the command: its statistics count what was done, and every packet that arrived comes out
// as the file path makes the same packets.
func TestLiveRTPDamage(t *testing.T) {
	t.Parallel()
	stream := readFile(t, demoScrambled)
	const lost1, lost2, dup, swap = 100, 300, 200, 400
	var order []int
	n := (len(stream) + 7*188 - 1) / (7 * 188)
	for i := 0; i < n; i++ {
		switch i {
		case lost1, lost2:
		case dup:
			order = append(order, i, i)
		case swap:
			order = append(order, i+1, i)
			i++
		default:
			order = append(order, i)
		}
	}
	var delivered []byte
	for i := range n {
		if i != lost1 && i != lost2 {
			delivered = append(delivered, stream[i*7*188:min((i+1)*7*188, len(stream))]...)
		}
	}
	want := run(t, delivered, "-cw-file", demoKeys)
	if want.code != 0 {
		t.Fatal(describe(want))
	}

	port := freeUDPPort(t)
	dir := t.TempDir()
	out, stats := filepath.Join(dir, "out.ts"), filepath.Join(dir, "stats.json")
	r := startLive(t, "-in", fmt.Sprintf("rtp://@127.0.0.1:%d", port), "-out", out, "-cw-file", demoKeys,
		"-packets", fmt.Sprint(len(delivered)/188), "-stats", stats)
	waitListening(t, port)
	c := udpSender(t, port)
	for k, i := range order {
		d := []byte{0x80, 33, 0, 0, 0, 0, 0, 0, 0x12, 0x34, 0x56, 0x78}
		seq := uint16(65300 + i) // through the wrap at 65535
		d[2], d[3] = byte(seq>>8), byte(seq)
		d = append(d, stream[i*7*188:min((i+1)*7*188, len(stream))]...)
		if _, err := c.Write(d); err != nil {
			t.Fatal(err)
		}
		if k%64 == 0 {
			time.Sleep(time.Millisecond) // no bursts past the socket buffer
		}
	}
	res := r.wait(t, 30*time.Second)
	if res.code != 0 {
		t.Fatal(describe(res))
	}
	sameBytes(t, "what arrived, descrambled", readFile(t, out), []byte(want.stdout), 188)
	// The two datagrams lost show as continuity errors, as many as the file path counts in
	// the packets that arrived (the sample itself has none).
	summaryHas(t, res.stderr, `RTP: 2 lost, 1 reordered, 0 late, 1 duplicate,`, `continuity errors .*: 3 \(0x0100: 2, 0x0101: 1\)`)
	summaryHas(t, want.stderr, `continuity errors .*: 3 \(0x0100: 2, 0x0101: 1\)`)
	js := string(readFile(t, stats))
	for _, s := range []string{`"rtp_lost": 2,`, `"rtp_reordered": 1,`, `"rtp_duplicates": 1,`, fmt.Sprintf(`"datagrams": %d,`, len(order))} {
		if !strings.Contains(js, s) {
			t.Errorf("-stats has no %s:\n%s", s, js)
		}
	}
}

// -stats-interval rewrites the -stats file while a live run goes on, whole each time.
func TestLiveStatsInterval(t *testing.T) {
	port := freeUDPPort(t)
	dir := t.TempDir()
	out, stats := filepath.Join(dir, "out.ts"), filepath.Join(dir, "stats.json")
	r := startLive(t, "-in", fmt.Sprintf("udp://@127.0.0.1:%d", port), "-out", out, "-cw-file", demoKeys,
		"-stats", stats, "-stats-interval", "50ms", "-duration", "1200ms")
	waitListening(t, port)
	stream := readFile(t, demoScrambled)
	sendUDP(t, fmt.Sprintf("udp://127.0.0.1:%d", port), stream[:700*188], 0)
	// The input is quiet now; the file goes on being rewritten, whole each time.
	var seen []string
	for end := time.Now().Add(700 * time.Millisecond); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		b, err := os.ReadFile(stats)
		if err != nil {
			continue
		}
		var v struct {
			Packets int64 `json:"packets"`
			Elapsed int64 `json:"elapsed_ns"`
			Live    struct {
				In struct {
					Datagrams int64 `json:"datagrams"`
				} `json:"input"`
			} `json:"live"`
		}
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatalf("a monitor read half a file: %v\n%s", err, b)
		}
		if s := fmt.Sprint(v.Elapsed); len(seen) == 0 || seen[len(seen)-1] != s {
			seen = append(seen, s)
		}
		if v.Packets > 700 || v.Live.In.Datagrams > 100 {
			t.Fatalf("report of %d packets, %d datagrams: more than was sent", v.Packets, v.Live.In.Datagrams)
		}
	}
	if len(seen) < 5 {
		t.Errorf("the statistics were rewritten %d times in 700 ms, every 50 ms asked", len(seen))
	}
	if res := r.wait(t, 10*time.Second); res.code != 0 {
		t.Fatal(describe(res))
	}
	if b := readFile(t, stats); !strings.Contains(string(b), `"packets": 700,`) {
		t.Errorf("final statistics:\n%s", b)
	}
	if names := dirNames(t, dir); len(names) != 2 {
		t.Errorf("files left: %q", names)
	}
}

// IPv6: the sample received on udp://@[::1]:PORT comes out as the file path makes it.
func TestLiveIPv6(t *testing.T) {
	t.Parallel()
	c, err := net.ListenPacket("udp6", "[::1]:0")
	if err != nil {
		t.Skipf("no IPv6 loopback here: %v", err)
	}
	port := c.LocalAddr().(*net.UDPAddr).Port
	c.Close()
	out := filepath.Join(t.TempDir(), "out.ts")
	r := startLive(t, "-in", fmt.Sprintf("udp://@[::1]:%d", port), "-out", out, "-cw-file", demoKeys, "-packets", fmt.Sprint(demoPackets))
	waitListening(t, port)
	sendUDP(t, fmt.Sprintf("udp://[::1]:%d", port), readFile(t, demoScrambled), 0)
	if res := r.wait(t, 30*time.Second); res.code != 0 {
		t.Fatal(describe(res))
	}
	sameBytes(t, "received over IPv6", readFile(t, out), readFile(t, demoClear), 188)
}

// The report's datagrams: the scrambled sample in datagrams of 7 packets, each followed by a
// 1-byte datagram (0x47), with one packet cut to 24 bytes sent alone and one datagram whose
// last packet is cut to 24 bytes. The short and cut datagrams are dropped whole and counted;
// what comes out is what the file path makes of the whole datagrams, no packet made of bytes
// of two datagrams, none forged. Over RTP, a second sender (another SSRC) sends the same
// datagrams under other sequence numbers: they are dropped and counted too.
func TestLiveShortDatagrams(t *testing.T) {
	t.Parallel()
	stream := readFile(t, demoScrambled)
	const cutAlone, cutLast = 100, 300 // after datagram 100; datagram 300
	n := (len(stream) + 7*188 - 1) / (7 * 188)
	datagram := func(i int) []byte { return stream[i*7*188 : min((i+1)*7*188, len(stream))] }
	var delivered []byte
	for i := range n {
		if i != cutLast {
			delivered = append(delivered, datagram(i)...)
		}
	}
	want := run(t, delivered, "-cw-file", demoKeys)
	if want.code != 0 {
		t.Fatal(describe(want))
	}
	for _, scheme := range []string{"udp", "rtp"} {
		t.Run(scheme, func(t *testing.T) {
			port := freeUDPPort(t)
			dir := t.TempDir()
			out, stats := filepath.Join(dir, "out.ts"), filepath.Join(dir, "stats.json")
			r := startLive(t, "-in", fmt.Sprintf("%s://@127.0.0.1:%d", scheme, port), "-out", out, "-cw-file", demoKeys,
				"-packets", fmt.Sprint(len(delivered)/188), "-stats", stats)
			waitListening(t, port)
			c := udpSender(t, port)
			seq := uint16(0)
			send := func(b []byte) {
				if scheme == "rtp" {
					b = append([]byte{0x80, 33, byte(seq >> 8), byte(seq), 0, 0, 0, 0, 0x12, 0x34, 0x56, 0x78}, b...)
					seq++
				}
				if _, err := c.Write(b); err != nil {
					t.Fatal(err)
				}
			}
			other := func(i int) {
				seq := 30000 + i
				b := append([]byte{0x80, 33, byte(seq >> 8), byte(seq), 0, 0, 0, 0, 0x9a, 0xbc, 0xde, 0xf0}, datagram(i)...)
				if _, err := c.Write(b); err != nil {
					t.Fatal(err)
				}
			}
			sent := 0
			for i := range n {
				d := datagram(i)
				if i == cutLast {
					d = d[:6*188+24]
				}
				send(d)
				send([]byte{0x47})
				sent += 2
				if scheme == "rtp" && i > 0 {
					other(i)
					sent++
				}
				if i == cutAlone {
					send(stream[(i+1)*7*188 : (i+1)*7*188+24])
					sent++
				}
				if i%32 == 0 {
					time.Sleep(time.Millisecond) // no bursts past the socket buffer
				}
			}
			res := r.wait(t, 30*time.Second)
			if res.code != 0 {
				t.Fatal(describe(res))
			}
			sameBytes(t, "the whole datagrams, descrambled", readFile(t, out), []byte(want.stdout), 188)
			dropped := n + 2
			summaryHas(t, res.stderr, fmt.Sprintf(`input: %d datagrams`, sent), fmt.Sprintf(`%d dropped as not whole packets`, dropped))
			checks := []string{fmt.Sprintf(`"unaligned": %d,`, dropped), fmt.Sprintf(`"datagrams": %d,`, sent), fmt.Sprintf(`"packets": %d,`, len(delivered)/188)}
			if scheme == "rtp" {
				summaryHas(t, res.stderr, fmt.Sprintf(`RTP: 0 lost, 0 reordered, 0 late, 0 duplicates, 0 sequence jumps, %d from another sender \(SSRC\) dropped`, n-1))
				checks = append(checks, fmt.Sprintf(`"rtp_other_ssrc": %d,`, n-1))
			}
			js := string(readFile(t, stats))
			for _, s := range checks {
				if !strings.Contains(js, s) {
					t.Errorf("-stats has no %s:\n%s", s, js)
				}
			}
		})
	}
}

// -end-on-idle ends a live run on a silence as at the end of a file: every packet written, the
// output in its place (no .partial), exit 0, and the input bitrate that of the feed, the
// silence left out.
func TestLiveEndOnIdle(t *testing.T) {
	t.Parallel()
	port := freeUDPPort(t)
	dir := t.TempDir()
	out, stats := filepath.Join(dir, "out.ts"), filepath.Join(dir, "stats.json")
	r := startLive(t, "-in", fmt.Sprintf("udp://@127.0.0.1:%d", port), "-out", out, "-cw-file", demoKeys,
		"-end-on-idle", "1s", "-stats", stats)
	waitListening(t, port)
	stream := readFile(t, demoScrambled)
	// 659 datagrams, one every 0.5 ms or more (the timer's resolution on a busy machine).
	t0 := time.Now()
	if err := trySendUDP(fmt.Sprintf("udp://127.0.0.1:%d", port), stream, 500*time.Microsecond, make(chan struct{})); err != nil {
		t.Fatal(err)
	}
	sending := time.Since(t0)
	res := r.wait(t, 15*time.Second)
	if res.code != 0 {
		t.Fatalf("want exit 0 at the silence; %s", describe(res))
	}
	sameBytes(t, "output", readFile(t, out), readFile(t, demoClear), 188)
	var st struct {
		Live struct {
			InputBitrate float64 `json:"input_bitrate"`
		} `json:"live"`
	}
	if err := json.Unmarshal(readFile(t, stats), &st); err != nil {
		t.Fatal(err)
	}
	// With the second of silence counted, the rate would be that over sending + 1 s.
	feed := float64(len(stream)*8) / sending.Seconds()
	withSilence := float64(len(stream)*8) / (sending + time.Second).Seconds()
	t.Logf("sent in %v: %.2f Mbit/s; reported %.2f Mbit/s", sending, feed/1e6, st.Live.InputBitrate/1e6)
	if st.Live.InputBitrate < (feed+withSilence)/2 {
		t.Errorf("input bitrate %.2f Mbit/s, the feed's %.2f: the silence that ended the input seems counted", st.Live.InputBitrate/1e6, feed/1e6)
	}
}
