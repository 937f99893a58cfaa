//go:build linux

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tsdescramble/tsdescramble/internal/testsupport/ports"
	"github.com/tsdescramble/tsdescramble/internal/testsupport/proc"
	"github.com/tsdescramble/tsdescramble/live"
	"github.com/tsdescramble/tsdescramble/psi"
)

// TestLiveLatency measures the delay the command adds to a live stream with its default flags
// (-latency 50ms): a sender on loopback sends the scrambled sample at a steady rate, UDP into
// the command, which descrambles it and sends it on as UDP to the test; each packet's delay is
// the time from its datagram's send to the arrival of the datagram that carries it out. The
// figures (p50, p99, max) are logged; the test fails when p99 passes four times the bound,
// which full units of work (1024 packets: seconds at these rates) would. Without -cipher the
// first packets also wait for the PMT (the sample's third packet; those before it leave by
// their arrival plus the bound, or as it comes when that is later), so the bound is checked
// after a startup; with -cipher csa2 it is checked from the first packet on.
func TestLiveLatency(t *testing.T) {
	needLong(t, "sends for 50 s to measure the latency")
	bin := buildBinary(t, "")
	stream := readFile(t, demoScrambled)
	const (
		every20ms = 20 * time.Millisecond
		kbit64    = time.Duration(188 * 8 * float64(time.Second) / 64e3)
		mbit2     = time.Duration(7 * 188 * 8 * float64(time.Second) / 2e6)
	)
	for _, c := range []struct {
		name    string
		pkts    int           // TS packets per datagram
		gap     time.Duration // between datagrams
		packets int
		cipher  bool // -cipher csa2: no look-ahead for the PMT, the bound holds from the start
	}{
		{"one packet every 20 ms", 1, every20ms, 400, false},
		{"64 kbit/s", 1, kbit64, 400, false},
		{"2 Mbit/s", 7, mbit2, 7 * 900, false},
		{"one packet every 20 ms, -cipher csa2", 1, every20ms, 400, true},
		{"64 kbit/s, -cipher csa2", 1, kbit64, 400, true},
		{"2 Mbit/s, -cipher csa2", 7, mbit2, 7 * 900, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			var extra []string
			if c.cipher {
				extra = []string{"-cipher", "csa2"}
			}
			delays, sent := measureLatency(t, bin, stream, c.pkts, c.gap, c.packets, extra...)
			if testing.Verbose() {
				var late []string
				for i, d := range delays {
					if d > defaultLatency+10*time.Millisecond {
						late = append(late, fmt.Sprintf("%d:%v", i, d.Round(time.Millisecond)))
					}
				}
				t.Logf("packets over the bound + 10 ms (index:delay): %s", strings.Join(late, " "))
			}
			// The first packets also wait for the look-ahead that reads the PMT to choose the
			// system (at most a second): the steady state is counted from startup on.
			p99, s99 := logLatency(t, c.name, delays, sent)
			// The target is the bound + 10 ms; on a machine shared with other work the
			// scheduler adds tens of milliseconds now and then, so the test fails only where
			// the bound is lost altogether (full units of work take seconds at these rates).
			if s99 > 4*defaultLatency {
				t.Errorf("p99 %v after the first %v: the latency bound of %v does not hold", s99, startup, defaultLatency)
			}
			if c.cipher && p99 > 4*defaultLatency {
				t.Errorf("p99 %v from the first packet: with -cipher the latency bound of %v must hold from the start", p99, defaultLatency)
			}
		})
	}
}

// TestHTTPInputLatency measures the delay through the command from an HTTP input, a chunked
// live stream at 2 Mbit/s (7 packets a chunk, each flushed as it is written), to a UDP output,
// as TestLiveLatency does from UDP: p99 within four times the bound after the startup.
func TestHTTPInputLatency(t *testing.T) {
	needLong(t, "sends for 5 s to measure the latency")
	bin := buildBinary(t, "")
	stream := readFile(t, demoScrambled)
	const mbit2 = time.Duration(7 * 188 * 8 * float64(time.Second) / 2e6)
	chunks := make(chan []byte, 64)
	connected := make(chan struct{})
	var once sync.Once
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "video/mp2t")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		once.Do(func() { close(connected) })
		for {
			select {
			case d, ok := <-chunks:
				if !ok {
					return
				}
				if _, err := w.Write(d); err != nil {
					return
				}
				w.(http.Flusher).Flush()
			case <-r.Context().Done():
				return
			}
		}
	})}
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	defer srv.Close()
	defer close(chunks)
	ready := func() {
		select {
		case <-connected:
		case <-time.After(10 * time.Second):
			t.Fatal("the command did not connect")
		}
	}
	send := func(d []byte) error {
		chunks <- append([]byte(nil), d...)
		return nil
	}
	delays, sent := measureLatencyFrom(t, bin, "http://"+ln.Addr().String()+"/live.ts", ready, send, stream, 7, mbit2, 7*900)
	if _, s99 := logLatency(t, "HTTP in, 2 Mbit/s", delays, sent); s99 > 4*defaultLatency {
		t.Errorf("p99 %v after the first %v: the latency bound of %v does not hold", s99, startup, defaultLatency)
	}
}

