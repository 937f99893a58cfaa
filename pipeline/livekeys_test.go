package pipeline_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tsdescramble/tsdescramble/internal/testsupport/camdouble"
	"github.com/tsdescramble/tsdescramble/keys"
	"github.com/tsdescramble/tsdescramble/keyserver"
	"github.com/tsdescramble/tsdescramble/keyserver/cs378x"
	"github.com/tsdescramble/tsdescramble/keyserver/dvbapi"
	"github.com/tsdescramble/tsdescramble/pipeline"
	"github.com/tsdescramble/tsdescramble/ts"
)

func liveCWs() [][]byte {
	return [][]byte{
		{0x11, 0x22, 0x33, 0x66, 0x44, 0x55, 0x66, 0xFF},
		{0xA1, 0xB2, 0xC3, 0x16, 0xD4, 0xE5, 0xF6, 0xAF},
		{0x01, 0x02, 0x03, 0x06, 0x04, 0x05, 0x06, 0x0F},
		{0x7F, 0x6E, 0x5D, 0x4A, 0x3C, 0x2B, 0x1A, 0x81},
		{0x10, 0x20, 0x30, 0x60, 0x40, 0x50, 0x60, 0xF0},
	}
}

// runBackground runs f until the test ends.
func runBackground(t *testing.T, f func(ctx context.Context)) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { f(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
}

// cs378xKeys connects a cs378x client to srv and returns the LiveKeys of a run and its feeder.
func cs378xKeys(t *testing.T, srv *camdouble.CS378x, wait time.Duration) (*pipeline.LiveKeys, *keyserver.Feeder) {
	live := keys.NewLive()
	cl := cs378x.NewClient(cs378x.Config{Addr: srv.Addr, User: "u", Password: "p", Timeout: time.Second,
		MinBackoff: 10 * time.Millisecond, MaxBackoff: 20 * time.Millisecond})
	t.Cleanup(func() { cl.Close() })
	f := keyserver.NewFeeder(live, cl)
	runBackground(t, f.Run)
	return &pipeline.LiveKeys{Source: live, Sections: keyserver.NewECMSink(f, keyserver.Choice{}), Wait: wait, FileInput: true}, f
}

func TestLiveKeysThroughCS378x(t *testing.T) {
	clear, scrambled, ecms := camdouble.ECMStream(camdouble.StreamSpec{Packets: 3000, PeriodPackets: 500, CWs: liveCWs()})
	for _, batch := range []int{1, 7, 1024} {
		t.Run(fmt.Sprint("batch ", batch), func(t *testing.T) {
			srv := camdouble.NewCS378x(t, "u", "p")
			lk, f := cs378xKeys(t, srv, 2*time.Second)
			var out bytes.Buffer
			st, err := pipeline.Run(context.Background(), ts.NewSource(bytes.NewReader(scrambled)), &out,
				pipeline.Options{LiveKeys: lk, Batch: batch, Workers: 2})
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(out.Bytes(), clear) {
				t.Fatalf("output differs from the clear stream (%d packets descrambled, live %+v, feeder %+v)",
					st.Descrambled, *st.LiveKeys, f.Stats())
			}
			fs := f.Stats()
			if fs.Sent != int64(len(ecms)) || fs.Answers != int64(len(ecms)) || len(srv.Requests()) != len(ecms) {
				t.Fatalf("%d ECMs sent, %d answered, the server saw %d; the stream has %d distinct ECMs",
					fs.Sent, fs.Answers, len(srv.Requests()), len(ecms))
			}
			if st.LiveKeys.GaveUp != 0 || st.LeftScrambled != 0 {
				t.Fatalf("periods without a key: %+v", *st.LiveKeys)
			}
			// Every period's key passed the trial decryption on its first unit start.
			if ps := esStats(st); ps.Periods != 6 || ps.PeriodsFit != 6 || ps.PeriodsUnchecked != 0 || ps.KeyFit != "all" {
				t.Fatalf("the elementary stream's periods: %d, %d fit, %d unchecked, key fit %q; want 6 that fit",
					ps.Periods, ps.PeriodsFit, ps.PeriodsUnchecked, ps.KeyFit)
			}
			t.Logf("cs378x on loopback: %d ECMs, round trip median %v max %v; %d periods waited for their key, %d packets held, longest wait %v",
				fs.Sent, fs.RTTMedian, fs.RTTMax, st.LiveKeys.Waited, st.LiveKeys.Held, st.LiveKeys.HeldMax)
		})
	}
}

func TestLiveKeysThroughDVBAPI(t *testing.T) {
	clear, scrambled, _ := camdouble.ECMStream(camdouble.StreamSpec{Packets: 3000, PeriodPackets: 500, CWs: liveCWs()})
	srv := camdouble.NewDVBAPI(t)
	live := keys.NewLive()
	cl := dvbapi.NewClient(dvbapi.Config{Addr: srv.Addr, Timeout: time.Second, MinBackoff: 10 * time.Millisecond}, live)
	runBackground(t, func(ctx context.Context) { cl.Run(ctx) })
	var out bytes.Buffer
	st, err := pipeline.Run(context.Background(), ts.NewSource(bytes.NewReader(scrambled)), &out,
		pipeline.Options{LiveKeys: &pipeline.LiveKeys{Source: live, Sections: cl, Wait: 2 * time.Second, FileInput: true}})
	if err != nil {
		t.Fatal(err)
	}
	cs := cl.Stats()
	if !bytes.Equal(out.Bytes(), clear) {
		t.Fatalf("output differs from the clear stream (%d packets descrambled, live %+v, client %+v)", st.Descrambled, *st.LiveKeys, cs)
	}
	if cs.ModeRefused != 0 || cs.CWs == 0 {
		t.Fatalf("client %+v", cs)
	}
	t.Logf("dvbapi on loopback: %d ECM sections sent, %d CWs, round trip median %v max %v; %d periods waited, %d packets held",
		cs.ECMs, cs.CWs, cs.RTTMedian, cs.RTTMax, st.LiveKeys.Waited, st.LiveKeys.Held)
}

// esStats returns the statistics of the elementary stream of camdouble.ECMStream.
func esStats(st pipeline.Stats) pipeline.PIDStats {
	for _, ps := range st.PIDs {
		if ps.PID == camdouble.ESPID {
			return ps
		}
	}
	return pipeline.PIDStats{}
}

// A period with no unit start to check its key on takes the key server's key unchecked, and is
// counted so: here the elementary stream's packets carry no payload_unit_start_indicator, so
// no PES header can be looked for (descrambling does not look at that bit).
func TestLiveKeysNothingToCheckStaysUnchecked(t *testing.T) {
	clear, scrambled, _ := camdouble.ECMStream(camdouble.StreamSpec{Packets: 3000, PeriodPackets: 500, CWs: liveCWs()})
	for _, s := range [][]byte{clear, scrambled} {
		for i := 0; i < len(s); i += 188 {
			if uint16(s[i+1]&0x1F)<<8|uint16(s[i+2]) == camdouble.ESPID {
				s[i+1] &^= 0x40
			}
		}
	}
	srv := camdouble.NewCS378x(t, "u", "p")
	lk, _ := cs378xKeys(t, srv, 2*time.Second)
	var out bytes.Buffer
	st, err := pipeline.Run(context.Background(), ts.NewSource(bytes.NewReader(scrambled)), &out, pipeline.Options{LiveKeys: lk})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out.Bytes(), clear) {
		t.Fatalf("output differs from the clear stream (%d packets descrambled, live %+v)", st.Descrambled, *st.LiveKeys)
	}
	if ps := esStats(st); ps.Periods != 6 || ps.PeriodsFit != 0 || ps.PeriodsUnchecked != 6 || ps.KeyFit != "unchecked" {
		t.Fatalf("the elementary stream's periods: %d, %d fit, %d unchecked, key fit %q; want 6 unchecked",
			ps.Periods, ps.PeriodsFit, ps.PeriodsUnchecked, ps.KeyFit)
	}
}

