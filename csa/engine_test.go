package csa

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/cpu"
)

// testEngine is one registered kernel, whether or not this CPU runs it.
type testEngine struct {
	name      string
	lanes     int
	k         *kernel
	available bool
}

// testKernels are kernels that only the tests register: every engine test
// runs them beside the package's own.
var testKernels []*kernel

// allEngines lists every kernel compiled in, the portable ones at every
// width included, so that go test runs every path this CPU can run.
func allEngines() []testEngine {
	var es []testEngine
	for _, k := range append(slices.Clone(kernels), testKernels...) {
		es = append(es, testEngine{k.id, k.lanes, k, k.ok()})
	}
	return es
}

// runEngines runs f for each engine this CPU can run. An engine that is
// compiled in but not runnable is skipped with the CPU features it lacks, so
// that go test -v shows what a machine left untested.
func runEngines(t *testing.T, f func(t *testing.T, e *Engine)) {
	for _, te := range allEngines() {
		t.Run("engine="+te.name, func(t *testing.T) {
			if !te.available {
				t.Skipf("the CPU cannot run %s: no %s", te.name, missingFeatures(te.k))
			}
			f(t, newEngine(te.k))
		})
	}
}

func TestNewEngine(t *testing.T) {
	for _, lanes := range []int{-1, 1, 16, 48, 100, 1024} {
		if e, err := NewEngine(lanes); err == nil {
			t.Errorf("NewEngine(%d) = %v, want an error", lanes, e)
		}
	}
	avail := Available()
	if !slices.IsSorted(avail) || len(avail) == 0 {
		t.Errorf("Available() = %v, want ascending", avail)
	}
	for _, lanes := range avail {
		e, err := NewEngine(lanes)
		if err != nil {
			t.Fatalf("NewEngine(%d): %v", lanes, err)
		}
		if e.Lanes() != lanes {
			t.Errorf("NewEngine(%d).Lanes() = %d", lanes, e.Lanes())
		}
		want := fmt.Sprintf("csa2: %d lanes ", lanes)
		if s := e.String(); len(s) <= len(want) || s[:len(want)] != want {
			t.Errorf("String() = %q, want prefix %q", s, want)
		}
	}
	e, err := NewEngine(0)
	if err != nil || !slices.Contains(avail, e.Lanes()) {
		t.Errorf("NewEngine(0) = %v, %v", e, err)
	}
}

// TestStreamSboxCircuits checks the generated S-box circuits against the
// S-box tables, on random register contents: each of the 64 lanes is one
// random input to all seven S-boxes at once.
func TestStreamSboxCircuits(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	seen := [7][32]bool{}
	for trial := 0; trial < 200; trial++ {
		var a [11][4]uint64
		for n := 1; n <= 10; n++ {
			for b := range 4 {
				a[n][b] = rng.Uint64()
			}
		}
		var o sboxOut[uint64]
		streamSboxes(&a, &o)
		for l := range 64 {
			var out [7]byte
			for s, taps := range streamSboxTaps {
				var in byte
				for _, tp := range taps {
					in = in<<1 | byte(a[tp[0]][tp[1]]>>l&1)
				}
				seen[s][in] = true
				out[s] = streamSbox[s][in]
			}
			bit := func(w uint64) byte { return byte(w >> l & 1) }
			// X = s4.lo s3.lo s2.hi s1.hi (bit 3 first), and so on (ETR 289).
			wantX := [4]byte{out[0] >> 1, out[1] >> 1, out[2] & 1, out[3] & 1}
			wantY := [4]byte{out[2] >> 1, out[3] >> 1, out[4] & 1, out[5] & 1}
			wantZ := [4]byte{out[4] >> 1, out[5] >> 1, out[0] & 1, out[1] & 1}
			for b := range 4 {
				if bit(o.x[b]) != wantX[b] || bit(o.y[b]) != wantY[b] || bit(o.z[b]) != wantZ[b] {
					t.Fatalf("lane %d: X/Y/Z bit %d wrong", l, b)
				}
			}
			if bit(o.p) != out[6]>>1 || bit(o.q) != out[6]&1 {
				t.Fatalf("lane %d: p/q wrong", l)
			}
		}
	}
	for s := range seen {
		for in, ok := range seen[s] {
			if !ok {
				t.Errorf("S-box %d input %d never tested", s+1, in)
			}
		}
	}
}

