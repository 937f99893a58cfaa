//go:build unix

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/tsdescramble/tsdescramble/internal/testsupport/camdouble"
	"github.com/tsdescramble/tsdescramble/internal/testsupport/proc"
	"github.com/tsdescramble/tsdescramble/pipeline"
)

// Keys from a key server for a stream that arrives on the live UDP input, on loopback: a
// sender paces the scrambled stream with ECMs as 7-packet datagrams, the command asks the
// cs378x or DVBAPI test server for each ECM's keys while it receives, and -packets ends the run
// at the stream's last packet.

// liveKeyPace is the gap between two 7-packet datagrams: about 7,000 packets a second, so that
// a crypto period of 500 packets lasts some 70 ms, longer than a key server's answer.
const liveKeyPace = time.Millisecond

// keyServerTarget is a key server test double the command can be pointed at.
type keyServerTarget struct {
	name string
	// start starts the server and returns its URL; delay makes it answer each ECM that late,
	// and it goes away at the first ECM for which stopOn (when not nil) is true.
	start func(t *testing.T, delay time.Duration, stopOn func(ecm []byte) bool) string
}

func keyServerTargets() []keyServerTarget {
	return []keyServerTarget{
		{name: "cs378x", start: func(t *testing.T, delay time.Duration, stopOn func([]byte) bool) string {
			srv := camdouble.NewCS378x(t, "u", "p")
			srv.SetDelay(delay)
			if stopOn != nil {
				srv.SetAnswer(func(ecm []byte) (byte, [16]byte, bool) {
					if stopOn(ecm) {
						go srv.Stop() // Stop waits for the connection this runs on
						return 0, [16]byte{}, true
					}
					return camdouble.TestCAAnswer(ecm)
				})
			}
			return "cs378x://u:p@" + srv.Addr
		}},
		{name: "newcamd", start: func(t *testing.T, delay time.Duration, stopOn func([]byte) bool) string {
			srv := camdouble.NewNewcamd(t, "u", "p", nil, camdouble.TestCAID)
			srv.SetDelay(delay)
			if stopOn != nil {
				srv.SetAnswer(func(ecm []byte) (byte, [16]byte, bool) {
					if stopOn(ecm) {
						go srv.Stop() // Stop waits for the connection this runs on
						return 0, [16]byte{}, true
					}
					return camdouble.TestCAAnswer(ecm)
				})
			}
			return "newcamd://u:p@" + srv.Addr
		}},
		{name: "dvbapi", start: func(t *testing.T, delay time.Duration, stopOn func([]byte) bool) string {
			srv := camdouble.NewDVBAPI(t)
			srv.SetDelay(delay)
			if stopOn != nil {
				srv.SetStopOn(stopOn)
			}
			return "dvbapi://" + srv.Addr
		}},
	}
}

// liveKeyRun runs the command on a UDP input with keys from server, sends it stream paced, and
// returns its result and its -stats.
func liveKeyRun(t *testing.T, server string, stream []byte, flags ...string) (result, []byte, liveKeyStats) {
	t.Helper()
	port := freeUDPPort(t)
	dir := t.TempDir()
	out, stats := filepath.Join(dir, "out.ts"), filepath.Join(dir, "stats.json")
	args := append([]string{"-in", fmt.Sprintf("udp://@127.0.0.1:%d", port), "-out", out, "-key-server", server,
		"-packets", fmt.Sprint(len(stream) / 188), "-stats", stats}, flags...)
	r := startLive(t, args...)
	waitListening(t, port)
	// The stream's first packets (the PAT, the PMT, the first ECM), then a pause, as a feed
	// that a receiver tunes in to before its server is ready: the command sends the PMT to a
	// DVBAPI server, which sets its ECM filter in answer, and the command takes the filter's
	// PIDs at its next unit of work, which a network input cuts by -latency (50 ms). Without
	// the pause the ECM of the first crypto period and its repeats may all come before that.
	url := fmt.Sprintf("udp://127.0.0.1:%d", port)
	const lead = 21 * 7 * 188
	sendUDP(t, url, stream[:lead], liveKeyPace)
	time.Sleep(100 * time.Millisecond)
	sendUDP(t, url, stream[lead:], liveKeyPace)
	res := r.wait(t, 30*time.Second)
	var st liveKeyStats
	if err := json.Unmarshal(readFile(t, stats), &st); err != nil {
		t.Fatalf("-stats: %v\n%s", err, describe(res))
	}
	if st.LiveKeys.Server == nil {
		t.Fatalf("-stats has no key server counts\n%s", describe(res))
	}
	return res, readFile(t, out), st
}