// With the server stopped in the middle of the run, the periods after the keys it gave pass
// scrambled, and the counts say how many packets.
func TestLiveKeysServerStops(t *testing.T) {
	const period = 500
	clear, scrambled, ecms := camdouble.ECMStream(camdouble.StreamSpec{Packets: 6 * period, PeriodPackets: period, CWs: liveCWs()})
	srv := camdouble.NewCS378x(t, "u", "p")
	// The server answers the first three ECMs (periods 0 to 2), then goes away.
	answered := 0
	srv.SetAnswer(func(ecm []byte) (byte, [16]byte, bool) {
		answered++
		if answered > 3 {
			go srv.Stop()
			return 0, [16]byte{}, true
		}
		return camdouble.TestCAAnswer(ecm)
	})
	lk, _ := cs378xKeys(t, srv, 200*time.Millisecond)
	var out bytes.Buffer
	st, err := pipeline.Run(context.Background(), ts.NewSource(bytes.NewReader(scrambled)), &out, pipeline.Options{LiveKeys: lk})
	if err != nil {
		t.Fatal(err)
	}
	if len(ecms) != 6 {
		t.Fatalf("%d ECMs", len(ecms))
	}
	// Periods 0-2 descrambled, 3-5 passed as they came.
	want := 3 * period
	if st.LiveKeys.PassedNoKey != int64(want) || st.LiveKeys.GaveUp != 3 || st.Descrambled != int64(want) {
		t.Fatalf("passed %d packets in %d periods, descrambled %d; want %d, 3, %d", st.LiveKeys.PassedNoKey, st.LiveKeys.GaveUp, st.Descrambled, want, want)
	}
	// Byte for byte: clear up to the first packet of period 3, as it came after.
	got := out.Bytes()
	if len(got) != len(clear) {
		t.Fatalf("%d bytes out, %d in", len(got), len(clear))
	}
	for i := 0; i < len(got); i += 188 {
		wantPkt := clear[i : i+188]
		if scrambled[i+3]&0xC0 != 0 && !bytes.Equal(got[i:i+188], clear[i:i+188]) {
			wantPkt = scrambled[i : i+188]
		}
		if !bytes.Equal(got[i:i+188], wantPkt) {
			t.Fatalf("packet %d is neither clear nor as it came", i/188)
		}
	}
	t.Logf("server stopped after 3 ECMs: %+v", *st.LiveKeys)
}

