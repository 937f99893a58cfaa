package ts

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"testing"
	"testing/iotest"
)

// makeUnits returns n packet units in framing fr; unit i has PID i and a payload that tells
// the units apart, prefix and trailer bytes included.
func makeUnits(n int, fr Framing, rng *rand.Rand) []byte {
	var out []byte
	for i := range n {
		u := make([]byte, fr.Size)
		for j := range u {
			u[j] = byte(rng.IntN(256))
		}
		p := u[fr.Prefix : fr.Prefix+PacketSize]
		p[0] = SyncByte
		p[1], p[2] = byte(i>>8)&0x1F, byte(i)
		p[3] = 0x10 | byte(i&0xF)
		// Keep 0x47 out of the payload so that the tests control where sync bytes are.
		for j := 4; j < PacketSize; j++ {
			if p[j] == SyncByte {
				p[j] = 0
			}
		}
		out = append(out, u...)
	}
	return out
}

// readAll runs a framer over r and returns the units back to back and the final error.
func readAll(t *testing.T, r io.Reader) ([]byte, *Framer, error) {
	t.Helper()
	f := NewFramer(r)
	var out []byte
	for {
		u, err := f.Next()
		if err != nil {
			return out, f, err
		}
		if len(u) != f.Framing().Size || u[f.Framing().Prefix] != SyncByte {
			t.Fatalf("unit of %d bytes in framing %v with byte %#x at the sync position", len(u), f.Framing(), u[f.Framing().Prefix])
		}
		out = append(out, u...)
	}
}

func TestFramerFramings(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, fr := range framings {
		for _, n := range []int{1, 2, 3, 4, 5, 100, 3000} {
			in := makeUnits(n, fr, rng)
			// One byte per Read exercises every buffer boundary.
			for name, r := range map[string]io.Reader{"whole": bytes.NewReader(in), "onebyte": iotest.OneByteReader(bytes.NewReader(in))} {
				if name == "onebyte" && n > 100 {
					continue
				}
				out, f, err := readAll(t, r)
				if err != io.EOF {
					t.Fatalf("%v n=%d %s: err %v", fr, n, name, err)
				}
				if !bytes.Equal(out, in) || f.Framing() != fr || f.Skipped() != 0 || f.Truncated() != 0 || f.Packets() != int64(n) {
					t.Fatalf("%v n=%d %s: got %d bytes framing %v skipped %d truncated %d packets %d",
						fr, n, name, len(out), f.Framing(), f.Skipped(), f.Truncated(), f.Packets())
				}
			}
		}
	}
}

func TestFramerEmpty(t *testing.T) {
	out, f, err := readAll(t, bytes.NewReader(nil))
	if err != io.EOF || len(out) != 0 || f.Skipped() != 0 {
		t.Fatalf("empty input: %d bytes, err %v", len(out), err)
	}
}

func TestFramerNoSync(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{1, 187, 188, 1000, 1 << 20} {
		in := make([]byte, n)
		for i := range in {
			in[i] = byte(rng.IntN(256))
		}
		out, f, err := readAll(t, bytes.NewReader(in))
		if !errors.Is(err, ErrNoSync) || len(out) != 0 {
			t.Fatalf("%d random bytes: %d bytes out, err %v", n, len(out), err)
		}
		if f.Skipped()+f.Truncated() != int64(n) {
			t.Fatalf("%d random bytes: skipped %d + truncated %d", n, f.Skipped(), f.Truncated())
		}
	}
}

// garbage returns n random bytes that hold a sync byte only where a cut packet would: at the
// start, when cut is set. Sync bytes elsewhere in garbage are the subject of TestFramerFalseSync.
func garbage(rng *rand.Rand, n int, cut bool) []byte {
	g := make([]byte, n)
	for i := range g {
		g[i] = byte(rng.IntN(256))
		if g[i] == SyncByte {
			g[i] = 0
		}
	}
	if cut {
		g[0] = SyncByte
	}
	return g
}