// startup is the part of a latency measurement counted apart.
const startup = 500 * time.Millisecond

// logLatency logs the median, 99th percentile and largest of delays, of all packets and of those
// sent after the startup, and returns both 99th percentiles.
func logLatency(t *testing.T, name string, delays []time.Duration, sent []time.Time) (p99, steady99 time.Duration) {
	t.Helper()
	var steady []time.Duration
	for i, d := range delays {
		if sent[i].Sub(sent[0]) >= startup {
			steady = append(steady, d)
		}
	}
	p50, p99, top := percentiles(delays)
	s50, s99, stop := percentiles(steady)
	t.Logf("%s: all %d packets: delay p50 %v, p99 %v, max %v; after the first %v: p50 %v, p99 %v, max %v (CPU %s)",
		name, len(delays), p50, p99, top, startup, s50, s99, stop, cpuName())
	return p99, s99
}

// percentiles returns the median, the 99th percentile and the largest of delays.
func percentiles(delays []time.Duration) (p50, p99, top time.Duration) {
	d := slices.Sorted(slices.Values(delays))
	at := func(q float64) time.Duration {
		return d[min(len(d)-1, int(q*float64(len(d))))].Round(100 * time.Microsecond)
	}
	return at(0.5), at(0.99), d[len(d)-1].Round(100 * time.Microsecond)
}

// measureLatency runs the command between two loopback UDP sockets and returns each packet's
// delay through it, and when it was sent.
func measureLatency(t *testing.T, bin string, stream []byte, pkts int, gap time.Duration, packets int, flags ...string) (delays []time.Duration, sent []time.Time) {
	t.Helper()
	in := freeUDPPort(t)
	sc := udpSender(t, in)
	return measureLatencyFrom(t, bin, fmt.Sprintf("udp://@127.0.0.1:%d", in), func() { waitListening(t, in) },
		func(d []byte) error { _, err := sc.Write(d); return err }, stream, pkts, gap, packets, flags...)
}

// measureLatencyFrom is measureLatency with the input the command reads (-in), what waits
// until it is ready, and how a datagram's worth of packets is sent to it.
func measureLatencyFrom(t *testing.T, bin, input string, ready func(), send func([]byte) error, stream []byte, pkts int, gap time.Duration, packets int, flags ...string) (delays []time.Duration, sent []time.Time) {
	t.Helper()
	rc, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	rc.SetReadBuffer(8 << 20)
	tsd := proc.Start(t, time.Minute, bin, append([]string{"-q", "-in", input,
		"-out", fmt.Sprintf("udp://127.0.0.1:%d", rc.LocalAddr().(*net.UDPAddr).Port),
		"-cw-file", demoKeys, "-packets", fmt.Sprint(packets)}, flags...)...)
	ready()

	// The receiver notes when each packet came out.
	arrived := make([]time.Time, 0, packets)
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 65536)
		rc.SetReadDeadline(time.Now().Add(time.Minute))
		for len(arrived) < packets {
			n, err := rc.Read(buf)
			now := time.Now()
			if err != nil {
				return
			}
			for range n / 188 {
				arrived = append(arrived, now)
			}
		}
	}()

	sent = paceSend(t, send, stream, pkts, gap, packets)
	awaitRun(t, tsd, done, "the receiver did not finish")
	if len(arrived) != packets {
		t.Fatalf("%d packets came out of %d", len(arrived), packets)
	}
	return delaysOf(arrived, sent), sent
}

