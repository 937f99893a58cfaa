// Package batcher cuts a unit of work into the batches a scrambling engine takes: the payloads
// of one key, at most the engine's lane width of them per batch, and batches as full as the
// unit allows, because an engine processes a partial batch at the cost of a full one.
//
// The batcher is the one place that decides what goes together and when a batch is flushed:
//
//   - A batch is flushed when it holds width payloads, the engine's lane width (for the
//     bitsliced CSA2 engines) or the payloads of one CBC pass (for the block-cipher systems);
//     the width is what scrambling.System.Lanes returns.
//   - Every batch still open is flushed at the end of the unit of work. A live input's latency
//     deadline ends a unit early, and so flushes the same way.
//   - A key change does not flush: every key of the unit has a batch open at once, so the
//     payloads of a key that comes back later in the unit (even and odd parities interleaved,
//     or PIDs in different crypto periods) join its batch rather than start a new one. Each
//     payload is processed on its own, so the order of the batches does not change the output.
//   - A payload shorter than the system changes (scrambling.System.MinPayload) joins no batch:
//     it would take a lane and leave the batch less full for nothing.
package batcher

// Batch is up to the batcher's width of payloads that take the same key, in the order they
// were added.
type Batch struct {
	Key      int32
	Payloads [][]byte
}

// Batcher gathers the payloads of one unit of work by key and cuts them into batches. Its
// memory is reused from one unit of work to the next, so a batcher that has seen a unit of the
// same shape does not allocate. The zero value is ready for Start.
type Batcher struct {
	width      int
	minPayload int
	keys       []keyPayloads
	n          int // keys in use
	batches    []Batch
}

// keyPayloads is the payloads of one key in the unit.
type keyPayloads struct {
	key      int32
	payloads [][]byte
}

// Start begins a unit of work for an engine that takes at most width payloads per call and
// leaves payloads shorter than minPayload as they are. It drops what the previous unit added.
func (b *Batcher) Start(width, minPayload int) {
	if width < 1 {
		panic("batcher: width under 1")
	}
	for i := range b.n {
		clear(b.keys[i].payloads) // drop the references to the previous unit's buffer
		b.keys[i].payloads = b.keys[i].payloads[:0]
	}
	b.width, b.minPayload, b.n = width, minPayload, 0
}

// Add gives payload to the batch of key. A unit of work usually holds one or two keys (a
// crypto-period change, or one key per parity), so a linear search is the cheapest lookup.
func (b *Batcher) Add(key int32, payload []byte) {
	if len(payload) < b.minPayload {
		return
	}
	for i := range b.n {
		if b.keys[i].key == key {
			b.keys[i].payloads = append(b.keys[i].payloads, payload)
			return
		}
	}
	if b.n == len(b.keys) {
		b.keys = append(b.keys, keyPayloads{})
	}
	k := &b.keys[b.n]
	k.key, k.payloads = key, append(k.payloads[:0], payload)
	b.n++
}

// Flush ends the unit of work and returns its batches: for each key, in the order the keys
// first came, its payloads in the order they came, cut into batches of width; every batch but
// the last of each key is full. The batches are valid until the next Start.
func (b *Batcher) Flush() []Batch {
	if b.width < 1 {
		panic("batcher: Flush without Start")
	}
	b.batches = b.batches[:0]
	for _, k := range b.keys[:b.n] {
		for p := k.payloads; len(p) > 0; {
			n := min(len(p), b.width)
			b.batches = append(b.batches, Batch{Key: k.key, Payloads: p[:n:n]})
			p = p[n:]
		}
	}
	return b.batches
}