func testTranspose[W word](t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	n := laneBits[W]()
	v := make([]uint64, n)
	for i := range v {
		v[i] = rng.Uint64()
	}
	var planes [64]W
	lanesToPlanes(v, &planes)
	for k := range 64 {
		for l := range n {
			if byte(planes[k]>>l&1) != byte(v[l]>>k&1) {
				t.Fatalf("W=%d bits: plane %d lane %d wrong", n, k, l)
			}
		}
	}
	back := make([]uint64, n)
	planesToLanes(&planes, back)
	if !slices.Equal(back, v) {
		t.Fatalf("W=%d bits: planesToLanes does not invert lanesToPlanes", n)
	}
}

func TestTranspose(t *testing.T) {
	testTranspose[uint32](t)
	testTranspose[uint64](t)

	rng := rand.New(rand.NewPCG(7, 8))
	var m [8]uint64
	for i := range m {
		m[i] = rng.Uint64()
	}
	orig := m
	transposeBytes8(&m)
	for i := range 8 {
		for j := range 8 {
			if byte(m[j]>>(8*i)) != byte(orig[i]>>(8*j)) {
				t.Fatalf("transposeBytes8: byte %d of row %d wrong", i, j)
			}
		}
	}
}

// TestBlockRows checks the byte-sliced block cipher against the scalar
// one, lane by lane, for partial and full group counts.
func TestBlockRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for _, groups := range []int{1, 3, 8, 32} {
		var cw [8]byte
		for i := range cw {
			cw[i] = byte(rng.Uint32())
		}
		k := mustKey(t, cw[:])
		r := newBlockRows(32)
		var orig [8][32]uint64
		for j := range r {
			for g := range r[j] {
				r[j][g] = rng.Uint64()
				orig[j][g] = r[j][g]
			}
		}
		r.decrypt(&k.bsBlock, groups)
		for g := range 32 {
			for i := range 8 {
				var blk [8]byte
				for j := range blk {
					blk[j] = byte(orig[j][g] >> (8 * i))
				}
				if g < groups {
					blockDecrypt(&k.kk, &blk)
				}
				for j := range blk {
					if got := byte(r[j][g] >> (8 * i)); got != blk[j] {
						t.Fatalf("%d groups: lane %d byte %d = %#x, want %#x", groups, 8*g+i, j, got, blk[j])
					}
				}
			}
		}
		r.encrypt(&k.bsBlock, groups)
		for j := range r {
			if !slices.Equal(r[j], orig[j][:]) {
				t.Fatalf("%d groups: encrypt does not invert decrypt", groups)
			}
		}
	}
}

func testBitslicedStream[W word](t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	n := laneBits[W]()
	k := mustKey(t, readHex(t, "ffdecsa_test_1_key.hex"))
	ivs := make([]uint64, n)
	for i := range ivs {
		ivs[i] = rng.Uint64()
	}
	var regs streamRegs[W]
	var planes [64]W
	lanesToPlanes(ivs, &planes)
	regs.reset(k)
	regs.init(&planes)
	ref := make([]streamState, n)
	for l := range ref {
		var iv [8]byte
		for i := range iv {
			iv[i] = byte(ivs[l] >> (8 * i))
		}
		ref[l] = newStreamState(&k.cw)
		ref[l].init(iv[:])
	}
	got := make([]uint64, n)
	for blk := 0; blk < 23; blk++ {
		regs.generate(&planes)
		planesToLanes(&planes, got)
		for l := range n {
			want := ref[l].keystream()
			for i := range 8 {
				if g := byte(got[l] >> (8 * i)); g != want[i] {
					t.Fatalf("W=%d bits: lane %d keystream block %d byte %d = %#x, want %#x", n, l, blk, i, g, want[i])
				}
			}
		}
	}
}

func TestBitslicedStream(t *testing.T) {
	testBitslicedStream[uint32](t)
	testBitslicedStream[uint64](t)
}

