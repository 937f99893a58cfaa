package scrambling

import (
	"encoding/binary"
	"fmt"
	"slices"
)

// blockSize is the block size of every block cipher here: AES, DFC and Serpent.
const blockSize = 16

// passLanes is the Lanes of every block-cipher system: the most payloads one CBC pass
// ciphers, one block of each per step of an encryption pass. Each step's blocks make one
// multi-block call, and the kernels gain little beyond a few dozen blocks per call (32 is the
// widest, the DFC AVX-512 kernel), while more payloads per pass push the payloads the pass walks
// at every step (about 6 KB of TS packets) and its gather buffer out of the L1 cache:
// re-encrypting a stream takes less CPU time in passes of 32 than of 256.
const passLanes = 32

// blockGroup is a block count every multi-block kernel takes whole: the AVX-512 Serpent
// kernel's group of 16, two of AES-NI's groups of 8, one of DFC's 8, 16 or 32-block calls.
// Every multi-block call is rounded up to a multiple of it with spare blocks at the end of the
// gather buffer, whose output is ignored: a 16-block kernel pass costs less than the narrower
// and scalar paths that would otherwise take the last few blocks one by one.
const blockGroup = 16

// padded rounds a number of blocks up to a multiple of blockGroup.
func padded(blocks int) int {
	return (blocks + blockGroup - 1) / blockGroup * blockGroup
}

// multiBlock is a 128-bit block cipher that encrypts and decrypts many independent blocks per
// call, as ECB would: the shape of the fast paths of the dfc, serpent and internal/aesblocks
// packages. dst and src have the same length, a multiple of blockSize, and are the same slice
// or do not overlap.
type multiBlock interface {
	EncryptBlocks(dst, src []byte)
	DecryptBlocks(dst, src []byte)
}

// chainSystem is a 128-bit block cipher in CBC over the full blocks of each payload, restarted
// from a fixed IV for every payload, with one of two rules for the bytes after the last full
// block (and for payloads shorter than a block): leave them clear (DVB-CISSA), or scramble
// them as DVS-042 does (ATIS-IDSA, DFC, Serpent). With ecb, the full blocks are ciphered each
// on its own, with no chaining and no IV (aes-128-ecb), the rest left clear.
type chainSystem struct {
	name  string
	sizes []int
	iv    [blockSize]byte
	// dvs042 selects the DVS-042 (ANSI/SCTE 52) rule: the residue is XORed with the forward
	// cipher of the last ciphertext block, and a payload shorter than a block with the forward
	// cipher of the IV. Otherwise both stay clear.
	dvs042    bool
	ecb       bool
	newCipher func(key []byte) (multiBlock, error)
}

func (s *chainSystem) Name() string    { return s.name }
func (s *chainSystem) KeySizes() []int { return append([]int(nil), s.sizes...) }
func (s *chainSystem) Lanes() int      { return passLanes }

// MinPayload is one block for CBC (and ECB) with a clear residue, one byte for DVS-042
// chaining, whose short-payload rule scrambles payloads under a block too.
func (s *chainSystem) MinPayload() int {
	if s.dvs042 {
		return 1
	}
	return blockSize
}

func (s *chainSystem) NewKey(cw []byte) (Key, error) {
	if err := checkKeySize(s.name, s.sizes, len(cw)); err != nil {
		return nil, err
	}
	c, err := s.newCipher(cw)
	if err != nil {
		return nil, fmt.Errorf("scrambling: %s: %w", s.name, err)
	}
	k := &chainKey{sys: s, c: c}
	if s.dvs042 {
		// Every short payload is XORed with the same pad, so compute it once per key.
		c.EncryptBlocks(k.shortPad[:], s.iv[:])
	}
	return k, nil
}

func (s *chainSystem) NewProcessor() Processor {
	return &chainProcessor{sys: s}
}

// chainKey is an expanded key of a chainSystem.
type chainKey struct {
	sys      *chainSystem
	c        multiBlock
	shortPad [blockSize]byte // E_K(IV), for DVS-042 payloads shorter than a block
}

func (k *chainKey) System() System { return k.sys }

// chainProcessor holds the gather buffer of one goroutine. Payloads are not contiguous in
// memory, but the multi-block paths want contiguous blocks: each step copies the blocks that
// can be ciphered together into buf, ciphers them in one call, and copies them back.
type chainProcessor struct {
	sys   *chainSystem
	buf   []byte
	order [][]byte // the payloads of an encryption pass in the order of their lanes
}

