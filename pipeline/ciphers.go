package pipeline

import (
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/tsdescramble/tsdescramble/batcher"
	"github.com/tsdescramble/tsdescramble/keys"
	"github.com/tsdescramble/tsdescramble/scrambling"
)

// ciphers holds a run's systems and expanded keys: the input system's, expanded when a crypto
// period first uses them (a key list may hold millions of control words, and an expanded CSA2
// key takes about 1 kB), and the output system's, one per control word of the output list.
type ciphers struct {
	mode       Mode
	in, out    scrambling.System
	sched      *keys.Schedule
	cw         func(int) []byte       // CW i of the input: the schedule's, or LiveKeys.Source's
	inKeys     map[int]scrambling.Key // expanded input keys by CW index; the reader's alone
	outKeys    []scrambling.Key
	outPeriod  int
	minIn      int // shortest payload the input system changes
	minOut     int
	inLanes    int // payloads per processor call of the input system
	outLanes   int
	checkStart bool // PES starts can be checked after descrambling
	// systems is the live key source when its CWs may each be for a system of their own (a
	// DVBAPI server's mode per key slot), else nil: every input key is the input system's.
	systems keys.SystemSource
}

// newCiphers checks the options and expands every key once, before the run starts.
func newCiphers(o *Options) (*ciphers, error) {
	cs := &ciphers{mode: o.Mode}
	system := func(s scrambling.System) (scrambling.System, error) {
		if s == nil {
			return scrambling.NewCSA2(o.Lanes)
		}
		if s.Lanes() < 1 {
			// The batcher cuts batches to this width: a system of another package could get it wrong.
			return nil, fmt.Errorf("pipeline: system %s takes %d payloads per call, want 1 or more", s.Name(), s.Lanes())
		}
		return s, nil
	}
	var err error
	if o.Mode == Passthrough {
		return cs, nil // no cipher: every packet goes out as it came
	}
	if o.Mode != Scramble {
		if o.Keys == nil && o.LiveKeys == nil {
			return nil, errors.New("pipeline: no key schedule to descramble with")
		}
		if o.LiveKeys != nil {
			if o.LiveKeys.Source == nil {
				return nil, errors.New("pipeline: LiveKeys without a key source")
			}
			o.Keys = keys.NewList(nil) // the key server's CWs are the source's
		}
		if cs.in, err = system(o.System); err != nil {
			return nil, err
		}
		cs.sched, cs.inKeys, cs.cw = o.Keys, make(map[int]scrambling.Key), o.Keys.CW
		if o.LiveKeys != nil {
			cs.cw = o.LiveKeys.Source.CW
			cs.systems, _ = o.LiveKeys.Source.(keys.SystemSource)
		}
		if err := checkSizes(cs.in, o.Keys); err != nil {
			return nil, err
		}
		cs.minIn, cs.inLanes = cs.in.MinPayload(), cs.in.Lanes()
		cs.checkStart = true
	}
	if o.Mode != Descramble {
		if o.Out == nil || len(o.Out.CWs) == 0 && o.Out.Feed == nil {
			return nil, errors.New("pipeline: no control word to scramble with")
		}
		if cs.out, err = system(o.Out.System); err != nil {
			return nil, err
		}
		for i, cw := range o.Out.CWs {
			k, err := cs.out.NewKey(cw)
			if err != nil {
				return nil, fmt.Errorf("output control word %d: %w", i+1, err)
			}
			cs.outKeys = append(cs.outKeys, k)
		}
		cs.outPeriod = o.Out.PeriodPackets
		cs.minOut, cs.outLanes = cs.out.MinPayload(), cs.out.Lanes()
	}
	return cs, nil
}

// maxCachedKeys bounds the expanded input keys kept for reuse: far more than a CW list's periods
// that one run's held units of work use at once.
const maxCachedKeys = 1 << 14

// inKey returns the expanded input key of CW k, expanding it on first use. Only the reading
// goroutine calls it; workers get the keys through their chunk.
func (cs *ciphers) inKey(k int) scrambling.Key {
	key, ok := cs.inKeys[k]
	if !ok {
		if len(cs.inKeys) >= maxCachedKeys {
			// A key server's CWs over weeks: expand again those still in use. The chunks
			// hold the keys they were given.
			clear(cs.inKeys)
		}
		var err error
		if key, err = cs.system(k).NewKey(cs.cw(k)); err != nil {
			panic("pipeline: " + err.Error()) // newCiphers (or liveDecide) checked every control word's size
		}
		cs.inKeys[k] = key
	}
	return key
}

// system returns the scrambling system of input CW k: the one the live key source names for
// it, else the input system.
func (cs *ciphers) system(k int) scrambling.System {
	if cs.systems != nil {
		if sys := cs.systems.System(k); sys != nil {
			return sys
		}
	}
	return cs.in
}

// worker is one cipher goroutine's state: a processor per system and a batcher.
type worker struct {
	cs      *ciphers
	in, out scrambling.Processor
	// others are the processors of the input keys of other systems than the input system's
	// (a key server's modes), made when first needed, one per system name: a processor takes
	// the keys of every system of its name.
	others []namedProcessor
	b      *batcher.Batcher
}

