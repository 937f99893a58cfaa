package csa

import (
	"encoding/binary"
	"strconv"
)

// maxBlocks is the number of 8-byte columns of a 184-byte payload.
const maxBlocks = maxPayload / 8

// batch is the payload side of a bitsliced batch, shared by every engine:
// it gathers up to 256 payloads into per-lane blocks and writes them back.
// Column-major storage keeps each column's lanes contiguous, as the
// transposes want them.
type batch struct {
	blocks  [maxBlocks][256]uint64 // blocks[c][l]: column c of lane l, byte i in bits 8i..8i+7
	payload [256][]byte
	full    [256]uint8 // number of full 8-byte blocks of each lane
	n       int        // lanes in use
	cols    int        // columns any lane touches, residue included
	maxFull int        // largest full-block count
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
		l := b.n & 255 // no change (b.n < 256 here), but it drops the bounds check on [l]
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
		l &= 255 // no change (l < 256), but it drops the bounds check on [l]
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

// loadRows byte-slices column c of the first 8*groups lanes into r; when
// chain is set it XORs in column c+1 first for the lanes where it is the
// next full block (the encryption chain: P_c ^ C'_{c+1}).
func (b *batch) loadRows(r *blockRows, c, groups int, chain bool) {
	col := &b.blocks[c]
	for g := range groups {
		m := [8]uint64(col[8*g : 8*g+8])
		if chain {
			for i := range 8 {
				if l := 8*g + i; l < b.n && c+1 < int(b.full[l]) {
					m[i] ^= b.blocks[c+1][l]
				}
			}
		}
		transposeBytes8(&m)
		for j := range 8 {
			r[j][g] = m[j]
		}
	}
}

// storeRows writes the block cipher output in r back to column c, for the
// lanes that have a full block c (the others may hold a residue there).
// When chain is set it XORs in column c+1 where that is the lane's next
// full block (the decryption chain: P_c = D(C'_c) ^ C'_{c+1}).
func (b *batch) storeRows(r *blockRows, c, groups int, chain bool) {
	col := &b.blocks[c]
	for g := range groups {
		var m [8]uint64
		for j := range 8 {
			m[j] = r[j][g]
		}
		transposeBytes8(&m)
		for i, v := range m {
			l := 8*g + i
			if l >= b.n || c >= int(b.full[l]) {
				continue
			}
			if chain && c+1 < int(b.full[l]) {
				v ^= b.blocks[c+1][l]
			}
			col[l] = v
		}
	}
}

// storeDecrypted writes the plaintext of column c straight to the
// payloads of the lanes that have a full block c: the block cipher output
// out, XORed with C'_{c+1} where that is the lane's next full block. Column
// c+1 is still ciphertext then, as columns are deciphered in ascending
// order. Writing here saves copying the column back in store.
func (b *batch) storeDecrypted(c int, out *[256]uint64) {
	next := &b.blocks[(c+1)%maxBlocks]
	for l, full := range b.full[:b.n] {
		if c >= int(full) {
			continue
		}
		v := out[l]
		if c+1 < int(full) {
			v ^= next[l]
		}
		binary.LittleEndian.PutUint64(b.payload[l][8*c:], v)
	}
}

// chainToEncrypt sets in to the block cipher inputs of column c:
// P_c ^ C'_{c+1}, or P_c for a lane's last full block.
func (b *batch) chainToEncrypt(c int, in *[256]uint64) {
	col, next := &b.blocks[c], &b.blocks[(c+1)%maxBlocks]
	for l, full := range b.full[:b.n] {
		v := col[l]
		if c+1 < int(full) {
			v ^= next[l]
		}
		in[l] = v
	}
}

// storeEncrypted stores the block cipher output of column c for the lanes
// that have a full block c.
func (b *batch) storeEncrypted(c int, out *[256]uint64) {
	col := &b.blocks[c]
	for l, full := range b.full[:b.n] {
		if c < int(full) {
			col[l] = out[l]
		}
	}
}

// blockDecrypt deciphers every full block of the batch with the portable
// byte-sliced kernel.
func (b *batch) blockDecrypt(k *Key, r *blockRows) {
	groups := (b.n + 7) / 8
	for c := range b.maxFull {
		b.loadRows(r, c, groups, false)
		r.decrypt(&k.bsBlock, groups)
		b.storeRows(r, c, groups, true)
	}
}

// blockEncrypt enciphers every full block of the batch, from the last
// column to the first so that C'_{c+1} is ready when column c needs it.
func (b *batch) blockEncrypt(k *Key, r *blockRows) {
	groups := (b.n + 7) / 8
	for c := b.maxFull - 1; c >= 0; c-- {
		b.loadRows(r, c, groups, true)
		r.encrypt(&k.bsBlock, groups)
		b.storeRows(r, c, groups, false)
	}
}

// bsEngine is the portable bitsliced engine: the lanes of one batch are the
// bits of W, so it runs 32 (uint32) or 64 (uint64) payloads at a time.
type bsEngine[W word] struct {
	regs   streamRegs[W]
	planes [64]W
	ks     [64]uint64
	rows   blockRows
}

// streamXOR initialises the stream cipher with column 0 of lanes lo..lo+w-1
// (w the width of W) and XORs the keystream into columns 1 and up.
func (e *bsEngine[W]) streamXOR(k *Key, b *batch, lo int) {
	w := laneBits[W]()
	lanesToPlanes(b.blocks[0][lo:lo+w], &e.planes)
	e.regs.reset(k)
	e.regs.init(&e.planes)
	for c := 1; c < b.cols; c++ {
		e.regs.generate(&e.planes)
		planesToLanes(&e.planes, e.ks[:w])
		col := b.blocks[c][lo : lo+w]
		for l, v := range e.ks[:w] {
			col[l] ^= v
		}
	}
}

// decrypt descrambles the lanes of b in groups of the width of W.
func (e *bsEngine[W]) decrypt(k *Key, b *batch) {
	w := laneBits[W]()
	for lo := 0; lo < b.n; lo += w {
		e.streamXOR(k, b, lo)
	}
	b.blockDecrypt(k, &e.rows)
}

// encrypt scrambles the lanes of b in groups of the width of W.
func (e *bsEngine[W]) encrypt(k *Key, b *batch) {
	w := laneBits[W]()
	b.blockEncrypt(k, &e.rows)
	for lo := 0; lo < b.n; lo += w {
		e.streamXOR(k, b, lo)
	}
}
