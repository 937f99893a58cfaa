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

// round advances the state by one round. A and B are the register windows
// one nibble below the current one: A[1..10] are A1..A10 and the new A1 is
// written to A[0]. While initialising, inA and inB are the IV nibbles fed
// into the registers; otherwise they are nil. It returns the two keystream
// bits of the round, high bit first.
//
// Every step reads the old X, Y, Z, D, E, F, p, q, r before it replaces
// them, which is why the S-boxes come last: they overwrite X, Y, Z, p, q in
// place.
func (s *streamRegs[W]) round(A, B *[11][4]W, inA, inB *[4]W) (hi, lo W) {
	o := &s.sb

	// T1 and T2: the register feedback.
	var na, nb [4]W
	for i := range 4 {
		na[i] = A[10][i] ^ o.x[i]
		nb[i] = B[7][i] ^ B[10][i] ^ o.y[i]
	}
	if inA != nil {
		for i := range 4 {
			na[i] ^= s.d[i] ^ inA[i]
			nb[i] ^= inB[i]
		}
	}
	// If p is set, the new B nibble is rotated left by one bit.
	p := o.p
	nb[0], nb[1], nb[2], nb[3] =
		nb[0]^(p&(nb[0]^nb[3])),
		nb[1]^(p&(nb[1]^nb[0])),
		nb[2]^(p&(nb[2]^nb[1])),
		nb[3]^(p&(nb[3]^nb[2]))
	A[0], B[0] = na, nb

	// T3: D = E ^ Z ^ extra, extra being a 4x4 XOR over register B.
	var extra [4]W
	extra[3] = B[3][0] ^ B[6][1] ^ B[7][2] ^ B[9][3]
	extra[2] = B[6][0] ^ B[8][1] ^ B[3][3] ^ B[4][2]
	extra[1] = B[5][3] ^ B[8][2] ^ B[4][0] ^ B[5][1]
	extra[0] = B[9][2] ^ B[6][3] ^ B[3][1] ^ B[8][0]

	// T4: if q is set, F = Z + E + r with carry out to r, else F = E;
	// E takes the old F.
	q, c := o.q, s.r
	for i := range 4 {
		z, e := o.z[i], s.e[i]
		s.d[i] = e ^ z ^ extra[i]
		sum := z ^ c // the sum bit is e ^ sum
		c = z&e | c&(z^e)
		s.e[i] = s.f[i]
		s.f[i] = e ^ (q & sum)
	}
	s.r ^= q & (c ^ s.r)

	streamSboxes(A, o)
	return s.d[3] ^ s.d[2], s.d[1] ^ s.d[0]
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
			s.round(A, B, hi, lo)
		} else {
			s.round(A, B, lo, hi)
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
		hi, lo := s.round(A, B, nil, nil)
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
// which gives the processor many independent lookups.
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

// decrypt deciphers the first groups lane groups with the broadcast round
// keys kb, and leaves R1..R8 in rows 0..7.
func (r *blockRows) decrypt(kb *[56]uint64, groups int) {
	t := &sboxPerm4
	for n := 0; n < 56; n++ {
		k := kb[55-n]
		r2, r3, r4 := r[(1-n)&7][:groups], r[(2-n)&7][:groups], r[(3-n)&7][:groups]
		r6, r7, r8 := r[(5-n)&7][:groups], r[(6-n)&7][:groups], r[(7-n)&7][:groups]
		for g := range groups {
			x := r7[g] ^ k
			lo := t[0][uint8(x)] | t[1][uint8(x>>8)] | t[2][uint8(x>>16)] | t[3][uint8(x>>24)]
			hi := t[0][uint8(x>>32)] | t[1][uint8(x>>40)] | t[2][uint8(x>>48)] | t[3][uint8(x>>56)]
			s, p := lo&0xffffffff|hi<<32, lo>>32|hi&^0xffffffff
			v := r8[g] ^ s
			r8[g] = v // the new R1
			r2[g] ^= v
			r3[g] ^= v
			r4[g] ^= v
			r6[g] ^= p // the new R7
		}
	}
	// After 56 rounds, Rm is in row (m-1-56) mod 8 = m-1: no fix-up needed.
}

// encrypt is the inverse of decrypt.
func (r *blockRows) encrypt(kb *[56]uint64, groups int) {
	t := &sboxPerm4
	for n := 0; n < 56; n++ {
		k := kb[n]
		r1, r3, r4, r5 := r[n&7][:groups], r[(2+n)&7][:groups], r[(3+n)&7][:groups], r[(4+n)&7][:groups]
		r7, r8 := r[(6+n)&7][:groups], r[(7+n)&7][:groups]
		for g := range groups {
			x := r8[g] ^ k
			lo := t[0][uint8(x)] | t[1][uint8(x>>8)] | t[2][uint8(x>>16)] | t[3][uint8(x>>24)]
			hi := t[0][uint8(x>>32)] | t[1][uint8(x>>40)] | t[2][uint8(x>>48)] | t[3][uint8(x>>56)]
			s, p := lo&0xffffffff|hi<<32, lo>>32|hi&^0xffffffff
			v := r1[g]
			r3[g] ^= v // the new R2
			r4[g] ^= v
			r5[g] ^= v
			r7[g] ^= p    // the new R6
			r1[g] = v ^ s // the new R8
		}
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
