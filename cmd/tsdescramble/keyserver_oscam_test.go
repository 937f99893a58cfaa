package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tsdescramble/tsdescramble/internal/testsupport/camdouble"
	"github.com/tsdescramble/tsdescramble/internal/testsupport/proc"
	"github.com/tsdescramble/tsdescramble/internal/wire/dvbapi"
)

// Key servers that answer as OSCam does (see camdouble.ConstantCW, camdouble.CurrentAndNext and
// DVBAPI.SetOSCam, checked against OSCam on loopback): the same pair for every ECM, each CW
// twice, CA_SET_DESCR only when a slot's CW changes, a late answer. Each run must give the clear
// stream byte for byte, exit 0, and, from a file, end within oscamFileRunLimit: a period whose
// key is the one an earlier period of its parity used is no reason to wait.

// oscamFileRunLimit bounds a file run against a server that answers at once (or within
// oscamLate): the stream is 12 crypto periods of 500 packets, 1.2 MB.
const oscamFileRunLimit = 5 * time.Second

// oscamLate is how late the late servers answer each ECM: less than -key-wait (1s).
const oscamLate = 300 * time.Millisecond

// oscamServer starts a key server double that answers each ECM with answer, delay late, and
// returns its URL and a count of the CA_SET_DESCR messages it sent (0 for cs378x and newcamd).
type oscamServer struct {
	name  string
	start func(t *testing.T, answer camdouble.AnswerFunc, delay time.Duration) (url string, setDescrs func() int)
}

func oscamServers() []oscamServer {
	return []oscamServer{
		{"cs378x", func(t *testing.T, answer camdouble.AnswerFunc, delay time.Duration) (string, func() int) {
			srv := camdouble.NewCS378x(t, "u", "p")
			srv.SetAnswer(answer)
			srv.SetDelay(delay)
			return "cs378x://u:p@" + srv.Addr, func() int { return 0 }
		}},
		{"newcamd", func(t *testing.T, answer camdouble.AnswerFunc, delay time.Duration) (string, func() int) {
			srv := camdouble.NewNewcamd(t, "u", "p", nil, camdouble.TestCAID)
			srv.SetAnswer(answer)
			srv.SetDelay(delay)
			return "newcamd://u:p@" + srv.Addr, func() int { return 0 }
		}},
		{"dvbapi", func(t *testing.T, answer camdouble.AnswerFunc, delay time.Duration) (string, func() int) {
			srv := camdouble.NewDVBAPI(t)
			srv.SetOSCam(true)
			srv.SetAnswer(answer)
			srv.SetDelay(delay)
			return "dvbapi://" + srv.Addr, func() int { return countOps(srv.SentOps(), dvbapi.OpCASetDescr) }
		}},
	}
}

func countOps(ops []uint32, op uint32) int {
	n := 0
	for _, o := range ops {
		if o == op {
			n++
		}
	}
	return n
}

// oscamStream makes a stream of 12 crypto periods of 500 packets with cws used in turn, each
// period's ECM half a period before it (lag 0) or lag packets after it began, and writes it to
// a file.
func oscamStream(t *testing.T, lag int, cws ...[]byte) (clear, scrambled []byte, in string) {
	t.Helper()
	clear, scrambled, _ = camdouble.ECMStream(camdouble.StreamSpec{Packets: 6000, PeriodPackets: 500, LagPackets: lag, CWs: cws})
	in = filepath.Join(t.TempDir(), "in.ts")
	if err := os.WriteFile(in, scrambled, 0o644); err != nil {
		t.Fatal(err)
	}
	return clear, scrambled, in
}

