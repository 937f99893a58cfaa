package dvbapi_test

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tsdescramble/tsdescramble/internal/testsupport/camdouble"
	wire "github.com/tsdescramble/tsdescramble/internal/wire/dvbapi"
	"github.com/tsdescramble/tsdescramble/keys"
	"github.com/tsdescramble/tsdescramble/keyserver"
	"github.com/tsdescramble/tsdescramble/keyserver/dvbapi"
	"github.com/tsdescramble/tsdescramble/psi"
	"github.com/tsdescramble/tsdescramble/scrambling"
)

var cws = [][]byte{
	{0x11, 0x22, 0x33, 0x66, 0x44, 0x55, 0x66, 0xFF},
	{0xA1, 0xB2, 0xC3, 0x16, 0xD4, 0xE5, 0xF6, 0xAF},
	{0x01, 0x02, 0x03, 0x06, 0x04, 0x05, 0x06, 0x0F},
}

// service is the test CA's service as a PMT gives it to the client.
func service() psi.Service {
	return psi.Service{Number: camdouble.ServiceID, PMTPID: camdouble.PMTPID, PMTSeen: true,
		Descriptors: camdouble.CADescriptor(camdouble.TestCAID, camdouble.ECMPID),
		Streams:     []psi.Stream{{Type: 2, PID: camdouble.ESPID}}}
}

type logs struct {
	mu    sync.Mutex
	lines []string
}

func (l *logs) add(s string) { l.mu.Lock(); l.lines = append(l.lines, s); l.mu.Unlock() }
func (l *logs) all() string  { l.mu.Lock(); defer l.mu.Unlock(); return strings.Join(l.lines, "\n") }

