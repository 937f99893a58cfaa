package pipeline

import (
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tsdescramble/tsdescramble/csa"
	"github.com/tsdescramble/tsdescramble/keys"
	"github.com/tsdescramble/tsdescramble/ts"
)

// pieceReader returns its bytes in pieces of random sizes, sleeping now and then, as a pipe fed
// by a live source does.
type pieceReader struct {
	b     []byte
	rng   *rand.Rand
	sleep time.Duration
}

func (r *pieceReader) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, io.EOF
	}
	if r.sleep > 0 && r.rng.IntN(8) == 0 {
		time.Sleep(r.sleep)
	}
	n := min(len(p), len(r.b), 1+r.rng.IntN(3000))
	copy(p, r.b[:n])
	r.b = r.b[n:]
	return n, nil
}

// With a latency bound, the output is the same as without, however the reads are cut and
// whether units of work are cut by deadlines.
func TestLatencySameOutput(t *testing.T) {
	cws := [][]byte{
		{0x11, 0x22, 0x33, 0x66, 0x44, 0x55, 0x66, 0xff},
		{0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01, 0x00},
	}
	rng := rand.New(rand.NewPCG(31, 32))
	for _, fr := range framings {
		scrambled, want, _ := testStream(t, 2000, fr, cws, 150, rng)
		for _, latency := range []time.Duration{time.Millisecond, 50 * time.Millisecond} {
			var out flushCounter
			st, err := Run(context.Background(), ts.NewSource(&pieceReader{b: scrambled, rng: rng, sleep: 2 * time.Millisecond}), &out,
				Options{Keys: keys.NewList(cws), Workers: 2, Batch: 256, Latency: latency})
			if err != nil {
				t.Fatalf("%v %v: %v", fr, latency, err)
			}
			if !bytes.Equal(out.buf.Bytes(), want) {
				t.Fatalf("%v %v: output differs from the clear stream", fr, latency)
			}
			if st.Packets != 2000 || out.flushes == 0 {
				t.Fatalf("%v %v: %d packets, %d flushes", fr, latency, st.Packets, out.flushes)
			}
		}
	}
}

// flushCounter is an output with a Flush method, which the run calls when it has caught up.
type flushCounter struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	flushes int
}

func (f *flushCounter) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.buf.Write(p)
}

func (f *flushCounter) Flush() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.flushes++
	return nil
}

func (f *flushCounter) len() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.buf.Len()
}

func (f *flushCounter) bytes() []byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	return bytes.Clone(f.buf.Bytes())
}

// waitLen waits until the output holds n bytes, or says how many it held after limit.
func waitLen(t *testing.T, out *flushCounter, n int, limit time.Duration) {
	t.Helper()
	for end := time.Now().Add(limit); time.Now().Before(end); time.Sleep(2 * time.Millisecond) {
		if out.len() >= n {
			return
		}
	}
	t.Fatalf("%d bytes out after %v, want %d", out.len(), limit, n)
}

// A packet read from a quiet input leaves within the latency bound: in a partial unit of work,
// and with its crypto period decided by the deadline when nothing else decides it (here a PID
// without a single unit start, whose period would otherwise be held for holdPackets packets).
func TestLatencyQuietInput(t *testing.T) {
	cws := [][]byte{{1, 2, 3, 6, 4, 5, 6, 15}, {9, 8, 7, 24, 6, 5, 4, 15}}
	key, _ := csa.NewKey(cws[0])
	packet := func(i int) []byte {
		p := make([]byte, ts.PacketSize)
		p[0], p[1], p[2], p[3] = ts.SyncByte, 0x01, 0x00, 0x10|byte(i&0xF)
		for j := 4; j < len(p); j++ {
			p[j] = byte(i + j)
		}
		key.Encrypt(p[4:])
		ts.SetTSC(p, ts.Even)
		return p
	}
	for _, batch := range []int{1, 1024} {
		pr, pw := io.Pipe()
		out := &flushCounter{}
		done := make(chan error, 1)
		go func() {
			_, err := Run(context.Background(), ts.NewSource(pr), out, Options{Keys: keys.NewList(cws), Workers: 2, Batch: batch,
				Latency: 20 * time.Millisecond, DecideOnTime: true})
			done <- err
		}()
		sent := 0
		for round := range 4 {
			for range 3 + round {
				pw.Write(packet(sent))
				sent++
			}
			// Without the bound, nothing would come out before 1024 packets, or before the
			// period's decision at 65536.
			waitLen(t, out, sent*ts.PacketSize, 5*time.Second)
		}
		pw.Close()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if out.len() != sent*ts.PacketSize || out.flushes < 4 {
			t.Fatalf("batch %d: %d bytes, %d flushes", batch, out.len(), out.flushes)
		}
	}
}