// liveKeyStats is the part of -stats these tests read.
type liveKeyStats struct {
	LiveKeys pipeline.LiveKeyStats `json:"live_keys"`
	Live     struct {
		Input struct {
			Datagrams int64 `json:"datagrams"`
		} `json:"input"`
	} `json:"live"`
}

// Each ECM is sent only 20 packets (about 3 ms) before its crypto period, and the server
// answers 30 ms later: every period waits for its key with its packets held, and the output is
// still the clear stream, byte for byte.
func TestLiveInputKeyServer(t *testing.T) {
	const period = 500
	clear, scrambled, ecms := camdouble.ECMStream(camdouble.StreamSpec{Packets: 6 * period, PeriodPackets: period, CWs: liveCWs(t), LeadPackets: 20})
	for _, ksrv := range keyServerTargets() {
		t.Run(ksrv.name, func(t *testing.T) {
			res, got, st := liveKeyRun(t, ksrv.start(t, 30*time.Millisecond, nil), scrambled)
			if res.code != 0 {
				t.Fatal(describe(res))
			}
			sameBytes(t, "descrambled from the live input", got, clear, 188)
			lk := st.LiveKeys
			if lk.GaveUp != 0 || lk.PassedNoKey != 0 || lk.Waited < int64(len(ecms)-1) || lk.Held < int64(len(ecms)-1) {
				t.Fatalf("want every period after the first to wait for its key, none to go without: %+v", lk)
			}
			s := lk.Server
			if s.Sent < int64(len(ecms)) || s.CWs < int64(len(ecms)) || s.RTTMax < 30*time.Millisecond {
				t.Fatalf("key server counts %+v for a stream of %d ECMs answered after 30 ms", *s, len(ecms))
			}
			summaryHas(t, res.stderr, `key server \(`+ksrv.name+`\): [0-9]+ ECMs? sent`, `; 0 got none in time`)
			t.Logf("%s, UDP input at about 7000 packets/s (%d datagrams): %d ECMs, round trip median %v max %v; %d periods waited, %d packets held, the longest %v",
				ksrv.name, st.Live.Input.Datagrams, s.Sent, s.RTTMedian, s.RTTMax, lk.Waited, lk.Held, lk.HeldMax)
		})
	}
}

// A key that comes only after the next crypto period began still reaches its period: the
// DVBAPI server answers nothing to the first period's ECM (a card that cannot decode it), so
// the first period's key comes with the answer to the second period's ECM, as the other
// parity's, 30 ms after the second period began. The first period waits for it past its end,
// within -key-wait, and the output is the clear stream.
func TestLiveInputKeyAfterNextPeriodBegan(t *testing.T) {
	const period = 500
	clear, scrambled, ecms := camdouble.ECMStream(camdouble.StreamSpec{Packets: 4 * period, PeriodPackets: period, CWs: liveCWs(t), LeadPackets: 20})
	srv := camdouble.NewDVBAPI(t)
	srv.SetDelay(30 * time.Millisecond)
	srv.SetSkip(func(ecm []byte) bool { return bytes.Equal(ecm, ecms[0]) })
	res, got, st := liveKeyRun(t, "dvbapi://"+srv.Addr, scrambled)
	if res.code != 0 {
		t.Fatal(describe(res))
	}
	sameBytes(t, "descrambled from the live input", got, clear, 188)
	if lk := st.LiveKeys; lk.GaveUp != 0 || lk.Waited < int64(len(ecms)) || lk.Held < period {
		t.Fatalf("want every period to wait for its key, the first one all its packets, none to go without: %+v", lk)
	}
	t.Logf("the first period's key came %v after its first packet; %d periods waited, %d packets held",
		st.LiveKeys.HeldMax, st.LiveKeys.Waited, st.LiveKeys.Held)
}