// runAgainstServer runs the command's binary on the file in with keys from url, and requires
// exit 0, the clear stream byte for byte, and a run within oscamFileRunLimit; a run still going
// a second after that is killed (by its pid). A failure says how: the exit status, the packets
// that came scrambled and went out as they came or neither clear nor as they came (or were not
// written), and the time.
func runAgainstServer(t *testing.T, url, in string, clear, scrambled []byte) {
	t.Helper()
	bin := buildBinary(t, "")
	out := filepath.Join(t.TempDir(), "out.ts")
	start := time.Now()
	p := proc.Start(t, time.Minute, bin, "-v", "-key-server", url, "-key-wait", "1s", "-in", in, "-out", out)
	killed := false
	if !p.Ended(oscamFileRunLimit + time.Second - time.Since(start)) {
		p.Cmd.Process.Kill()
		killed = true
	}
	code := p.Wait(t, 10*time.Second)
	took := time.Since(start)
	got, _ := os.ReadFile(out) // none when the run was killed before it wrote
	if code == 0 && bytes.Equal(got, clear) && took < oscamFileRunLimit {
		t.Logf("exit 0, byte-exact, %v", took.Round(time.Millisecond))
		return
	}
	var scr, asCame, wrong, missing int
	for i := 0; i+188 <= len(scrambled); i += 188 {
		if scrambled[i+3]&0xC0 == 0 {
			continue
		}
		scr++
		switch {
		case i+188 > len(got):
			missing++
		case bytes.Equal(got[i:i+188], clear[i:i+188]):
		case bytes.Equal(got[i:i+188], scrambled[i:i+188]):
			asCame++
		default:
			wrong++
		}
	}
	status := fmt.Sprintf("exit %d (want 0), %v", code, took.Round(time.Millisecond))
	if killed {
		status = fmt.Sprintf("killed after %v, still running", took.Round(time.Millisecond))
	}
	var summary []string
	for _, l := range strings.Split(p.Output(), "\n") {
		if strings.HasPrefix(l, "tsdescramble: ") && !strings.Contains(l, "crypto period ") || strings.Contains(l, "got no key") {
			summary = append(summary, l)
		}
	}
	t.Errorf("%s (want under %v); of %d scrambled packets %d left as they came, %d neither clear nor as they came, %d not written (want all clear)\n%s",
		status, oscamFileRunLimit, scr, asCame, wrong, missing, strings.Join(summary, "\n"))
}

// A constant-CW reader answers every ECM with the same pair: even periods all have one key,
// odd periods the other. Through cs378x each ECM gets that pair again; through DVBAPI the
// server writes each parity's CW once and never again. Also with a server that answers each
// ECM 300 ms late.
func TestKeyServerConstantCW(t *testing.T) {
	t.Parallel()
	even, odd := mustCW(t, "11223366445566FF"), mustCW(t, "A1B2C316D4E5F6AF")
	clear, scrambled, in := oscamStream(t, 0, even, odd)
	for _, late := range []time.Duration{0, oscamLate} {
		for _, srv := range oscamServers() {
			name := srv.name
			if late > 0 {
				name += "/late"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				url, setDescrs := srv.start(t, camdouble.ConstantCW(even, odd), late)
				runAgainstServer(t, url, in, clear, scrambled)
				if srv.name == "dvbapi" {
					if n := setDescrs(); n != 2 {
						t.Errorf("the server sent %d CA_SET_DESCR, want 2: one per parity, as OSCam does for a constant pair", n)
					}
				}
			})
		}
	}
}

// A DVBAPI server sends CA_SET_DESCR only when a slot's CW changes (OSCam's dvbapi_write_cw, and
// nothing at all for an answer that repeats the pair, dvbapi_send_dcw): here the odd key stays
// the same over the whole stream while the even key changes every even period, so the odd slot
// is written once; and with a constant pair, each slot once.
func TestDVBAPISetDescrOnlyOnChange(t *testing.T) {
	t.Parallel()
	odd := mustCW(t, "A1B2C316D4E5F6AF")
	evens := [][]byte{mustCW(t, "11223366445566FF"), mustCW(t, "0102030604050610"), mustCW(t, "7F6E5D4A3C2B1A81")}
	for _, c := range []struct {
		name string
		cws  [][]byte
		want int // CA_SET_DESCR the server sends
	}{
		// Periods 0-11: even keys 0,1,2,0,1,2 (a change at every even period: 6), odd key 1.
		{"odd-key-constant", [][]byte{evens[0], odd, evens[1], odd, evens[2], odd}, 6 + 1},
		{"both-constant", [][]byte{evens[0], odd}, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			clear, scrambled, in := oscamStream(t, 0, c.cws...)
			srv := camdouble.NewDVBAPI(t)
			srv.SetOSCam(true)
			runAgainstServer(t, "dvbapi://"+srv.Addr, in, clear, scrambled)
			if n := countOps(srv.SentOps(), dvbapi.OpCASetDescr); n != c.want {
				t.Errorf("the server sent %d CA_SET_DESCR, want %d (one per change of a slot's CW)", n, c.want)
			}
		})
	}
}

