package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tsdescramble/tsdescramble/internal/testsupport/camdouble"
)

// A live run over loopback serves its counts while it goes. A relay drops one datagram of
// the scrambled sample on its way: /metrics shows it as one RTP datagram lost on rtp://, and
// on both udp:// and rtp:// as the continuity errors the file path counts, per PID, in the
// packets that arrived; the latency gauges and the datagram counts are there, and /healthz
// says the run is healthy.
func TestMetricsLive(t *testing.T) {
	t.Parallel()
	stream := readFile(t, demoScrambled)
	const per, drop = 7 * 188, 100
	n := (len(stream) + per - 1) / per
	datagram := func(i int) []byte { return stream[i*per : min((i+1)*per, len(stream))] }
	var delivered []byte
	for i := range n {
		if i != drop {
			delivered = append(delivered, datagram(i)...)
		}
	}
	// What the file path counts in the same packets: the sample has no continuity error of
	// its own, so every one is the dropped datagram's.
	statsFile := filepath.Join(t.TempDir(), "stats.json")
	if res := run(t, delivered, "-cw-file", demoKeys, "-stats", statsFile); res.code != 0 {
		t.Fatal(describe(res))
	}
	var want struct {
		PIDs []struct {
			PID      uint16 `json:"pid"`
			CCErrors int64  `json:"cc_errors"`
		} `json:"pids"`
	}
	if err := json.Unmarshal(readFile(t, statsFile), &want); err != nil {
		t.Fatal(err)
	}
	var lines []string
	total := int64(0)
	for _, p := range want.PIDs {
		lines = append(lines, fmt.Sprintf("tsdescramble_continuity_errors_total{pid=\"%#04x\"} %d\n", p.PID, p.CCErrors))
		total += p.CCErrors
	}
	if total == 0 {
		t.Fatal("the file path counts no continuity error where a datagram is missing")
	}

	for _, scheme := range []string{"udp", "rtp"} {
		t.Run(scheme, func(t *testing.T) {
			port, addr := freeUDPPort(t), freeAddr(t)
			r := startLive(t, "-in", fmt.Sprintf("%s://@127.0.0.1:%d", scheme, port), "-out", os.DevNull,
				"-cw-file", demoKeys, "-packets", fmt.Sprint(len(delivered)/188), "-metrics", addr)
			waitListening(t, port)
			c := udpSender(t, port)
			send := func(from, to int) {
				for i := from; i < to; i++ {
					if i == drop {
						continue
					}
					var d []byte
					if scheme == "rtp" {
						d = []byte{0x80, 33, byte(i >> 8), byte(i), 0, 0, 0, 0, 0x12, 0x34, 0x56, 0x78}
					}
					if _, err := c.Write(append(d, datagram(i)...)); err != nil {
						t.Fatal(err)
					}
					if i%64 == 0 {
						time.Sleep(time.Millisecond) // no bursts past the socket buffer
					}
				}
			}
			// Half the stream, the dropped datagram among it; the run waits for the rest.
			half := n / 2
			send(0, half)
			wantLines := append([]string{fmt.Sprintf("tsdescramble_received_datagrams_total %d\n", half-1)}, lines...)
			if scheme == "rtp" {
				wantLines = append(wantLines, "tsdescramble_rtp_datagrams_lost_total 1\n", "tsdescramble_rtp_datagrams_duplicated_total 0\n")
			}
			var body string
			missing := wantLines
			for try := 0; try < 200 && len(missing) > 0; try++ {
				time.Sleep(25 * time.Millisecond)
				if code, b, err := tryGet(addr, "/metrics"); err == nil && code == 200 {
					body, missing = b, nil
					for _, l := range wantLines {
						if !strings.Contains(body, l) {
							missing = append(missing, l)
						}
					}
				}
			}
			if len(missing) > 0 {
				t.Fatalf("/metrics has no %q within 5 s:\n%s", missing, body)
			}
			for _, s := range []string{"# TYPE tsdescramble_latency_seconds gauge\ntsdescramble_latency_seconds ", "tsdescramble_latency_max_seconds "} {
				if !strings.Contains(body, s) {
					t.Errorf("/metrics has no %q:\n%s", s, body)
				}
			}
			if scheme == "udp" && strings.Contains(body, "tsdescramble_rtp_") {
				t.Errorf("RTP counts on a udp:// input:\n%s", body)
			}
			if code, b := get(t, addr, "/healthz"); code != 200 {
				t.Errorf("/healthz while packets flow and keys fit: %d %s", code, b)
			}
			send(half, n)
			if res := r.wait(t, 30*time.Second); res.code != 0 {
				t.Fatal(describe(res))
			}
		})
	}
}