// The latency bound counts from when the packets arrived: packets that a look-ahead at the start
// of a live input (ts.Source.Peek) held past the bound leave at once, while the input is quiet,
// not a whole bound after the run read them. The output is the same as without the bound.
func TestLatencyCountsFromArrival(t *testing.T) {
	const latency = 400 * time.Millisecond
	cws := [][]byte{{1, 2, 3, 6, 4, 5, 6, 15}, {9, 8, 7, 24, 6, 5, 4, 15}}
	replayed := evenPackets(t, cws[0], 5) // only the bound decides their period
	var want bytes.Buffer
	if _, err := Run(context.Background(), ts.NewSource(bytes.NewReader(replayed)), &want, Options{Keys: keys.NewList(cws), Workers: 2}); err != nil {
		t.Fatal(err)
	}
	for _, batch := range []int{1, 1024} {
		pr, pw := io.Pipe()
		go pw.Write(replayed)
		src := ts.NewSource(pr)
		var seen int
		src.Peek(1<<20, 50*time.Millisecond, time.Time{}, func([]byte, ts.Framing) bool { seen++; return true })
		if seen != len(replayed)/ts.PacketSize {
			t.Fatalf("the look-ahead saw %d packets", seen)
		}
		time.Sleep(latency + latency/4) // the packets are past their bound
		out := &flushCounter{}
		done := make(chan error, 1)
		go func() {
			_, err := Run(context.Background(), src, out, Options{Keys: keys.NewList(cws), Workers: 2, Batch: batch,
				Latency: latency, DecideOnTime: true})
			done <- err
		}()
		// Counted from the run's read, the packets would leave after the whole bound.
		waitLen(t, out, len(replayed), latency/2)
		pw.Close()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		src.Close()
		if !bytes.Equal(out.bytes(), want.Bytes()) {
			t.Fatalf("batch %d: the output differs from the run's without a latency bound", batch)
		}
	}
}

// Without DecideOnTime, the latency bound never decides a crypto period: the packets of a
// period still undecided stay held (here a PID without a unit start, until the input ends), so
// the output is the same as without the bound, however the input arrives.
func TestLatencyKeepsPeriodsUndecided(t *testing.T) {
	cws := [][]byte{{1, 2, 3, 6, 4, 5, 6, 15}, {9, 8, 7, 24, 6, 5, 4, 15}}
	in := evenPackets(t, cws[1], 40)
	var want bytes.Buffer
	if _, err := Run(context.Background(), ts.NewSource(bytes.NewReader(in)), &want, Options{Keys: keys.NewList(cws)}); err != nil {
		t.Fatal(err)
	}
	pr, pw := io.Pipe()
	out := &flushCounter{}
	done := make(chan error, 1)
	go func() {
		_, err := Run(context.Background(), ts.NewSource(pr), out, Options{Keys: keys.NewList(cws), Workers: 2, Batch: 4,
			Latency: 5 * time.Millisecond})
		done <- err
	}()
	for i := 0; i < len(in); i += ts.PacketSize {
		pw.Write(in[i : i+ts.PacketSize])
		time.Sleep(time.Millisecond)
	}
	time.Sleep(30 * time.Millisecond) // six bounds: a period decided on time would be out by now
	if n := out.len(); n != 0 {
		t.Errorf("%d bytes out before the period was decided", n)
	}
	pw.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out.bytes(), want.Bytes()) {
		t.Error("the output differs from the run without a latency bound")
	}
}

// MaxPackets ends the run after that many packets, as if the input ended there.
func TestMaxPackets(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	cws := [][]byte{{1, 2, 3, 6, 4, 5, 6, 15}}
	scrambled, want, _ := testStream(t, 3000, ts.Framing188, cws, 500, rng)
	for _, latency := range []time.Duration{0, 50 * time.Millisecond} {
		var out bytes.Buffer
		st, err := Run(context.Background(), ts.NewSource(bytes.NewReader(scrambled)), &out, Options{Keys: keys.NewList(cws), Batch: 100, MaxPackets: 1234, Latency: latency})
		if err != nil || st.Packets != 1234 || st.BytesIn != 1234*ts.PacketSize || !bytes.Equal(out.Bytes(), want[:1234*ts.PacketSize]) {
			t.Fatalf("latency %v: %v, %d packets, %d bytes", latency, err, st.Packets, out.Len())
		}
	}
}