// A card whose ECMs carry the current and the next key, the ECM changing 50 packets after each
// parity flip: the answer to each ECM brings its period's CW and the next period's, so each CW
// comes twice, first a period ahead as the next key, then again as the current one. Through
// DVBAPI the server writes only the half that changed: each CW once, a period ahead, to the
// slot that just went out of use.
func TestKeyServerEachCWTwice(t *testing.T) {
	t.Parallel()
	cws := [][]byte{mustCW(t, "11223366445566FF"), mustCW(t, "A1B2C316D4E5F6AF"), mustCW(t, "0102030604050610"), mustCW(t, "7F6E5D4A3C2B1A81")}
	clear, scrambled, in := oscamStream(t, 50, cws...)
	for _, srv := range oscamServers() {
		t.Run(srv.name, func(t *testing.T) {
			t.Parallel()
			url, setDescrs := srv.start(t, camdouble.CurrentAndNext(cws), 0)
			runAgainstServer(t, url, in, clear, scrambled)
			if srv.name == "dvbapi" {
				// 12 ECMs: the first writes both halves, each later one the next key.
				if n := setDescrs(); n > 12+1 {
					t.Errorf("the server sent %d CA_SET_DESCR for 12 ECMs: more than one per changed half", n)
				}
			}
		})
	}
}

// A key server that never answers costs each crypto period -key-wait at most, in all: the
// client's own timeout fits inside it, and the file's run ends, all its periods passed as they
// came (exit 3), however long the server stays silent or busy.
func TestKeyServerSilentWaitsKeyWaitAtMost(t *testing.T) {
	t.Parallel()
	const wait = 300 * time.Millisecond
	// 12 periods; each may wait once, and the end of the input once more.
	limit := 13*wait + 4*time.Second
	for _, ks := range []struct {
		name  string
		start func(t *testing.T) string
	}{
		{"cs378x", func(t *testing.T) string {
			srv := camdouble.NewCS378x(t, "u", "p")
			srv.SetDelay(time.Minute)
			return "cs378x://u:p@" + srv.Addr
		}},
		{"newcamd", func(t *testing.T) string {
			srv := camdouble.NewNewcamd(t, "u", "p", nil, camdouble.TestCAID)
			srv.SetDelay(time.Minute)
			return "newcamd://u:p@" + srv.Addr
		}},
		{"dvbapi", func(t *testing.T) string {
			srv := camdouble.NewDVBAPI(t)
			srv.SetSkip(func([]byte) bool { return true })
			return "dvbapi://" + srv.Addr
		}},
	} {
		t.Run(ks.name, func(t *testing.T) {
			t.Parallel()
			_, scrambled, in := oscamStream(t, 0, mustCW(t, "11223366445566FF"), mustCW(t, "A1B2C316D4E5F6AF"), mustCW(t, "0102030604050610"))
			bin := buildBinary(t, "")
			out := filepath.Join(t.TempDir(), "out.ts")
			start := time.Now()
			p := proc.Start(t, time.Minute, bin, "-q", "-key-server", ks.start(t), "-key-wait", wait.String(), "-in", in, "-out", out)
			if !p.Ended(limit + 5*time.Second - time.Since(start)) {
				p.Cmd.Process.Kill()
			}
			code := p.Wait(t, 10*time.Second)
			took := time.Since(start)
			if took > limit || code != exitNoFit {
				t.Fatalf("exit %d after %v; want exit %d within %v (-key-wait %v a period)\n%s", code, took.Round(time.Millisecond), exitNoFit, limit, wait, p.Output())
			}
			if got, _ := os.ReadFile(out); !bytes.Equal(got, scrambled) {
				t.Fatalf("the output is not the input as it came (%d bytes of %d)", len(got), len(scrambled))
			}
			t.Logf("exit %d after %v", code, took.Round(time.Millisecond))
		})
	}
}
