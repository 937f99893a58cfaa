package ts

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"testing"
	"testing/iotest"
)

// randomUnits returns n units in framing fr with random bytes everywhere but at the sync
// positions: payload, prefix and trailer bytes may be 0x47, as in real streams.
func randomUnits(n int, fr Framing, rng *rand.Rand) []byte {
	u := make([]byte, n*fr.Size)
	for i := range u {
		u[i] = byte(rng.Uint32())
	}
	for i := fr.Prefix; i < len(u); i += fr.Size {
		u[i] = SyncByte
	}
	return u
}

// datagramReader returns its chunks one per Read, with ErrPending between them: a live input
// whose deadline comes after every datagram.
type datagramReader struct {
	chunks  [][]byte
	pending bool
}

func (r *datagramReader) Read(p []byte) (int, error) {
	if r.pending = !r.pending; r.pending {
		return 0, ErrPending
	}
	if len(r.chunks) == 0 {
		return 0, io.EOF
	}
	n := copy(p, r.chunks[0])
	if r.chunks[0] = r.chunks[0][n:]; len(r.chunks[0]) == 0 {
		r.chunks = r.chunks[1:]
	}
	return n, nil
}

// section is a run of units of one framing in a test stream.
type section struct {
	fr Framing
	n  int
}

// changeStream lays out the sections with the units units makes, and returns the stream, the
// framing of each unit, and the stream cut into datagrams of 1 to 7 units of one framing
// (slices of the stream, so that they see a change made to it).
func changeStream(plan []section, rng *rand.Rand, units func(int, Framing, *rand.Rand) []byte) (in []byte, want []Framing, dgrams [][]byte) {
	var cuts []int
	for _, s := range plan {
		start := len(in)
		in = append(in, units(s.n, s.fr, rng)...)
		for range s.n {
			want = append(want, s.fr)
		}
		for at := start; at < len(in); {
			at = min(len(in), at+(1+rng.IntN(7))*s.fr.Size)
			cuts = append(cuts, at)
		}
	}
	from := 0
	for _, c := range cuts {
		dgrams = append(dgrams, in[from:c])
		from = c
	}
	return in, want, dgrams
}

// frameAll runs a framer over r to the end, passing ErrPending, and reports how the units it
// returned differ from in and want: "" when every unit came back whole, in its framing, with
// nothing skipped.
func frameAll(r io.Reader, in []byte, want []Framing) string {
	f := NewFramer(r)
	var out []byte
	var got []Framing
	for pendings := 0; ; {
		u, err := f.Next()
		if err == ErrPending {
			if pendings++; pendings > 2*len(in)+10 {
				return "ErrPending without end"
			}
			continue
		}
		if err != nil {
			if err != io.EOF {
				return err.Error()
			}
			break
		}
		fr := f.Framing()
		if len(u) != fr.Size || u[fr.Prefix] != SyncByte {
			return fmt.Sprintf("unit %d: %d bytes in framing %v", len(got), len(u), fr)
		}
		if i := len(got); i >= len(want) || fr != want[i] || !bytes.Equal(u, in[len(out):len(out)+fr.Size]) {
			return fmt.Sprintf("unit %d at byte %d: a %v-byte unit, not the unit of the input there (%v bytes)", i, len(out), fr, want[min(i, len(want)-1)])
		}
		out = append(out, u...)
		got = append(got, fr)
	}
	if len(got) != len(want) || f.Skipped() != 0 || f.Truncated() != 0 {
		return fmt.Sprintf("%d units of %d, skipped %d, truncated %d", len(got), len(want), f.Skipped(), f.Truncated())
	}
	return ""
}

