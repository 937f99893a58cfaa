package csa

import (
	"encoding/binary"
	"slices"
	"strconv"
	"unsafe"
)

// maxBlocks is the number of 8-byte columns of a 184-byte payload.
const maxBlocks = maxPayload / 8

// A kernel is one implementation of the bitsliced cipher at one engine
// width. Kernels register themselves from the file that holds them: the
// portable Go kernels from kernel.go for every GOARCH, the SIMD ones from
// their per-GOARCH file. [NewEngine], [Available] and [Engine.String] read
// the table; nothing else in the package knows which kernels exist.
//
// Adding a width or an architecture is one file that implements
// kernelFuncs and registers the kernel (with, for assembly, its target in
// the generator under _asm): kernel_fake_test.go registers a 512-lane
// kernel that way, and every engine test runs it.
type kernel struct {
	id    string // names it in tests and benchmarks: generic64, avx2_256
	name  string // names it in [Engine.String]: generic, AVX2, AVX-512
	lanes int    // the engine width it serves
	// word is the number of lanes one call of its stream functions covers.
	// The batch holds lanes rounded up to a multiple of word, so a kernel
	// may serve a width narrower than its word, its calls running part
	// full.
	word int
	// rank orders kernels by speed per payload on the CPUs that run them:
	// a width with several kernels gets the highest-ranked one this CPU
	// runs, and NewEngine(0) the highest-ranked of all.
	rank int
	// supported reports whether this CPU runs the kernel; nil means any
	// CPU. It is asked at each NewEngine, so tests can turn features off.
	supported func() bool
	// newFuncs returns the kernel's functions with scratch state for a
	// batch of capacity lanes.
	newFuncs func(capacity int) kernelFuncs
	// choice, if set, says which variant of itself the kernel chose for
	// this CPU and why ([Engine.Choice]).
	choice func() string
}

// kernelFuncs are what a kernel supplies to the engine, bound to its
// scratch state; the engine does the rest (gathering payloads into
// columns, the order of the columns, the CBC chain, writing back). Slices
// of lanes are at least the kernel's word long and hold one uint64 per
// lane: byte i of an 8-byte block in bits 8i..8i+7.
type kernelFuncs interface {
	// streamInit loads the key and runs the 32 initialisation rounds of the
	// stream cipher of word lanes, lane l with IV iv[l].
	streamInit(k *Key, iv []uint64)
	// streamXOR XORs the next 8 keystream bytes of each lane into col[l].
	streamXOR(col []uint64)
	// blockDecrypt and blockEncrypt run the block cipher on the first n
	// lanes of in into out; lanes past n, up to the kernel's own grouping,
	// may be computed too, from whatever in holds there.
	blockDecrypt(k *Key, in, out []uint64, n int)
	blockEncrypt(k *Key, in, out []uint64, n int)
	// wipe zeroes the scratch state: the stream cipher registers and
	// planes hold the key and keystream of the last batch, the block
	// cipher rows its last blocks.
	wipe()
}

// directFuncs are what a kernel supplies, beside its kernelFuncs, to run a
// batch without copying it: its assembly reads the 8-byte blocks from the
// payloads and writes the results to them, in the passes that transpose or
// chain them. Lane l's bytes start at the address ptrs[l] (see
// batch.ptrs), block c at ptrs[l]+8c, and every lane of the first n,
// rounded up to the kernel's grouping, or of the kernel's word for the
// stream cipher, is read and written: the engine points lanes without a
// payload of their own at scratch space. A kernel offers them only where
// one stream cipher call covers the whole batch (its word is the batch
// capacity).
type directFuncs interface {
	// streamInitFrom writes block 0 of each lane to iv[l] and runs
	// streamInit with it.
	streamInitFrom(k *Key, ptrs []uintptr, iv []uint64)
	// streamXORFrom writes to col[l] block off/8 of lane l XORed with the
	// lane's next 8 keystream bytes.
	streamXORFrom(ptrs []uintptr, off int, col []uint64)
	// storeDecrypted writes to block c the plaintext out[l], XORed with
	// next[l] where full[l] > c+1.
	storeDecrypted(out, next []uint64, full []uint8, ptrs []uintptr, c, n int)
	// chainToEncrypt reads block c of each lane into col[l] and writes to
	// in[l] the block cipher input: col[l], XORed with next[l] where
	// full[l] > c+1.
	chainToEncrypt(ptrs []uintptr, next []uint64, full []uint8, c int, col, in []uint64, n int)
	// mergeEncrypted sets col[l] to out[l] where full[l] > c.
	mergeEncrypted(out []uint64, full []uint8, c int, col []uint64, n int)
	// storeColumn writes col[l] to block c of each lane.
	storeColumn(col []uint64, ptrs []uintptr, c, n int)
}

