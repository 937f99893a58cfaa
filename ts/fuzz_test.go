package ts

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

// FuzzFramer feeds arbitrary bytes to the framer: it must never panic, every unit it returns must
// be a whole unit with a sync byte in place, and the units, the skipped bytes and the truncated
// tail must account for every input byte.
func FuzzFramer(f *testing.F) {
	one := make([]byte, 188)
	one[0] = SyncByte
	f.Add(bytes.Repeat(one, 5))
	f.Add(append([]byte{1, 2, 3}, bytes.Repeat(one, 4)...))
	m2ts := append(make([]byte, 4), one...)
	f.Add(bytes.Repeat(m2ts, 4))
	f.Add(bytes.Repeat(append(append([]byte{}, one...), make([]byte, 16)...), 4))
	f.Add([]byte{SyncByte})
	f.Add([]byte{})
	// Framing changes: 188 to 204 to 188 to 192.
	f.Add(append(append(append(bytes.Repeat(one, 3), bytes.Repeat(append(append([]byte{}, one...), make([]byte, 16)...), 3)...),
		bytes.Repeat(one, 3)...), bytes.Repeat(m2ts, 3)...))
	f.Fuzz(func(t *testing.T, in []byte) {
		fr := NewFramer(bytes.NewReader(in))
		var total int64
		for {
			u, err := fr.Next()
			if err != nil {
				if err != io.EOF && !errors.Is(err, ErrNoSync) {
					t.Fatalf("unexpected error %v", err)
				}
				break
			}
			f := fr.Framing()
			if len(u) != f.Size || u[f.Prefix] != SyncByte {
				t.Fatalf("bad unit: %d bytes, framing %v", len(u), f)
			}
			total += int64(len(u))
		}
		if total+fr.Skipped()+fr.Truncated() != int64(len(in)) {
			t.Fatalf("%d bytes in, %d in units + %d skipped + %d truncated", len(in), total, fr.Skipped(), fr.Truncated())
		}
	})
}

// FuzzFramerChanges builds a stream of sections in different framings from the fuzzer's plan
// (per section: its framing and its length, from confirmSyncs+1 units, the fewest a change can
// be told in) and contents (with 0x47 only at the sync positions), and requires every unit back
// whole, in its framing, with nothing skipped: a change of framing loses no packet.
func FuzzFramerChanges(f *testing.F) {
	f.Add([]byte{0, 2, 0, 1}, []byte{1, 2, 3})
	f.Add([]byte{1, 0, 2, 0, 1, 2}, []byte{0x47, 0x47, 0})
	f.Fuzz(func(t *testing.T, plan, fill []byte) {
		if len(plan) > 64 {
			plan = plan[:64]
		}
		if len(fill) == 0 {
			fill = []byte{0}
		}
		var in []byte
		var want []Framing
		k := 0
		for _, b := range plan {
			fr := framings[int(b)%len(framings)]
			for range confirmSyncs + 1 + int(b>>2)%4 {
				u := make([]byte, fr.Size)
				for j := range u {
					if u[j] = fill[k%len(fill)] + byte(k/len(fill)); u[j] == SyncByte {
						u[j] = 0
					}
					k++
				}
				u[fr.Prefix] = SyncByte
				in = append(in, u...)
				want = append(want, fr)
			}
		}
		fr := NewFramer(bytes.NewReader(in))
		var out []byte
		for i := 0; ; i++ {
			u, err := fr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("unit %d: %v", i, err)
			}
			if i >= len(want) || fr.Framing() != want[i] || len(u) != want[i].Size {
				t.Fatalf("unit %d: %d bytes in framing %v; want the %d units %v", i, len(u), fr.Framing(), len(want), want)
			}
			out = append(out, u...)
		}
		if !bytes.Equal(out, in) || fr.Skipped() != 0 || fr.Truncated() != 0 {
			t.Fatalf("%d of %d bytes out, skipped %d, truncated %d; want the units %v", len(out), len(in), fr.Skipped(), fr.Truncated(), want)
		}
	})
}
