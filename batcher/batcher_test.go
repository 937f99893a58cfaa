package batcher

import (
	"fmt"
	"testing"
)

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

func TestSplit(t *testing.T) {
	for _, c := range []struct{ n, width, be, want int }{
		{0, 64, 8, 0}, {7, 64, 8, 0}, {8, 64, 8, 8}, {64, 64, 8, 64}, {70, 64, 8, 64}, {72, 64, 8, 72},
		{300, 256, 45, 256}, {300, 256, 44, 300}, {5, 32, 1, 5},
	} {
		if got := Split(c.n, c.width, c.be); got != c.want {
			t.Errorf("Split(%d, %d, %d) = %d, want %d", c.n, c.width, c.be, got, c.want)
		}
	}
}

func ExampleSplit() {
	// 300 payloads of one key, a 128-lane engine, and a break-even of 16 payloads: two full
	// batches go to the engine, and the 44 left over fill enough of a third to be worth it.
	fmt.Println(Split(300, 128, 16))
	// With 130 payloads, the 2 left over are cheaper on the scalar cipher.
	fmt.Println(Split(130, 128, 16))
	// Output:
	// 300
	// 128
}
