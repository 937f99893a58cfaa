package pipeline

import (
	"bytes"
	"context"
	"math/rand/v2"
	"runtime/debug"
	"sync/atomic"
	"testing"

	"github.com/tsdescramble/tsdescramble/keys"
	"github.com/tsdescramble/tsdescramble/scrambling"
	"github.com/tsdescramble/tsdescramble/ts"
)

// callShapes counts the processor calls of a run and the calls a processor should never get.
type callShapes struct {
	calls, payloads atomic.Int64
	tooMany, short  atomic.Int64 // calls over the width; payloads under MinPayload
}

// shapedSystem is a scrambling system of a chosen width that counts the shape of every call its
// processors get; the ciphering is the wrapped system's.
type shapedSystem struct {
	scrambling.System
	lanes int
	shape *callShapes
}

func (s shapedSystem) Lanes() int { return s.lanes }

func (s shapedSystem) NewProcessor() scrambling.Processor {
	return shapedProcessor{s.System.NewProcessor(), s}
}

type shapedProcessor struct {
	p scrambling.Processor
	s shapedSystem
}

func (p shapedProcessor) count(payloads [][]byte) {
	sh := p.s.shape
	sh.calls.Add(1)
	sh.payloads.Add(int64(len(payloads)))
	if len(payloads) > p.s.lanes || len(payloads) == 0 {
		sh.tooMany.Add(1)
	}
	for _, b := range payloads {
		if len(b) < p.s.MinPayload() {
			sh.short.Add(1)
		}
	}
}

func (p shapedProcessor) Decrypt(k scrambling.Key, payloads [][]byte) {
	p.count(payloads)
	p.p.Decrypt(k, payloads)
}

func (p shapedProcessor) Encrypt(k scrambling.Key, payloads [][]byte) {
	p.count(payloads)
	p.p.Encrypt(k, payloads)
}

// The workers hand each processor call one batch of the batcher: at most the system's Lanes
// payloads of one key, none too short to change, as full as the chunk allows. A run rescrambles
// through systems of odd widths, and descrambling its output gives the clear stream back.
func TestWorkersCallOneBatch(t *testing.T) {
	cws := [][]byte{
		{0x11, 0x22, 0x33, 0x66, 0x44, 0x55, 0x66, 0xff},
		{0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01, 0x00},
	}
	outCW := []byte{0xde, 0xad, 0xbe, 0xef, 0x01, 0x23, 0x45, 0x67}
	csa2, err := scrambling.NewCSA2(0)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(31, 32))
	scrambled, want, wantSt := testStream(t, 2000, framings[0], cws, 300, rng)
	for _, cfg := range []struct{ workers, batch, inLanes, outLanes int }{{1, 1024, 7, 5}, {2, 100, 64, 3}, {3, 1, 2, 1}} {
		var in, out callShapes
		var rescrambled bytes.Buffer
		_, err := Run(context.Background(), ts.NewSource(bytes.NewReader(scrambled)), &rescrambled, Options{
			Mode: Rescramble, Keys: keys.NewList(cws), Workers: cfg.workers, Batch: cfg.batch,
			System: shapedSystem{csa2, cfg.inLanes, &in},
			Out:    &Output{System: shapedSystem{csa2, cfg.outLanes, &out}, CWs: [][]byte{outCW}},
		})
		if err != nil {
			t.Fatalf("%+v: %v", cfg, err)
		}
		for _, c := range []struct {
			name  string
			sh    *callShapes
			lanes int
		}{{"input", &in, cfg.inLanes}, {"output", &out, cfg.outLanes}} {
			sh := c.sh
			if sh.tooMany.Load() != 0 || sh.short.Load() != 0 {
				t.Errorf("%+v: %s: %d calls empty or over %d payloads, %d payloads too short", cfg, c.name, sh.tooMany.Load(), c.lanes, sh.short.Load())
			}
			if sh.payloads.Load() != wantSt.Descrambled {
				t.Errorf("%+v: %s: %d payloads in calls, want %d", cfg, c.name, sh.payloads.Load(), wantSt.Descrambled)
			}
			// Each key of a chunk leaves at most one batch that is not full; a chunk holds one
			// key, plus one for each crypto period that starts inside it (2000/300 at most).
			chunks := int64((2000 + cfg.batch - 1) / cfg.batch)
			if full := sh.payloads.Load() / int64(c.lanes); sh.calls.Load() > full+chunks+7 {
				t.Errorf("%+v: %s: %d calls for %d payloads of width %d", cfg, c.name, sh.calls.Load(), sh.payloads.Load(), c.lanes)
			}
		}
		var clear bytes.Buffer
		if _, err := Run(context.Background(), ts.NewSource(bytes.NewReader(rescrambled.Bytes())), &clear, Options{Keys: keys.NewList([][]byte{outCW})}); err != nil {
			t.Fatalf("%+v: descrambling the rescrambled stream: %v", cfg, err)
		}
		if !bytes.Equal(clear.Bytes(), want) {
			t.Errorf("%+v: the rescrambled stream does not descramble to the clear stream", cfg)
		}
	}
}

