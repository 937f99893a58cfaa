package synth

import "github.com/tsdescramble/tsdescramble/csa"

// Scrambler scrambles the payloads of a stream still being built, many at a time, once it is
// whole: Add notes where a payload lies (offsets, since the stream's backing array may move as
// it grows) and under which key, and EncryptIn scrambles them all, key by key, with one
// csa.Engine. That gives the bytes Key.Encrypt gives one payload at a time (package csa checks
// every kernel lane by lane against it) at a small part of the cost.
type Scrambler struct {
	keys  []*csa.Key // in the order first added
	spans map[*csa.Key][][2]int
}

// Add notes that stream[from:to] is a payload to scramble with key.
func (s *Scrambler) Add(key *csa.Key, from, to int) {
	if s.spans == nil {
		s.spans = map[*csa.Key][][2]int{}
	}
	if _, ok := s.spans[key]; !ok {
		s.keys = append(s.keys, key)
	}
	s.spans[key] = append(s.spans[key], [2]int{from, to})
}

// EncryptIn scrambles, in place, every payload added, in stream; it may be called once.
func (s *Scrambler) EncryptIn(stream []byte) {
	if len(s.keys) == 0 {
		return
	}
	engine, err := csa.NewEngine(0)
	if err != nil {
		panic(err) // 0 always has a kernel: the fastest on this CPU, or the portable one
	}
	for _, key := range s.keys {
		spans := s.spans[key]
		payloads := make([][]byte, len(spans))
		for i, sp := range spans {
			payloads[i] = stream[sp[0]:sp[1]]
		}
		engine.Encrypt(key, payloads)
	}
}