// The server answers the ECMs of the first three crypto periods and goes away at the fourth's:
// the three periods after the stop pass as they came, and -stats counts exactly their packets;
// the periods before are clear.
func TestLiveInputKeyServerStops(t *testing.T) {
	const period, periods, answered = 500, 6, 3
	// A CW a period each: with liveCWs' four, the sixth period would use the second's CW,
	// which the key slot still holds, and fit.
	cws := append(liveCWs(t), mustCW(t, "0A0B0C210D0E0F2A"), mustCW(t, "1020304050607071"))
	clear, scrambled, ecms := camdouble.ECMStream(camdouble.StreamSpec{Packets: periods * period, PeriodPackets: period, CWs: cws})
	if len(ecms) != periods {
		t.Fatalf("%d ECMs in the stream, want one a period", len(ecms))
	}
	for _, ksrv := range keyServerTargets() {
		t.Run(ksrv.name, func(t *testing.T) {
			// The server goes away at the ECM of the fourth period, or a later one.
			stopOn := func(ecm []byte) bool {
				return slices.ContainsFunc(ecms[answered:], func(e []byte) bool { return bytes.Equal(e, ecm) })
			}
			res, got, st := liveKeyRun(t, ksrv.start(t, 0, stopOn), scrambled, "-key-wait", "500ms", "-log-format", "json")
			if res.code != exitNoFit || !strings.Contains(res.stderr, "3 crypto periods got no key from the key server") {
				t.Fatalf("want exit %d and the periods without a key named: %s", exitNoFit, describe(res))
			}
			// In the JSON log, the periods without a key are warnings, and so is the loss of
			// the DVBAPI server's connection, which its client says (the others' failures are
			// in the summary).
			recs := jsonRecords(t, res.stderr)
			warnings := []string{"no key from the key server for PID"}
			if ksrv.name == "dvbapi" {
				warnings = append(warnings, "dvbapi: connection to the key server lost")
			}
			for _, msg := range warnings {
				if l, _, ok := levelOf(recs, msg); !ok || l != "warn" {
					t.Errorf("%q at %q, want warn:\n%s", msg, l, res.stderr)
				}
			}
			lk := st.LiveKeys
			want := int64((periods - answered) * period)
			if lk.GaveUp != periods-answered || lk.PassedNoKey != want || lk.Dropped != 0 {
				t.Fatalf("%d periods, %d packets passed for want of a key; want %d and %d: %+v", lk.GaveUp, lk.PassedNoKey, periods-answered, want, lk)
			}
			// Only the periods that got their key can have been held for it.
			if lk.Waited > answered || lk.Held > answered*period {
				t.Fatalf("%d periods waited with %d packets, but only %d got a key: %+v", lk.Waited, lk.Held, answered, lk)
			}
			// Byte for byte: clear up to the first packet of the fourth period, as it came after.
			if len(got) != len(clear) {
				t.Fatalf("%d bytes out of %d", len(got), len(clear))
			}
			es := 0
			for i := 0; i < len(got); i += 188 {
				want := clear[i : i+188]
				if scrambled[i+3]&0xC0 != 0 {
					if es/period >= answered {
						want = scrambled[i : i+188]
					}
					es++
				}
				sameBytes(t, fmt.Sprintf("packet %d", i/188), got[i:i+188], want, 188)
			}
			t.Logf("%s stopped after %d ECMs: %d periods held %d packets (the longest %v); %d periods passed %d packets as they came; %d ECMs sent, round trip median %v max %v",
				ksrv.name, answered, lk.Waited, lk.Held, lk.HeldMax, lk.GaveUp, lk.PassedNoKey, lk.Server.Sent, lk.Server.RTTMedian, lk.Server.RTTMax)
		})
	}
}