// A live run whose key server is away: packets come and none is descrambled. /readyz and
// /healthz say so (503, "none descrambled"), /livez says the process works (200: a restart
// would bring no key), and /metrics gives the readiness and its reason as gauges, the key
// server's ECMs, each failed, and the crypto periods that gave up waiting for their key (-key-wait
// 2s), counted while the run goes.
func TestMetricsDeadKeyServer(t *testing.T) {
	t.Parallel()
	_, scrambled, _ := keyServerStream(t)
	srv := camdouble.NewCS378x(t, "u", "p")
	srv.Stop() // its port now refuses connections
	addr := loopStream(t, scrambled, "-key-server", "cs378x://u:p@"+srv.Addr)
	quoted := func(s string) *regexp.Regexp { return regexp.MustCompile(regexp.QuoteMeta(s)) }
	body, missing := scrapeUntil(addr, quoted("\ntsdescramble_ready 0\n"),
		quoted(`tsdescramble_ready_reason{reason="nothing_descrambled"} 1`),
		quoted(`tsdescramble_key_server_ecms_total{protocol="cs378x",result="sent"}`),
		quoted(`tsdescramble_key_server_connection{protocol="cs378x",server="`+srv.Addr+`",state="down"} 1`),
		regexp.MustCompile(`\ntsdescramble_key_wait_periods_total\{result="given_up"\} [1-9]`))
	if len(missing) > 0 {
		t.Errorf("/metrics has no %q:\n%s", missing, body)
	}
	if strings.Contains(body, "tsdescramble_cws_applied_total{") {
		t.Errorf("/metrics counts CWs applied with the key server away:\n%s", body)
	}
	for _, path := range []string{"/readyz", "/healthz"} {
		if code, b := get(t, addr, path); code != 503 || !strings.Contains(b, "none descrambled") {
			t.Errorf("%s with the key server away: %d %s", path, code, b)
		}
	}
	if code, b := get(t, addr, "/livez"); code != 200 {
		t.Errorf("/livez with the key server away: %d %s", code, b)
	}
}

// loopStream starts a live run on a UDP input with /metrics and the flags given, ended by
// -duration 6s, and sends it stream again and again, at about 10 Mbit/s, until the test ends;
// it returns the address of /metrics.
func loopStream(t *testing.T, stream []byte, flags ...string) (addr string) {
	t.Helper()
	port, addr := freeUDPPort(t), freeAddr(t)
	r := startLive(t, append([]string{"-in", fmt.Sprintf("udp://@127.0.0.1:%d", port), "-out", os.DevNull,
		"-metrics", addr, "-duration", "6s"}, flags...)...)
	waitListening(t, port)
	c := udpSender(t, port)
	stop := make(chan struct{})
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		for {
			for i := 0; i+7*188 <= len(stream); i += 7 * 188 {
				select {
				case <-stop:
					return
				default:
				}
				c.Write(stream[i : i+7*188])
				time.Sleep(time.Millisecond)
			}
		}
	}()
	t.Cleanup(func() {
		close(stop)
		<-sent
		r.wait(t, 30*time.Second) // -duration ends it
	})
	return addr
}

// scrapeUntil scrapes /metrics at addr until every pattern matches, for 10 s at most, and
// returns the last body and the patterns that never matched.
func scrapeUntil(addr string, patterns ...*regexp.Regexp) (body string, missing []*regexp.Regexp) {
	missing = patterns
	for try := 0; try < 200 && len(missing) > 0; try++ {
		time.Sleep(50 * time.Millisecond)
		code, b, err := tryGet(addr, "/metrics")
		if err != nil || code != 200 {
			continue
		}
		body, missing = b, nil
		for _, p := range patterns {
			if !p.MatchString(body) {
				missing = append(missing, p)
			}
		}
	}
	return body, missing
}