func (p *chainProcessor) key(k Key) *chainKey {
	ck, ok := k.(*chainKey)
	if !ok || ck.sys.name != p.sys.name {
		foreignKey(p.sys.name, k)
	}
	return ck
}

// scratch returns p.buf with at least n bytes. It grows only when a batch needs more than
// any batch before it, so a warm processor does not allocate.
func (p *chainProcessor) scratch(n int) []byte {
	if len(p.buf) < n {
		p.buf = make([]byte, n)
	}
	return p.buf[:n]
}

// Encrypt scrambles in CBC. The blocks of one payload depend on each other, but block i of
// different payloads do not: step i enciphers block i of every payload long enough in one
// multi-block call. With DVS-042, the residue of a payload of i full blocks joins step i: its
// key stream is the encryption of block i-1, the ciphertext step i-1 has just produced.
func (p *chainProcessor) Encrypt(k Key, payloads [][]byte) {
	key := p.key(k)
	if key.sys.ecb {
		p.blocks(key, payloads, true)
		return
	}
	// A batcher's batch is one pass; a longer call is cut here, one pass at a time.
	for len(payloads) > 0 {
		n := min(len(payloads), passLanes)
		p.encrypt(key, payloads[:n])
		payloads = payloads[n:]
	}
}

// steps is the number of CBC steps payload b takes part in when scrambling: one per full
// block, and with DVS-042 one more for a residue after at least one full block.
func (s *chainSystem) steps(b []byte) int {
	nb := len(b) / blockSize
	if s.dvs042 && nb > 0 && len(b)%blockSize != 0 {
		return nb + 1
	}
	return nb
}

func (p *chainProcessor) encrypt(key *chainKey, payloads [][]byte) {
	sys := key.sys
	// Lane j of the gather buffer belongs to payload order[j] at every step. Ordered by
	// descending step count, the payloads of each step are a prefix of those of the step
	// before, so lane j keeps the ciphertext block its payload chains into next: after each
	// step one pass over the lanes writes the ciphertext out and XORs in the next plaintext
	// block, with no gathering of the previous block.
	order := append(p.order[:0], payloads...)
	p.order = order
	byStepsDown := func(a, b []byte) int { return sys.steps(b) - sys.steps(a) }
	if !slices.IsSortedFunc(order, byStepsDown) { // most batches are all full payloads
		slices.SortFunc(order, byStepsDown)
	}
	m := len(order)
	for m > 0 && sys.steps(order[m-1]) == 0 {
		m--
	}
	buf := p.scratch(padded(m) * blockSize)
	for j, b := range order[:m] {
		xor16(buf[j*blockSize:], b[:blockSize], sys.iv[:])
	}
	le := binary.LittleEndian
	for i := 0; m > 0; i++ {
		// Lanes m and beyond hold earlier steps' blocks or zeros; they only pad the call.
		call := buf[:padded(m)*blockSize]
		key.c.EncryptBlocks(call, call)
		lo, next := i*blockSize, (i+1)*blockSize
		lanes := buf[:m*blockSize]
		for j, b := range order[:m] {
			d := (*[blockSize]byte)(lanes[j*blockSize:])
			c0, c1 := le.Uint64(d[:8]), le.Uint64(d[8:])
			if len(b) >= next+blockSize {
				// The common case: write C_i out and start the next block. One array
				// pointer covers both blocks, so one bounds check, not one per word.
				two := (*[2 * blockSize]byte)(b[lo:])
				le.PutUint64(two[:8], c0)
				le.PutUint64(two[8:16], c1)
				le.PutUint64(d[:8], c0^le.Uint64(two[16:24]))
				le.PutUint64(d[8:], c1^le.Uint64(two[24:]))
				continue
			}
			if len(b) < next {
				// The DVS-042 residue step: d is the key stream.
				xorInto(b[lo:], d[:len(b)-lo])
				continue
			}
			// The last full block: d stays C_i, the input of the residue step if the
			// payload has one.
			out := (*[blockSize]byte)(b[lo:])
			le.PutUint64(out[:8], c0)
			le.PutUint64(out[8:], c1)
		}
		for m > 0 && sys.steps(order[m-1]) <= i+1 {
			m--
		}
	}
	clear(order) // drop the references to the caller's payloads
	if sys.dvs042 {
		p.short(key, payloads)
	}
}