// With Drop, the packets of the periods without a key are dropped, every other packet kept in
// order, whatever the batch.
func TestLiveKeysDrop(t *testing.T) {
	const period = 500
	clear, scrambled, _ := camdouble.ECMStream(camdouble.StreamSpec{Packets: 6 * period, PeriodPackets: period, CWs: liveCWs()})
	// The clear stream without the elementary stream's packets of periods 3 to 5.
	var want []byte
	es := 0
	for i := 0; i < len(clear); i += 188 {
		p := clear[i : i+188]
		if scrambled[i+3]&0xC0 != 0 {
			es++
			if (es-1)/period >= 3 {
				continue
			}
		}
		want = append(want, p...)
	}
	for _, batch := range []int{1, 300, 1024} { // a chunk of one packet, of part of a period, of two periods
		srv := camdouble.NewCS378x(t, "u", "p")
		answered := 0
		srv.SetAnswer(func(ecm []byte) (byte, [16]byte, bool) {
			if answered++; answered > 3 {
				return 0x44, [16]byte{}, false // not found
			}
			return camdouble.TestCAAnswer(ecm)
		})
		lk, _ := cs378xKeys(t, srv, 50*time.Millisecond)
		lk.Drop = true
		var out bytes.Buffer
		st, err := pipeline.Run(context.Background(), ts.NewSource(bytes.NewReader(scrambled)), &out, pipeline.Options{LiveKeys: lk, Batch: batch})
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(out.Bytes(), want) {
			t.Fatalf("batch %d: %d bytes out, want %d (%+v)", batch, out.Len(), len(want), *st.LiveKeys)
		}
		if st.LiveKeys.Dropped != 3*period || st.LiveKeys.PassedNoKey != 0 || st.PacketsOut != st.Packets-3*period {
			t.Fatalf("batch %d: %+v, %d packets out of %d", batch, *st.LiveKeys, st.PacketsOut, st.Packets)
		}
	}
}

// pacedReader hands out a stream as a live input does: a few packets at a time, on a clock.
type pacedReader struct {
	r     *bytes.Reader
	chunk int
	every time.Duration
}

