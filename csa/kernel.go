package csa

// This file holds the bitsliced cipher, written once for every lane word:
// bit i of a word belongs to lane i, so one boolean operation advances the
// stream cipher of 32 or 64 payloads at once. The block cipher is
// byte-sliced instead: its 8-bit S-box is a table lookup per lane, and the
// XOR network works on eight lanes per uint64.

// word is a lane word of the bitsliced stream cipher.
type word interface{ ~uint32 | ~uint64 }

// sboxOut holds the stream S-box outputs: the combiner registers X, Y, Z
// and the bits p and q.
type sboxOut[W word] struct {
	x, y, z [4]W
	p, q    W
}

// streamRegs is the stream cipher state of a batch, one bit-plane per state
// bit. The shift registers A and B live in rings of 42 nibbles: each round
// writes the new first nibble just below the current ten, so nothing moves;
// after 32 rounds the window has reached the bottom and is copied back up.
// Its rounds, roundInit and roundGen in rounds.go, are generated from the
// round description in csa/_asm/round.go, as the assembly kernels' are.
type streamRegs[W word] struct {
	a, b    [42][4]W // A[n] of the current window is a[w+n-1]
	sb      sboxOut[W]
	d, e, f [4]W
	r       W
}

// ringTop is where the window of the shift registers starts for each
// 32-round call.
const ringTop = 32

// reset loads the key: A1..A8 and B1..B8 from the control word, all other
// state zero.
func (s *streamRegs[W]) reset(k *Key) {
	*s = streamRegs[W]{}
	for n := 0; n < 8; n++ {
		for bit := 0; bit < 4; bit++ {
			s.a[ringTop+n][bit] = W(k.bsStream[4*n+bit])
			s.b[ringTop+n][bit] = W(k.bsStream[32+4*n+bit])
		}
	}
}

// wrap copies the register windows from the bottom of the rings back to
// the top after 32 rounds.
func (s *streamRegs[W]) wrap() {
	copy(s.a[ringTop:], s.a[:10])
	copy(s.b[ringTop:], s.b[:10])
}

// init runs the 32 initialisation rounds with the IV bit-planes iv: plane
// 8*i+b is bit b of IV byte i. Byte i feeds its high nibble into A and its
// low nibble into B, then the other way round, twice.
func (s *streamRegs[W]) init(iv *[64]W) {
	for i := range 32 {
		w := ringTop - 1 - i
		A := (*[11][4]W)(s.a[w : w+11])
		B := (*[11][4]W)(s.b[w : w+11])
		byteIdx := i / 4
		lo := (*[4]W)(iv[8*byteIdx : 8*byteIdx+4])
		hi := (*[4]W)(iv[8*byteIdx+4 : 8*byteIdx+8])
		if i%2 == 0 {
			s.roundInit(A, B, hi, lo)
		} else {
			s.roundInit(A, B, lo, hi)
		}
	}
	s.wrap()
}

// generate produces the next 8 keystream bytes of every lane as bit-planes:
// plane 8*i+b is bit b of byte i. Each round gives two bits, most
// significant first.
func (s *streamRegs[W]) generate(out *[64]W) {
	for i := range 32 {
		w := ringTop - 1 - i
		A := (*[11][4]W)(s.a[w : w+11])
		B := (*[11][4]W)(s.b[w : w+11])
		hi, lo := s.roundGen(A, B)
		bit := 8*(i/4) + 7 - 2*(i%4)
		out[bit&63], out[(bit-1)&63] = hi, lo
	}
	s.wrap()
}

// Block cipher, byte-sliced over eight lanes: byte i of each of the eight
// uint64 rows r1..r8 belongs to lane i. The S-box is looked up per byte;
// the XORs of the round, and the key, apply to all eight lanes at once.

// sboxPerm4[j][x] holds sbox(x) in byte j and blockPerm(sbox(x)) in byte
// 4+j, for j = 0..3. One lookup per lane gives both values already in
// place; four lookups ORed together fill the S-box and permutation results
// of four lanes.
var sboxPerm4 = func() (t [4][256]uint64) {
	for x := range 256 {
		s := blockSbox[x]
		for j := range 4 {
			t[j][x] = uint64(s)<<(8*j) | uint64(blockPerm(s))<<(32+8*j)
		}
	}
	return t
}()