// Decrypt descrambles in CBC. Unlike encryption, every block of every payload can be decrypted
// independently (plaintext block i is D(C_i) XOR C_{i-1}), so all full blocks of the batch are
// gathered and decrypted in a single call. With DVS-042 the residues are done first, while the
// last ciphertext blocks they need are still in place.
func (p *chainProcessor) Decrypt(k Key, payloads [][]byte) {
	key := p.key(k)
	if key.sys.ecb {
		p.blocks(key, payloads, false)
		return
	}
	for len(payloads) > 0 {
		n := min(len(payloads), passLanes)
		p.decrypt(key, payloads[:n])
		payloads = payloads[n:]
	}
}

func (p *chainProcessor) decrypt(key *chainKey, payloads [][]byte) {
	sys := key.sys
	if sys.dvs042 {
		p.residues(key, payloads)
		p.short(key, payloads)
	}
	total := 0
	for _, b := range payloads {
		total += len(b) / blockSize * blockSize
	}
	if total == 0 {
		return
	}
	all := p.scratch(padded(total/blockSize) * blockSize)
	buf := all[:total]
	off := 0
	for _, b := range payloads {
		n := len(b) / blockSize * blockSize
		off += copy(buf[off:], b[:n])
	}
	key.c.DecryptBlocks(all, all)
	off = 0
	iv := sys.iv[:]
	for _, b := range payloads {
		n := len(b) / blockSize * blockSize
		d := buf[off : off+n]
		off += n
		// Backwards, so that block j-1 of b still holds the ciphertext that block j needs.
		for j := n - blockSize; j > 0; j -= blockSize {
			xor16(b[j:], d[j:], b[j-blockSize:j])
		}
		if n > 0 {
			xor16(b, d, iv)
		}
	}
}

// blocks ciphers the full blocks of every payload each on its own (ECB): they are gathered
// into one multi-block call per pass of passLanes payloads and scattered back.
func (p *chainProcessor) blocks(key *chainKey, payloads [][]byte, encrypt bool) {
	for len(payloads) > 0 {
		n := min(len(payloads), passLanes)
		pass := payloads[:n]
		payloads = payloads[n:]
		total := 0
		for _, b := range pass {
			total += len(b) / blockSize * blockSize
		}
		if total == 0 {
			continue
		}
		all := p.scratch(padded(total/blockSize) * blockSize)
		off := 0
		for _, b := range pass {
			off += copy(all[off:], b[:len(b)/blockSize*blockSize])
		}
		if encrypt {
			key.c.EncryptBlocks(all, all)
		} else {
			key.c.DecryptBlocks(all, all)
		}
		off = 0
		for _, b := range pass {
			off += copy(b[:len(b)/blockSize*blockSize], all[off:])
		}
	}
}

// residues XORs the residue of every payload that has one and at least one full block with
// E_K(last full ciphertext block), the DVS-042 rule, in one multi-block call.
func (p *chainProcessor) residues(key *chainKey, payloads [][]byte) {
	buf := p.scratch(padded(len(payloads)) * blockSize)
	m := 0
	for _, b := range payloads {
		if n := len(b) / blockSize * blockSize; n > 0 && len(b) > n {
			*(*[blockSize]byte)(buf[m*blockSize:]) = [blockSize]byte(b[n-blockSize:])
			m++
		}
	}
	if m == 0 {
		return
	}
	call := buf[:padded(m)*blockSize]
	key.c.EncryptBlocks(call, call)
	m = 0
	for _, b := range payloads {
		if n := len(b) / blockSize * blockSize; n > 0 && len(b) > n {
			xorInto(b[n:], buf[m*blockSize:(m+1)*blockSize])
			m++
		}
	}
}

// short XORs every payload shorter than a block with E_K(IV), the DVS-042 rule for payloads
// without a full block. The operation is its own inverse.
func (p *chainProcessor) short(key *chainKey, payloads [][]byte) {
	for _, b := range payloads {
		if len(b) < blockSize {
			xorInto(b, key.shortPad[:])
		}
	}
}

// xor16 sets dst[:16] = a[:16] XOR b[:16]. dst may be a or b.
func xor16(dst, a, b []byte) {
	_, _, _ = dst[15], a[15], b[15]
	le := binary.LittleEndian
	x0 := le.Uint64(a) ^ le.Uint64(b)
	x1 := le.Uint64(a[8:]) ^ le.Uint64(b[8:])
	le.PutUint64(dst, x0)
	le.PutUint64(dst[8:], x1)
}

// xorInto XORs pad into dst, for len(dst) bytes (at most len(pad)).
func xorInto(dst, pad []byte) {
	pad = pad[:len(dst)]
	for i := range dst {
		dst[i] ^= pad[i]
	}
}