// A live run with a key server serves, while it goes, where its connection to the server
// stands, and the CWs applied to the crypto periods of each scrambled PID: connected to a
// server that answers, and counts that grow from one scrape to a later one; refused by a
// newcamd server that does not take the password, and no CW applied.
func TestMetricsKeyServerConnection(t *testing.T) {
	t.Parallel()
	_, scrambled, _ := keyServerStream(t)
	// The scrambled PIDs, as the file path finds them.
	var pids []string
	for _, p := range probeScrambledPIDs(t, scrambled) {
		pids = append(pids, fmt.Sprintf("%#04x", p))
	}
	if len(pids) == 0 {
		t.Fatal("the key server stream has no scrambled PID")
	}
	t.Run("connected", func(t *testing.T) {
		t.Parallel()
		srv := camdouble.NewCS378x(t, "u", "p")
		addr := loopStream(t, scrambled, "-key-server", "cs378x://u:p@"+srv.Addr)
		want := []*regexp.Regexp{regexp.MustCompile(regexp.QuoteMeta(`tsdescramble_key_server_connection{protocol="cs378x",server="` + srv.Addr + `",state="connected"} 1`))}
		for _, pid := range pids {
			want = append(want, regexp.MustCompile(`\ntsdescramble_cws_applied_total\{pid="`+pid+`"\} [1-9]`))
		}
		body, missing := scrapeUntil(addr, want...)
		if len(missing) > 0 {
			t.Fatalf("/metrics has no %q:\n%s", missing, body)
		}
		if n := strings.Count(body, "tsdescramble_cws_applied_total{"); n != len(pids) {
			t.Errorf("%d series of CWs applied, want one per scrambled PID %v:\n%s", n, pids, body)
		}
		// A later scrape: the stream's periods go on taking CWs.
		first := appliedCounts(body)
		var grown bool
		for try := 0; try < 100 && !grown; try++ {
			time.Sleep(50 * time.Millisecond)
			if code, b, err := tryGet(addr, "/metrics"); err == nil && code == 200 {
				later := appliedCounts(b)
				grown = true
				for pid, n := range first {
					if later[pid] < n {
						t.Fatalf("CWs applied to %s went down from %d to %d", pid, n, later[pid])
					}
					grown = grown && later[pid] > n
				}
			}
		}
		if !grown {
			t.Errorf("CWs applied did not grow in 5 s of a stream whose periods take new ones: %v", first)
		}
	})
	t.Run("refused", func(t *testing.T) {
		t.Parallel()
		srv := camdouble.NewNewcamd(t, "u", "p", nil, camdouble.TestCAID)
		addr := loopStream(t, scrambled, "-key-server", "newcamd://u:wrong@"+srv.Addr)
		body, missing := scrapeUntil(addr, regexp.MustCompile(regexp.QuoteMeta(`tsdescramble_key_server_connection{protocol="newcamd",server="`+srv.Addr+`",state="refused"} 1`)))
		if len(missing) > 0 {
			t.Fatalf("/metrics has no %q:\n%s", missing, body)
		}
		if strings.Contains(body, "wrong") {
			t.Errorf("/metrics shows the password:\n%s", body)
		}
		if strings.Contains(body, "tsdescramble_cws_applied_total{") {
			t.Errorf("/metrics counts CWs applied from a server that refused the login:\n%s", body)
		}
	})
}

// appliedCounts reads the series of CWs applied from a scrape, by pid label.
func appliedCounts(body string) map[string]int64 {
	m := map[string]int64{}
	for _, l := range regexp.MustCompile(`tsdescramble_cws_applied_total\{pid="(0x[0-9a-f]+)"\} (\d+)`).FindAllStringSubmatch(body, -1) {
		var n int64
		fmt.Sscan(l[2], &n)
		m[l[1]] = n
	}
	return m
}

// probeScrambledPIDs returns the PIDs of stream whose packets come scrambled.
func probeScrambledPIDs(t *testing.T, stream []byte) []uint16 {
	t.Helper()
	seen := map[uint16]bool{}
	var pids []uint16
	for i := 0; i+188 <= len(stream); i += 188 {
		p := stream[i : i+188]
		if pid := uint16(p[1]&0x1f)<<8 | uint16(p[2]); p[3]&0xc0 != 0 && !seen[pid] {
			seen[pid] = true
			pids = append(pids, pid)
		}
	}
	slices.Sort(pids)
	return pids
}