func (k *kernel) ok() bool { return k.supported == nil || k.supported() }

// kernels is the table of registered kernels.
var kernels []*kernel

// register adds k to the table; it is called from init functions.
func register(k *kernel) {
	if k.lanes <= 0 || k.word <= 0 || k.lanes%8 != 0 {
		panic("csa: kernel " + k.id + ": bad width")
	}
	kernels = append(kernels, k)
}

// kernelFor returns the highest-ranked kernel this CPU runs for a width,
// or nil; lanes 0 asks for the highest-ranked of all.
func kernelFor(lanes int) *kernel {
	var best *kernel
	for _, k := range kernels {
		if (lanes == 0 || k.lanes == lanes) && k.ok() && (best == nil || k.rank > best.rank) {
			best = k
		}
	}
	return best
}

// availableLanes lists the widths of the kernels this CPU runs, ascending.
func availableLanes() []int {
	var ls []int
	for _, k := range kernels {
		if k.ok() && !slices.Contains(ls, k.lanes) {
			ls = append(ls, k.lanes)
		}
	}
	slices.Sort(ls)
	return ls
}

// batch is the payload side of a bitsliced batch, shared by every kernel:
// it gathers up to its capacity of payloads into per-lane blocks and
// writes them back. Column-major storage keeps each column's lanes
// contiguous, as the transposes want them.
type batch struct {
	blocks  [maxBlocks][]uint64 // blocks[c][l]: column c of lane l, byte i in bits 8i..8i+7
	payload [][]byte
	full    []uint8 // number of full 8-byte blocks of each lane
	n       int     // lanes in use
	cols    int     // columns any lane touches, residue included
	maxFull int     // largest full-block count

	// For kernels with directFuncs, the engine reads and writes the
	// payloads through ptrs: ptrs[l] is the address of lane l's payload
	// when it is a whole 184 bytes, and otherwise of the lane's slot of
	// scratch, 184 bytes, into which a shorter payload is copied and out
	// of which it is copied back (short payloads are rare: those after an
	// adaptation field). So the kernels may read and write all 184 bytes
	// of every lane. Addresses held as uintptr do not keep the payloads
	// alive for the garbage collector: payload does, from fillDirect to
	// the end of the batch, and the payloads are on the heap because
	// payload holds them (Go's heap objects do not move). Between batches
	// every ptrs[l] points at its scratch slot, so that no address of a
	// payload outlives its batch.
	ptrs    []uintptr
	scratch []byte
}

// newBatch returns a batch of capacity lanes, with the pointer table and
// scratch space of the direct path if direct is set.
func newBatch(capacity int, direct bool) batch {
	b := batch{payload: make([][]byte, capacity), full: make([]uint8, capacity)}
	mem := make([]uint64, maxBlocks*capacity)
	for c := range b.blocks {
		b.blocks[c] = mem[c*capacity : (c+1)*capacity : (c+1)*capacity]
	}
	if direct {
		b.ptrs = make([]uintptr, capacity)
		b.scratch = make([]byte, capacity*maxPayload)
		for l := range b.ptrs {
			b.ptrs[l] = b.scratchAddr(l)
		}
	}
	return b
}

// wipe zeroes every byte of payload the batch holds (columns and
// scratch), drops its payload references and points every lane at its
// scratch slot, as newBatch leaves it.
func (b *batch) wipe() {
	for _, col := range b.blocks {
		clear(col)
	}
	clear(b.payload)
	clear(b.full)
	clear(b.scratch)
	for l := range b.ptrs {
		b.ptrs[l] = b.scratchAddr(l)
	}
	b.n, b.cols, b.maxFull = 0, 0, 0
}

// scratchAddr returns the address of lane l's scratch slot.
func (b *batch) scratchAddr(l int) uintptr {
	return uintptr(unsafe.Pointer(&b.scratch[l*maxPayload]))
}

