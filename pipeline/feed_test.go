package pipeline

import (
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/tsdescramble/tsdescramble/csa"
	"github.com/tsdescramble/tsdescramble/ts"
)

// feedReader calls Start for the periods that begin in the packets it is about to hand out,
// as a stage before the run does.
type feedReader struct {
	data   []byte
	size   int
	starts map[int64][]byte
	feed   *PeriodFeed
	packet int64
	cut    int
}

func (r *feedReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	n := min(len(p)/r.size, r.cut, len(r.data)/r.size) * r.size
	if n == 0 {
		n = r.size
	}
	for i := 0; i < n/r.size; i++ {
		r.packet++
		if cw, ok := r.starts[r.packet]; ok {
			r.feed.Start(r.packet, cw)
		}
	}
	copy(p, r.data[:n])
	r.data = r.data[n:]
	return n, nil
}

// TestPeriodFeed scrambles with periods given by a PeriodFeed and checks every packet against
// the cipher run by hand: each period's CW from its first packet on, parity even first, and the
// same bytes whatever the batch and however the reads are cut.
func TestPeriodFeed(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const n = 400
	for _, fr := range framings {
		in := makeUnits(n, fr, rng)
		for i := range n {
			p := in[i*fr.Size+fr.Prefix:]
			p[1], p[2] = 0x01, 0x00
		}
		starts := map[int64][]byte{1: {1, 2, 3, 6, 5, 6, 7, 18}, 50: {9, 8, 7, 24, 6, 5, 4, 15}, 51: {0x11, 0x22, 0x33, 0x66, 0x44, 0x55, 0x66, 0xFF}, 333: {1, 1, 1, 3, 2, 2, 2, 6}}
		want := append([]byte(nil), in...)
		var key *csa.Key
		period := 0
		for i := range n {
			if cw, ok := starts[int64(i+1)]; ok {
				key, _ = csa.NewKey(cw)
				period++
			}
			p := want[i*fr.Size+fr.Prefix : i*fr.Size+fr.Prefix+ts.PacketSize]
			off, _ := ts.PayloadOffset(p)
			key.Encrypt(p[off:])
			ts.SetTSC(p, parity(period%2 == 0))
		}
		for _, batch := range []int{1, 7, 1024} {
			for _, cut := range []int{1, 13, 1000} {
				feed := new(PeriodFeed)
				r := &feedReader{data: in, size: fr.Size, starts: starts, feed: feed, cut: cut}
				var out bytes.Buffer
				_, err := Run(context.Background(), ts.NewSource(r), &out, Options{Mode: Scramble, PIDs: []uint16{0x100}, Batch: batch, Workers: 2,
					Out: &Output{Feed: feed}})
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(out.Bytes(), want) {
					t.Fatalf("framing %d batch %d cut %d: output differs", fr.Size, batch, cut)
				}
			}
		}
	}
}

// TestPeriodFeedRefusedCW: a CW the system refuses leaves its period's packets clear and
// unmarked, and Err says so; the periods around it are scrambled as usual.
func TestPeriodFeedRefusedCW(t *testing.T) {
	in := makeUnits(30, ts.Framing188, rand.New(rand.NewPCG(3, 4)))
	for i := range 30 {
		in[i*188+1], in[i*188+2] = 0x01, 0x00
	}
	feed := new(PeriodFeed)
	feed.Start(1, []byte{1, 2, 3, 6, 5, 6, 7, 18})
	feed.Start(11, []byte{1, 2, 3}) // too short for csa2
	feed.Start(21, []byte{9, 8, 7, 24, 6, 5, 4, 15})
	var out bytes.Buffer
	if _, err := Run(context.Background(), ts.NewSource(bytes.NewReader(in)), &out, Options{Mode: Scramble, PIDs: []uint16{0x100}, Out: &Output{Feed: feed}}); err != nil {
		t.Fatal(err)
	}
	if feed.Err() == nil {
		t.Fatal("no error for the refused CW")
	}
	for i := range 30 {
		got, orig := out.Bytes()[i*188:(i+1)*188], in[i*188:(i+1)*188]
		clear := bytes.Equal(got, orig)
		if want := i >= 10 && i < 20; clear != want {
			t.Fatalf("packet %d: left clear %v", i+1, clear)
		}
	}
}

// TestPeriodFeedNoCW: a period started without a CW passes its packets clear, with no error,
// and counts for the parity: a first period of no packet makes the next one odd.
func TestPeriodFeedNoCW(t *testing.T) {
	in := makeUnits(20, ts.Framing188, rand.New(rand.NewPCG(5, 6)))
	for i := range 20 {
		in[i*188+1], in[i*188+2] = 0x01, 0x00
	}
	feed := new(PeriodFeed)
	feed.Start(1, nil)
	feed.Start(1, []byte{1, 2, 3, 6, 5, 6, 7, 18})
	feed.Start(11, nil)
	var out bytes.Buffer
	if _, err := Run(context.Background(), ts.NewSource(bytes.NewReader(in)), &out, Options{Mode: Scramble, PIDs: []uint16{0x100}, Out: &Output{Feed: feed}}); err != nil {
		t.Fatal(err)
	}
	if err := feed.Err(); err != nil {
		t.Fatalf("a period without CW is an error: %v", err)
	}
	for i := range 20 {
		got, orig := out.Bytes()[i*188:(i+1)*188], in[i*188:(i+1)*188]
		if i >= 10 {
			if !bytes.Equal(got, orig) {
				t.Fatalf("packet %d of the period without CW changed", i+1)
			}
		} else if ts.TSC(got) != ts.Odd {
			t.Fatalf("packet %d: TSC %v, want odd after a first period of no packet", i+1, ts.TSC(got))
		}
	}
}