func (p *pacedReader) Read(b []byte) (int, error) {
	time.Sleep(p.every)
	return p.r.Read(b[:min(len(b), p.chunk)])
}

// A live input (not read ahead): keys that come after their period started hold its packets
// until they arrive, and the output is still the clear stream.
func TestLiveKeysHeldOnLiveInput(t *testing.T) {
	if testing.Short() {
		t.Skip("paces a stream over a second")
	}
	const period = 1000
	// ECMs only 20 packets ahead of their period (4 ms at this pace), answers after 50 ms:
	// every period from the second on starts before its key.
	clear, scrambled, ecms := camdouble.ECMStream(camdouble.StreamSpec{Packets: 5 * period, PeriodPackets: period, CWs: liveCWs(), LeadPackets: 20})
	srv := camdouble.NewCS378x(t, "u", "p")
	srv.SetDelay(50 * time.Millisecond)
	lk, f := cs378xKeys(t, srv, 2*time.Second)
	lk.FileInput = false
	var out bytes.Buffer
	in := &pacedReader{r: bytes.NewReader(scrambled), chunk: 50 * 188, every: 10 * time.Millisecond}
	st, err := pipeline.Run(context.Background(), ts.NewSource(in), &out, pipeline.Options{LiveKeys: lk, Batch: 100})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out.Bytes(), clear) {
		t.Fatalf("output differs from the clear stream: %+v", *st.LiveKeys)
	}
	if st.LiveKeys.Waited < int64(len(ecms)-1) || st.LiveKeys.Held < 100 || st.LiveKeys.GaveUp != 0 {
		t.Fatalf("want every period after the first to wait for its key: %+v", *st.LiveKeys)
	}
	fs := f.Stats()
	t.Logf("live input at 5000 packets/s, answers after 50 ms: %d periods waited, %d packets held, longest wait %v; ECM round trip median %v max %v",
		st.LiveKeys.Waited, st.LiveKeys.Held, st.LiveKeys.HeldMax, fs.RTTMedian, fs.RTTMax)
}

// A period that gives up waiting before it ends passes the packets that follow as they came
// too, and the count of packets passed for want of a key has them all: on a live input whose
// periods last longer than the wait, with a server that has no key, it is every scrambled
// packet.
func TestLiveKeysGiveUpMidPeriodCounts(t *testing.T) {
	if testing.Short() {
		t.Skip("paces a stream over half a second")
	}
	const period = 500
	_, scrambled, _ := camdouble.ECMStream(camdouble.StreamSpec{Packets: 3 * period, PeriodPackets: period, CWs: liveCWs()})
	srv := camdouble.NewCS378x(t, "u", "p")
	srv.SetAnswer(func([]byte) (byte, [16]byte, bool) { return 0x44, [16]byte{}, false }) // not found
	lk, _ := cs378xKeys(t, srv, 30*time.Millisecond)
	lk.FileInput = false
	var out bytes.Buffer
	// 100 packets each 20 ms: a period lasts 100 ms, more than three times the wait.
	in := &pacedReader{r: bytes.NewReader(scrambled), chunk: 100 * 188, every: 20 * time.Millisecond}
	st, err := pipeline.Run(context.Background(), ts.NewSource(in), &out, pipeline.Options{LiveKeys: lk, Batch: 50})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out.Bytes(), scrambled) {
		t.Fatal("packets without a key were changed")
	}
	if st.LiveKeys.GaveUp != 3 || st.LiveKeys.PassedNoKey != 3*period {
		t.Fatalf("%d periods gave up, %d packets passed; want 3 and %d: %+v", st.LiveKeys.GaveUp, st.LiveKeys.PassedNoKey, 3*period, *st.LiveKeys)
	}
}

// scriptedSource is a keys.Live whose keys are set by a script as the stream's periods begin:
// before period n (from 1) begins, atBegin[n] runs. The tracker reads Seq once as each period
// begins, to know which CWs arrive after.
type scriptedSource struct {
	*keys.Live
	begins  int
	atBegin map[int]func(*keys.Live)
}

func (s *scriptedSource) Seq() uint64 {
	s.begins++
	if f := s.atBegin[s.begins]; f != nil {
		f(s.Live)
	}
	return s.Live.Seq()
}

