package ts

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"testing/iotest"
	"time"
)

// tinyReader returns one byte a read, for ever.
type tinyReader struct{}

func (tinyReader) Read(p []byte) (int, error) { p[0] = 1; return 1, nil }

// The arrival times a source keeps stay bounded while the framer holds bytes for long (garbage
// it skips on a live input that never syncs).
func TestSourceArrivalsBounded(t *testing.T) {
	s := NewSource(tinyReader{})
	defer s.Close()
	s.SetLatency(time.Second)
	buf := make([]byte, 16)
	for range 3 * maxArrivals {
		if _, err := s.ra.Read(buf); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(s.arrivals); n > 2*maxArrivals+64 {
		t.Fatalf("%d arrival times kept", n)
	}
	if at := s.arrivedAt(0); at.IsZero() {
		t.Fatal("no arrival time")
	}
}

// sourceAll reads s to its end and returns the units back to back, their framings and the
// final error.
func sourceAll(t *testing.T, s *Source) ([]byte, []Framing, error) {
	t.Helper()
	var out []byte
	var frs []Framing
	for {
		u, err := s.Next()
		if err != nil {
			return out, frs, err
		}
		if len(u) != s.Framing().Size || u[s.Framing().Prefix] != SyncByte {
			t.Fatalf("unit of %d bytes in framing %v with byte %#x at the sync position", len(u), s.Framing(), u[s.Framing().Prefix])
		}
		out = append(out, u...)
		frs = append(frs, s.Framing())
	}
}

// A look-ahead changes nothing the reader of the source sees: however far it looked, in
// whatever framing, over garbage, and however the input's reads are cut, Next returns the
// units, framings, counts and end that a framer alone gives.
func TestSourcePeekReplays(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var in []byte
	in = append(in, garbage(rng, 77, false)...)
	in = append(in, makeUnits(40, Framing192, rng)...)
	in = append(in, makeUnits(60, Framing188, rng)...)
	in = append(in, garbage(rng, 300, true)...)
	in = append(in, makeUnits(50, Framing204, rng)...)
	in = append(in, 0x47, 1, 2) // a truncated last packet
	want, wfr, werr := readAll(t, bytes.NewReader(in))
	for _, look := range []int{0, 1, 39, 40, 41, 120, 1000} {
		for _, oneByte := range []bool{false, true} {
			var r io.Reader = bytes.NewReader(in)
			if oneByte {
				r = iotest.OneByteReader(r)
			}
			s := NewSource(r)
			seen := 0
			s.Peek(1<<20, 0, time.Time{}, func(unit []byte, fr Framing) bool {
				if len(unit) != fr.Size {
					t.Fatalf("look-ahead unit of %d bytes in framing %v", len(unit), fr)
				}
				seen++
				return seen < look
			})
			got, _, err := sourceAll(t, s)
			if !bytes.Equal(got, want) || err != werr {
				t.Fatalf("look %d, one byte %v: %d bytes, %v; want %d, %v", look, oneByte, len(got), err, len(want), werr)
			}
			if s.Packets() != wfr.Packets() || s.BytesRead() != wfr.BytesRead() || s.Skipped() != wfr.Skipped() || s.Truncated() != wfr.Truncated() || s.Buffered() != 0 {
				t.Fatalf("look %d: counts %d %d %d %d %d; want %d %d %d %d 0", look, s.Packets(), s.BytesRead(), s.Skipped(), s.Truncated(), s.Buffered(),
					wfr.Packets(), wfr.BytesRead(), wfr.Skipped(), wfr.Truncated())
			}
			s.Close()
		}
	}
}

// The look-ahead stops at its limit, and a read error that ended it comes after its units.
func TestSourcePeekLimitAndError(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	in := makeUnits(100, Framing188, rng)
	s := NewSource(io.MultiReader(bytes.NewReader(in), iotest.ErrReader(errors.New("disk gone"))))
	seen := 0
	s.Peek(10*PacketSize, 0, time.Time{}, func([]byte, Framing) bool { seen++; return true })
	if seen != 10 {
		t.Fatalf("the look-ahead read %d packets, limit 10", seen)
	}
	s.Peek(1<<20, 0, time.Time{}, func([]byte, Framing) bool { return true })
	got, _, err := sourceAll(t, s)
	if !bytes.Equal(got, in) || err == nil || err.Error() != "disk gone" {
		t.Fatalf("%d bytes, %v", len(got), err)
	}
}

// A look-ahead with an idle bound ends when the input sends nothing for that long, and hands
// the packets it has over without waiting for the bytes the framer would look at after them.
func TestSourcePeekIdle(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	in := makeUnits(3, Framing188, rng)
	pr, pw := io.Pipe()
	defer pw.Close()
	go pw.Write(in)
	s := NewSource(pr)
	defer s.Close()
	start := time.Now()
	seen := 0
	s.Peek(1<<20, 100*time.Millisecond, time.Time{}, func([]byte, Framing) bool { seen++; return true })
	if seen != 3 || time.Since(start) > 5*time.Second {
		t.Fatalf("%d packets in %v", seen, time.Since(start))
	}
	go func() { pw.Write(in); pw.Close() }()
	got, _, err := sourceAll(t, s)
	if err != io.EOF || !bytes.Equal(got, append(append([]byte(nil), in...), in...)) {
		t.Fatalf("%d bytes, %v", len(got), err)
	}
}

// stutter is a stage that holds units back until it has three, then hands them on with a copy
// of the first before them, in place; it fails at a unit of PID 0x1FF, and hands on what it
// holds at the end.
type stutter struct {
	held Units
	ends int
}

func (st *stutter) Packet(unit []byte, fr Framing, out *Units) error {
	if PID(unit[fr.Prefix:]) == 0x1FF {
		return errors.New("PID 0x1FF")
	}
	st.held.Append(unit)
	if st.held.Len() == 3 {
		first := st.held.take()
		out.Append(first)
		out.Append(first)
		for st.held.Len() > 0 {
			out.Append(st.held.take())
		}
		st.held.reset()
	}
	return nil
}

func (st *stutter) End(out *Units) error {
	st.ends++
	for st.held.Len() > 0 {
		out.Append(st.held.take())
	}
	return nil
}

// A stage sees every unit, the look-ahead's first, and the reader sees what it hands on, in
// order, then its error or the end of the input.
func TestSourceStage(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	in := makeUnits(8, Framing192, rng) // PIDs 0 to 7
	var want []byte
	for i := 0; i < 6; i += 3 {
		u := in[i*192 : (i+3)*192]
		want = append(append(want, u[:192]...), u...)
	}
	want = append(want, in[6*192:]...)
	st := &stutter{}
	s := NewSource(bytes.NewReader(in))
	s.Peek(1<<20, 0, time.Time{}, func(_ []byte, _ Framing) bool { return false }) // one unit
	s.SetStage(st)
	got, frs, err := sourceAll(t, s)
	if err != io.EOF || !bytes.Equal(got, want) || st.ends != 1 || len(frs) != 10 || frs[9] != Framing192 {
		t.Fatalf("%d bytes, %v, %d ends, framings %v", len(got), err, st.ends, frs)
	}
	if _, err := s.Next(); err != io.EOF || st.ends != 1 {
		t.Fatalf("after the end: %v, %d ends", err, st.ends)
	}

	// A stage's error comes after the units it handed on.
	bad := makeUnits(0x200, Framing188, rng)[0x1FB*188:] // PIDs 0x1FB to 0x1FF
	s = NewSource(bytes.NewReader(bad))
	s.SetStage(&stutter{})
	got, _, err = sourceAll(t, s)
	if err == nil || err.Error() != "PID 0x1FF" || len(got) != 4*188 {
		t.Fatalf("%d bytes, %v", len(got), err)
	}
}

// End ends the input where it is: a Next waiting on a quiet input returns the end of the input
// at once, and Interrupt is called once, however often End is.
func TestSourceEnd(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	in := makeUnits(5, Framing188, rng)
	pr, pw := io.Pipe()
	go pw.Write(in)
	var interrupts atomic.Int32
	s := NewSource(pr, SourceOptions{Interrupt: func() { interrupts.Add(1); pw.CloseWithError(errors.New("cut short")) }})
	defer s.Close()
	first := 0
	s.SetOnFirst(func() { first++ })
	// The framer waits for bytes after the packets, to be sure of their sync, until the end.
	time.AfterFunc(50*time.Millisecond, func() { s.End(); s.End() })
	got, _, err := sourceAll(t, s)
	if err != io.EOF || !bytes.Equal(got, in) || interrupts.Load() != 1 || first != 1 {
		t.Fatalf("%d bytes, %v, %d interrupts, first bytes told %d times", len(got), err, interrupts.Load(), first)
	}
}
