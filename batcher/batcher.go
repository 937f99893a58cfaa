// Package batcher gathers the scrambled payloads of a unit of work into batches for a bitsliced
// engine: one key per batch, and batches as full as the stream allows, because an engine
// processes a partial batch at the cost of a full one.
package batcher

// Group is the payloads of one key, in the order they were added.
type Group struct {
	Key      int32
	Payloads [][]byte
}

// Batcher groups payloads by key. Its memory is reused from one unit of work to the next, so
// adding a payload does not allocate once the batcher has seen a unit of the same shape.
type Batcher struct {
	groups []Group
	n      int // groups in use
}

// Add appends payload to the group of key. A unit of work usually holds one or two keys (a
// crypto-period change, or one key per parity), so a linear search is the cheapest lookup.
func (b *Batcher) Add(key int32, payload []byte) {
	for i := range b.n {
		if b.groups[i].Key == key {
			b.groups[i].Payloads = append(b.groups[i].Payloads, payload)
			return
		}
	}
	if b.n == len(b.groups) {
		b.groups = append(b.groups, Group{})
	}
	g := &b.groups[b.n]
	g.Key, g.Payloads = key, append(g.Payloads[:0], payload)
	b.n++
}

// Groups returns the groups gathered since the last Reset, in the order their keys first came.
func (b *Batcher) Groups() []Group { return b.groups[:b.n] }

// Reset empties the batcher for the next unit of work, keeping its memory.
func (b *Batcher) Reset() {
	for i := range b.n {
		clear(b.groups[i].Payloads) // drop references to the unit's buffer
		b.groups[i].Payloads = b.groups[i].Payloads[:0]
	}
	b.n = 0
}