// paceSend sends packets of stream, pkts at a time every gap (the stream over again when it
// ends), and returns when each packet was sent.
func paceSend(t *testing.T, send func([]byte) error, stream []byte, pkts int, gap time.Duration, packets int) []time.Time {
	t.Helper()
	sent := make([]time.Time, 0, packets)
	next := time.Now()
	for i := 0; len(sent) < packets; i++ {
		off := (i * pkts * 188) % len(stream)
		d := stream[off:min(off+pkts*188, len(stream))]
		time.Sleep(time.Until(next))
		now := time.Now()
		if err := send(d); err != nil {
			t.Fatal(err)
		}
		for range len(d) / 188 {
			sent = append(sent, now)
		}
		next = next.Add(gap)
	}
	return sent[:packets]
}

// TestHTTPOutputLatency measures the delay through the command from a UDP input at 2 Mbit/s (7
// packets a datagram) to a client of its HTTP output, which joins at the stream's first PAT
// (its second packet): each packet's delay is the time from its datagram's send to the read
// of the response that brought it.
func TestHTTPOutputLatency(t *testing.T) {
	needLong(t, "sends for 5 s to measure the latency")
	bin := buildBinary(t, "")
	stream := readFile(t, demoScrambled)
	const (
		mbit2   = time.Duration(7 * 188 * 8 * float64(time.Second) / 2e6)
		packets = 7 * 900
	)
	in, out := freeUDPPort(t), ports.TCP(t)
	url := fmt.Sprintf("http://127.0.0.1:%d/live.ts", out)
	tsd := proc.Start(t, time.Minute, bin, "-q", "-in", fmt.Sprintf("udp://@127.0.0.1:%d", in), "-out", url,
		"-cw-file", demoKeys, "-packets", fmt.Sprint(packets))
	waitListening(t, in)
	waitTCP(t, out)
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var arrived []time.Time
	var first []byte
	done := make(chan struct{})
	go func() {
		defer close(done)
		arrived, first = stampArrivals(resp.Body, 0)
	}()
	sc := udpSender(t, in)
	time.Sleep(100 * time.Millisecond) // the client is in before the first PAT goes out
	sent := paceSend(t, func(d []byte) error { _, err := sc.Write(d); return err }, stream, 7, mbit2, packets)
	awaitRun(t, tsd, done, "the client's response did not end")
	skip := indexOfPacket(first, readFile(t, demoClear)) / 188
	if skip != 1 || len(arrived) != packets-skip {
		t.Fatalf("the client got %d packets from packet %d on, of %d", len(arrived), skip, packets)
	}
	sent = sent[skip:]
	delays := delaysOf(arrived, sent)
	if _, s99 := logLatency(t, "HTTP out, 2 Mbit/s", delays, sent); s99 > 4*defaultLatency {
		t.Errorf("p99 %v after the first %v: the latency bound of %v does not hold", s99, startup, defaultLatency)
	}
}

// cpuName is the model name /proc/cpuinfo gives, to stand beside a measured figure.
func cpuName() string {
	b, _ := os.ReadFile("/proc/cpuinfo")
	for _, l := range strings.Split(string(b), "\n") {
		if name, ok := strings.CutPrefix(l, "model name"); ok {
			return strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(name), ":"))
		}
	}
	return "unknown"
}