func TestFramerGarbage(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, fr := range framings {
		for trial := range 50 {
			const n = 40
			clear := makeUnits(n, fr, rng)
			in := garbage(rng, rng.IntN(3*fr.Size), false)
			skipped := len(in)
			run := 0
			for i := 0; i < n; i++ {
				in = append(in, clear[i*fr.Size:(i+1)*fr.Size]...)
				run++
				// Garbage goes between runs of at least confirmSyncs+1 packets: the framer
				// needs that many in a row to trust a sync byte after losing sync.
				if run > confirmSyncs && i < n-confirmSyncs-1 && rng.IntN(3) == 0 {
					// Either a packet cut short (a sync byte, then less than a packet) or
					// random bytes without a sync byte.
					cut := rng.IntN(2) == 0
					size := 1 + rng.IntN(500)
					if cut {
						size = 1 + rng.IntN(fr.Size-1)
					}
					// A sync byte exactly one period before a real one is a packet as far as
					// anyone can tell from the bytes: keep the test away from that.
					if (size+fr.Prefix)%fr.Size == 0 || size%fr.Size == 0 {
						size++
					}
					in = append(in, garbage(rng, size, cut)...)
					skipped += size
					run = 0
				}
			}
			out, f, err := readAll(t, bytes.NewReader(in))
			if err != io.EOF {
				t.Fatalf("%v trial %d: err %v", fr, trial, err)
			}
			if !bytes.Equal(out, clear) {
				t.Fatalf("%v trial %d: %d bytes out, want the %d bytes of the packets", fr, trial, len(out), len(clear))
			}
			if f.Skipped() != int64(skipped) {
				t.Fatalf("%v trial %d: skipped %d, want %d", fr, trial, f.Skipped(), skipped)
			}
		}
	}
}

// Sync bytes scattered through garbage are not taken for packets unless more sync bytes follow
// at the packet period.
func TestFramerFalseSync(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	clear := makeUnits(10, Framing188, rng)
	g := garbage(rng, 5000, false)
	// Pairs of sync bytes one period apart, never three in a row, and none that would line up
	// with the packets on either side of the garbage.
	for i := 1; i < len(g)-3*188; i += 97 {
		g[i] = SyncByte // and one more a period later, but never a third
		g[i+188] = SyncByte
	}
	in := append(append([]byte{}, clear[:5*188]...), g...)
	in = append(in, clear[5*188:]...)
	out, f, err := readAll(t, bytes.NewReader(in))
	if err != io.EOF || !bytes.Equal(out, clear) || f.Skipped() != int64(len(g)) {
		t.Fatalf("%d bytes out (want %d), skipped %d (want %d), err %v", len(out), len(clear), f.Skipped(), len(g), err)
	}
}

func TestFramerTruncatedTail(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, fr := range framings {
		in := makeUnits(10, fr, rng)
		for cut := 1; cut < fr.Size; cut += 13 {
			out, f, err := readAll(t, bytes.NewReader(in[:len(in)-cut]))
			if err != io.EOF || !bytes.Equal(out, in[:9*fr.Size]) {
				t.Fatalf("%v cut %d: %d bytes, err %v", fr, cut, len(out), err)
			}
			if f.Truncated() != int64(fr.Size-cut) || f.Skipped() != 0 {
				t.Fatalf("%v cut %d: truncated %d skipped %d", fr, cut, f.Truncated(), f.Skipped())
			}
		}
	}
}

// A packet cut short in the middle of the stream is skipped; the packets around it are kept.
func TestFramerCutPacketMidStream(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	in := makeUnits(20, Framing188, rng)
	damaged := append(append([]byte{}, in[:10*188+100]...), in[11*188:]...)
	out, f, err := readAll(t, bytes.NewReader(damaged))
	want := append(append([]byte{}, in[:10*188]...), in[11*188:]...)
	if err != io.EOF || !bytes.Equal(out, want) || f.Skipped() != 100 {
		t.Fatalf("%d bytes out (want %d), skipped %d, err %v", len(out), len(want), f.Skipped(), err)
	}
}

type failingReader struct{ r io.Reader }

var errDisk = errors.New("disk on fire")

func (f failingReader) Read(p []byte) (int, error) {
	n, err := f.r.Read(p)
	if err == io.EOF {
		return n, errDisk
	}
	return n, err
}

func TestFramerReadError(t *testing.T) {
	in := makeUnits(5, Framing188, rand.New(rand.NewPCG(1, 1)))
	out, _, err := readAll(t, failingReader{bytes.NewReader(in)})
	if !errors.Is(err, errDisk) || !bytes.Equal(out, in) {
		t.Fatalf("got %d bytes, err %v; want every packet then the read error", len(out), err)
	}
}