// The shape of the 204 to 188-byte change that lost a packet: the 204-byte frame laid over the
// first 188-byte packet finds a sync byte where it expects the next one (byte 16 of the second
// packet), and took the packet and 16 bytes of the next as a 204-byte unit. Likewise for every
// other change, with 0x47 at the places where the old framing looks for the unit's sync byte
// and the next one. A change of framing loses no packet and makes no unit of bytes from two,
// whether the framer has the whole stream, a byte at a time, or datagrams with ErrPending
// between them.
func TestFramerChangeSyncWhereOldFramingExpects(t *testing.T) {
	rng := rand.New(rand.NewPCG(71, 72))
	for _, c := range []struct {
		from, to Framing
		at       []int // the bytes of the new section set to 0x47
	}{
		{Framing204, Framing188, []int{204}},
		{Framing188, Framing204, []int{188}},
		{Framing192, Framing188, []int{4, 4 + 192}},
		{Framing192, Framing204, []int{4, 4 + 192}},
		{Framing188, Framing192, []int{0, 188}},
		{Framing204, Framing192, []int{0, 204}},
	} {
		for _, n := range []int{confirmSyncs + 1, 7} {
			plan := []section{{c.from, n}, {c.to, n}, {c.from, n}}
			in, want, dgrams := changeStream(plan, rng, cleanUnits)
			for _, at := range c.at {
				in[n*c.from.Size+at] = SyncByte
			}
			name := fmt.Sprintf("%v to %v, 0x47 at %v, %d units", c.from, c.to, c.at, n)
			for rname, r := range map[string]io.Reader{
				"whole":     bytes.NewReader(in),
				"onebyte":   iotest.OneByteReader(bytes.NewReader(in)),
				"datagrams": &datagramReader{chunks: dgrams},
			} {
				if why := frameAll(r, in, want); why != "" {
					t.Errorf("%s, %s: %s", name, rname, why)
				}
			}
		}
	}
}

// Random changes of framing between sections of random bytes (0x47 anywhere): every unit comes
// back whole and in its framing, nothing is skipped. On random bytes a wrong cut needs two
// false sync bytes in a row at the places the chain looks, about once in 2^16 changes; this
// seed has none.
func TestFramerRandomChanges(t *testing.T) {
	rng := rand.New(rand.NewPCG(73, 74))
	changes := 0
	for trial := range 300 {
		var plan []section
		prev := -1
		for range 10 {
			k := rng.IntN(len(framings) - 1)
			if prev >= 0 && k >= prev {
				k++
			}
			if prev < 0 {
				k = rng.IntN(len(framings))
			}
			prev = k
			plan = append(plan, section{framings[k], confirmSyncs + 1 + rng.IntN(8)})
		}
		changes += len(plan) - 1
		in, want, dgrams := changeStream(plan, rng, randomUnits)
		for rname, r := range map[string]io.Reader{"whole": bytes.NewReader(in), "datagrams": &datagramReader{chunks: dgrams}} {
			if why := frameAll(r, in, want); why != "" {
				t.Errorf("trial %d %s, sections %v: %s", trial, rname, plan, why)
			}
		}
	}
	if changes < 2500 {
		t.Fatalf("only %d changes", changes)
	}
}

// A last section too short for a full chain of sync bytes (two 188-byte packets after 204-byte
// ones, as the last datagram of a live input) comes back as its packets: a 204-byte unit laid
// over them would hold the first and 16 bytes of the second.
func TestFramerShortLastSection(t *testing.T) {
	rng := rand.New(rand.NewPCG(75, 76))
	for _, c := range []struct{ from, to Framing }{
		{Framing204, Framing188}, {Framing188, Framing204}, {Framing192, Framing188}, {Framing188, Framing192}, {Framing204, Framing192},
	} {
		plan := []section{{c.from, 5}, {c.to, 2}}
		in, want, dgrams := changeStream(plan, rng, cleanUnits)
		for rname, r := range map[string]io.Reader{"whole": bytes.NewReader(in), "datagrams": &datagramReader{chunks: dgrams}} {
			if why := frameAll(r, in, want); why != "" {
				t.Errorf("%v then two units of %v, %s: %s", c.from, c.to, rname, why)
			}
		}
	}
}
