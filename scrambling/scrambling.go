// Package scrambling puts one interface over the payload scrambling systems of MPEG transport
// streams, so that a pipeline handles every system the same way: DVB-CSA2, DVB-CISSA (AES-128-CBC,
// ETSI TS 103 127), ATIS-IDSA (AES-128 in the DVS-042 / ANSI/SCTE 52 chaining), and the DFC and
// Serpent block ciphers in that same DVS-042 chaining.
//
// A System expands control words into Keys and makes Processors. A Key is immutable and may be
// shared by any number of goroutines; a Processor holds the scratch memory of one goroutine and
// (de)scrambles a batch of payloads in place with one key, without allocating once it is warm;
// Release hands its scratch memory, wiped, to a later Processor of the same system.
// A call of System.Lanes payloads is one pass of the fast paths: a batch of the bitsliced CSA2
// engines, or a CBC pass of the 128-bit block ciphers, which process block i of every payload of
// the pass together. Package batcher cuts a unit of work into such batches.
//
// A payload is the part of a TS packet after its header and adaptation field, 0 to 184 bytes.
// What csa2, dvb-cissa and atis-idsa leave clear follows TSDuck, the reference the project
// checks against; dfc and serpent take the atis-idsa rules with their own cipher:
//
//   - csa2: payloads shorter than 8 bytes stay clear.
//   - dvb-cissa: CBC with the fixed IV "DVBTMCPTAESCISSA", restarted for every payload; the
//     residue (length mod 16) and payloads shorter than 16 bytes stay clear.
//   - atis-idsa, dfc, serpent: CBC with a zero IV over the full blocks; the residue is XORed with
//     the forward cipher of the last ciphertext block, and a payload shorter than one block with
//     the forward cipher of the IV, so every byte is scrambled.
//
// Beside the systems Lookup names, AESECB, NewAESCBC, DESECB and NewDESCBC return the
// descrambler modes a key server sets per key slot (OSCam's DVBAPI CA_SET_DESCR_MODE: DES or
// AES-128, in ECB or CBC, with the slot's IV). They follow tvheadend's software descrambler:
// the whole blocks only, the residue and payloads shorter than a block clear (modes.go says
// where each rule comes from). Lookup does not name them: no DVB scrambling_descriptor value
// signals them in a PMT, and the CBC modes need an IV that only a key server gives.
package scrambling

import (
	"fmt"
	"strings"
	"sync"
)

// System is a payload scrambling system: CSA2, DVB-CISSA, ATIS-IDSA, DFC or Serpent.
type System interface {
	// Name returns the name of the system: "csa2", "dvb-cissa", "atis-idsa", "dfc" or
	// "serpent".
	Name() string
	// KeySizes returns the accepted control-word sizes in bytes, in ascending order.
	KeySizes() []int
	// Lanes returns the most payloads a Processor call processes in one pass: the engine
	// width for csa2, the payloads of one CBC pass for the others. A call with more is
	// processed Lanes payloads at a time.
	Lanes() int
	// MinPayload returns the length of the shortest payload the system changes: shorter
	// payloads stay clear even in a packet marked scrambled (8 for csa2, 16 for dvb-cissa,
	// 1 for the DVS-042 systems, which scramble every byte).
	MinPayload() int
	// NewKey expands a control word. The Key is immutable and safe to share between
	// goroutines. A control word of a size not in KeySizes gives a *KeySizeError.
	NewKey(cw []byte) (Key, error)
	// NewProcessor returns the per-goroutine scratch state that (de)scrambles payloads.
	NewProcessor() Processor
}

// Key is an expanded control word of one System. Its content is opaque.
type Key interface {
	// System returns the system the key belongs to.
	System() System
}