// fillDirect is fill for the direct path: instead of copying the blocks
// into columns it points ptrs at the payloads, copying those shorter than
// 184 bytes into scratch.
func (b *batch) fillDirect(payloads [][]byte, width int) [][]byte {
	b.n, b.cols, b.maxFull = 0, 0, 0
	for len(payloads) > 0 && b.n < width {
		p := payloads[0]
		payloads = payloads[1:]
		if len(p) > maxPayload {
			b.releaseLanes()
			panic("csa: payload longer than " + strconv.Itoa(maxPayload) + " bytes")
		}
		if len(p) < 8 {
			continue
		}
		l := b.n
		b.n++
		full := len(p) / 8
		if full == maxBlocks {
			b.ptrs[l] = uintptr(unsafe.Pointer(&p[0]))
		} else {
			copy(b.scratch[l*maxPayload:], p)
		}
		cols := (len(p) + 7) / 8
		b.payload[l], b.full[l] = p, uint8(full)
		b.cols, b.maxFull = max(b.cols, cols), max(b.maxFull, full)
	}
	return payloads
}

// releaseLanes points the lanes in use back at their scratch slots.
func (b *batch) releaseLanes() {
	for l, p := range b.payload[:b.n] {
		if len(p) == maxPayload {
			b.ptrs[l] = b.scratchAddr(l)
		}
	}
}

// copyBack copies the payloads shorter than 184 bytes out of their scratch
// slots: their full blocks, or with whole set all their bytes.
func (b *batch) copyBack(whole bool) {
	for l, p := range b.payload[:b.n] {
		if len(p) == maxPayload {
			continue
		}
		n := len(p)
		if !whole {
			n = n / 8 * 8
		}
		copy(p[:n], b.scratch[l*maxPayload:])
	}
}

// fill takes payloads into lanes until width lanes are used or payloads
// runs out, and returns the payloads not taken. Payloads shorter than a
// block need no work and take no lane.
func (b *batch) fill(payloads [][]byte, width int) [][]byte {
	b.n, b.cols, b.maxFull = 0, 0, 0
	for len(payloads) > 0 && b.n < width {
		p := payloads[0]
		payloads = payloads[1:]
		if len(p) > maxPayload {
			panic("csa: payload longer than " + strconv.Itoa(maxPayload) + " bytes")
		}
		if len(p) < 8 {
			continue
		}
		l := b.n
		b.n++
		full := len(p) / 8
		if full == maxBlocks {
			// The common case, a whole payload, with constant bounds.
			a := (*[maxPayload]byte)(p)
			for off := 0; off+8 <= maxPayload; off += 8 {
				b.blocks[off/8][l] = binary.LittleEndian.Uint64(a[off : off+8])
			}
		} else {
			for c := range full {
				b.blocks[c][l] = binary.LittleEndian.Uint64(p[8*c:])
			}
		}
		cols := full
		if len(p)%8 != 0 {
			var tmp [8]byte
			copy(tmp[:], p[8*full:])
			b.blocks[full][l] = binary.LittleEndian.Uint64(tmp[:])
			cols++
		}
		b.payload[l], b.full[l] = p, uint8(full)
		b.cols, b.maxFull = max(b.cols, cols), max(b.maxFull, full)
	}
	return payloads
}

// store writes the lanes back to their payloads and drops the references.
func (b *batch) store() {
	for l, p := range b.payload[:b.n] {
		full := len(p) / 8
		if full == maxBlocks {
			a := (*[maxPayload]byte)(p)
			for off := 0; off+8 <= maxPayload; off += 8 {
				binary.LittleEndian.PutUint64(a[off:off+8], b.blocks[off/8][l])
			}
			continue
		}
		for c := range full {
			binary.LittleEndian.PutUint64(p[8*c:], b.blocks[c][l])
		}
	}
	b.storeResidues()
}

// storeResidues writes back the bytes after the last full block of each
// lane, which only the stream cipher changes, and drops the references.
func (b *batch) storeResidues() {
	for l := range b.n {
		p := b.payload[l]
		if full := len(p) / 8; len(p)%8 != 0 {
			var tmp [8]byte
			binary.LittleEndian.PutUint64(tmp[:], b.blocks[full][l])
			copy(p[8*full:], tmp[:])
		}
		b.payload[l] = nil
	}
}

// storeDecrypted writes the plaintext of column c straight to the
// payloads of the lanes that have a full block c: the block cipher output
// out, XORed with C'_{c+1} where that is the lane's next full block. Column
// c+1 is still ciphertext then, as columns are deciphered in ascending
// order. Writing here saves copying the column back in store.
func (b *batch) storeDecrypted(c int, out []uint64) {
	next := b.blocks[(c+1)%maxBlocks]
	full := b.full[:b.n]
	out, next = out[:len(full)], next[:len(full)]
	for l, f := range full {
		if c >= int(f) {
			continue
		}
		v := out[l]
		if c+1 < int(f) {
			v ^= next[l]
		}
		binary.LittleEndian.PutUint64(b.payload[l][8*c:], v)
	}
}