// The chunks a run leaves go to the next run with their buffers only: no key of the run, and
// none of its numbering (oseq would otherwise pass a run's output keys to the next).
//
// sync.Pool may drop what it is given (at a collection; under the race detector, one Put in
// four at random), and newChunk then makes a clean chunk whatever recycleChunks did. So what
// recycleChunks does to the run's chunk is checked on the chunk itself, and the chunk newChunk
// hands out is checked only once it is seen to hold the recycled buffer, with collections off;
// a pool that drops the chunk at every try fails the test rather than passing it.
func TestRecycledChunksKeepNothing(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	csa2, err := scrambling.NewCSA2(0)
	if err != nil {
		t.Fatal(err)
	}
	key, err := csa2.NewKey([]byte{0x11, 0x22, 0x33, 0x66, 0x44, 0x55, 0x66, 0xff})
	if err != nil {
		t.Fatal(err)
	}
	for try := range 20 {
		for spareChunks.Get() != nil { // the chunks earlier runs left
		}
		c := newChunk(16)
		c.seq, c.oseq, c.operiod, c.n, c.ready = 5, 6, 3, 188, 1
		// Keys past the slices' lengths too: a later run's append would find them there.
		c.keys = append(make([]scrambling.Key, 0, 4), key, key, key, key)[:2]
		c.okeys = append(make([]scrambling.Key, 0, 2), key, key)[:1]
		c.cws = append(c.cws, 3, 4)
		c.jobs = append(c.jobs, job{pkt: 1})
		c.runs = append(c.runs, unitRun{0, 188})
		free := make(chan *chunk, 1)
		free <- c
		recycleChunks(free)
		if len(free) != 0 {
			t.Fatal("recycleChunks left a chunk in free")
		}
		for i, k := range c.keys[:cap(c.keys)] {
			if k != nil {
				t.Fatalf("input key %d of the run is still held by its chunk", i)
			}
		}
		for i, k := range c.okeys[:cap(c.okeys)] {
			if k != nil {
				t.Fatalf("output key %d of the run is still held by its chunk", i)
			}
		}
		r := newChunk(8)
		if &r.buf[:1][0] != &c.buf[0] {
			t.Logf("try %d: the pool dropped the chunk", try)
			continue
		}
		if r == c {
			t.Fatal("a recycled chunk is the run's own: its keys and numbering go with it")
		}
		if len(r.buf) != 8*204 || len(r.jobs) != 0 || len(r.runs) != 0 || len(r.cws) != 0 || r.keys != nil || r.okeys != nil || r.seq != 0 || r.oseq != 0 || r.operiod != 0 || r.n != 0 || r.ready != 0 || !r.due.IsZero() {
			t.Errorf("a chunk from the pool carries a run's state: %+v", *r)
		}
		if cap(r.jobs) < 16 || &r.jobs[:1][0] != &c.jobs[:1][0] {
			t.Errorf("the recycled chunk's jobs are not the run's: cap %d", cap(r.jobs))
		}
		return
	}
	t.Fatal("newChunk never handed out the recycled buffer, with collections off")
}