// A period that gets no key passes as it came, and the stale key of its parity that comes
// afterwards (a key server that sends, with each key, the other parity's previous one) is new
// to the PID but does not fit the next period of that parity: it is not used, and the period
// takes the next key that comes. Every other period is descrambled.
func TestLiveKeysStaleKeyAfterMissingPeriod(t *testing.T) {
	const period = 500
	cws := liveCWs()
	clear, scrambled, _ := camdouble.ECMStream(camdouble.StreamSpec{Packets: 6 * period, PeriodPackets: period, CWs: cws})
	// Period n (from 1) uses cws[n-1]; period 3 (even) gets no key.
	set := func(n int) func(*keys.Live) {
		return func(l *keys.Live) { l.Set(0, (n-1)%2 == 1, cws[(n-1)%len(cws)]) }
	}
	// Period 3 gets no key before it ends (a file's input, the key server idle: it gives up
	// then); its key comes afterwards, with period 4's.
	atBegin := func() map[int]func(*keys.Live) {
		return map[int]func(*keys.Live){
			1: set(1), 2: set(2),
			// Period 4's answer carries period 3's key late, with its own.
			4: func(l *keys.Live) { set(4)(l); set(3)(l) },
			6: set(6),
		}
	}
	// The clear stream with the elementary stream's packets of period 3 as they came.
	want := bytes.Clone(clear)
	es := 0
	for i := 0; i < len(scrambled); i += 188 {
		if scrambled[i+3]&0xC0 != 0 {
			es++
			if (es-1)/period == 2 {
				copy(want[i:i+188], scrambled[i:i+188])
			}
		}
	}
	for _, batch := range []int{1, 300, 1024} {
		src := &scriptedSource{Live: keys.NewLive(), atBegin: atBegin()}
		var logs []string
		// Period 5 begins with only the stale key of its parity; its own comes while it waits,
		// once the stale one was found not to fit.
		log := func(s string) {
			logs = append(logs, s)
			if strings.Contains(s, "crypto period 5 ") && strings.Contains(s, "does not fit") {
				set(5)(src.Live)
			}
		}
		lk := &pipeline.LiveKeys{Source: src, Wait: time.Minute, FileInput: true, Log: log}
		var out bytes.Buffer
		st, err := pipeline.Run(context.Background(), ts.NewSource(bytes.NewReader(scrambled)), &out, pipeline.Options{LiveKeys: lk, Batch: batch})
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(out.Bytes(), want) {
			t.Fatalf("batch %d: output is not the clear stream with period 3 as it came: %d descrambled, %+v", batch, st.Descrambled, *st.LiveKeys)
		}
		if st.LiveKeys.GaveUp != 1 || st.LiveKeys.PassedNoKey != period || st.LiveKeys.NotFitting != 1 || st.LiveKeys.Waited != 1 {
			t.Fatalf("batch %d: want 1 period without a key, %d packets passed, 1 CW not fitting, 1 period waited: %+v (%q)",
				batch, period, *st.LiveKeys, logs)
		}
	}
}

