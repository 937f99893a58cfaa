package pipeline

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"github.com/tsdescramble/tsdescramble/internal/synth"
	"github.com/tsdescramble/tsdescramble/ts"

	"github.com/tsdescramble/tsdescramble/csa"
	"github.com/tsdescramble/tsdescramble/keys"
)

// testStream builds a clear stream and its scrambled form in framing fr: PES-like packets on
// PIDs 0x100 and 0x101 with adaptation fields of every size, crypto periods of cp packets that
// alternate parity and use cws in turn, plus packets that must pass through untouched: PAT,
// null packets, TSC 01, adaptation-field-only packets, a damaged adaptation field length.
// want is the expected output (the clear stream, TSC cleared where descrambled).
func testStream(t *testing.T, n int, fr ts.Framing, cws [][]byte, cp int, rng *rand.Rand) (scrambled, want []byte, st Stats) {
	t.Helper()
	ks := make([]*csa.Key, len(cws))
	for i, cw := range cws {
		k, err := csa.NewKey(cw)
		if err != nil {
			t.Fatal(err)
		}
		ks[i] = k
	}
	scr := 0
	var later synth.Scrambler // the payloads of scrambled, scrambled once it is whole
	for i := range n {
		u := make([]byte, fr.Size)
		for j := range u {
			u[j] = byte(rng.IntN(256))
		}
		p := u[fr.Prefix : fr.Prefix+ts.PacketSize]
		p[0] = ts.SyncByte
		kind := rng.IntN(20)
		pid := uint16(0x100 + i%2)
		switch kind {
		case 0:
			pid = 0
		case 1:
			pid = ts.NullPID
		}
		p[1], p[2] = byte(pid>>8), byte(pid)
		p[3] = 0x10 | byte(i&0xF) // payload only
		afLen := -1
		if rng.IntN(3) == 0 {
			afLen = rng.IntN(183)
			p[3] |= 0x20
			p[4] = byte(afLen)
		}
		w := append([]byte{}, u...)
		switch {
		case kind == 2: // TSC 01: untouched
			ts.SetTSC(p, ts.Reserved)
			copy(w, u)
			st.Reserved++
		case kind == 3: // adaptation field only, marked scrambled: untouched
			p[3] = 0xA0 | p[3]&0x0F
			p[4] = 183
			copy(w, u)
			st.Even++
			st.NoPayload++
		case kind == 4: // adaptation field length past the packet: untouched
			p[3] = 0xB0 | p[3]&0x0F
			p[4] = 190
			copy(w, u)
			st.Even++
			st.NoPayload++
		case pid == 0 || pid == ts.NullPID || kind == 5:
			st.Clear++
		default:
			period := scr / cp
			scr++
			off, _ := ts.PayloadOffset(p)
			base := len(scrambled) + fr.Prefix
			later.Add(ks[period%len(ks)], base+off, base+ts.PacketSize)
			if period%2 == 1 {
				ts.SetTSC(p, ts.Odd)
				st.Odd++
			} else {
				ts.SetTSC(p, ts.Even)
				st.Even++
			}
			if ts.PacketSize-off < 8 {
				st.Short++
			} else {
				st.Descrambled++
			}
		}
		scrambled = append(scrambled, u...)
		want = append(want, w...)
	}
	later.EncryptIn(scrambled)
	st.Packets = int64(n)
	st.KeyChanges = max(0, (scr-1)/cp)
	return scrambled, want, st
}

