package pipeline

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"runtime"
	"testing"

	"github.com/tsdescramble/tsdescramble/internal/synth"
	"github.com/tsdescramble/tsdescramble/ts"

	"github.com/tsdescramble/tsdescramble/csa"
	"github.com/tsdescramble/tsdescramble/keys"
	"github.com/tsdescramble/tsdescramble/scrambling"
)

// BenchmarkRun measures the whole pipeline, framing to ordered output, in MB/s of TS input, for
// every engine width on one worker and on every CPU.
func BenchmarkRun(b *testing.B) {
	cw := []byte{0x11, 0x22, 0x33, 0x66, 0x44, 0x55, 0x66, 0xff}
	key, _ := csa.NewKey(cw)
	stream := synth.SyntheticStream(20000, 2000, key)
	for _, lanes := range csa.Available() {
		for _, workers := range []int{1, runtime.GOMAXPROCS(0)} {
			b.Run(fmt.Sprintf("lanes=%d/workers=%d", lanes, workers), func(b *testing.B) {
				b.SetBytes(int64(len(stream)))
				for b.Loop() {
					_, err := Run(context.Background(), ts.NewSource(bytes.NewReader(stream)), io.Discard, Options{
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
	stream := synth.SyntheticStream(1000, 100, key)
	if !bytes.Equal(stream, synth.SyntheticStream(1000, 100, key)) {
		t.Fatal("not deterministic")
	}
	var out bytes.Buffer
	st, err := Run(context.Background(), ts.NewSource(bytes.NewReader(stream)), &out, Options{Keys: keys.NewFixed(cw, cw)})
	if err != nil || st.Even != 500 || st.Odd != 500 || st.Descrambled != 1000 || st.KeyChanges != 9 {
		t.Fatalf("%+v %v", st, err)
	}
	// Descrambled, the payloads are the clear pattern: scrambling it again gives the input back.
	again := out.Bytes()
	for i := 0; i < len(again); i += ts.PacketSize {
		p := again[i : i+ts.PacketSize]
		if ts.TSC(p) != ts.Clear {
			t.Fatal("TSC not cleared")
		}
		key.Encrypt(ts.Payload(p))
		ts.SetTSC(p, ts.TSC(stream[i:]))
	}
	if !bytes.Equal(again, stream) {
		t.Fatal("round trip through the pipeline changed the stream")
	}
}

// BenchmarkModes measures the whole pipeline in MB/s of TS input for every scrambling system:
// descrambling, scrambling, and rescrambling a CSA2 stream into it, on every CPU.
func BenchmarkModes(b *testing.B) {
	cw8 := []byte{0x11, 0x22, 0x33, 0x66, 0x44, 0x55, 0x66, 0xff}
	cw16 := []byte("0123456789abcdef")
	csaKey, _ := csa.NewKey(cw8)
	csaStream := synth.SyntheticStream(20000, 2000, csaKey)
	// The clear stream: descramble the synthetic one once.
	var clear bytes.Buffer
	if _, err := Run(context.Background(), ts.NewSource(bytes.NewReader(csaStream)), &clear, Options{Keys: keys.NewFixed(cw8, cw8)}); err != nil {
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
		if _, err := Run(context.Background(), ts.NewSource(bytes.NewReader(clear.Bytes())), &scrambled, Options{Mode: Scramble, Out: out, PIDs: pids}); err != nil {
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
					if _, err := Run(context.Background(), ts.NewSource(bytes.NewReader(m.in)), io.Discard, m.opts); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkKeySearch measures finding a stream's control words behind many wrong ones in a CW
// list: the first PID's first crypto period searches the list from its start, nearest first,
// and the list is cyclic, so the right CWs sit in the middle of the wrong ones, wrong/2 of them
// on either side: about wrong trials. The other PID starts where the first was aligned.
func BenchmarkKeySearch(b *testing.B) {
	for _, wrong := range []int{1000, 100_000} {
		b.Run(fmt.Sprintf("wrong=%d", wrong), func(b *testing.B) {
			clear, scrambled := muxStream(b, 4000, []muxPID{
				{pid: 0x100, streamType: 0x1B, cws: muxCWs, period: 500},
				{pid: 0x101, streamType: 0x0F, cws: muxCWs, period: 500},
			})
			var list [][]byte
			for i := range wrong {
				if i == wrong/2 {
					list = append(list, muxCWs...)
				}
				list = append(list, binary.BigEndian.AppendUint64(nil, uint64(i+1)*0x9E3779B97F4A7C15))
			}
			var out bytes.Buffer
			for b.Loop() {
				out.Reset()
				if _, err := Run(context.Background(), ts.NewSource(bytes.NewReader(scrambled)), &out, Options{Keys: keys.NewList(list)}); err != nil {
					b.Fatal(err)
				}
			}
			if !bytes.Equal(out.Bytes(), clear) {
				b.Fatal("not descrambled")
			}
		})
	}
}