// A live period whose key comes only after the next period began still gets it, within
// LiveKeys.Wait: a key server answers the ECM sent just before a parity change after it (or
// sets its section filter late, and the first ECM it sees is the next period's, which brings
// the key of the period before as the other parity's). Here every key comes with the Begin of
// the period after its own: each period ends without its key, and waits on for it.
func TestLiveKeysArriveAfterNextPeriodBegan(t *testing.T) {
	const period = 500
	cws := liveCWs()
	clear, scrambled, _ := camdouble.ECMStream(camdouble.StreamSpec{Packets: 6 * period, PeriodPackets: period, CWs: cws})
	set := func(n int) func(*keys.Live) { // period n's key (from 1)
		return func(l *keys.Live) { l.Set(0, (n-1)%2 == 1, cws[(n-1)%len(cws)]) }
	}
	for _, batch := range []int{1, 300, 1024} {
		atBegin := map[int]func(*keys.Live){}
		for n := 2; n <= 6; n++ {
			atBegin[n] = set(n - 1)
		}
		src := &scriptedSource{Live: keys.NewLive(), atBegin: atBegin}
		var logs []string
		lk := &pipeline.LiveKeys{Source: src, Wait: time.Minute, Log: func(s string) { logs = append(logs, s) }}
		var out bytes.Buffer
		st, err := pipeline.Run(context.Background(), ts.NewSource(bytes.NewReader(scrambled)), &out, pipeline.Options{LiveKeys: lk, Batch: batch})
		if err != nil {
			t.Fatal(err)
		}
		// The last period's key never comes: it waits to the end of the input.
		want := bytes.Clone(clear)
		es := 0
		for i := 0; i < len(scrambled); i += 188 {
			if scrambled[i+3]&0xC0 != 0 {
				if es/period == 5 {
					copy(want[i:i+188], scrambled[i:i+188])
				}
				es++
			}
		}
		if !bytes.Equal(out.Bytes(), want) {
			t.Fatalf("batch %d: output is not the clear stream with the last period as it came: %d descrambled, %+v (%q)",
				batch, st.Descrambled, *st.LiveKeys, logs)
		}
		lk2 := st.LiveKeys
		if lk2.Waited != 5 || lk2.Held != 5*period || lk2.GaveUp != 1 || lk2.PassedNoKey != period || lk2.NotFitting != 0 {
			t.Fatalf("batch %d: want 5 periods that waited with all their packets, 1 without a key: %+v (%q)", batch, *lk2, logs)
		}
		if len(logs) != 1 || !strings.Contains(logs[0], "crypto period 6 (odd) before the run ended") {
			t.Fatalf("batch %d: the line for the last period should say it waited to the end of the run: %q", batch, logs)
		}
	}
}

// A key server whose CWs do not change (a constant-CW reader: the same pair answers every ECM,
// and a DVBAPI server sets it once) descrambles every period: a slot holds its CW until
// another replaces it, and a period takes the CW of its parity that fits, whether or not an
// earlier period used it.
func TestLiveKeysConstantCWs(t *testing.T) {
	constant := liveCWs()[:2] // even periods take the first, odd ones the second
	clear, scrambled, _ := camdouble.ECMStream(camdouble.StreamSpec{Packets: 4000, PeriodPackets: 400, CWs: constant})
	check := func(t *testing.T, st pipeline.Stats, out []byte, start time.Time) {
		t.Helper()
		if !bytes.Equal(out, clear) {
			t.Fatalf("output differs from the clear stream (%d packets descrambled, %d left scrambled, live %+v)",
				st.Descrambled, st.LeftScrambled, *st.LiveKeys)
		}
		if ps := esStats(st); ps.Periods != 10 || ps.PeriodsFit != 10 || st.LiveKeys.GaveUp != 0 {
			t.Fatalf("the elementary stream's periods: %d, %d fit; %+v", ps.Periods, ps.PeriodsFit, *st.LiveKeys)
		}
		if d := time.Since(start); d > 3*time.Second {
			t.Fatalf("a file of constant keys took %v: periods waited for a key new to them", d)
		}
	}
	t.Run("cs378x", func(t *testing.T) {
		srv := camdouble.NewCS378x(t, "u", "p")
		lk, _ := cs378xKeys(t, srv, 2*time.Second)
		var out bytes.Buffer
		start := time.Now()
		st, err := pipeline.Run(context.Background(), ts.NewSource(bytes.NewReader(scrambled)), &out, pipeline.Options{LiveKeys: lk})
		if err != nil {
			t.Fatal(err)
		}
		check(t, st, out.Bytes(), start)
	})
	t.Run("set once", func(t *testing.T) {
		// The pair set once, as a DVBAPI server does when no slot's CW changes after it.
		live := keys.NewLive()
		live.Set(0, false, constant[0])
		live.Set(0, true, constant[1])
		var out bytes.Buffer
		start := time.Now()
		st, err := pipeline.Run(context.Background(), ts.NewSource(bytes.NewReader(scrambled)), &out,
			pipeline.Options{LiveKeys: &pipeline.LiveKeys{Source: live, Wait: 2 * time.Second, FileInput: true}})
		if err != nil {
			t.Fatal(err)
		}
		check(t, st, out.Bytes(), start)
	})
}