// TestEngineVectors runs the published vectors through every engine, alone
// and mixed into full batches.
func TestEngineVectors(t *testing.T) {
	runEngines(t, func(t *testing.T, e *Engine) {
		for _, v := range payloadVectors(t) {
			k := mustKey(t, v.cw)
			for _, n := range []int{1, e.Lanes()} {
				batch := make([][]byte, n)
				for i := range batch {
					batch[i] = slices.Clone(v.scrambled)
				}
				e.Decrypt(k, batch)
				for i, p := range batch {
					if !bytes.Equal(p, v.clear) {
						t.Fatalf("%s: batch of %d, lane %d: Decrypt wrong", v.name, n, i)
					}
				}
				e.Encrypt(k, batch)
				for i, p := range batch {
					if !bytes.Equal(p, v.scrambled) {
						t.Fatalf("%s: batch of %d, lane %d: Encrypt wrong", v.name, n, i)
					}
				}
			}
		}
		// The all-lengths table: every length 0..184 in one call.
		k := mustKey(t, lengthTableCW)
		vs := readLengthTable(t, "generated_libdvbcsa_all_lengths.txt")
		var batch [][]byte
		for _, v := range vs {
			batch = append(batch, slices.Clone(v.scrambled))
		}
		e.Decrypt(k, batch)
		for i, v := range vs {
			if !bytes.Equal(batch[i], v.clear) {
				t.Errorf("all lengths: Decrypt length %d wrong", len(v.clear))
			}
		}
		e.Encrypt(k, batch)
		for i, v := range vs {
			if !bytes.Equal(batch[i], v.scrambled) {
				t.Errorf("all lengths: Encrypt length %d wrong", len(v.clear))
			}
		}
	})
}

// lanePacket is one payload of a differential test, cut out of a 188-byte
// packet at an arbitrary offset like a payload after an adaptation field.
type lanePacket struct {
	pkt    []byte // whole 188-byte buffer, engine input
	off, n int
	want   []byte // whole buffer as the scalar cipher leaves it
}

// lanePool holds payloads of every length 0..184 (twice, plus random ones
// in between) at random offsets of their packets, with the scalar cipher's
// result for each, so that differential tests need not run the slow scalar
// cipher for every lane of every batch.
type lanePool struct {
	dec, enc []lanePacket // expected results of Decrypt and of Encrypt
	next     int
}

func newLanePool(rng *rand.Rand, k *Key) *lanePool {
	p := new(lanePool)
	for i := 0; i < 2*(maxPayload+1); i++ {
		n := i % (maxPayload + 1)
		if rng.IntN(4) == 0 {
			n = rng.IntN(maxPayload + 1)
		}
		off := 4 + rng.IntN(maxPayload-n+1)
		pkt := make([]byte, 188)
		for j := range pkt {
			pkt[j] = byte(rng.Uint32())
		}
		dec, enc := slices.Clone(pkt), slices.Clone(pkt)
		k.Decrypt(dec[off : off+n])
		k.Encrypt(enc[off : off+n])
		p.dec = append(p.dec, lanePacket{pkt: pkt, off: off, n: n, want: dec})
		p.enc = append(p.enc, lanePacket{pkt: pkt, off: off, n: n, want: enc})
	}
	return p
}

// take returns count fresh copies of consecutive pool entries.
func (p *lanePool) take(count int, decrypt bool) []lanePacket {
	src := p.enc
	if decrypt {
		src = p.dec
	}
	ps := make([]lanePacket, count)
	for i := range ps {
		lp := src[p.next%len(src)]
		p.next++
		lp.pkt = slices.Clone(lp.pkt)
		ps[i] = lp
	}
	return ps
}

func checkLanes(t *testing.T, e *Engine, k *Key, ps []lanePacket, decrypt bool) {
	t.Helper()
	payloads := make([][]byte, len(ps))
	for i, p := range ps {
		payloads[i] = p.pkt[p.off : p.off+p.n]
	}
	if decrypt {
		e.Decrypt(k, payloads)
	} else {
		e.Encrypt(k, payloads)
	}
	for i, p := range ps {
		if !bytes.Equal(p.pkt, p.want) {
			dir := "Encrypt"
			if decrypt {
				dir = "Decrypt"
			}
			t.Fatalf("%s, batch of %d: lane %d (length %d at offset %d) differs from the scalar cipher:\n got %x\nwant %x",
				dir, len(ps), i, p.n, p.off, p.pkt, p.want)
		}
	}
}

// TestEngineDifferential compares every engine lane by lane with the scalar
// cipher: every batch size from 1 to the width (and past it), every
// payload length, payloads at arbitrary offsets of their packet, both
// directions. Bytes around each payload must stay untouched.
func TestEngineDifferential(t *testing.T) {
	runEngines(t, func(t *testing.T, e *Engine) {
		rng := rand.New(rand.NewPCG(13, uint64(e.Lanes())))
		var pools []*lanePool
		var keys []*Key
		cw := make([]byte, CWSize)
		for range 3 {
			for i := range cw {
				cw[i] = byte(rng.Uint32())
			}
			k := mustKey(t, cw)
			keys = append(keys, k)
			pools = append(pools, newLanePool(rng, k))
		}
		sizes := []int{e.Lanes() + 1, 2*e.Lanes() + 7}
		for n := 1; n <= e.Lanes(); n++ {
			sizes = append(sizes, n)
		}
		for i, n := range sizes {
			k, pool := keys[i%len(keys)], pools[i%len(keys)]
			for _, decrypt := range []bool{true, false} {
				checkLanes(t, e, k, pool.take(n, decrypt), decrypt)
			}
		}
	})
}

