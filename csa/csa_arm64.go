//go:build arm64 && gc && !purego

package csa

// useNEON selects the NEON kernels for 128 and 256 lanes. NEON (Advanced
// SIMD) is part of every ARMv8-A processor, which Go's arm64 port
// requires, so there is nothing to detect; tests clear it to check the
// dispatch.
var useNEON = true

// stream128 is the stream cipher state of 128 lanes for the NEON kernel,
// one 16-byte bit-plane per element, in the layout of stream256 (fixed by
// the generator, csa/_asm/asm.go and neon.go): rings A and B of 42
// nibbles, then X, Y, Z, D, E, F and p, q, r.
type stream128 [stream128Len][2]uint64

const (
	stream128Ring = 42
	stream128B    = stream128Ring * 4
	stream128Len  = 2*stream128Ring*4 + 6*4 + 3
)

// neonTables holds the constants of the NEON block cipher (see
// neonBlockKernel in csa/_asm/neon.go), each row 16 bytes: the S-box in
// rows 0..15, then the bit permutation of the low nibble and of the high
// nibble (already shifted).
type neonTables [18][16]byte

var neonTab = func() (t neonTables) {
	for x := range 256 {
		t[x/16][x%16] = blockSbox[x]
	}
	for n := range 16 {
		t[16][n], t[17][n] = blockPerm(byte(n)), blockPerm(byte(n<<4))
	}
	return t
}()

//go:noescape
func streamInitNEON(s *stream128, iv *[64][2]uint64)

//go:noescape
func streamGenNEON(s *stream128, out *[64][2]uint64)

//go:noescape
func lanesToPlanesNEON(col *[128]uint64, planes *[64][2]uint64)

//go:noescape
func planesToLanesXorNEON(planes *[64][2]uint64, col *[128]uint64)

//go:noescape
func blockDecryptNEON(in, out *[128]uint64, kb *[56]uint64, tab *neonTables, pairs int)

//go:noescape
func blockEncryptNEON(in, out *[128]uint64, kb *[56]uint64, tab *neonTables, pairs int)

// neonKernel is the NEON kernel: the stream cipher of 128 lanes, one bit
// of each lane per register, and the byte-sliced block cipher, 16 lanes
// per register and 32 at a time.
type neonKernel struct {
	st     stream128
	planes [64][2]uint64
}

func newNEONKernel(int) kernelFuncs { return new(neonKernel) }

// wipe zeroes the stream state and planes, which hold the key and
// keystream of the last batch; the block cipher keeps nothing between
// calls but its output.
func (x *neonKernel) wipe() { *x = neonKernel{} }

// reset loads the key into the stream state: A1..A8 and B1..B8 from the
// control word, every other bit zero.
func (x *neonKernel) reset(k *Key) {
	x.st = stream128{}
	for n := range 8 {
		for bit := range 4 {
			a, b := k.bsStream[4*n+bit], k.bsStream[32+4*n+bit]
			x.st[(ringTop+n)*4+bit] = [2]uint64{a, a}
			x.st[stream128B+(ringTop+n)*4+bit] = [2]uint64{b, b}
		}
	}
}

func (x *neonKernel) streamInit(k *Key, iv []uint64) {
	x.reset(k)
	lanesToPlanesNEON((*[128]uint64)(iv), &x.planes)
	streamInitNEON(&x.st, &x.planes)
}

func (x *neonKernel) streamXOR(col []uint64) {
	streamGenNEON(&x.st, &x.planes)
	planesToLanesXorNEON(&x.planes, (*[128]uint64)(col))
}

// blockDecrypt and blockEncrypt run the block cipher 128 lanes per call,
// 32 at a time: up to 31 lanes past n are computed too.
func (x *neonKernel) blockDecrypt(k *Key, in, out []uint64, n int) {
	for lo := 0; lo < n; lo += 128 {
		blockDecryptNEON((*[128]uint64)(in[lo:]), (*[128]uint64)(out[lo:]), &k.bsBlock, &neonTab, (min(n-lo, 128)+31)/32)
	}
}

func (x *neonKernel) blockEncrypt(k *Key, in, out []uint64, n int) {
	for lo := 0; lo < n; lo += 128 {
		blockEncryptNEON((*[128]uint64)(in[lo:]), (*[128]uint64)(out[lo:]), &k.bsBlock, &neonTab, (min(n-lo, 128)+31)/32)
	}
}

// The NEON kernel serves 128 lanes, its register width, and 256 in two
// stream cipher passes. 128 ranks first: the same cost per payload, half
// the batch to fill.
func init() {
	neon := func() bool { return useNEON }
	register(&kernel{id: "neon_128", name: "NEON", lanes: 128, word: 128, rank: 3, supported: neon, newFuncs: newNEONKernel})
	register(&kernel{id: "neon_256", name: "NEON", lanes: 256, word: 128, rank: 2, supported: neon, newFuncs: newNEONKernel})
}
