// Package csa implements DVB-CSA2, the DVB Common Scrambling Algorithm, for
// the payloads of MPEG transport stream packets.
//
// CSA2 combines a 64-bit block cipher, run in reverse cipher-block chaining
// over the full 8-byte blocks of a payload, with a stream cipher that is
// initialised with the first scrambled block and covers every byte after it.
// The layout follows ETSI ETR 289 as implemented by libdvbcsa, FFdecsa and
// TSDuck, and the package is tested byte for byte against their published
// vectors.
//
// A [Key] scrambles or descrambles one payload at a time with the scalar
// reference cipher. An [Engine] processes many payloads at once with a
// bitsliced kernel (32, 64, 128 or 256 lanes, see [Available]) and produces
// exactly the same bytes; use it for throughput. On amd64 the 128- and
// 256-lane engines run AVX2 assembly, or AVX-512 assembly where the CPU has
// AVX-512 F, BW, VL and VBMI (GODEBUG=cpu.avx512f=off turns that off,
// cpu.avx2=off both). On arm64 they run NEON assembly, which every ARMv8-A
// processor has.
//
// The control word is used as given: all 64 bits take part, and the checksum
// bytes 3 and 7 of "48-bit" control words are never recomputed here.
//
// CSA2 has a 64-bit key and no integrity check: this package reads and
// produces broadcast streams; it protects nothing.
package csa

import (
	"errors"
	"strconv"
)

// CWSize is the size of a DVB-CSA2 control word in bytes.
const CWSize = 8

// maxPayload is the largest payload of a 188-byte TS packet, and the
// largest an [Engine] accepts.
const maxPayload = 184

// KeySizeError is returned by [NewKey] for a control word whose length is
// not [CWSize]. Its value is the length that was given.
type KeySizeError int

func (k KeySizeError) Error() string {
	return "csa: invalid control word size " + strconv.Itoa(int(k))
}

// Key is an expanded DVB-CSA2 control word. It is immutable after [NewKey]
// and safe for concurrent use by multiple goroutines.
type Key struct {
	// cw is the control word as given; the stream cipher loads it directly.
	cw [CWSize]byte
	// kk holds the 56 block cipher round keys in encryption order;
	// decryption walks it backwards.
	kk [56]byte

	// The bitsliced engines need the same key in broadcast form. Expanding
	// it costs a few hundred operations, so it is done once here rather
	// than per batch.

	// bsBlock[i] is kk[i] repeated in every byte: the byte-sliced block
	// cipher XORs it into eight lanes at once.
	bsBlock [56]uint64
	// bsStream[i] is all ones if bit i of the stream cipher's initial
	// register contents is set (see streamKeyBits), all zeros otherwise.
	bsStream [64]uint64
}

// NewKey expands an 8-byte control word. It returns a [KeySizeError] if cw
// is not [CWSize] bytes long.
func NewKey(cw []byte) (*Key, error) {
	if len(cw) != CWSize {
		return nil, KeySizeError(len(cw))
	}
	k := new(Key)
	copy(k.cw[:], cw)
	k.kk = scheduleBlockKey(k.cw)
	for i, b := range k.kk {
		k.bsBlock[i] = uint64(b) * 0x0101010101010101
	}
	k.bsStream = streamKeyBits(k.cw)
	return k, nil
}

// Decrypt descrambles one TS packet payload in place with the scalar
// reference cipher. payload may have any length; DVB-CSA2 leaves payloads
// shorter than 8 bytes clear, so those are returned unchanged. TS payloads
// are at most 184 bytes; longer inputs are processed the same way.
func (k *Key) Decrypt(payload []byte) {
	decryptScalar(k, payload)
}

// Encrypt scrambles one TS packet payload in place; it is the exact inverse
// of [Key.Decrypt]. Payloads shorter than 8 bytes are left clear.
func (k *Key) Encrypt(payload []byte) {
	encryptScalar(k, payload)
}

// Engine scrambles and descrambles batches of payloads with a bitsliced
// kernel that processes Lanes payloads at once, byte for byte the same as
// [Key.Decrypt] and [Key.Encrypt]. An Engine holds scratch state (about
// 80 KB at 256 lanes), so use one per goroutine: it is not safe for
// concurrent use. The stream cipher half of a batch costs the same however
// few lanes are in use, so fill batches to Lanes payloads where the stream
// allows.
type Engine struct {
	lanes   int
	k       *kernel
	f       kernelFuncs
	b       batch
	in, out []uint64    // block cipher input and output of one column
	direct  directFuncs // the kernel's path without copies, or nil
}

