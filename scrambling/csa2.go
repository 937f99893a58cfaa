package scrambling

import (
	"fmt"
	"sync"

	"github.com/tsdescramble/tsdescramble/csa"
)

// csa2System is DVB-CSA2 with a fixed engine width.
type csa2System struct {
	lanes  int
	spares *sync.Pool // engines of released processors of this width
}

// NewCSA2 returns the csa2 system with engines of the given width, one of csa.Available(),
// or 0 for the fastest on this CPU. Its keys work with the processors of every csa2 system,
// whatever their widths. Control words are used as given, all 64 bits: entropy reduction
// (recomputing checksum bytes 3 and 7), when wanted, is done before NewKey.
func NewCSA2(lanes int) (System, error) {
	if w, ok := csa2Widths.Load(lanes); ok {
		return newCSA2System(w.(int)), nil
	}
	// An engine tells the width 0 resolves to, and validates any other value with the csa
	// package's own rules.
	e, err := csa.NewEngine(lanes)
	if err != nil {
		return nil, fmt.Errorf("scrambling: csa2: %w", err)
	}
	csa2Widths.Store(lanes, e.Lanes())
	s := newCSA2System(e.Lanes())
	s.spares.Put(e) // new: nothing to wipe
	return s, nil
}

func newCSA2System(lanes int) *csa2System {
	spares, ok := csa2Spares.Load(lanes)
	if !ok {
		spares, _ = csa2Spares.LoadOrStore(lanes, new(sync.Pool))
	}
	return &csa2System{lanes: lanes, spares: spares.(*sync.Pool)}
}

// csa2Widths maps each lane count NewCSA2 accepted to the width it resolved it to, so that
// an engine (tens of kilobytes of lanes) is made to find out once per process, not once per
// system: a batch of many small recordings makes a system for each.
var csa2Widths sync.Map

// csa2Spares maps each engine width to a pool of the engines of released processors
// ([Release]), shared by every system of that width: a batch of many small recordings makes
// a system and processors for each, and would otherwise allocate an engine, tens of
// kilobytes that a run over a small file writes only once, per processor.
var csa2Spares sync.Map

func (s *csa2System) Name() string    { return "csa2" }
func (s *csa2System) KeySizes() []int { return []int{csa.CWSize} }
func (s *csa2System) Lanes() int      { return s.lanes }

// MinPayload is one CSA2 block: shorter payloads are left clear (ETSI ETR 289).
func (s *csa2System) MinPayload() int { return 8 }

func (s *csa2System) NewKey(cw []byte) (Key, error) {
	if err := checkKeySize(s.Name(), s.KeySizes(), len(cw)); err != nil {
		return nil, err
	}
	k, err := csa.NewKey(cw)
	if err != nil {
		return nil, fmt.Errorf("scrambling: csa2: %w", err)
	}
	return &csa2Key{sys: s, k: k}, nil
}

// NewProcessor takes the engine of a released processor of this width where there is one.
func (s *csa2System) NewProcessor() Processor {
	if e, ok := s.spares.Get().(*csa.Engine); ok {
		return &csa2Processor{e: e, spares: s.spares}
	}
	e, err := csa.NewEngine(s.lanes)
	if err != nil {
		// NewCSA2 made an engine of this width already.
		panic("scrambling: csa2: " + err.Error())
	}
	return &csa2Processor{e: e, spares: s.spares}
}

// csa2Key is an expanded CSA2 control word.
type csa2Key struct {
	sys *csa2System
	k   *csa.Key
}

func (k *csa2Key) System() System { return k.sys }

// csa2Processor runs one bitsliced engine over every payload, partial batches included.
type csa2Processor struct {
	e      *csa.Engine
	spares *sync.Pool
}

// Release wipes the engine (csa.Engine.Reset: the stream state made from the last key, the
// payload bytes and references it holds) and hands it to the system's spares. The processor
// holds no engine after: using it again is a programming error and panics.
func (p *csa2Processor) Release() {
	if p.e == nil {
		return
	}
	p.e.Reset()
	p.spares.Put(p.e)
	p.e = nil
}

func (p *csa2Processor) key(k Key) *csa.Key {
	ck, ok := k.(*csa2Key)
	if !ok {
		foreignKey("csa2", k)
	}
	return ck.k
}

// Decrypt hands every payload to the engine, a partial last batch too: even
// a batch of one payload is no dearer on the engine than on the scalar
// cipher (csa's BenchmarkScalar and BenchmarkEngine compare them), so there
// is no batch size below which the scalar cipher would pay.
func (p *csa2Processor) Decrypt(k Key, payloads [][]byte) { p.e.Decrypt(p.key(k), payloads) }

// Encrypt hands every payload to the engine, as Decrypt does.
func (p *csa2Processor) Encrypt(k Key, payloads [][]byte) { p.e.Encrypt(p.key(k), payloads) }