func TestEngineNoAlloc(t *testing.T) {
	k := mustKey(t, lengthTableCW)
	runEngines(t, func(t *testing.T, e *Engine) {
		payloads := make([][]byte, e.Lanes()+3)
		for i := range payloads {
			payloads[i] = make([]byte, i%(maxPayload+1))
		}
		if n := testing.AllocsPerRun(5, func() { e.Decrypt(k, payloads); e.Encrypt(k, payloads) }); n != 0 {
			t.Errorf("%v allocations per call, want 0", n)
		}
	})
}

func TestEngineLongPayloadPanics(t *testing.T) {
	k := mustKey(t, lengthTableCW)
	e, err := NewEngine(0)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if recover() == nil {
			t.Error("no panic for a 185-byte payload")
		}
	}()
	e.Decrypt(k, [][]byte{make([]byte, maxPayload+1)})
}

// TestKeyShared uses one Key from several goroutines, each with its own
// Engine, as the pipeline does; run with -race.
func TestKeyShared(t *testing.T) {
	k := mustKey(t, lengthTableCW)
	vs := readLengthTable(t, "generated_libdvbcsa_all_lengths.txt")
	done := make(chan error)
	for g := range 4 {
		go func() {
			e, err := NewEngine(Available()[g%len(Available())])
			if err != nil {
				done <- err
				return
			}
			for range 5 {
				batch := make([][]byte, len(vs))
				for i, v := range vs {
					batch[i] = slices.Clone(v.scrambled)
				}
				e.Decrypt(k, batch)
				for i, v := range vs {
					if !bytes.Equal(batch[i], v.clear) {
						done <- fmt.Errorf("%v: length %d wrong", e, len(v.clear))
						return
					}
				}
				p := slices.Clone(vs[100].scrambled)
				k.Decrypt(p)
				if !bytes.Equal(p, vs[100].clear) {
					done <- fmt.Errorf("scalar Decrypt wrong")
					return
				}
			}
			done <- nil
		}()
	}
	for range 4 {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}

// missingFeatures names the x86 features kernel k needs that this CPU lacks, for the message of
// a skipped test (the kernels that need features are the amd64 ones; their ids say which).
func missingFeatures(k *kernel) string {
	x := &cpu.X86
	type feature struct {
		name string
		has  bool
	}
	var need []feature
	switch {
	case strings.HasPrefix(k.id, "avx512"):
		need = []feature{{"AVX2", x.HasAVX2}, {"AVX512F", x.HasAVX512F}, {"AVX512BW", x.HasAVX512BW},
			{"AVX512VL", x.HasAVX512VL}, {"AVX512VBMI", x.HasAVX512VBMI}}
	case strings.HasPrefix(k.id, "avx2"):
		need = []feature{{"AVX2", x.HasAVX2}}
	}
	var missing []string
	for _, f := range need {
		if !f.has {
			missing = append(missing, f.name)
		}
	}
	if len(missing) == 0 {
		return "feature turned off (GODEBUG)"
	}
	return strings.Join(missing, ", ")
}

// packetRun is a run of 188-byte packets in one buffer, as the pipeline
// holds them, with one payload per packet: 184 bytes after the header, or
// a shorter one at the packet's end (after an adaptation field).
type packetRun struct {
	buf      []byte
	payloads [][]byte
	want     []byte // buf as the scalar cipher leaves it
}

// newPacketRun takes count packets of pool, from index first on, copied
// into one buffer.
func newPacketRun(pool []lanePacket, first, count int) packetRun {
	r := packetRun{buf: make([]byte, 188*count), want: make([]byte, 188*count)}
	for i := range count {
		lp := pool[(first+i)%len(pool)]
		pkt := r.buf[188*i : 188*(i+1)]
		copy(pkt, lp.pkt)
		copy(r.want[188*i:], lp.want)
		r.payloads = append(r.payloads, pkt[lp.off:lp.off+lp.n])
	}
	return r
}

// directPool returns packets for TestEngineMostlyFull: three in four carry
// a whole 184-byte payload, the others a payload of 8 to 183 bytes at the
// packet's end, every length at least once; each with the scalar cipher's
// result in the given direction.
func directPool(rng *rand.Rand, k *Key, decrypt bool) []lanePacket {
	var pool []lanePacket
	add := func(n int) {
		pkt := make([]byte, 188)
		for j := range pkt {
			pkt[j] = byte(rng.Uint32())
		}
		off := 188 - n
		want := slices.Clone(pkt)
		if decrypt {
			k.Decrypt(want[off:])
		} else {
			k.Encrypt(want[off:])
		}
		pool = append(pool, lanePacket{pkt: pkt, off: off, n: n, want: want})
	}
	for n := 8; n < maxPayload; n++ {
		add(n)
		for range 3 {
			add(maxPayload)
		}
	}
	rng.Shuffle(len(pool), func(i, j int) { pool[i], pool[j] = pool[j], pool[i] })
	return pool
}

// TestEngineMostlyFull compares every engine lane by lane with the scalar
// cipher on runs of packets as a stream has them: mostly whole 184-byte
// payloads, which the AVX2 kernel deciphers in place through their
// addresses, between shorter ones (every length 8..183, residues and lanes
// with fewer full blocks than the others), in batches of 1 to 2×Lanes+1
// payloads. Every byte of the packets outside the payloads must stay as it
// was, and a batch must not write to the payloads of the batch before.
func TestEngineMostlyFull(t *testing.T) {
	runEngines(t, func(t *testing.T, e *Engine) {
		rng := rand.New(rand.NewPCG(17, uint64(e.Lanes())))
		k := mustKey(t, []byte{0x9a, 0x3b, 0x01, 0xf7, 0x50, 0x22, 0xe4, 0x8c})
		sizes := []int{e.Lanes(), e.Lanes() + 1, 2*e.Lanes() + 1}
		for n := 1; n < e.Lanes(); n++ {
			if !testing.Short() || n < 9 || n%31 == 0 || n > e.Lanes()-9 {
				sizes = append(sizes, n)
			}
		}
		for _, decrypt := range []bool{true, false} {
			pool := directPool(rng, k, decrypt)
			var prev packetRun
			for i, n := range sizes {
				r := newPacketRun(pool, 7*i, n)
				if decrypt {
					e.Decrypt(k, r.payloads)
				} else {
					e.Encrypt(k, r.payloads)
				}
				for p := range n {
					got, want := r.buf[188*p:188*(p+1)], r.want[188*p:188*(p+1)]
					if !bytes.Equal(got, want) {
						t.Fatalf("decrypt=%v, batch of %d: packet %d (payload of %d bytes) differs from the scalar cipher:\n got %x\nwant %x",
							decrypt, n, p, len(r.payloads[p]), got, want)
					}
				}
				if prev.buf != nil && !bytes.Equal(prev.buf, prev.want) {
					t.Fatalf("decrypt=%v: a batch of %d changed the packets of the batch before it", decrypt, n)
				}
				prev = r
			}
		}
	})
}

// TestEngineLongPayloadKeepsOthers checks that a batch refused for a
// payload longer than 184 bytes leaves the payloads before it in the call
// as they were, and that the engine, used again, writes only the new
// payloads.
func TestEngineLongPayloadKeepsOthers(t *testing.T) {
	k := mustKey(t, lengthTableCW)
	runEngines(t, func(t *testing.T, e *Engine) {
		a, b := make([]byte, maxPayload), make([]byte, maxPayload)
		for i := range a {
			a[i], b[i] = byte(i), byte(3*i)
		}
		wantA, wantB := slices.Clone(a), slices.Clone(b)
		func() {
			defer func() {
				if recover() == nil {
					t.Error("no panic for a 185-byte payload")
				}
			}()
			e.Decrypt(k, [][]byte{a, b, make([]byte, maxPayload+1)})
		}()
		if !bytes.Equal(a, wantA) || !bytes.Equal(b, wantB) {
			t.Fatal("the refused batch changed the payloads before the long one")
		}
		c := make([]byte, 100)
		wantC := slices.Clone(c)
		k.Decrypt(wantC)
		e.Decrypt(k, [][]byte{c})
		if !bytes.Equal(a, wantA) || !bytes.Equal(b, wantB) {
			t.Fatal("the batch after a refused one changed the refused batch's payloads")
		}
		if !bytes.Equal(c, wantC) {
			t.Fatal("the batch after a refused one: Decrypt wrong")
		}
	})
}
