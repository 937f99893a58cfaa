package batcher

import "testing"

func TestBatcherGroupsByKey(t *testing.T) {
	var b Batcher
	buf := make([]byte, 100)
	for round := range 3 {
		b.Start(1000, 0)
		keys := []int32{2, 2, 5, 2, 7, 5}
		for i, k := range keys {
			b.Add(k, buf[i:i+1])
		}
		g := b.Flush()
		if len(g) != 3 || g[0].Key != 2 || g[1].Key != 5 || g[2].Key != 7 {
			t.Fatalf("round %d: batches %+v", round, g)
		}
		if len(g[0].Payloads) != 3 || &g[0].Payloads[2][0] != &buf[3] || len(g[1].Payloads) != 2 || &g[1].Payloads[1][0] != &buf[5] {
			t.Fatalf("round %d: payloads out of order", round)
		}
		b.Start(1000, 0)
		if len(b.Flush()) != 0 {
			t.Fatal("Start left batches")
		}
	}
	allocs := testing.AllocsPerRun(100, func() {
		b.Start(16, 0)
		for i := range 50 {
			b.Add(int32(i%2), buf[i:i+1])
		}
		b.Flush()
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per unit once warm", allocs)
	}
}

// Every payload of the unit comes out once, in a batch of its key, in the order it came;
// batches hold at most width payloads and only the last of a key may hold fewer; payloads
// shorter than minPayload are left out.
func TestBatcherCutsToWidth(t *testing.T) {
	var b Batcher
	buf := make([]byte, 4096)
	for _, width := range []int{1, 2, 3, 7, 64} {
		for _, minPayload := range []int{0, 1, 8} {
			b.Start(width, minPayload)
			type added struct {
				key int32
				p   []byte
			}
			var want []added
			for i := range 500 {
				key := int32(i*7/100%3 + i%2) // runs of keys and interleaved parities
				p := buf[i*8 : i*8+i%11]
				b.Add(key, p)
				if len(p) >= minPayload {
					want = append(want, added{key, p})
				}
			}
			next := make(map[int32]int) // index in want of the next payload of each key
			for _, a := range want {
				if _, ok := next[a.key]; !ok {
					next[a.key] = 0
				}
			}
			batches := b.Flush()
			total := 0
			for i, bt := range batches {
				if len(bt.Payloads) == 0 || len(bt.Payloads) > width {
					t.Fatalf("width %d: batch %d has %d payloads", width, i, len(bt.Payloads))
				}
				if len(bt.Payloads) < width && i+1 < len(batches) && batches[i+1].Key == bt.Key {
					t.Fatalf("width %d: batch %d of key %d is not full and not its key's last", width, i, bt.Key)
				}
				for _, p := range bt.Payloads {
					j := next[bt.Key]
					for j < len(want) && want[j].key != bt.Key {
						j++
					}
					if j == len(want) || len(p) != len(want[j].p) || (len(p) > 0 && &p[0] != &want[j].p[0]) {
						t.Fatalf("width %d, min %d: key %d: payload out of order or not added", width, minPayload, bt.Key)
					}
					next[bt.Key] = j + 1
					total++
				}
			}
			if total != len(want) {
				t.Fatalf("width %d, min %d: %d payloads in batches, want %d", width, minPayload, total, len(want))
			}
		}
	}
}

func TestBatcherMisuse(t *testing.T) {
	panics := func(what string, f func()) {
		t.Helper()
		defer func() {
			if recover() == nil {
				t.Errorf("no panic for %s", what)
			}
		}()
		f()
	}
	panics("width 0", func() {
		var b Batcher
		b.Start(0, 0)
	})
	// A zero width would never finish cutting.
	panics("Flush without Start", func() {
		var b Batcher
		b.Add(1, make([]byte, 8))
		b.Flush()
	})
}