func TestRunDescrambles(t *testing.T) {
	cws := [][]byte{
		{0x11, 0x22, 0x33, 0x66, 0x44, 0x55, 0x66, 0xff},
		{0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01, 0x00},
		{0xde, 0xad, 0xbe, 0xef, 0x01, 0x23, 0x45, 0x67},
	}
	rng := rand.New(rand.NewPCG(21, 22))
	n := 3000
	if testing.Short() {
		n = 600
	}
	for _, fr := range framings {
		scrambled, want, wantSt := testStream(t, n, fr, cws, n/12, rng)
		for _, cfg := range []struct{ workers, batch int }{{1, 1}, {1, 1024}, {2, 7}, {3, 100}, {4, 4096}} {
			var out bytes.Buffer
			st, err := Run(context.Background(), ts.NewSource(bytes.NewReader(scrambled)), &out, Options{
				Keys: keys.NewList(cws), Workers: cfg.workers, Batch: cfg.batch,
			})
			if err != nil {
				t.Fatalf("%v %+v: %v", fr, cfg, err)
			}
			if !bytes.Equal(out.Bytes(), want) {
				t.Fatalf("%v %+v: output differs from the clear stream", fr, cfg)
			}
			if st.Packets != wantSt.Packets || st.Clear != wantSt.Clear || st.Reserved != wantSt.Reserved ||
				st.Even != wantSt.Even || st.Odd != wantSt.Odd || st.Descrambled != wantSt.Descrambled ||
				st.Short != wantSt.Short || st.NoPayload != wantSt.NoPayload || st.KeyChanges != wantSt.KeyChanges ||
				st.BytesOut != int64(len(want)) || st.BytesIn != int64(len(scrambled)) || st.Framing != fr {
				t.Fatalf("%v %+v: stats\n got %+v\nwant %+v", fr, cfg, st, wantSt)
			}
		}
	}
}

type failWriter struct{ n int }

func (f *failWriter) Write(p []byte) (int, error) {
	if f.n < len(p) {
		m := max(f.n, 0)
		f.n = 0
		return m, errors.New("device full")
	}
	f.n -= len(p)
	return len(p), nil
}

func TestRunWriteError(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	cws := [][]byte{{1, 2, 3, 6, 4, 5, 6, 15}}
	scrambled, _, _ := testStream(t, 20000, ts.Framing188, cws, 1000, rng)
	_, err := Run(context.Background(), ts.NewSource(bytes.NewReader(scrambled)), &failWriter{n: 100000}, Options{Keys: keys.NewList(cws), Workers: 2, Batch: 64})
	if err == nil || err.Error() != "device full" {
		t.Fatalf("err %v, want the write error", err)
	}
}

func TestRunCancel(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	cws := [][]byte{{1, 2, 3, 6, 4, 5, 6, 15}}
	scrambled, want, _ := testStream(t, 5000, ts.Framing188, cws, 1000, rng)
	ctx, cancel := context.WithCancel(context.Background())
	var out bytes.Buffer
	// Cancelled once ten units of work are read.
	in := &triggerReader{b: scrambled, at: 10 * 100 * ts.PacketSize, f: cancel}
	_, err := Run(ctx, ts.NewSource(in), &out, Options{Keys: keys.NewList(cws), Workers: 2, Batch: 100})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v", err)
	}
	// What was written is a whole number of packets, each descrambled.
	if out.Len()%188 != 0 || out.Len() == 0 || !bytes.Equal(out.Bytes(), want[:out.Len()]) {
		t.Fatalf("%d bytes written before the cancellation, not a descrambled prefix", out.Len())
	}
}

func TestRunNoSync(t *testing.T) {
	_, err := Run(context.Background(), ts.NewSource(bytes.NewReader(bytes.Repeat([]byte{1, 2, 3}, 1000))), io.Discard, Options{Keys: keys.NewFixed([]byte{1, 2, 3, 4, 5, 6, 7, 8}, nil)})
	if !errors.Is(err, ts.ErrNoSync) {
		t.Fatalf("err %v", err)
	}
}