// The key server goes away at the first ECM of the third crypto period, unanswered, and comes
// back on its port 150 ms later, as a CAM daemon that restarts: the client connects again
// after its backoff, the ECM the stream repeats meanwhile is answered, and the period, held
// for its key within -key-wait, is clear like all the others.
func TestLiveInputKeyServerComesBack(t *testing.T) {
	const period, down = 3000, 150 * time.Millisecond // a period lasts about 430 ms
	clear, scrambled, ecms := camdouble.ECMStream(camdouble.StreamSpec{Packets: 4 * period, PeriodPackets: period, CWs: liveCWs(t)})
	var gone atomic.Bool
	// goAway restarts srv at the first ECM of period 2, and reports whether it did.
	goAway := func(srv interface{ Restart(time.Duration) error }, ecm []byte) bool {
		if !bytes.Equal(ecm, ecms[2]) || !gone.CompareAndSwap(false, true) {
			return false
		}
		go srv.Restart(down) // Restart closes the connection this runs on
		return true
	}
	for _, c := range []struct {
		name  string
		start func(t *testing.T) (url string, logins func() int)
	}{
		{"newcamd", func(t *testing.T) (string, func() int) {
			srv := camdouble.NewNewcamd(t, "u", "p", nil, camdouble.TestCAID)
			srv.SetAnswer(func(ecm []byte) (byte, [16]byte, bool) {
				if goAway(srv, ecm) {
					return 0, [16]byte{}, true
				}
				return camdouble.TestCAAnswer(ecm)
			})
			return "newcamd://u:p@" + srv.Addr, func() int { return srv.Counts().Logins }
		}},
		{"cs378x", func(t *testing.T) (string, func() int) {
			srv := camdouble.NewCS378x(t, "u", "p")
			srv.SetAnswer(func(ecm []byte) (byte, [16]byte, bool) {
				if goAway(srv, ecm) {
					return 0, [16]byte{}, true
				}
				return camdouble.TestCAAnswer(ecm)
			})
			return "cs378x://u:p@" + srv.Addr, func() int { return -1 }
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			gone.Store(false)
			url, logins := c.start(t)
			res, got, st := liveKeyRun(t, url, scrambled, "-key-wait", "2s")
			if !gone.Load() {
				t.Fatal("the server never went away")
			}
			if res.code != 0 {
				t.Fatal(describe(res))
			}
			sameBytes(t, "descrambled from the live input", got, clear, 188)
			if n := logins(); n >= 0 && n < 2 {
				t.Fatalf("%d logins: the client did not log in again after the server came back", n)
			}
			s := st.LiveKeys.Server
			t.Logf("%s: the server was away %v; %d ECMs sent, %d answered, %d failed; %d periods waited, the longest %v",
				c.name, down, s.Sent, s.Answers, s.Errors, st.LiveKeys.Waited, st.LiveKeys.HeldMax)
		})
	}
}

// liveCWs are the control words of the crypto periods, in turn.
func liveCWs(t *testing.T) [][]byte {
	return [][]byte{mustCW(t, "11223366445566FF"), mustCW(t, "A1B2C316D4E5F6AF"), mustCW(t, "0102030604050610"), mustCW(t, "7F6E5D4A3C2B1A81")}
}