// until polls cond, bounded in time.
func until(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for range 400 {
		if cond() {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s", what)
}

func start(t *testing.T, addr string, live *keys.Live, l *logs) *dvbapi.Client {
	cl := dvbapi.NewClient(dvbapi.Config{Addr: addr, Name: "test", Timeout: time.Second,
		MinBackoff: 10 * time.Millisecond, MaxBackoff: 50 * time.Millisecond, Log: l.add}, live)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { cl.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return cl
}

func TestClientAgainstDouble(t *testing.T) {
	srv := camdouble.NewDVBAPI(t)
	live := keys.NewLive()
	var l logs
	cl := start(t, srv.Addr, live, &l)
	cl.Tables([]psi.Service{service()})
	until(t, "the ECM filter", func() bool { pids := cl.Filters(); return len(pids) == 1 && pids[0] == camdouble.ECMPID })
	if g := srv.Greeting(); !bytes.Equal(g, wire.AppendClientInfo(nil, "test")) {
		t.Fatalf("greeting % X", g)
	}

	// ECM 0 (even period 0), repeated as a stream repeats it; the client sends it once.
	ecm0 := camdouble.ECM(0x80, cws[0], make([]byte, 8), 0)
	for range 3 {
		cl.Section(camdouble.ECMPID, ecm0)
	}
	// Wait for each key, then see that the slot holds it.
	until(t, "the even key", func() bool { return cl.Stats().CWs == 1 })
	if k := live.Held(0x100, false); k == keys.NoKey {
		t.Fatal("no even key")
	}
	// ECM 1 (odd period 1): the server sends only the odd key, the even did not change.
	cl.Section(camdouble.ECMPID, camdouble.ECM(0x81, cws[0], cws[1], 1))
	until(t, "the odd key", func() bool { return cl.Stats().CWs == 2 })
	if k := live.Held(0x100, true); k == keys.NoKey {
		t.Fatal("no odd key")
	}
	// An ECM that changes no key: the server says nothing, and the client does not wait for
	// it: the next ECM's key arrives.
	cl.Section(camdouble.ECMPID, camdouble.ECM(0x81, cws[0], cws[1], 99))
	cl.Section(camdouble.ECMPID, camdouble.ECM(0x80, cws[2], cws[1], 2))
	until(t, "the next even key", func() bool { return cl.Stats().CWs == 3 })
	if k := live.Held(0x100, false); k == keys.NoKey || !bytes.Equal(live.CW(k), cws[2]) {
		t.Fatalf("next even key: %d", k)
	}
	if n := len(srv.ECMs()); n != 4 {
		t.Fatalf("the server got %d ECMs, want the 4 distinct ones", n)
	}
	st := cl.Stats()
	if st.Connects != 1 || st.Filters != 1 || st.ECMs != 4 || st.CWs != 3 || st.PIDsSet != 1 || st.ModeRefused != 0 {
		t.Fatalf("stats %+v", st)
	}
	if st.RTTMax <= 0 {
		t.Fatalf("no round trip measured: %+v", st)
	}
	t.Logf("ECM round trip (send to next CA_SET_DESCR) on loopback: median %v, max %v", st.RTTMedian, st.RTTMax)
	// The CA PMT the server received is the one the client built.
	want, _ := wire.AppendCAPMT(nil, 1, wire.ListOnly, &wire.CAPMTService{ProgramNumber: camdouble.ServiceID,
		PMTPID: camdouble.PMTPID, CA: camdouble.CADescriptor(camdouble.TestCAID, camdouble.ECMPID),
		Streams: []wire.CAPMTStream{{Type: 2, PID: camdouble.ESPID}}})
	if got := srv.Received()[0]; !bytes.Equal(got, want) {
		t.Fatalf("CA PMT received % X\nwant % X", got, want)
	}
}

// aesKey is the 16-byte AES-128 key a test server writes for an 8-byte CW.
func aesKey(cw []byte) []byte {
	return append(bytes.Clone(cw), 0xA5, 0x5A, 0xC3, 0x3C, 0x0F, 0xF0, 0x99, 0x66)
}

// ECMs of the test CA system, by sequence number: ECM k carries cws[k] for its parity.
func modeECM(k int) []byte {
	if k%2 == 0 {
		return camdouble.ECM(0x80, cws[k%len(cws)], make([]byte, 8), uint32(k))
	}
	return camdouble.ECM(0x81, make([]byte, 8), cws[k%len(cws)], uint32(k))
}

// The server writes each ECM's key in a mode of its own, as OSCam's extended CW API does: each
// key is set with the system of its slot's mode and IV when it came, the IV whatever parity its
// message names.
func TestClientModes(t *testing.T) {
	iv := []byte("0123456789abcdef")
	desIV := []byte{1, 2, 3, 4, 5, 6, 7, 8}
	modes := []camdouble.Mode{
		{Algo: wire.AlgoAES128, Cipher: wire.ModeCBC, IV: []byte("DVBTMCPTAESCISSA"), Key: aesKey},
		{Algo: wire.AlgoDES, Cipher: wire.ModeECB},
		{Algo: wire.AlgoAES128, Cipher: wire.ModeCBC, IV: iv, Key: aesKey},
		{Algo: wire.AlgoDES, Cipher: wire.ModeCBC, IV: desIV},
		{Algo: wire.AlgoAES128, Cipher: wire.ModeECB, IV: iv, Key: aesKey},
		{Algo: wire.AlgoDES, Cipher: wire.ModeCBC}, // no IV: ECB, as tvheadend
		{Algo: wire.AlgoCSA, Cipher: wire.ModeCBC},
	}
	aesCBC, _ := scrambling.NewAESCBC(iv)
	desCBC, _ := scrambling.NewDESCBC(desIV)
	want := []struct {
		sys scrambling.System
		cw  []byte
	}{
		{must(scrambling.NewAESCBC([]byte("DVBTMCPTAESCISSA"))), aesKey(cws[0])},
		{scrambling.DESECB(), cws[1]},
		{aesCBC, aesKey(cws[2])},
		{desCBC, cws[0]},
		{scrambling.AESECB(), aesKey(cws[1])},
		{scrambling.DESECB(), cws[2]},
		{nil, cws[0]},
	}
	srv := camdouble.NewDVBAPI(t)
	srv.SetModes(func(ecm []byte) camdouble.Mode {
		seq, _ := camdouble.ECMSeq(ecm)
		return modes[seq]
	})
	live := keys.NewLive()
	var l logs
	cl := start(t, srv.Addr, live, &l)
	cl.Tables([]psi.Service{service()})
	until(t, "the ECM filter", func() bool { return len(cl.Filters()) == 1 })
	for k, w := range want {
		cl.Section(camdouble.ECMPID, modeECM(k))
		until(t, fmt.Sprintf("key %d", k), func() bool { return cl.Stats().CWs == int64(k+1) })
		held := live.Held(camdouble.ESPID, k%2 == 1)
		if got := live.System(held); got != w.sys || !bytes.Equal(live.CW(held), w.cw) {
			name := "the input system"
			if got != nil {
				name = got.Name()
			}
			t.Fatalf("key %d: %s, want %v", k, name, w.sys)
		}
	}
	st := cl.Stats()
	if st.Modes != int64(len(modes)) || st.IVs != 4 || st.ModeRefused != 0 || st.KeysRefused != 0 {
		t.Fatalf("stats %+v", st)
	}
	if l.all() != "" {
		t.Fatalf("lines logged: %q", l.all())
	}
}

func must(s scrambling.System, err error) scrambling.System {
	if err != nil {
		panic(err)
	}
	return s
}

// A mode this client does not support (OSCam's CSA-ALT, an unknown algorithm or cipher mode)
// is refused with one line, however many keys follow, and counted, its keys not used; a key of
// a size its mode does not take too. No line holds a key.
func TestClientRefusesUnsupportedModes(t *testing.T) {
	for _, c := range []struct {
		mode camdouble.Mode
		line string
	}{
		{camdouble.Mode{Algo: wire.AlgoCSAAlt, Cipher: wire.ModeCBC}, "CSA-ALT"},
		{camdouble.Mode{Algo: 7}, "an unknown algorithm, 7"},
		{camdouble.Mode{Algo: wire.AlgoDES, Cipher: 2}, "DES in an unknown cipher mode, 2"},
		{camdouble.Mode{Algo: wire.AlgoAES128, Cipher: wire.ModeECB}, "a key of 8 bytes for AES-128, want 16"},
	} {
		t.Run(c.line, func(t *testing.T) {
			srv := camdouble.NewDVBAPI(t)
			srv.SetModes(func([]byte) camdouble.Mode { return c.mode })
			live := keys.NewLive()
			var l logs
			cl := start(t, srv.Addr, live, &l)
			cl.Tables([]psi.Service{service()})
			until(t, "the ECM filter", func() bool { return len(cl.Filters()) == 1 })
			for k := range 3 {
				cl.Section(camdouble.ECMPID, modeECM(k))
			}
			until(t, "the refusals", func() bool { return cl.Stats().KeysRefused == 3 })
			st := cl.Stats()
			if st.CWs != 0 || live.NumCWs() != 0 {
				t.Fatalf("keys of an unsupported mode were used: %+v", st)
			}
			modeFine := c.mode.Algo <= wire.AlgoAES128 && c.mode.Cipher <= wire.ModeCBC // the keys are not
			if modeFine && (st.Modes != 3 || st.ModeRefused != 0) || !modeFine && (st.ModeRefused != 3 || st.Refused != 6) {
				t.Fatalf("stats %+v", st)
			}
			if n := strings.Count(l.all(), "\n") + 1; n != 1 || !strings.Contains(l.all(), c.line) {
				t.Fatalf("%d lines, want one saying %q: %q", n, c.line, l.all())
			}
			for _, cw := range cws {
				if strings.Contains(strings.ToUpper(l.all()), fmt.Sprintf("%X", cw[:4])) {
					t.Fatalf("a key in the log: %q", l.all())
				}
			}
		})
	}
}

func TestClientReconnects(t *testing.T) {
	srv := camdouble.NewDVBAPI(t)
	live := keys.NewLive()
	var l logs
	cl := start(t, srv.Addr, live, &l)
	cl.Tables([]psi.Service{service()})
	until(t, "the ECM filter", func() bool { return len(cl.Filters()) == 1 })
	addr := srv.Addr
	srv.Stop()
	until(t, "the filters to go with the connection", func() bool { return len(cl.Filters()) == 0 })
	srv2 := camdouble.NewDVBAPIAt(t, addr)
	until(t, "the filter from the new server", func() bool { return len(cl.Filters()) == 1 })
	cl.Section(camdouble.ECMPID, camdouble.ECM(0x80, cws[0], cws[1], 0))
	until(t, "a key from the new server", func() bool { return live.NumCWs() == 2 })
	if len(srv2.ECMs()) != 1 || cl.Stats().Connects != 2 {
		t.Fatalf("stats %+v", cl.Stats())
	}
	if !strings.Contains(l.all(), "connection to the key server lost") {
		t.Fatalf("log %q", l.all())
	}
	// A connection that completed its handshake ends the failures in a row: its loss is told
	// too, and the client finds the next server as soon.
	srv2.Stop()
	until(t, "the filters to go with the second connection", func() bool { return len(cl.Filters()) == 0 })
	camdouble.NewDVBAPIAt(t, addr)
	until(t, "the filter from the third server", func() bool { return len(cl.Filters()) == 1 })
	if n := strings.Count(l.all(), "connection to the key server lost"); n != 2 || cl.Stats().Connects != 3 {
		t.Fatalf("%d lost connections told, want 2; stats %+v; log %q", n, cl.Stats(), l.all())
	}
}

// Two ECMs in a row: the answer to the first leaves the client busy with the second, so that
// a reader of a file does not give up on the key the second brings.
func TestClientBusyUntilEveryECMIsAnswered(t *testing.T) {
	srv := camdouble.NewDVBAPI(t)
	srv.SetDelay(300 * time.Millisecond)
	live := keys.NewLive()
	var l logs
	cl := start(t, srv.Addr, live, &l)
	cl.Tables([]psi.Service{service()})
	until(t, "the ECM filter", func() bool { return len(cl.Filters()) == 1 })
	cl.Section(camdouble.ECMPID, camdouble.ECM(0x80, cws[0], make([]byte, 8), 0))
	cl.Section(camdouble.ECMPID, camdouble.ECM(0x81, cws[0], cws[1], 1))
	if !cl.Busy() {
		t.Fatal("not busy with two ECMs sent")
	}
	until(t, "the first ECM's key", func() bool { return cl.Stats().CWs >= 1 })
	if st := cl.Stats(); st.CWs == 1 && !cl.Busy() {
		t.Fatal("not busy while the second ECM waits for its answer")
	}
	until(t, "the second ECM's key", func() bool { return cl.Stats().CWs == 2 })
	if cl.Busy() {
		t.Fatal("busy with every ECM answered")
	}
}

// An ECM that came before the server set its filter (the CA PMT still on its way) is kept and
// sent when the filter comes, as the ECM on air then: the key arrives without waiting for the
// stream to repeat it. WantedPIDs names the services' ECM PIDs from the start, so that the
// stream's sections on them are offered before the filter is set.
func TestClientSendsTheECMThatCameBeforeTheFilter(t *testing.T) {
	srv := camdouble.NewDVBAPI(t)
	live := keys.NewLive()
	cl := dvbapi.NewClient(dvbapi.Config{Addr: srv.Addr, Name: "test", Timeout: time.Second}, live)
	cl.Tables([]psi.Service{service()})
	if pids, _ := cl.WantedPIDs(); !slices.Equal(pids, []uint16{camdouble.ECMPID}) {
		t.Fatalf("wanted PIDs %v before the filter, want the ECM PID", pids)
	}
	// Not connected yet: an old ECM, then the one on air.
	cl.Section(camdouble.ECMPID, camdouble.ECM(0x81, cws[0], cws[2], 7))
	cl.Section(camdouble.ECMPID, camdouble.ECM(0x80, cws[0], cws[1], 0))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { cl.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	until(t, "the key of the ECM on air", func() bool { return live.NumCWs() == 2 })
	if ecms := srv.ECMs(); len(ecms) != 1 || ecms[0][0] != 0x80 {
		t.Fatalf("the server got %d ECMs, want the last one only", len(ecms))
	}
	if st := cl.Stats(); st.Replayed != 1 || st.ECMs != 1 {
		t.Fatalf("stats %+v", st)
	}
	// The stream repeats it: not sent again.
	cl.Section(camdouble.ECMPID, camdouble.ECM(0x80, cws[0], cws[1], 0))
	if st := cl.Stats(); st.ECMs != 1 {
		t.Fatalf("a repeat was sent again: %+v", st)
	}
}

// recorder keeps what Config.Recorder is given.
type recorder struct {
	mu  sync.Mutex
	got []string // "table seq caid pid: even odd", CWs in hex
}

func (r *recorder) Record(e keyserver.ECM, even, odd []byte) {
	seq, _ := camdouble.ECMSeq(e.Section)
	r.mu.Lock()
	r.got = append(r.got, fmt.Sprintf("%#02x %d %04X %#04x: %X %X", e.Section[0], seq, e.CAID, e.PID, even, odd))
	r.mu.Unlock()
}

func (r *recorder) all() []string { r.mu.Lock(); defer r.mu.Unlock(); return slices.Clone(r.got) }

// Each ECM the server answered is recorded once, with both CWs of its descrambler index: the
// one the answer changed and the other, which the index held; an ECM that changed no key is
// answered by no message and not recorded. A server that answers as OSCam does (a CA_SET_DESCR
// per changed half, then ECM_INFO) is recorded the same.
func TestClientRecordsAnswers(t *testing.T) {
	for _, oscam := range []bool{false, true} {
		t.Run(fmt.Sprintf("oscam=%v", oscam), func(t *testing.T) {
			srv := camdouble.NewDVBAPI(t)
			srv.SetOSCam(oscam)
			live := keys.NewLive()
			var rec recorder
			cl := dvbapi.NewClient(dvbapi.Config{Addr: srv.Addr, Timeout: time.Second, Recorder: &rec}, live)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { cl.Run(ctx); close(done) }()
			cl.Tables([]psi.Service{service()})
			until(t, "the ECM filter", func() bool { return len(cl.Filters()) == 1 })
			zero := make([]byte, 8)
			ecms := [][]byte{
				camdouble.ECM(0x80, cws[0], zero, 0),
				camdouble.ECM(0x81, cws[0], cws[1], 1),
				camdouble.ECM(0x80, cws[2], cws[1], 2),
				camdouble.ECM(0x81, cws[2], cws[0], 3),
			}
			for i, e := range ecms {
				cl.Section(camdouble.ECMPID, e)
				until(t, "the key", func() bool { return cl.Stats().CWs == int64(i+1) })
			}
			until(t, "the answers recorded", func() bool { return len(rec.all()) == len(ecms) })
			cancel()
			<-done
			want := []string{
				"0x80 0 0B00 0x0500: 11223366445566FF 0000000000000000",
				"0x81 1 0B00 0x0500: 11223366445566FF A1B2C316D4E5F6AF",
				"0x80 2 0B00 0x0500: 010203060405060F A1B2C316D4E5F6AF",
				"0x81 3 0B00 0x0500: 010203060405060F 11223366445566FF",
			}
			if got := rec.all(); !slices.Equal(got, want) {
				t.Fatalf("recorded\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}
