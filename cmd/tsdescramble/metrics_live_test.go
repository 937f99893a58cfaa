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
	port, addr := freeUDPPort(t), freeAddr(t)
	r := startLive(t, "-in", fmt.Sprintf("udp://@127.0.0.1:%d", port), "-out", os.DevNull,
		"-key-server", "cs378x://u:p@"+srv.Addr, "-metrics", addr, "-duration", "6s")
	waitListening(t, port)
	c := udpSender(t, port)
	stop := make(chan struct{})
	sent := make(chan struct{})
	go func() { // the stream, again and again, at about 10 Mbit/s, until the test has seen enough
		defer close(sent)
		for {
			for i := 0; i+7*188 <= len(scrambled); i += 7 * 188 {
				select {
				case <-stop:
					return
				default:
				}
				c.Write(scrambled[i : i+7*188])
				time.Sleep(time.Millisecond)
			}
		}
	}()
	defer func() {
		close(stop)
		<-sent
		r.wait(t, 30*time.Second) // -duration ends it
	}()
	var body string
	want := []string{"tsdescramble_ready 0\n", `tsdescramble_ready_reason{reason="nothing_descrambled"} 1`,
		`tsdescramble_key_server_ecms_total{protocol="cs378x",result="sent"}`}
	gaveUp := regexp.MustCompile(`\ntsdescramble_key_wait_periods_total\{result="given_up"\} [1-9]`)
	for try := 0; try < 200; try++ {
		time.Sleep(50 * time.Millisecond)
		code, b, err := tryGet(addr, "/metrics")
		if err != nil || code != 200 {
			continue
		}
		body = b
		if !slices.ContainsFunc(want, func(s string) bool { return !strings.Contains(body, s) }) && gaveUp.MatchString(body) {
			break
		}
	}
	for _, s := range want {
		if !strings.Contains(body, s) {
			t.Errorf("/metrics has no %q:\n%s", s, body)
		}
	}
	if !gaveUp.MatchString(body) {
		t.Errorf("/metrics has no crypto period given up:\n%s", body)
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