// TestLiveThroughput sends the scrambled sample, looped for several seconds of stream, over
// loopback UDP into the command at a steady rate (in bursts of 64 datagrams), which descrambles
// it and sends it on to the test with default flags: every packet the command received must go
// out, and when the kernel dropped no datagram in its socket, every byte must come out
// descrambled. The rate, the command's CPU time per second of stream, its peak RSS, the
// kernel's drops and the most its receive buffer held are logged. The test's sender and
// receiver are the live package's Writer and Reader (segmentation offload and coalesced
// receive where the kernel has them) and compare whole runs of bytes, so that the two cores are
// left to the command as far as they can be.
func TestLiveThroughput(t *testing.T) {
	needLong(t, "streams 6 s at 500 Mbit/s and at 1 Gbit/s")
	needTool(t, "time") // GNU time, for the peak RSS and the CPU time
	bin := buildBinary(t, "")
	scr, clear := readFile(t, demoScrambled), readFile(t, demoClear)
	const seconds = 6 // of stream: a sustained rate, past the receive buffer's few tens of ms
	for _, rate := range []float64{500e6, 1000e6, 4000e6} {
		t.Run(fmt.Sprintf("%.0f Mbit/s", rate/1e6), func(t *testing.T) {
			// 4 Gbit/s asks for more than the machine does: it sends the 1 Gbit/s stream as
			// fast as it goes.
			loops := int(min(rate, 1000e6) * seconds / 8 / float64(len(scr)))
			a, err := live.ParseAddress("udp://@127.0.0.1:0?buffer=33554432")
			if err != nil {
				t.Fatal(err)
			}
			rd, err := live.Listen(t.Context(), a)
			if err != nil {
				t.Fatal(err)
			}
			defer rd.Close()
			in := freeUDPPort(t)
			stats := filepath.Join(t.TempDir(), "stats.json")
			tsd := proc.Start(t, 2*time.Minute, "/usr/bin/time", "-f", "maxrss %M kB, CPU %U s user %S s sys", bin, "-in", fmt.Sprintf("udp://@127.0.0.1:%d", in),
				"-out", fmt.Sprintf("udp://127.0.0.1:%d", rd.LocalAddr().(*net.UDPAddr).Port),
				"-cw-file", demoKeys, "-packets", fmt.Sprint(loops*demoPackets), "-timeout", "2s", "-stats", stats)
			waitListening(t, in)
			queue := watchUDPQueue(t, in)

			got := make(chan int, 1)
			go func() {
				n, buf := 0, make([]byte, 1<<20)
				rd.SetIdleTimeout(3 * time.Second)
				for n < loops*len(clear) {
					m, err := rd.Read(buf)
					if err != nil {
						break
					}
					// The output is the clear sample over and over: compare runs of bytes.
					for b := buf[:m]; len(b) > 0; {
						at := n % len(clear)
						k := min(len(b), len(clear)-at)
						if !bytes.Equal(b[:k], clear[at:at+k]) {
							got <- -n
							return
						}
						b, n = b[k:], n+k
					}
				}
				got <- n
			}()

			w, err := live.Dial(&live.Address{Scheme: "udp", Host: "127.0.0.1", Port: in, Packets: 7, TOS: -1})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			// 64 datagrams at a time, each group when the rate says.
			step := 64 * 7 * 188
			t0 := time.Now()
			sent := 0
			for range loops {
				for off := 0; off < len(scr); off += step {
					d := scr[off:min(off+step, len(scr))]
					time.Sleep(time.Until(t0.Add(time.Duration(float64(sent*8) / rate * float64(time.Second)))))
					if _, err := w.Write(d); err != nil {
						t.Fatal(err)
					}
					sent += len(d)
				}
			}
			w.Flush()
			took := time.Since(t0)
			code := tsd.Wait(t, time.Minute)
			n := <-got
			peak, drops := queue()
			cpu := "unknown"
			if m := regexp.MustCompile(`CPU ([0-9.]+) s user ([0-9.]+) s sys`).FindStringSubmatch(tsd.Output()); m != nil {
				u, _ := strconv.ParseFloat(m[1], 64)
				s, _ := strconv.ParseFloat(m[2], 64)
				cpu = fmt.Sprintf("%.2f s user + %.2f s sys = %.2f of a core", u, s, (u+s)/took.Seconds())
			}
			t.Logf("sent %d MB in %v: %.0f Mbit/s (CPU %s); the command: exit %d, %s; CPU per second of stream: %s",
				sent>>20, took.Round(time.Millisecond), float64(sent*8)/took.Seconds()/1e6, cpuName(), code, lastLine(tsd.Output()), cpu)
			var st struct {
				Live struct {
					In struct {
						Buffer int `json:"socket_buffer"`
					} `json:"input"`
				} `json:"live"`
			}
			if b, err := os.ReadFile(stats); err == nil {
				json.Unmarshal(b, &st)
			}
			t.Logf("the command's receive socket: at most %d kB queued of its %d kB buffer (sampled every 5 ms), %d drops (/proc/net/udp)", peak>>10, st.Live.In.Buffer>>10, drops)
			t.Logf("%s", liveLines(tsd.Output()))
			// Datagrams the kernel dropped, its socket buffer full, are reported apart (the
			// summary names them); inside the command, every packet that came in must go out.
			pin, pout := -1, -2
			if m := regexp.MustCompile(`(\d+) packets in, (\d+) out`).FindStringSubmatch(tsd.Output()); m != nil {
				pin, _ = strconv.Atoi(m[1])
				pout, _ = strconv.Atoi(m[2])
			}
			switch {
			case pin <= 0 || pin != pout:
				t.Errorf("%d packets in, %d out:\n%s", pin, pout, tsd.Output())
			case strings.Contains(tsd.Output(), "dropped by the system") || drops > 0:
				t.Logf("the kernel dropped datagrams at this rate: the output cannot be compared")
			case code != 0 || n != loops*len(clear):
				t.Errorf("%d bytes out of %d came out descrambled (negative: a wrong byte there); exit %d:\n%s", n, loops*len(clear), code, tsd.Output())
			}
			if s := rd.Stats(); s.Dropped > 0 {
				t.Logf("the test's receiver lost %d datagrams in its socket", s.Dropped)
			}
		})
	}
}

