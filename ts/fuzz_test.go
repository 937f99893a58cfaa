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
