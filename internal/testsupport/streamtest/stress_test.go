//go:build dvbcsa

package streamtest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/tsdescramble/tsdescramble/ts"

	"github.com/tsdescramble/tsdescramble/keys"
	"github.com/tsdescramble/tsdescramble/pipeline"
)

// stressCase is one stream of the stress tests: the libdvbcsa-scrambled stream in one framing
// and the clear stream it must give back.
type stressCase struct {
	name             string
	size             int // bytes per packet unit
	clear, scrambled []byte
}

// stressCases scrambles each test stream in 188, 192 and 204-byte framing.
func stressCases(t *testing.T) []stressCase {
	t.Helper()
	var cs []stressCase
	for _, name := range []string{"h264-aac", "mpeg2-two-programs"} {
		clear188 := clearStreams(t)[name]
		for i, fr := range []ts.Framing{ts.Framing188, ts.Framing192, ts.Framing204} {
			clear, scrambled := scramble(t, clear188, fr, testCWs, 600+50*i, uint64(40+len(cs)))
			cs = append(cs, stressCase{fmt.Sprintf("%s/%d", name, fr.Size), fr.Size, clear, scrambled})
		}
	}
	return cs
}

// tuning returns the -workers/-batch pairs to try: every worker count with the default batch,
// every batch size from the smallest to the largest accepted with 2 workers, and a few random
// pairs (from seed, so a failure can be repeated).
func tuning(seed uint64) [][2]int {
	var ps [][2]int
	for w := 1; w <= 8; w++ {
		ps = append(ps, [2]int{w, pipeline.DefaultBatch})
	}
	batches := []int{1, 2, 7, 188, 1024, pipeline.MaxBatch}
	for _, b := range batches {
		ps = append(ps, [2]int{2, b})
	}
	rng := rand.New(rand.NewPCG(seed, 3))
	for range 3 {
		ps = append(ps, [2]int{1 + rng.IntN(8), batches[rng.IntN(len(batches))]})
	}
	return ps
}

// Every -workers from 1 to 8 and every -batch from 1 to 65536 gives the clear stream byte for
// byte, in every framing, through pipes and files.
func TestStressWorkersAndBatches(t *testing.T) {
	cwFile := writeCWFile(t, testCWs)
	for ci, c := range stressCases(t) {
		for i, p := range tuning(uint64(ci)) {
			args := []string{"-cw-file", cwFile, "-workers", fmt.Sprint(p[0]), "-batch", fmt.Sprint(p[1])}
			var got []byte
			how := "pipes"
			if i%4 == 3 {
				how = "files"
				got = runFiles(t, c.scrambled, args...)
			} else {
				got = runPipe(t, c.scrambled, args...)
			}
			if !bytes.Equal(got, c.clear) {
				t.Fatalf("%s, -workers %d -batch %d, %s: output (%d bytes) differs from the clear stream (%d bytes)",
					c.name, p[0], p[1], how, len(got), len(c.clear))
			}
		}
	}
}

// trickleWriter writes data to w in random pieces of 1 byte to 64 KiB, three in four of them
// under 200 bytes, with short random pauses, then closes w. It returns the first write error.
func trickleWriter(w io.WriteCloser, data []byte, seed uint64) error {
	defer w.Close()
	rng := rand.New(rand.NewPCG(seed, 7))
	for len(data) > 0 {
		n := 1 + rng.IntN(64<<10)
		if rng.IntN(4) != 0 {
			n = 1 + rng.IntN(200)
		}
		n = min(n, len(data))
		if _, err := w.Write(data[:n]); err != nil {
			return err
		}
		data = data[n:]
		if rng.IntN(8) == 0 {
			time.Sleep(time.Duration(rng.IntN(2000)) * time.Microsecond)
		}
	}
	return nil
}

// Input delivered in random-sized pieces through an OS pipe, as a slow or bursty producer
// delivers it: the same bytes come out, whatever the tuning.
func TestStressRandomReads(t *testing.T) {
	cwFile := writeCWFile(t, testCWs)
	for ci, c := range stressCases(t) {
		for i, p := range [][2]int{{1, 1}, {2, 7}, {3, 1024}, {8, pipeline.MaxBatch}} {
			t.Run(fmt.Sprintf("%s/workers %d batch %d", c.name, p[0], p[1]), func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				defer cancel()
				cmd := exec.CommandContext(ctx, binary(t), "-q", "-cw-file", cwFile, "-workers", fmt.Sprint(p[0]), "-batch", fmt.Sprint(p[1]))
				r, w, err := os.Pipe()
				if err != nil {
					t.Fatal(err)
				}
				var out, stderr bytes.Buffer
				cmd.Stdin, cmd.Stdout, cmd.Stderr = r, &out, &stderr
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				r.Close()
				wrote := make(chan error, 1)
				go func() { wrote <- trickleWriter(w, c.scrambled, uint64(10*ci+i)) }()
				if err := cmd.Wait(); err != nil {
					t.Fatalf("%v\n%s", err, stderr.String())
				}
				if err := <-wrote; err != nil {
					t.Fatalf("writing the input: %v", err)
				}
				if !bytes.Equal(out.Bytes(), c.clear) {
					t.Fatalf("output (%d bytes) differs from the clear stream (%d bytes)", out.Len(), len(c.clear))
				}
			})
		}
	}
}

// shortReader returns at most a random 1 to 4096 bytes per Read, and sometimes none.
type shortReader struct {
	data []byte
	rng  *rand.Rand
}

func (s *shortReader) Read(p []byte) (int, error) {
	if len(s.data) == 0 {
		return 0, io.EOF
	}
	if s.rng.IntN(16) == 0 {
		return 0, nil
	}
	n := copy(p[:min(len(p), 1+s.rng.IntN(4096))], s.data)
	s.data = s.data[n:]
	return n, nil
}

// The library on reads that return a few bytes, or none, at a time: the same bytes come out,
// and every packet read is counted and written.
func TestStressShortReadsInProcess(t *testing.T) {
	for ci, c := range stressCases(t) {
		for _, p := range [][2]int{{1, 1}, {4, 3}, {2, pipeline.MaxBatch}} {
			var out bytes.Buffer
			in := &shortReader{data: c.scrambled, rng: rand.New(rand.NewPCG(uint64(ci), uint64(p[1])))}
			st, err := pipeline.Run(context.Background(), ts.NewSource(in), &out, pipeline.Options{Keys: keys.NewList(testCWs), Workers: p[0], Batch: p[1]})
			if err != nil {
				t.Fatalf("%s, workers %d batch %d: %v", c.name, p[0], p[1], err)
			}
			if !bytes.Equal(out.Bytes(), c.clear) {
				t.Fatalf("%s, workers %d batch %d: output (%d bytes) differs from the clear stream (%d bytes)", c.name, p[0], p[1], out.Len(), len(c.clear))
			}
			if n := int64(len(c.clear) / c.size); st.Packets != n || st.Skipped != 0 || st.Truncated != 0 || st.BytesOut != int64(len(c.clear)) || st.PESBad != 0 || st.PESGood == 0 {
				t.Fatalf("%s: %d packets of %d, skipped %d, truncated %d, %d bytes out, PES starts %d good %d bad",
					c.name, st.Packets, n, st.Skipped, st.Truncated, st.BytesOut, st.PESGood, st.PESBad)
			}
		}
	}
}