// watchUDPQueue samples /proc/net/udp every 5 ms for the socket bound to port on 127.0.0.1,
// until the test ends or the returned function is called, which returns the most its receive
// queue held (bytes of buffer, as the kernel counts them against the socket buffer) and the
// datagrams (or coalesced buffers) the kernel dropped on it.
func watchUDPQueue(t *testing.T, port int) func() (peak, drops int64) {
	local := fmt.Sprintf("0100007F:%04X", port)
	stop, done := make(chan struct{}), make(chan struct{})
	var peak, drops int64
	go func() {
		defer close(done)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for end := time.Now().Add(2 * time.Minute); time.Now().Before(end); {
			b, _ := os.ReadFile("/proc/net/udp")
			for _, l := range strings.Split(string(b), "\n") {
				// sl local rem st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode ref pointer drops
				f := strings.Fields(l)
				if len(f) < 13 || f[1] != local {
					continue
				}
				if _, rx, ok := strings.Cut(f[4], ":"); ok {
					if q, err := strconv.ParseInt(rx, 16, 64); err == nil {
						peak = max(peak, q)
					}
				}
				if d, err := strconv.ParseInt(f[12], 10, 64); err == nil {
					drops = d
				}
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	var once sync.Once
	end := func() { once.Do(func() { close(stop); <-done }) }
	t.Cleanup(end)
	return func() (int64, int64) {
		end()
		return peak, drops
	}
}

// liveLines returns the summary's lines about the network ends.
func liveLines(s string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, "datagrams") || strings.Contains(l, "packets in") {
			out = append(out, strings.TrimSpace(l))
		}
	}
	return strings.Join(out, "; ")
}

// TestLiveLookAheadEndsAtPMT sends a live input its first three packets (SDT, PAT, PMT), a
// datagram each, and nothing more: the look-ahead must end as the PMT arrives, not wait for the
// packets after it (its framer's sync look-ahead) until the input falls silent. The silence
// allowed is a minute, so only the first can end it in time. The run then reads every packet
// from the input's source, and learns that those of the look-ahead arrived before it ended (so
// that its latency bound counts from then), the others after.
func TestLiveLookAheadEndsAtPMT(t *testing.T) {
	defer func(d time.Duration) { peekIdle = d }(peekIdle)
	peekIdle = time.Minute
	stream := readFile(t, demoScrambled)[:20*188]
	port := freeUDPPort(t)
	in, err := openLiveInput(fmt.Sprintf("udp://@127.0.0.1:%d", port))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close() })
	sc := udpSender(t, port)
	send := func(from, to int) {
		for i := from; i < to; i++ {
			if _, err := sc.Write(stream[i*188 : (i+1)*188]); err != nil {
				t.Fatal(err)
			}
		}
	}
	send(0, 3)
	done := make(chan []psi.Service, 1)
	go func() { done <- peekServices(in) }()
	select {
	case svcs := <-done:
		if len(svcs) != 1 || !svcs[0].PMTSeen {
			t.Fatalf("services %+v: want the one service of the sample, its PMT read", svcs)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the look-ahead did not end when the PMT came: it waits for the packets after it")
	}
	peekEnd := time.Now()
	send(3, 20)
	got := make([]byte, 0, len(stream))
	in.live.SetIdleTimeout(5 * time.Second)
	src := in.source()           // as the run reads it
	src.SetDeadline(time.Time{}) // wait for each packet
	for len(got) < len(stream) {
		unit, err := src.Next()
		if err != nil {
			break
		}
		at := src.ArrivedAt()
		if replayed := len(got) < 3*188; replayed && (at.IsZero() || at.After(peekEnd)) || !replayed && at.Before(peekEnd) {
			t.Fatalf("packet %d: arrived at %v; the look-ahead ended at %v and read the first 3", len(got)/188, at, peekEnd)
		}
		got = append(got, unit...)
	}
	if !bytes.Equal(got, stream) {
		t.Fatalf("the run read %d bytes, not the %d sent", len(got), len(stream))
	}
}