func TestPacketAccessors(t *testing.T) {
	p := make([]byte, PacketSize)
	p[0], p[1], p[2], p[3] = SyncByte, 0x5F, 0xFE, 0xB7 // TEI=0 PUSI=1 PID=0x1FFE TSC=10 AF+payload CC=7
	p[4] = 10
	if PID(p) != 0x1FFE || !PUSI(p) || TEI(p) || TSC(p) != Even || !HasAdaptationField(p) || !HasPayload(p) || ContinuityCounter(p) != 7 {
		t.Fatalf("header fields wrong: pid %#x pusi %v tsc %v", PID(p), PUSI(p), TSC(p))
	}
	if off, ok := PayloadOffset(p); !ok || off != 15 || len(Payload(p)) != 173 {
		t.Fatalf("payload offset %d %v", off, ok)
	}
	SetTSC(p, Odd)
	if TSC(p) != Odd || p[3]&0x3F != 0x37 {
		t.Fatalf("SetTSC changed other bits: %#x", p[3])
	}
	for _, n := range []byte{183, 200, 255} { // no room left for the payload the header announces
		p[4] = n
		if _, ok := PayloadOffset(p); ok {
			t.Fatalf("adaptation field of %d bytes with a payload accepted", n)
		}
	}
	p[4] = 182 // the largest allowed with a payload: one payload byte
	if off, ok := PayloadOffset(p); !ok || off != PacketSize-1 {
		t.Fatalf("182-byte adaptation field: %d %v", off, ok)
	}
	p[3] = 0x20 // adaptation field only
	if _, ok := PayloadOffset(p); ok || Payload(p) != nil {
		t.Fatal("adaptation-field-only packet has a payload")
	}
	p[3] = 0x10
	if off, _ := PayloadOffset(p); off != 4 {
		t.Fatalf("payload-only offset %d", off)
	}
	if n := testing.AllocsPerRun(100, func() { _ = Payload(p); _ = PID(p) }); n != 0 {
		t.Fatalf("%v allocations per packet", n)
	}
}

// Padding after the last packet must not re-frame the end of a stream in sync, even when a
// byte of the last packet happens to be 0x47 where a 192 or 204-byte unit would have its sync.
func TestFramerTrailingPadding(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	for _, pad := range []int{4, 16, 46, 50, 100} {
		for pos := 1; pos < PacketSize; pos += 7 {
			in := makeUnits(21, Framing188, rng)
			last := in[20*188:]
			last[pos] = SyncByte
			padded := append(append([]byte{}, in...), make([]byte, pad)...)
			out, f, err := readAll(t, bytes.NewReader(padded))
			if err != io.EOF || !bytes.Equal(out, in) || f.Framing() != Framing188 {
				t.Fatalf("pad %d, 0x47 at %d: %d bytes out (want %d), framing %v, skipped %d", pad, pos, len(out), len(in), f.Framing(), f.Skipped())
			}
		}
	}
}

// cleanUnits returns makeUnits(n, fr, rng) with 0x47 only at the sync positions: the prefix and
// trailer bytes of real streams may hold 0x47 anywhere, but a test of framing changes must not
// depend on where they happen to.
func cleanUnits(n int, fr Framing, rng *rand.Rand) []byte {
	u := makeUnits(n, fr, rng)
	for i := range u {
		if u[i] == SyncByte && i%fr.Size != fr.Prefix {
			u[i] = 0
		}
	}
	return u
}

// A stream whose framing changes (recordings of different sources put end to end) loses no
// packet and no byte at a change: each unit comes out whole, in its own framing.
func TestFramerFramingChanges(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	type section struct {
		fr Framing
		n  int
	}
	plans := [][]section{
		{{Framing188, 5}, {Framing204, 5}, {Framing188, 5}, {Framing192, 5}},
		{{Framing188, 40}, {Framing204, 40}, {Framing188, 40}, {Framing192, 40}, {Framing204, 40}, {Framing192, 40}, {Framing188, 40}},
	}
	// Every change from one framing to another, between sections as short as a change can be
	// told in (confirmSyncs+1 units) and longer ones.
	for _, a := range framings {
		for _, b := range framings {
			if a != b {
				for _, n := range []int{confirmSyncs + 1, 7} {
					plans = append(plans, []section{{a, n}, {b, n}, {a, n}})
				}
			}
		}
	}
	for _, plan := range plans {
		var in []byte
		var want []Framing
		for _, s := range plan {
			in = append(in, cleanUnits(s.n, s.fr, rng)...)
			for range s.n {
				want = append(want, s.fr)
			}
		}
		for name, r := range map[string]io.Reader{"whole": bytes.NewReader(in), "onebyte": iotest.OneByteReader(bytes.NewReader(in))} {
			f := NewFramer(r)
			var got []Framing
			var out []byte
			for {
				u, err := f.Next()
				if err != nil {
					if err != io.EOF {
						t.Fatalf("%v %s: %v", plan, name, err)
					}
					break
				}
				if fr := f.Framing(); len(u) != fr.Size || u[fr.Prefix] != SyncByte {
					t.Fatalf("%v %s: unit %d of %d bytes in framing %v", plan, name, len(got), len(u), fr)
				}
				got = append(got, f.Framing())
				out = append(out, u...)
			}
			if !bytes.Equal(out, in) || len(got) != len(want) || f.Skipped() != 0 || f.Truncated() != 0 {
				t.Fatalf("%v %s: %d units (want %d), %d bytes (want %d, equal %v), skipped %d, truncated %d; framings %v",
					plan, name, len(got), len(want), len(out), len(in), bytes.Equal(out, in), f.Skipped(), f.Truncated(), got)
			}
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("%v %s: unit %d in framing %v, want %v", plan, name, i, got[i], want[i])
				}
			}
		}
	}
}