// SIGHUP makes a -follow run read its log again from the start: a key line corrected in place
// (the file no shorter, so reading on from where it was would not see it) gives the next
// crypto period of its parity its key; the keys already applied stay, and lines appended after
// are read as before. The run receives on UDP, so that it can wait between the steps.
func TestFollowHangupRereadsLog(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t, "")
	cws := []string{"11223366445566FF", "A1B2C316D4E5F6AF", "0102030604050610", "7F6E5D4A3C2B1A81"}
	const wrong = "0102030604050611" // the third key mistyped: its last byte
	var keys [][]byte
	for _, s := range cws {
		keys = append(keys, mustCW(t, s))
	}
	const period = 500
	clear, scrambled, _ := camdouble.ECMStream(camdouble.StreamSpec{Packets: 4 * period, PeriodPackets: period, CWs: keys})
	// at returns the offset of the elementary stream's packet n in the stream.
	at := func(n int) int {
		es := 0
		for i := 0; i < len(scrambled); i += 188 {
			if scrambled[i+3]&0xC0 != 0 {
				if es == n {
					return i
				}
				es++
			}
		}
		return len(scrambled)
	}
	line := func(k int, cw string) string { return fmt.Sprintf("%d %s # 12:00:%02d\n", k%2, spaced(cw), 10*k) }
	dir := t.TempDir()
	logPath, out := filepath.Join(dir, "live.cwl"), filepath.Join(dir, "out.ts")
	head := "# OSCam control word log\n" + line(0, cws[0]) + line(1, cws[1])
	writeFile(t, dir, "live.cwl", []byte(head))
	appendLine := func(s string) {
		f, err := os.OpenFile(logPath, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteString(s); err != nil {
			t.Fatal(err)
		}
	}
	port := freeUDPPort(t)
	url := fmt.Sprintf("udp://127.0.0.1:%d", port)
	tsd := proc.Start(t, time.Minute, bin, "-v", "-in", fmt.Sprintf("udp://@127.0.0.1:%d", port), "-out", out,
		"-cw-file", logPath, "-follow", "-packets", fmt.Sprint(len(scrambled)/188))
	waitListening(t, port)
	// The first crypto period and part of the second; then the third period's key is logged,
	// mistyped, and read (the log is polled every 200 ms).
	sendUDP(t, url, scrambled[:at(600)], liveKeyPace)
	// The first period must be out, with its key, before the third period's key is logged: a
	// period takes the latest key of its parity that was read when it began, and a run kept
	// off the CPU for longer than the 86 ms the sending took would otherwise begin it later.
	for end := time.Now().Add(10 * time.Second); !strings.Contains(tsd.Output(), "crypto period 1: even"); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("the first crypto period took no key in 10 s:\n%s", tsd.Output())
		}
	}
	appendLine(line(2, wrong))
	time.Sleep(600 * time.Millisecond)
	sendUDP(t, url, scrambled[at(600):at(2*period)], liveKeyPace)
	// Corrected in place before the third period begins, and SIGHUP.
	writeFile(t, dir, "live.cwl", []byte(head+line(2, cws[2])))
	if err := tsd.Cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(5 * time.Second); !strings.Contains(tsd.Output(), "read again: 3 key lines"); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("no note of the log read again:\n%s", tsd.Output())
		}
	}
	// The fourth key is appended as the log grows, and the rest of the stream sent.
	// The log is polled every 200 ms; the input ends with the fourth period, and a period still
	// waiting for its key when the input ends gets none, so the key must be read before then:
	// the third period goes out now, the fourth after a wait of five polls.
	appendLine(line(3, cws[3]))
	sendUDP(t, url, scrambled[at(2*period):at(3*period)], liveKeyPace)
	time.Sleep(time.Second)
	sendUDP(t, url, scrambled[at(3*period):], liveKeyPace)
	if code := tsd.Wait(t, 30*time.Second); code != 0 {
		t.Fatalf("exit %d:\n%s", code, tsd.Output())
	}
	sameBytes(t, "descrambled with the log read again", readFile(t, out), clear, 188)
	t.Log(strings.TrimSpace(tsd.Output()))
}