type namedProcessor struct {
	name string
	p    scrambling.Processor
}

func (cs *ciphers) newWorker() *worker {
	b, _ := spareBatchers.Get().(*batcher.Batcher)
	if b == nil {
		b = new(batcher.Batcher)
	}
	w := &worker{cs: cs, b: b}
	if cs.in != nil {
		w.in = cs.in.NewProcessor()
	}
	if cs.out != nil {
		w.out = cs.out.NewProcessor()
	}
	return w
}

// spareBatchers are the batchers of the workers of runs that ended (worker.done). A batcher's
// lists grow, a payload at a time, to a unit of work's packets of each key: a run over a small
// file that began with empty lists would spend a good part of its time growing them.
var spareBatchers sync.Pool

// done hands the worker's batcher and processors on to the workers of later runs, without the
// references to the payloads they last held, nor (scrambling.Release) the bytes and key streams
// of those payloads: a batch of small recordings runs many pipelines in one process.
func (w *worker) done() {
	w.b.Start(1, 0)
	spareBatchers.Put(w.b)
	w.b = nil
	if w.in != nil {
		scrambling.Release(w.in)
	}
	if w.out != nil {
		scrambling.Release(w.out)
	}
	for _, o := range w.others {
		scrambling.Release(o.p)
	}
	w.in, w.out, w.others = nil, nil, nil
}

// process runs the ciphers over the payloads of a chunk, one batch of the batcher per call.
func (w *worker) process(c *chunk) {
	if w.in != nil {
		if c.mixed {
			w.decryptMixed(c)
		} else {
			for _, b := range w.batches(c, false) {
				w.in.Decrypt(c.keys[b.Key], b.Payloads)
			}
		}
		checkUnitStarts(c)
	}
	if w.out != nil {
		keys := w.cs.outKeys
		if c.okeys != nil { // a PeriodFeed's keys (feed.go)
			keys = c.okeys
		}
		for _, b := range w.batches(c, true) {
			w.out.Encrypt(keys[b.Key], b.Payloads)
		}
	}
}

// decryptMixed descrambles a chunk whose input keys are of more than one system (a key server
// that sets a mode per key slot): the payloads of each system's keys are batched to its lane
// width and shortest payload, and go to a processor of that system. Each payload stands alone,
// so the order of the systems changes nothing in the output.
func (w *worker) decryptMixed(c *chunk) {
	for i, sys := range c.systems {
		if slices.Contains(c.systems[:i], sys) {
			continue // done with the first key of its system
		}
		w.b.Start(sys.Lanes(), sys.MinPayload())
		for ji := range c.jobs {
			if j := &c.jobs[ji]; j.key >= 0 && c.systems[j.key] == sys {
				w.b.Add(j.key, c.buf[j.off:j.end])
			}
		}
		p := w.processor(sys)
		for _, b := range w.b.Flush() {
			p.Decrypt(c.keys[b.Key], b.Payloads)
		}
	}
}

// processor returns the worker's processor for the keys of sys.
func (w *worker) processor(sys scrambling.System) scrambling.Processor {
	if sys == w.cs.in {
		return w.in
	}
	name := sys.Name()
	for _, o := range w.others {
		if o.name == name {
			return o.p
		}
	}
	p := sys.NewProcessor()
	w.others = append(w.others, namedProcessor{name, p})
	return p
}

// batches cuts the payloads of a chunk into the batches of the input system, or of the output
// system when out is set; jobs without a key of that system are left out.
func (w *worker) batches(c *chunk, out bool) []batcher.Batch {
	if out {
		w.b.Start(w.cs.outLanes, w.cs.minOut)
	} else {
		w.b.Start(w.cs.inLanes, w.cs.minIn)
	}
	for i := range c.jobs {
		j := &c.jobs[i]
		k := j.key
		if out {
			k = j.okey
		}
		if k >= 0 {
			w.b.Add(k, c.buf[j.off:j.end])
		}
	}
	return w.b.Flush()
}

// outputPeriod assigns the next scrambled packet of the output to its crypto period: it returns
// the output key index and parity, given how many packets were scrambled before it.
func (cs *ciphers) outputPeriod(n int64) (key int32, odd bool) {
	period := int64(0)
	if cs.outPeriod > 0 {
		period = n / int64(cs.outPeriod)
	}
	return int32(period % int64(len(cs.outKeys))), period%2 == 1
}

// checkSizes returns an error naming the first control word of s that the system cannot take.
func checkSizes(sys scrambling.System, s *keys.Schedule) error {
	sizes := sys.KeySizes()
	for i := range s.NumCWs() {
		if n := len(s.CW(i)); !slices.Contains(sizes, n) {
			_, err := sys.NewKey(s.CW(i))
			return fmt.Errorf("control word %d: %w", i+1, err)
		}
	}
	return nil
}

// rekey replaces the input key schedule: keys of the old one expanded so far are forgotten.
func (cs *ciphers) rekey(s *keys.Schedule) error {
	if err := checkSizes(cs.in, s); err != nil {
		return err
	}
	cs.sched, cs.inKeys, cs.cw = s, make(map[int]scrambling.Key), s.CW
	return nil
}
