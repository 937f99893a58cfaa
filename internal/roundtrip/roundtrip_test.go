package roundtrip

import (
	"testing"
	"time"
)

func TestTimes(t *testing.T) {
	var rt Times
	if m, x := rt.Summary(); m != 0 || x != 0 {
		t.Fatalf("empty: %v %v", m, x)
	}
	for _, d := range []time.Duration{5, 1, 9, 3, 7} {
		rt.Add(d)
	}
	if m, x := rt.Summary(); m != 5 || x != 9 {
		t.Fatalf("median %v max %v, want 5 9", m, x)
	}
	for i := range 3 * keep {
		rt.Add(time.Duration(i))
	}
	if n := len(rt.d); n > keep {
		t.Fatalf("%d times kept, want at most %d", n, keep)
	}
	if _, x := rt.Summary(); x != 3*keep-1 {
		t.Fatalf("max %v, want the latest %d", x, 3*keep-1)
	}
}