// NewEngine returns an engine of the given lane count, one of
// [Available], or 0 for the fastest on this CPU. Widths without a SIMD
// kernel on this CPU run the portable Go kernel.
func NewEngine(lanes int) (*Engine, error) {
	k := kernelFor(lanes)
	if k == nil {
		return nil, errors.New("csa: unsupported lane count " + strconv.Itoa(lanes))
	}
	return newEngine(k), nil
}

// newEngine returns an engine with a given kernel; tests use it to run
// kernels NewEngine would not pick on this CPU.
func newEngine(k *kernel) *Engine {
	capacity := (k.lanes + k.word - 1) / k.word * k.word
	f := k.newFuncs(capacity)
	d, _ := f.(directFuncs)
	if capacity != k.word {
		d = nil
	}
	return &Engine{
		lanes:  k.lanes,
		k:      k,
		f:      f,
		b:      newBatch(capacity, d != nil),
		in:     make([]uint64, capacity),
		out:    make([]uint64, capacity),
		direct: d,
	}
}

// Available returns the lane counts [NewEngine] accepts on this CPU, in
// ascending order: 32, 64, 128 and 256 everywhere.
func Available() []int {
	return availableLanes()
}

// Reset zeroes what the engine keeps of the batches it ran: the stream
// cipher state made from their key, the bytes of their payloads in its
// lanes and scratch, and its references to the payloads. The engine is then
// as a new one, without the allocation: an engine that serves another
// stream, from a pool of spares for example, carries nothing of the last
// one over.
func (e *Engine) Reset() {
	e.b.wipe()
	clear(e.in)
	clear(e.out)
	e.f.wipe()
}

// Lanes returns the number of payloads the engine processes at once.
func (e *Engine) Lanes() int { return e.lanes }

// String describes the engine, for example "csa2: 256 lanes AVX2".
func (e *Engine) String() string {
	return "csa2: " + strconv.Itoa(e.lanes) + " lanes " + e.k.name
}

// Choice says which variant of its kernel the engine runs where the kernel
// chooses one for the CPU, and why, for example "block S-box: blend tree,
// measured 1.15× as fast as the nibble tables on this CPU" for the AVX2
// kernel; it is empty for kernels without variants. The choice is made by
// measurement once per process, the first time such an engine is made.
func (e *Engine) Choice() string {
	if e.k.choice == nil {
		return ""
	}
	return e.k.choice()
}

// Decrypt descrambles payloads in place with key k, Lanes at a time: a call
// of at most Lanes payloads is one batch of the kernel (package batcher
// cuts a stream's payloads that way); a longer call runs one batch per
// Lanes payloads that change. Each payload may be 0 to 184 bytes long, and
// lengths may differ; payloads shorter than 8 bytes are left clear, as in
// [Key.Decrypt], and take no lane. Payloads must not overlap one another.
// A payload longer than 184 bytes is a caller error and panics before any
// payload of its batch is changed.
func (e *Engine) Decrypt(k *Key, payloads [][]byte) { e.run(k, payloads, false) }

// Encrypt scrambles payloads in place with key k; it is the inverse of
// [Engine.Decrypt] and has the same rules.
func (e *Engine) Encrypt(k *Key, payloads [][]byte) { e.run(k, payloads, true) }

// run fills the batch Lanes payloads at a time and runs the engine's kernel over it; the
// direction is chosen once per batch.
func (e *Engine) run(k *Key, payloads [][]byte, encrypt bool) {
	for len(payloads) > 0 {
		switch {
		case encrypt && e.direct != nil:
			payloads = e.b.fillDirect(payloads, e.lanes)
			if e.b.n > 0 {
				e.encryptDirect(k, e.direct)
			}
		case encrypt:
			payloads = e.b.fill(payloads, e.lanes)
			if e.b.n > 0 {
				e.encrypt(k)
			}
		case e.direct != nil:
			payloads = e.b.fillDirect(payloads, e.lanes)
			if e.b.n > 0 {
				e.decryptDirect(k, e.direct)
			}
		default:
			payloads = e.b.fill(payloads, e.lanes)
			if e.b.n > 0 {
				e.decrypt(k)
			}
		}
	}
}