// chainToEncrypt sets in to the block cipher inputs of column c:
// P_c ^ C'_{c+1}, or P_c for a lane's last full block.
func (b *batch) chainToEncrypt(c int, in []uint64) {
	full := b.full[:b.n]
	col, next := b.blocks[c][:len(full)], b.blocks[(c+1)%maxBlocks][:len(full)]
	in = in[:len(full)]
	for l, f := range full {
		v := col[l]
		if c+1 < int(f) {
			v ^= next[l]
		}
		in[l] = v
	}
}

// storeEncrypted stores the block cipher output of column c for the lanes
// that have a full block c.
func (b *batch) storeEncrypted(c int, out []uint64) {
	full := b.full[:b.n]
	col := b.blocks[c][:len(full)]
	out = out[:len(full)]
	for l, f := range full {
		if c < int(f) {
			col[l] = out[l]
		}
	}
}

// streamXOR runs the stream cipher of every lane: initialised with column
// 0, it XORs its keystream into columns 1 and up, word lanes at a time.
func (e *Engine) streamXOR(k *Key) {
	b, word := &e.b, e.k.word
	for lo := 0; lo < b.n; lo += word {
		e.f.streamInit(k, b.blocks[0][lo:lo+word])
		for c := 1; c < b.cols; c++ {
			e.f.streamXOR(b.blocks[c][lo : lo+word])
		}
	}
}

// decryptDirect is decrypt for kernels with directFuncs, on a batch from
// fillDirect: the stream cipher reads the payloads and leaves its output in
// the columns, and the block cipher's plaintext goes straight to the
// payloads (or scratch, copied back at the end).
func (e *Engine) decryptDirect(k *Key, d directFuncs) {
	b := &e.b
	d.streamInitFrom(k, b.ptrs, b.blocks[0])
	for c := 1; c < b.cols; c++ {
		d.streamXORFrom(b.ptrs, 8*c, b.blocks[c])
	}
	for c := range b.maxFull {
		e.f.blockDecrypt(k, b.blocks[c], e.out, b.n)
		d.storeDecrypted(e.out, b.blocks[(c+1)%maxBlocks], b.full, b.ptrs, c, b.n)
	}
	b.releaseLanes()
	b.copyBack(false)
	b.storeResidues()
}

// encryptDirect is encrypt for kernels with directFuncs, on a batch from
// fillDirect: the block cipher reads the payloads, from the last column to
// the first, into the columns; the residues join them; the stream cipher
// runs on the columns, which are then written to the payloads (or scratch,
// copied back at the end).
func (e *Engine) encryptDirect(k *Key, d directFuncs) {
	b := &e.b
	for c := b.maxFull - 1; c >= 0; c-- {
		d.chainToEncrypt(b.ptrs, b.blocks[(c+1)%maxBlocks], b.full, c, b.blocks[c], e.in, b.n)
		e.f.blockEncrypt(k, e.in, e.out, b.n)
		d.mergeEncrypted(e.out, b.full, c, b.blocks[c], b.n)
	}
	if b.cols > b.maxFull {
		// The residues of the lanes with the most full blocks; those of the
		// others were read with their columns.
		c := b.maxFull
		d.chainToEncrypt(b.ptrs, b.blocks[(c+1)%maxBlocks], b.full, c, b.blocks[c], e.in, b.n)
	}
	e.streamXOR(k)
	for c := range b.cols {
		d.storeColumn(b.blocks[c], b.ptrs, c, b.n)
	}
	b.releaseLanes()
	b.copyBack(true)
	clear(b.payload[:b.n])
}

// decrypt descrambles the lanes of the batch: the stream cipher first,
// then the block cipher column by column. It writes the payloads: the full
// blocks column by column, then the residues.
func (e *Engine) decrypt(k *Key) {
	b := &e.b
	e.streamXOR(k)
	for c := range b.maxFull {
		e.f.blockDecrypt(k, b.blocks[c], e.out, b.n)
		b.storeDecrypted(c, e.out)
	}
	b.storeResidues()
}

// encrypt scrambles the lanes of the batch: the block cipher from the last
// column to the first, so that C'_{c+1} is ready when column c needs it,
// then the stream cipher, then the payloads are written.
func (e *Engine) encrypt(k *Key) {
	b := &e.b
	for c := b.maxFull - 1; c >= 0; c-- {
		b.chainToEncrypt(c, e.in)
		e.f.blockEncrypt(k, e.in, e.out, b.n)
		b.storeEncrypted(c, e.out)
	}
	e.streamXOR(k)
	b.store()
}