// A 192-byte unit whose time code starts with 0x47 (it may: the prefix is copy-permission bits
// and a 27 MHz clock) after 188-byte packets is still read as a 192-byte unit, though the
// 188-byte framing finds a sync byte where it expects one.
func TestFramerChangeToPrefixWithSyncByte(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 18))
	m2ts := cleanUnits(5, Framing192, rng)
	m2ts[0] = SyncByte
	in := append(cleanUnits(5, Framing188, rng), m2ts...)
	out, f, err := readAll(t, bytes.NewReader(in))
	if err != io.EOF || !bytes.Equal(out, in) || f.Skipped() != 0 || f.Packets() != 10 || f.Framing() != Framing192 {
		t.Fatalf("%d bytes out (want %d), %d packets, skipped %d, framing %v, err %v", len(out), len(in), f.Packets(), f.Skipped(), f.Framing(), err)
	}
}

// pendingReader returns its bytes in pieces, with ErrPending between them, as a live input
// whose deadline comes between datagrams.
type pendingReader struct {
	b       []byte
	piece   int
	pending bool
}

func (r *pendingReader) Read(p []byte) (int, error) {
	if r.pending = !r.pending; r.pending {
		return 0, ErrPending
	}
	if len(r.b) == 0 {
		return 0, io.EOF
	}
	n := copy(p, r.b[:min(r.piece, len(r.b))])
	r.b = r.b[n:]
	return n, nil
}

// A reader that says ErrPending between its pieces gets every whole packet back as soon as it
// is read (three, to find sync), the same packets as a reader without it, and the framer reads
// on after each ErrPending.
func TestFramerPending(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 42))
	for _, fr := range framings {
		in := makeUnits(40, fr, rng)
		for _, piece := range []int{1, 100, fr.Size, 7 * fr.Size} {
			f := NewFramer(&pendingReader{b: in, piece: piece})
			var out []byte
			pendings := 0
			for {
				u, err := f.Next()
				if err == ErrPending {
					if pendings++; pendings > 2*len(in) {
						t.Fatalf("%v piece %d: ErrPending without end", fr, piece)
					}
					// Every whole packet read once sync is found has been returned.
					if got := len(out); f.BytesRead() >= int64(3*fr.Size) && int64(got)+int64(f.Buffered()) != f.BytesRead() || f.Buffered() >= fr.Size && got > 0 {
						t.Fatalf("%v piece %d: %d bytes out, %d buffered, %d read", fr, piece, got, f.Buffered(), f.BytesRead())
					}
					continue
				}
				if err != nil {
					if err != io.EOF {
						t.Fatal(err)
					}
					break
				}
				out = append(out, u...)
			}
			if !bytes.Equal(out, in) {
				t.Fatalf("%v piece %d: %d bytes out of %d, or different", fr, piece, len(out), len(in))
			}
		}
	}
}

// TestFramerReleaseLeavesNothing checks that a framer given a released buffer starts as a new
// one: the buffer comes cleared, whatever the input before left in it.
func TestFramerReleaseLeavesNothing(t *testing.T) {
	junk := bytes.Repeat([]byte{SyncByte}, readSize+lookahead)
	fr := NewFramer(bytes.NewReader(junk))
	for {
		if _, err := fr.Next(); err != nil {
			break
		}
	}
	fr.Release()
	fr.Release() // a second call does nothing
	for range 4 {
		fr := NewFramer(bytes.NewReader(nil))
		if len(fr.buf) != readSize+lookahead {
			t.Fatalf("buffer of %d bytes, want %d", len(fr.buf), readSize+lookahead)
		}
		if i := bytes.IndexFunc(fr.buf, func(r rune) bool { return r != 0 }); i >= 0 {
			t.Fatalf("a framer's buffer holds a byte of an earlier input at %d", i)
		}
		fr.Release()
	}
}
