package pipeline

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"runtime"
	"testing"

	"github.com/tsdescramble/tsdescramble/csa"
	"github.com/tsdescramble/tsdescramble/keys"
	"github.com/tsdescramble/tsdescramble/scrambling"
)

// BenchmarkRun measures the whole pipeline, framing to ordered output, in MB/s of TS input, for
// every engine width on one worker and on every CPU.
func BenchmarkRun(b *testing.B) {
	cw := []byte{0x11, 0x22, 0x33, 0x66, 0x44, 0x55, 0x66, 0xff}
	key, _ := csa.NewKey(cw)
	ts := SyntheticStream(20000, 2000, key)
	for _, lanes := range csa.Available() {
		for _, workers := range []int{1, runtime.GOMAXPROCS(0)} {
			b.Run(fmt.Sprintf("lanes=%d/workers=%d", lanes, workers), func(b *testing.B) {
				b.SetBytes(int64(len(ts)))
				for b.Loop() {
					_, err := Run(context.Background(), bytes.NewReader(ts), io.Discard, Options{
						Keys: keys.NewFixed(cw, cw), Workers: workers, Lanes: lanes,
					})
					if err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

func TestSyntheticStream(t *testing.T) {
	cw := []byte{1, 2, 3, 6, 4, 5, 6, 15}
	key, _ := csa.NewKey(cw)
	ts := SyntheticStream(1000, 100, key)
	if !bytes.Equal(ts, SyntheticStream(1000, 100, key)) {
		t.Fatal("not deterministic")
	}
	var out bytes.Buffer
	st, err := Run(context.Background(), bytes.NewReader(ts), &out, Options{Keys: keys.NewFixed(cw, cw)})
	if err != nil || st.Even != 500 || st.Odd != 500 || st.Descrambled != 1000 || st.KeyChanges != 9 {
		t.Fatalf("%+v %v", st, err)
	}
	// Descrambled, the payloads are the clear pattern: scrambling it again gives the input back.
	again := out.Bytes()
	for i := 0; i < len(again); i += PacketSize {
		p := again[i : i+PacketSize]
		if TSC(p) != Clear {
			t.Fatal("TSC not cleared")
		}
		key.Encrypt(Payload(p))
		SetTSC(p, TSC(ts[i:]))
	}
	if !bytes.Equal(again, ts) {
		t.Fatal("round trip through the pipeline changed the stream")
	}
}

// BenchmarkModes measures the whole pipeline in MB/s of TS input for every scrambling system:
// descrambling, scrambling, and rescrambling a CSA2 stream into it, on every CPU.
func BenchmarkModes(b *testing.B) {
	cw8 := []byte{0x11, 0x22, 0x33, 0x66, 0x44, 0x55, 0x66, 0xff}
	cw16 := []byte("0123456789abcdef")
	csaKey, _ := csa.NewKey(cw8)
	csaStream := SyntheticStream(20000, 2000, csaKey)
	// The clear stream: descramble the synthetic one once.
	var clear bytes.Buffer
	if _, err := Run(context.Background(), bytes.NewReader(csaStream), &clear, Options{Keys: keys.NewFixed(cw8, cw8)}); err != nil {
		b.Fatal(err)
	}
	pids := []uint16{0x100, 0x101} // the synthetic stream has no PSI to find them by
	for _, name := range scrambling.Names() {
		sys, _ := scrambling.Lookup(name)
		cw := cw16
		if name == "csa2" {
			cw = cw8
		}
		out := &Output{System: sys, CWs: [][]byte{cw}, PeriodPackets: 2000}
		var scrambled bytes.Buffer
		if _, err := Run(context.Background(), bytes.NewReader(clear.Bytes()), &scrambled, Options{Mode: Scramble, Out: out, PIDs: pids}); err != nil {
			b.Fatal(err)
		}
		for _, m := range []struct {
			name string
			in   []byte
			opts Options
		}{
			{"descramble", scrambled.Bytes(), Options{System: sys, Keys: keys.NewFixed(cw, cw)}},
			{"scramble", clear.Bytes(), Options{Mode: Scramble, Out: out, PIDs: pids}},
			{"rescramble-from-csa2", csaStream, Options{Mode: Rescramble, Keys: keys.NewFixed(cw8, cw8), Out: out}},
		} {
			b.Run(name+"/"+m.name, func(b *testing.B) {
				b.SetBytes(int64(len(m.in)))
				for b.Loop() {
					if _, err := Run(context.Background(), bytes.NewReader(m.in), io.Discard, m.opts); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
