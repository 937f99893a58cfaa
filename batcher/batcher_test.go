package batcher

import "testing"

func TestBatcherGroupsByKey(t *testing.T) {
	var b Batcher
	buf := make([]byte, 100)
	for round := range 3 {
		keys := []int32{2, 2, 5, 2, 7, 5}
		for i, k := range keys {
			b.Add(k, buf[i:i+1])
		}
		g := b.Groups()
		if len(g) != 3 || g[0].Key != 2 || g[1].Key != 5 || g[2].Key != 7 {
			t.Fatalf("round %d: groups %+v", round, g)
		}
		if len(g[0].Payloads) != 3 || &g[0].Payloads[2][0] != &buf[3] || len(g[1].Payloads) != 2 || &g[1].Payloads[1][0] != &buf[5] {
			t.Fatalf("round %d: payloads out of order", round)
		}
		b.Reset()
		if len(b.Groups()) != 0 {
			t.Fatal("Reset left groups")
		}
	}
	allocs := testing.AllocsPerRun(100, func() {
		for i := range 50 {
			b.Add(int32(i%2), buf[i:i+1])
		}
		b.Reset()
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per unit once warm", allocs)
	}
}