// No goroutine of a run outlives Run, whether it ends well, on a write error or cancelled.
func TestRunLeavesNoGoroutine(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	cws := [][]byte{{1, 2, 3, 6, 4, 5, 6, 15}}
	scrambled, _, _ := testStream(t, 5000, ts.Framing188, cws, 1000, rng)
	before := runtime.NumGoroutine()
	for range 3 {
		Run(context.Background(), ts.NewSource(bytes.NewReader(scrambled)), io.Discard, Options{Keys: keys.NewList(cws), Workers: 4, Batch: 50})
		Run(context.Background(), ts.NewSource(bytes.NewReader(scrambled)), &failWriter{n: 5000}, Options{Keys: keys.NewList(cws), Workers: 4, Batch: 50})
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		Run(ctx, ts.NewSource(bytes.NewReader(scrambled)), io.Discard, Options{Keys: keys.NewList(cws), Workers: 4, Batch: 50})
	}
	// Goroutines that have returned may take a moment to be counted out.
	for i := 0; i < 100 && runtime.NumGoroutine() > before; i++ {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		buf := make([]byte, 1<<16)
		t.Fatalf("%d goroutines before, %d after:\n%s", before, n, buf[:runtime.Stack(buf, true)])
	}
}

// The key-change log has a line per crypto period of each PID, with its parity, key and first packet.
func TestKeyLog(t *testing.T) {
	cw := []byte{1, 2, 3, 6, 4, 5, 6, 15}
	key, _ := csa.NewKey(cw)
	stream := synth.SyntheticStream(1000, 300, key)
	var lines []string
	_, err := Run(context.Background(), ts.NewSource(bytes.NewReader(stream)), io.Discard, Options{Keys: keys.NewList([][]byte{cw, cw}),
		KeyLog: func(s string) { lines = append(lines, s) }})
	// One line per crypto period of each PID, when its key is decided: at its first PES start.
	want := []string{
		"PID 0x0100 crypto period 1: even, CW 1 of 2, from packet 1",
		"PID 0x0101 crypto period 1: even, CW 1 of 2, from packet 2",
		"PID 0x0100 crypto period 2: odd, CW 2 of 2, from packet 301",
		"PID 0x0101 crypto period 2: odd, CW 2 of 2, from packet 302",
		"PID 0x0100 crypto period 3: even, CW 1 of 2, from packet 601",
		"PID 0x0101 crypto period 3: even, CW 1 of 2, from packet 602",
		"PID 0x0100 crypto period 4: odd, CW 2 of 2, from packet 901",
		"PID 0x0101 crypto period 4: odd, CW 2 of 2, from packet 902",
	}
	if err != nil || len(lines) != len(want) {
		t.Fatalf("%q, %v", lines, err)
	}
	for i := range want {
		if lines[i] != want[i] {
			t.Fatalf("line %d: %q, want %q", i, lines[i], want[i])
		}
	}
}

// TestRunsInSequence runs two streams of the same PIDs under different control words and crypto
// periods one after the other, several times over, in one process: each run takes over what the
// run before it handed on (cipher engines, batchers, chunks, per-PID tables), and must give the
// bytes and counts a run of its own gives.
func TestRunsInSequence(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 23))
	type stream struct {
		cws             [][]byte
		scrambled, want []byte
		st              Stats
	}
	var streams []stream
	for i, cp := range []int{37, 101} {
		cws := [][]byte{{1, 2, 3, byte(i), 5, 6, 7, 8}, {9, 10, 11, byte(i), 13, 14, 15, 16}, {byte(i), 1, 1, 1, 2, 2, 2, 2}}
		s := stream{cws: cws}
		s.scrambled, s.want, s.st = testStream(t, 500+300*i, ts.Framing188, cws, cp, rng)
		streams = append(streams, s)
	}
	for round := range 4 {
		for i, s := range streams {
			var out bytes.Buffer
			st, err := Run(context.Background(), ts.NewSource(bytes.NewReader(s.scrambled)), &out, Options{Keys: keys.NewList(s.cws), Workers: 1 + round%2})
			if err != nil {
				t.Fatalf("round %d, stream %d: %v", round, i, err)
			}
			if !bytes.Equal(out.Bytes(), s.want) {
				t.Fatalf("round %d, stream %d: output differs from the clear stream", round, i)
			}
			if st.Descrambled != s.st.Descrambled || st.KeyChanges != s.st.KeyChanges || st.Even != s.st.Even || st.Odd != s.st.Odd {
				t.Fatalf("round %d, stream %d: stats\n got %+v\nwant %+v", round, i, st, s.st)
			}
		}
	}
}
