package scrambling

import (
	"bytes"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"github.com/tsdescramble/tsdescramble/csa"
)

// payloadSize is the largest TS payload.
const payloadSize = 184

// randomPayloads returns n payloads cut from one allocation, most of them whole, with random
// content.
func randomPayloads(rng *rand.Rand, n int) (buf []byte, payloads [][]byte) {
	buf = make([]byte, n*payloadSize)
	for i := range buf {
		buf[i] = byte(rng.Uint32())
	}
	for i := range n {
		l := payloadSize
		if rng.IntN(4) == 0 {
			l = rng.IntN(l + 1)
		}
		payloads = append(payloads, buf[i*payloadSize:][:l])
	}
	return buf, payloads
}

func newTestCSA2(t *testing.T) *csa2System {
	t.Helper()
	s, err := NewCSA2(0)
	if err != nil {
		t.Fatal(err)
	}
	return s.(*csa2System)
}

// TestCSA2ReleaseDropsPayloads runs a processor over payloads, a batch cut short by a panic
// included (which leaves the engine's lanes filled), releases it, and checks that its engine,
// kept alive as the spares keep it, no longer keeps the payloads alive.
func TestCSA2ReleaseDropsPayloads(t *testing.T) {
	sys := newTestCSA2(t)
	p := sys.NewProcessor().(*csa2Processor)
	engine := p.e
	k, err := sys.NewKey([]byte{1, 2, 3, 4, 5, 6, 7, 8})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(21, 1))
	collected := make(chan struct{})
	func() {
		buf, payloads := randomPayloads(rng, sys.Lanes()+3)
		runtime.AddCleanup(&buf[0], func(ch chan struct{}) { close(ch) }, collected)
		p.Decrypt(k, payloads)
		defer func() { _ = recover() }()
		p.Decrypt(k, append(payloads[:3], make([]byte, payloadSize+1)))
	}()
	Release(p)
	if p.e != nil {
		t.Fatal("a released processor still holds its engine")
	}
	deadline := time.Now().Add(5 * time.Second)
	for done := false; !done; {
		runtime.GC()
		select {
		case <-collected:
			done = true
		case <-time.After(20 * time.Millisecond):
			if time.Now().After(deadline) {
				t.Fatal("the payloads a released engine ran over are not collected after 5 s of GC cycles: the engine still refers to them")
			}
		}
	}
	runtime.KeepAlive(engine)
}

// TestCSA2ReusedEngine checks that the engine of a released processor, as the next
// NewProcessor of its width takes it, gives byte for byte what a new engine gives with
// another key, and that NewProcessor does take it.
func TestCSA2ReusedEngine(t *testing.T) {
	sys := newTestCSA2(t)
	rng := rand.New(rand.NewPCG(21, 2))
	first, err := sys.NewKey([]byte{1, 2, 3, 4, 5, 6, 7, 8})
	if err != nil {
		t.Fatal(err)
	}
	second, err := sys.NewKey([]byte{8, 7, 6, 5, 4, 3, 2, 1})
	if err != nil {
		t.Fatal(err)
	}
	p := sys.NewProcessor().(*csa2Processor)
	engine := p.e
	_, payloads := randomPayloads(rng, 2*sys.Lanes()+5)
	p.Decrypt(first, payloads)
	_, payloads = randomPayloads(rng, sys.Lanes()/2+1)
	p.Encrypt(first, payloads)
	Release(p)

	// What NewProcessor makes of a spare engine; the pool may give it to any processor.
	reused := &csa2Processor{e: engine, spares: sys.spares}
	for _, decrypt := range []bool{true, false} {
		fresh, err := csa.NewEngine(sys.Lanes())
		if err != nil {
			t.Fatal(err)
		}
		_, got := randomPayloads(rng, 2*sys.Lanes()+5)
		want := make([][]byte, len(got))
		for i, b := range got {
			want[i] = bytes.Clone(b)
		}
		if decrypt {
			reused.Decrypt(second, got)
			fresh.Decrypt(second.(*csa2Key).k, want)
		} else {
			reused.Encrypt(second, got)
			fresh.Encrypt(second.(*csa2Key).k, want)
		}
		for i := range got {
			if !bytes.Equal(got[i], want[i]) {
				t.Fatalf("decrypt %v: payload %d of %d bytes: reused engine gives\n%x\na new one\n%x", decrypt, i, len(got[i]), got[i], want[i])
			}
		}
	}
	Release(reused)

	if raceEnabled {
		t.Log("not counting allocations under -race: its sync.Pool drops spares on purpose")
		return
	}
	// An engine is several allocations; a processor around a spare one is one.
	if n := testing.AllocsPerRun(20, func() { Release(sys.NewProcessor()) }); n > 1 {
		t.Errorf("NewProcessor after Release: %v allocations, want 1: the spare engine was not taken", n)
	}
}
