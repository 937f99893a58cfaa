package pipeline

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/tsdescramble/tsdescramble/keys/period"

	"github.com/tsdescramble/tsdescramble/keys"
	"github.com/tsdescramble/tsdescramble/ts"
)

// Whatever the workers and batch asked for, the chunks a run may hold (in flight, and held back
// by an undecided crypto period) fit in MaxMemory, and the defaults of small machines are
// left as they are.
func TestLimits(t *testing.T) {
	for _, workers := range []int{1, 2, 3, 8, 42, 43, 64, 1024} {
		for _, batch := range []int{1, 7, 256, 1024, 4096, 16384, 32768, 65536} {
			w, b, n := Limits(workers, batch)
			mem := (n+period.HoldPackets/b+2)*(b*packetMemory+chunkMemory) + w*workerMemory
			if mem > MaxMemory || w < 1 || w > workers || w > n || b < 1 || b > batch || n < minInFlight {
				t.Errorf("Limits(%d, %d) = %d workers, batch %d, %d in flight: %d MiB", workers, batch, w, b, n, mem>>20)
			}
			if batch <= 4096 && b != batch {
				t.Errorf("Limits(%d, %d): batch cut to %d", workers, batch, b)
			}
			if batch == DefaultBatch && workers <= 42 && (w != workers || n != workers*chunksPerWorker) {
				t.Errorf("Limits(%d, %d) = %d workers, %d in flight; want %d and %d", workers, batch, w, n, workers, workers*chunksPerWorker)
			}
		}
	}
}

// shortWriter takes limit bytes, then writes part of the next call and fails, as a full disk.
type shortWriter struct {
	bytes.Buffer
	limit int
}

var errDiskFull = errors.New("no space left on device")

func (w *shortWriter) Write(p []byte) (int, error) {
	if room := w.limit - w.Len(); len(p) > room {
		w.Buffer.Write(p[:room])
		return room, errDiskFull
	}
	return w.Buffer.Write(p)
}

// PacketsOut counts the packets written, in their framings, when the framing changes; after a
// write cut short inside a packet, BytesOut and PacketsOut count the whole units before it.
func TestPacketsOut(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	var in []byte
	var ends []int // where each unit ends
	for _, fr := range []ts.Framing{ts.Framing188, ts.Framing204, ts.Framing188, ts.Framing192} {
		units := makeUnits(300, fr, rng)
		for i := range 300 {
			// makeUnits leaves 0x47 in prefixes and trailers: keep them out of this test's way.
			for j := range fr.Size {
				if j != fr.Prefix && units[i*fr.Size+j] == ts.SyncByte {
					units[i*fr.Size+j] = 0
				}
			}
			ends = append(ends, len(in)+(i+1)*fr.Size)
		}
		in = append(in, units...)
	}
	opts := Options{Keys: keys.NewFixed(make([]byte, 8), make([]byte, 8)), Batch: 100, Workers: 2}
	var out bytes.Buffer
	st, err := Run(context.Background(), ts.NewSource(bytes.NewReader(in)), &out, opts)
	if err != nil || !bytes.Equal(out.Bytes(), in) || st.PacketsOut != 1200 || st.Packets != 1200 || st.BytesOut != int64(len(in)) {
		t.Fatalf("err %v, %d bytes out (equal %v), %d packets in, %d out, %d bytes out",
			err, out.Len(), bytes.Equal(out.Bytes(), in), st.Packets, st.PacketsOut, st.BytesOut)
	}
	for _, limit := range []int{0, 1, 187, 188, 300*188 + 5, 300*188 + 204, 300*188 + 100*204 + 1, 600*188 + 300*204 + 191, len(in) - 1} {
		w := &shortWriter{limit: limit}
		st, err := Run(context.Background(), ts.NewSource(bytes.NewReader(in)), w, opts)
		whole := 0
		for whole < len(ends) && ends[whole] <= limit {
			whole++
		}
		wantBytes := 0
		if whole > 0 {
			wantBytes = ends[whole-1]
		}
		if !errors.Is(err, errDiskFull) || st.PacketsOut != int64(whole) || st.BytesOut != int64(wantBytes) {
			t.Errorf("a write cut after %d bytes: err %v, %d packets and %d bytes counted out; want %d whole packets, %d bytes",
				limit, err, st.PacketsOut, st.BytesOut, whole, wantBytes)
		}
	}
}
