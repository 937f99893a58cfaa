package ts

import (
	"bytes"
	"errors"
	"io"
	"slices"
	"testing"
	"time"
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
// be told in) and contents (with 0x47 only at the sync positions, and at the places syncs
// names, none of them closer than lookahead bytes to another), and requires every unit back
// whole, in its framing, with nothing skipped: a change of framing loses no packet. (Two false
// sync bytes a unit apart can make a chain of another framing as long as the true one; no
// framer tells them apart from a change without looking further.) The stream is read whole,
// and as datagrams of 1 to 7 units of one framing (sizes from cuts) with ErrPending after each,
// as a live input hands it over: no unit may hold bytes of two datagrams.
func FuzzFramerChanges(f *testing.F) {
	f.Add([]byte{0, 2, 0, 1}, []byte{1, 2, 3}, []byte{0}, []byte{})
	f.Add([]byte{1, 0, 2, 0, 1, 2}, []byte{0x47, 0x47, 0}, []byte{6, 0, 3, 1}, []byte{0, 200})
	f.Add([]byte{2, 0, 2, 1, 0}, []byte{9}, []byte{0, 1, 2, 3, 4, 5, 6}, []byte{2, 100, 4, 0})
	// A 204 to 188-byte change with 0x47 at byte 16 of the second 188-byte packet.
	f.Add([]byte{2, 0}, []byte{1}, []byte{6}, []byte{3, 0x30})
	f.Fuzz(func(t *testing.T, plan, fill, cuts, syncs []byte) {
		if len(plan) > 64 {
			plan = plan[:64]
		}
		if len(fill) == 0 {
			fill = []byte{0}
		}
		if len(cuts) == 0 {
			cuts = []byte{6}
		}
		var in []byte
		var want []Framing
		var ends []int // where each datagram ends
		k := 0
		for _, b := range plan {
			fr := framings[int(b)%len(framings)]
			start := len(in)
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
			for at := start; at < len(in); {
				at = min(len(in), at+(1+int(cuts[len(ends)%len(cuts)])%7)*fr.Size)
				ends = append(ends, at)
			}
		}
		last := -lookahead
		for i := 0; i+1 < len(syncs) && len(in) > 0; i += 2 {
			if at := int(syncs[i])<<8 | int(syncs[i+1]); at < len(in) && at >= last+lookahead {
				in[at], last = SyncByte, at
			}
		}
		dgrams := make([][]byte, len(ends))
		for i, e := range ends {
			from := 0
			if i > 0 {
				from = ends[i-1]
			}
			dgrams[i] = in[from:e]
		}
		for name, r := range map[string]io.Reader{"whole": bytes.NewReader(in), "datagrams": &datagramReader{chunks: dgrams}} {
			fr := NewFramer(r)
			var out []byte
			d := 0 // the datagram the next unit starts in
			for i, pendings := 0, 0; ; {
				u, err := fr.Next()
				if err == ErrPending {
					if pendings++; pendings > 2*len(in)+10 {
						t.Fatalf("%s: ErrPending without end", name)
					}
					continue
				}
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatalf("%s unit %d: %v", name, i, err)
				}
				if i >= len(want) || fr.Framing() != want[i] || len(u) != want[i].Size {
					t.Fatalf("%s unit %d: %d bytes in framing %v; want the %d units %v", name, i, len(u), fr.Framing(), len(want), want)
				}
				for d < len(ends) && ends[d] <= len(out) {
					d++
				}
				if end := len(out) + len(u); d < len(ends) && end > ends[d] || !bytes.Equal(u, in[len(out):end]) {
					t.Fatalf("%s unit %d: bytes %d to %d, across the end of datagram %d at %d, or not the input's", name, i, len(out), end, d, ends[min(d, len(ends)-1)])
				}
				out = append(out, u...)
				i++
			}
			if !bytes.Equal(out, in) || fr.Skipped() != 0 || fr.Truncated() != 0 {
				t.Fatalf("%s: %d of %d bytes out, skipped %d, truncated %d; want the units %v", name, len(out), len(in), fr.Skipped(), fr.Truncated(), want)
			}
		}
	})
}

// cutReader returns its bytes in reads of the sizes cuts gives, in turn.
type cutReader struct {
	b    []byte
	cuts []byte
	i    int
}

func (r *cutReader) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, io.EOF
	}
	n := 1 + int(r.cuts[r.i%len(r.cuts)])*7
	r.i++
	n = copy(p[:min(len(p), n)], r.b)
	r.b = r.b[n:]
	return n, nil
}

// FuzzSourcePeek: whatever the bytes, however the reads are cut and however far a look-ahead
// went, a Source hands on the units, framings and counts of a framer alone: a run sees the same
// packets whether or not anything looked.
func FuzzSourcePeek(f *testing.F) {
	one := make([]byte, 188)
	one[0] = SyncByte
	f.Add(bytes.Repeat(one, 9), []byte{3}, uint16(4))
	f.Add(append([]byte{1, 2, 3}, bytes.Repeat(append(make([]byte, 4), one...), 6)...), []byte{0, 200, 7}, uint16(2))
	f.Add(append(bytes.Repeat(one, 4), bytes.Repeat(append(append([]byte{}, one...), make([]byte, 16)...), 4)...), []byte{30}, uint16(5))
	f.Fuzz(checkSourcePeek)
}

func checkSourcePeek(t *testing.T, in, cuts []byte, look uint16) {
	if len(cuts) == 0 {
		cuts = []byte{255}
	}
	fr := NewFramer(bytes.NewReader(in))
	var want []byte
	var wantFr []Framing
	var werr error
	for {
		u, err := fr.Next()
		if err != nil {
			werr = err
			break
		}
		want = append(want, u...)
		wantFr = append(wantFr, fr.Framing())
	}
	s := NewSource(&cutReader{b: in, cuts: cuts})
	defer s.Close()
	seen := 0
	s.Peek(1<<20, 0, time.Time{}, func([]byte, Framing) bool { seen++; return seen < int(look) })
	var got []byte
	var gotFr []Framing
	var err error
	for {
		var u []byte
		if u, err = s.Next(); err != nil {
			break
		}
		got = append(got, u...)
		gotFr = append(gotFr, s.Framing())
	}
	if !bytes.Equal(got, want) || !slices.Equal(gotFr, wantFr) || err != werr {
		t.Fatalf("look %d: %d bytes in %d units, %v; a framer alone: %d bytes in %d units, %v", look, len(got), len(gotFr), err, len(want), len(wantFr), werr)
	}
	if s.Skipped() != fr.Skipped() || s.Truncated() != fr.Truncated() || s.Packets() != fr.Packets() || s.BytesRead() != fr.BytesRead() {
		t.Fatal("the counts differ from a framer's alone")
	}
}