// Processor (de)scrambles batches of payloads in place with one key. It holds scratch memory
// and is not safe for concurrent use: give each goroutine its own.
//
// Any number of payloads may be passed, each 0 to 184 bytes long, and lengths may differ
// within a batch; each payload stands alone (chaining restarts for each one), so how payloads
// are cut into batches does not change the result. Payloads must not overlap one another.
// The block-cipher systems process longer payloads by the same rules; csa2 panics on them, as
// the csa engines do. The Key must come from a System of the same name as the one that made
// the Processor; any other key is a programming error and panics.
type Processor interface {
	// Decrypt descrambles payloads in place with key k.
	Decrypt(k Key, payloads [][]byte)
	// Encrypt scrambles payloads in place with key k; it is the inverse of Decrypt.
	Encrypt(k Key, payloads [][]byte)
}

// Releaser is a Processor whose scratch memory a later NewProcessor of its system may take
// over. Release first zeroes what the processor keeps of its last payloads and key (payload
// bytes, references to the payloads, key streams), so that nothing of one stream reaches the
// next; the processor must not be used after it. The csa2 processors are Releasers: each holds
// an engine of tens of kilobytes, and a process that runs many short streams, such as a batch
// of small recordings, would otherwise allocate and first touch them for each.
type Releaser interface {
	Release()
}

// Release hands p back to its system when p is a [Releaser], and does nothing otherwise. p
// must not be used after.
func Release(p Processor) {
	if r, ok := p.(Releaser); ok {
		r.Release()
	}
}

// KeySizeError reports a control word whose size the system does not accept.
type KeySizeError struct {
	System string // name of the system
	Size   int    // size of the control word given, in bytes
	Sizes  []int  // sizes the system accepts, in bytes
}

// Error says which system refused which size, and what it accepts instead, in bytes and in the
// hex digits a user types.
func (e *KeySizeError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "scrambling: %s: control word of %d bytes, want ", e.System, e.Size)
	for i, n := range e.Sizes {
		switch {
		case i == 0:
		case i == len(e.Sizes)-1:
			b.WriteString(" or ")
		default:
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%d", n)
	}
	b.WriteString(" bytes (")
	for i, n := range e.Sizes {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%d", 2*n)
	}
	b.WriteString(" hex digits)")
	return b.String()
}

// checkKeySize returns a *KeySizeError if n is not one of sizes.
func checkKeySize(name string, sizes []int, n int) error {
	for _, s := range sizes {
		if n == s {
			return nil
		}
	}
	return &KeySizeError{System: name, Size: n, Sizes: append([]int(nil), sizes...)}
}

// names lists the systems in the order Names returns them; csa2 first, as the default.
var names = []string{"csa2", "dvb-cissa", "atis-idsa", "dfc", "serpent"}

// defaultCSA2 is the csa2 system Lookup returns, made on first use: it probes the CPU for the
// fastest engine width. The other systems are stateless values.
var defaultCSA2 = sync.OnceValues(func() (System, error) { return NewCSA2(0) })

// Names returns the names of the systems Lookup knows, csa2 (the default) first.
func Names() []string {
	return append([]string(nil), names...)
}

// Lookup returns the system of the given name, ignoring case. csa2 comes with the fastest
// engine width of this CPU; use NewCSA2 to choose another. Systems are immutable, so every
// call for a name returns the same value.
func Lookup(name string) (System, error) {
	switch strings.ToLower(name) {
	case "csa2":
		return defaultCSA2()
	case "dvb-cissa":
		return dvbCISSA, nil
	case "atis-idsa":
		return atisIDSA, nil
	case "dfc":
		return dfcSystem, nil
	case "serpent":
		return serpentSystem, nil
	}
	return nil, fmt.Errorf("scrambling: unknown system %q, want one of %s", name, strings.Join(names, ", "))
}

// foreignKey panics for a key of another system: a pipeline that mixes keys and processors has
// a bug that no recovery could make right.
func foreignKey(want string, k Key) {
	got := "nil"
	if k != nil {
		if s := k.System(); s != nil {
			got = s.Name()
		} else {
			got = fmt.Sprintf("%T", k)
		}
	}
	panic(fmt.Sprintf("scrambling: %s processor given a %s key", want, got))
}