// A run with a latency bound stopped while its input is quiet writes what it read and returns.
func TestLatencyCancelQuiet(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	cws := [][]byte{{1, 2, 3, 6, 4, 5, 6, 15}}
	scrambled, want, _ := testStream(t, 50, ts.Framing188, cws, 500, rng)
	pr, pw := io.Pipe()
	defer pw.Close()
	ctx, cancel := context.WithCancel(context.Background())
	out := &flushCounter{}
	done := make(chan error, 1)
	go func() {
		_, err := Run(ctx, ts.NewSource(pr), out, Options{Keys: keys.NewList(cws), Latency: 10 * time.Millisecond, DecideOnTime: true})
		done <- err
	}()
	pw.Write(scrambled)
	waitLen(t, out, len(want), 5*time.Second)
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the run did not end when cancelled")
	}
	if !bytes.Equal(out.buf.Bytes(), want) {
		t.Fatal("output differs")
	}
}

// Continuity-counter errors are counted per PID: a packet lost, one repeated twice, a
// discontinuity allowed, packets without payload that keep the counter, null packets ignored.
func TestContinuityErrors(t *testing.T) {
	pkt := func(pid uint16, cc byte, payload, disc bool) []byte {
		p := make([]byte, ts.PacketSize)
		p[0], p[1], p[2], p[3] = ts.SyncByte, byte(pid>>8), byte(pid), cc
		if payload {
			p[3] |= 0x10
		}
		if disc {
			p[3] |= 0x20
			p[4], p[5] = 1, 0x80
		} else if !payload {
			p[3] |= 0x20
			p[4] = 183
		}
		return p
	}
	var in []byte
	add := func(ps ...[]byte) {
		for _, p := range ps {
			in = append(in, p...)
		}
	}
	// PID 0x100: 0 1 2 (lost 3) 4 4 (duplicate) 5, no payload keeps 5, 6 6 6 (one too many).
	add(pkt(0x100, 0, true, false), pkt(0x100, 1, true, false), pkt(0x100, 2, true, false), pkt(0x100, 4, true, false),
		pkt(0x100, 4, true, false), pkt(0x100, 5, true, false), pkt(0x100, 5, false, false), pkt(0x100, 6, true, false),
		pkt(0x100, 6, true, false), pkt(0x100, 6, true, false))
	// PID 0x101: 14 15 0 1, then a discontinuity to 9, then 10: no error. Null packets at random.
	add(pkt(0x101, 14, true, false), pkt(0x101, 15, true, false), pkt(ts.NullPID, 3, true, false), pkt(0x101, 0, true, false),
		pkt(0x101, 1, true, false), pkt(0x101, 9, true, true), pkt(ts.NullPID, 9, true, false), pkt(0x101, 10, true, false))
	st, err := Run(context.Background(), ts.NewSource(bytes.NewReader(in)), io.Discard, Options{Keys: keys.NewFixed([]byte{1, 2, 3, 6, 4, 5, 6, 15}, nil)})
	if err != nil {
		t.Fatal(err)
	}
	if st.CCErrors != 2 || pidStats(st, 0x100).CCErrors != 2 || pidStats(st, 0x101).CCErrors != 0 {
		t.Fatalf("%d continuity errors (0x100: %d, 0x101: %d), want 2, 2 and 0", st.CCErrors, pidStats(st, 0x100).CCErrors, pidStats(st, 0x101).CCErrors)
	}
}

// An Observer gives the counts so far whenever it is asked, also while a live input is quiet.
func TestObserverWhileQuiet(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	cws := [][]byte{{1, 2, 3, 6, 4, 5, 6, 15}}
	scrambled, _, _ := testStream(t, 200, ts.Framing188, cws, 500, rng)
	pr, pw := io.Pipe()
	var obs Observer
	done := make(chan error, 1)
	go func() {
		_, err := Run(context.Background(), ts.NewSource(pr), io.Discard, Options{Keys: keys.NewList(cws), Latency: 10 * time.Millisecond, DecideOnTime: true,
			Observer: &obs})
		done <- err
	}()
	pw.Write(scrambled)
	var reports []Stats
	for range 15 { // quiet: the counts are there all the same
		time.Sleep(20 * time.Millisecond)
		reports = append(reports, obs.Snapshot())
	}
	pw.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	last := reports[len(reports)-1]
	if len(reports) < 5 || last.Packets != 200 || last.PacketsOut != 200 || len(last.PIDs) == 0 || last.Elapsed < 200*time.Millisecond {
		t.Fatalf("%d reports, the last: %d packets in, %d out, %d PIDs, %v", len(reports), last.Packets, last.PacketsOut, len(last.PIDs), last.Elapsed)
	}
}