// blockRows is the byte-sliced block cipher state of a batch: rows[j][g]
// holds byte j of the blocks of lanes 8g..8g+7, one lane per byte. The rows
// are a ring: instead of moving R1..R8 along every round, each round writes
// its results into the slot the register leaves, so register Rm of round t
// lives in row (m-1-t) mod 8 when deciphering and (m-1+t) mod 8 when
// enciphering. Every round runs over all lane groups before the next,
// which gives the processor many independent lookups. Its decrypt and
// encrypt, in rounds.go, are generated from the round description in
// csa/_asm/round.go.
type blockRows [8][]uint64

// newBlockRows returns rows for groups lane groups.
func newBlockRows(groups int) blockRows {
	var r blockRows
	mem := make([]uint64, 8*groups)
	for j := range r {
		r[j] = mem[j*groups : (j+1)*groups : (j+1)*groups]
	}
	return r
}

// load byte-slices the first 8*groups lanes of in into the rows.
func (r *blockRows) load(in []uint64, groups int) {
	in = in[:8*groups]
	for g := range groups {
		m := [8]uint64(in[8*g : 8*g+8])
		transposeBytes8(&m)
		for j := range 8 {
			r[j][g] = m[j]
		}
	}
}

// store is the inverse of load: it writes the rows to the first 8*groups
// lanes of out.
func (r *blockRows) store(out []uint64, groups int) {
	out = out[:8*groups]
	for g := range groups {
		var m [8]uint64
		for j := range 8 {
			m[j] = r[j][g]
		}
		transposeBytes8(&m)
		*(*[8]uint64)(out[8*g : 8*g+8]) = m
	}
}

// goKernel is the portable kernel: the stream cipher runs the lanes of a
// batch as the bits of W, 32 (uint32) or 64 (uint64) at a time; the block
// cipher runs eight lanes per uint64, over the whole batch at once.
type goKernel[W word] struct {
	regs   streamRegs[W]
	planes [64]W
	ks     [64]uint64
	rows   blockRows
}

func newGoKernel[W word](capacity int) kernelFuncs {
	return &goKernel[W]{rows: newBlockRows(capacity / 8)}
}

func (g *goKernel[W]) wipe() {
	g.regs, g.planes, g.ks = streamRegs[W]{}, [64]W{}, [64]uint64{}
	for _, row := range g.rows {
		clear(row)
	}
}

func (g *goKernel[W]) streamInit(k *Key, iv []uint64) {
	lanesToPlanes(iv, &g.planes)
	g.regs.reset(k)
	g.regs.init(&g.planes)
}

func (g *goKernel[W]) streamXOR(col []uint64) {
	w := laneBits[W]()
	g.regs.generate(&g.planes)
	planesToLanes(&g.planes, g.ks[:w])
	col = col[:w]
	for l, v := range g.ks[:w] {
		col[l] ^= v
	}
}

func (g *goKernel[W]) blockDecrypt(k *Key, in, out []uint64, n int) {
	groups := (n + 7) / 8
	g.rows.load(in, groups)
	g.rows.decrypt(&k.bsBlock, groups)
	g.rows.store(out, groups)
}

func (g *goKernel[W]) blockEncrypt(k *Key, in, out []uint64, n int) {
	groups := (n + 7) / 8
	g.rows.load(in, groups)
	g.rows.encrypt(&k.bsBlock, groups)
	g.rows.store(out, groups)
}

// The portable kernels run on every GOARCH: 32 lanes in uint32 words, and
// 64, 128 and 256 lanes in uint64 words, 64 lanes per stream cipher pass.
// 64 lanes is the fastest per payload; at 128 and 256 the stream cipher
// simply makes more passes.
func init() {
	register(&kernel{id: "generic32", name: "generic", lanes: 32, word: 32, newFuncs: newGoKernel[uint32]})
	register(&kernel{id: "generic64", name: "generic", lanes: 64, word: 64, rank: 1, newFuncs: newGoKernel[uint64]})
	register(&kernel{id: "generic128", name: "generic", lanes: 128, word: 64, newFuncs: newGoKernel[uint64]})
	register(&kernel{id: "generic256", name: "generic", lanes: 256, word: 64, newFuncs: newGoKernel[uint64]})
}
