package ts

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

// TestReplayArrivals: the look-ahead's bytes are replayed a read of the look-ahead at a time,
// across its chunks, each with when that read arrived, and then the rest of the input with the
// zero time (it arrives as it is read).
func TestReplayArrivals(t *testing.T) {
	t0 := time.Now().Add(-time.Second)
	t1 := t0.Add(100 * time.Millisecond)
	r := &Replay{
		chunks: [][]byte{[]byte("abc"), []byte("defgh")},
		reads:  []recordedRead{{2, t0}, {5, t1}, {1, t1.Add(time.Millisecond)}},
		rest:   strings.NewReader("ij"),
	}
	type read struct {
		s  string
		at time.Time
	}
	want := []read{{"ab", t0}, {"c", t1}, {"def", t1}, {"g", t1}, {"h", t1.Add(time.Millisecond)}, {"ij", time.Time{}}}
	buf := make([]byte, 3)
	for i, w := range want {
		n, err := r.Read(buf)
		if err != nil || string(buf[:n]) != w.s || !r.ArrivedAt().Equal(w.at) {
			t.Fatalf("read %d: %q %v, arrived %v; want %q, arrived %v", i, buf[:n], err, r.ArrivedAt(), w.s, w.at)
		}
	}
	if n, err := r.Read(buf); n != 0 || err != io.EOF {
		t.Fatalf("after the rest: %d, %v", n, err)
	}

	// Reads that return within a millisecond of each other are dated as one (the earlier
	// time): a pipe that returns a byte a read costs one date per millisecond, not per byte.
	rec := &Recorder{r: iotest.OneByteReader(bytes.NewReader(make([]byte, 2000))), limit: 1 << 20}
	b := make([]byte, 64)
	for {
		if _, err := rec.Read(b); err != nil {
			break
		}
	}
	total := 0
	for _, rd := range rec.reads {
		total += rd.n
	}
	if total != 2000 || len(rec.reads) > 1000 {
		t.Fatalf("%d reads of a byte dated in %d entries of %d bytes in all", 2000, len(rec.reads), total)
	}
}