// triggerReader returns its bytes ten packets a read and calls at once when it has returned
// at bytes.
type triggerReader struct {
	b     []byte
	n, at int
	f     func()
}

func (r *triggerReader) Read(p []byte) (int, error) {
	if r.n >= len(r.b) {
		return 0, io.EOF
	}
	m := copy(p, r.b[r.n:min(r.n+10*ts.PacketSize, len(r.b))])
	if r.n < r.at && r.n+m >= r.at && r.f != nil {
		r.f()
	}
	r.n += m
	return m, nil
}

// A key schedule sent on Rekey replaces the run's between two units of work: a stream whose
// later crypto periods use control words the first list lacks comes out clear once the list
// that has them arrives.
func TestRekey(t *testing.T) {
	cws := append(append([][]byte{}, muxCWs...), foreignCW) // A B C D
	clear, scrambled := muxStream(t, 1600, []muxPID{{pid: 0x100, streamType: 0x1B, cws: cws, period: 200}})
	for _, rekey := range []bool{false, true} {
		ch := make(chan *keys.Schedule, 1)
		var out bytes.Buffer
		var logs []string
		r := &triggerReader{b: scrambled, at: 300 * ts.PacketSize, f: func() {
			if rekey {
				// The new list in another order: its indexes mean other control words.
				ch <- keys.NewList([][]byte{cws[2], cws[3], cws[0], cws[1]})
			}
		}}
		st, err := Run(context.Background(), ts.NewSource(r), &out, Options{Keys: keys.NewList(cws[:2]), Batch: 10, Workers: 2, Rekey: ch,
			Log: func(s string) { logs = append(logs, s) }})
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case !rekey && (bytes.Equal(out.Bytes(), clear) || st.PeriodsLeft == 0):
			t.Fatalf("without the new keys, %d periods left scrambled: the test shows nothing", st.PeriodsLeft)
		case rekey && !bytes.Equal(out.Bytes(), clear):
			t.Fatalf("with the new keys: %d periods left scrambled, %d left packets; log %q", st.PeriodsLeft, st.LeftScrambled, logs)
		case rekey && (len(logs) == 0 || !strings.HasPrefix(logs[0], "new keys from packet")):
			t.Fatalf("log %q", logs)
		}
	}
}

// With a latency bound, no goroutine of a run outlives it and the closing of its source when
// its input ends, when writing fails or when it is cancelled.
func TestLatencyLeavesNoGoroutine(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	cws := [][]byte{{1, 2, 3, 6, 4, 5, 6, 15}}
	scrambled, _, _ := testStream(t, 3000, ts.Framing188, cws, 1000, rng)
	before := runtime.NumGoroutine()
	for range 3 {
		o := Options{Keys: keys.NewList(cws), Workers: 2, Batch: 50, Latency: 5 * time.Millisecond}
		run := func(ctx context.Context, w io.Writer) {
			src := ts.NewSource(bytes.NewReader(scrambled))
			defer src.Close() // the source's read-ahead is its owner's to stop
			Run(ctx, src, w, o)
		}
		run(context.Background(), io.Discard)
		run(context.Background(), &failWriter{n: 5000})
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		run(ctx, io.Discard)
	}
	for i := 0; i < 100 && runtime.NumGoroutine() > before; i++ {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		buf := make([]byte, 1<<16)
		t.Fatalf("%d goroutines before, %d after:\n%s", before, n, buf[:runtime.Stack(buf, true)])
	}
}

// evenPackets returns n packets of PID 0x100 scrambled with cw as even, none of them a unit
// start: nothing in the stream decides their crypto period but its end (or a latency bound).
func evenPackets(t *testing.T, cw []byte, n int) []byte {
	key, err := csa.NewKey(cw)
	if err != nil {
		t.Fatal(err)
	}
	var out []byte
	for i := range n {
		p := make([]byte, ts.PacketSize)
		p[0], p[1], p[2], p[3] = ts.SyncByte, 0x01, 0x00, 0x10|byte(i&0xF)
		for j := 4; j < len(p); j++ {
			p[j] = byte(i * j)
		}
		key.Encrypt(p[4:])
		ts.SetTSC(p, ts.Even)
		out = append(out, p...)
	}
	return out
}
