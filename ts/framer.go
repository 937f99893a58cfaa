package ts

import (
	"bytes"
	"errors"
	"io"
	"strconv"
	"sync"
)

// Framing is the layout of packets in a stream: plain 188-byte packets, 192-byte packets with a
// 4-byte prefix before the sync byte (M2TS/BDAV time codes), or 204-byte packets with a 16-byte
// trailer after the packet (Reed-Solomon parity bytes).
type Framing struct {
	Size   int // bytes per packet unit in the stream: 188, 192 or 204
	Prefix int // bytes before the sync byte: 4 for 192-byte units, else 0
}

// The framings the framer recognises.
var (
	Framing188 = Framing{Size: 188}
	Framing192 = Framing{Size: 192, Prefix: 4}
	Framing204 = Framing{Size: 204}
)

var framings = [...]Framing{Framing188, Framing192, Framing204}

// String returns "188", "192" or "204".
// MarshalJSON writes the framing as its packet size.
func (f Framing) MarshalJSON() ([]byte, error) { return []byte(strconv.Itoa(f.Size)), nil }

func (f Framing) String() string {
	if f.Size == 0 {
		return "unknown"
	}
	return strconv.Itoa(f.Size)
}

// ErrPending is what a reader returns from Read when it has no bytes to give yet and the caller
// should not wait for them (a live input whose latency bound has come). The Framer passes it on
// from Next, after any whole packet it can return without looking further ahead, and keeps its
// state: a later Next reads on. It is not an end of the input.
var ErrPending = errors.New("ts: no input yet")

// ErrNoSync is returned when an input holds bytes but not a single transport stream packet.
var ErrNoSync = errors.New("no MPEG-TS sync found: the input is not a transport stream (188, 192 or 204-byte packets)")

const (
	// confirmSyncs is how many further sync bytes, one packet period apart, must follow a 0x47
	// before it is taken as the start of a packet when the framer is looking for sync. With
	// three matching bytes in a row, random data passes the test once in 2^24 positions, and a
	// run of three packets between two stretches of garbage is still recovered.
	confirmSyncs = 2
	// lookahead is the number of bytes the framer needs past a candidate sync byte to confirm it.
	lookahead = (confirmSyncs+1)*204 + 4
	// minBuffered is what Next keeps buffered before looking at a packet: the packet, and enough
	// after it to confirm the one that follows.
	minBuffered = 204 + lookahead
	readSize    = 256 << 10
)

// Framer splits a byte stream into transport stream packet units, detecting the framing and
// regaining sync after garbage. A 0x47 byte counts as a sync byte only when more sync bytes
// follow at the packet period, so garbage, a packet cut short in the middle of the stream and
// a truncated last packet are skipped and counted rather than passed on as packets.
type Framer struct {
	r          io.Reader
	buf        []byte
	start, end int // unread bytes are buf[start:end]
	eof        bool
	err        error // read error other than io.EOF, reported once the buffer is drained
	pending    bool  // the last read returned ErrPending: no more bytes for now
	framing    Framing
	synced     bool

	skipped   int64
	truncated int64
	packets   int64
	bytesRead int64
}

// NewFramer returns a framer reading from r.
func NewFramer(r io.Reader) *Framer {
	if b, _ := spareBuffers.Get().(*[]byte); b != nil {
		return &Framer{r: r, buf: *b}
	}
	return &Framer{r: r, buf: make([]byte, readSize+lookahead)}
}

// spareBuffers holds the read buffers of released framers (Release) for the framers created
// after them. A program that frames many small inputs in turn (a batch of recordings) would
// otherwise allocate a new buffer for each, which the kernel then faults in page by page: for
// an input of a few megabytes, a cost of the order of the framing itself. The garbage
// collector takes the buffers back when no framer follows.
var spareBuffers sync.Pool

// Release hands the framer's read buffer to the framers created after it, once the caller is
// done with the framer: neither the framer nor a unit it returned may be used afterwards. The
// buffer is cleared first, so that a framer never starts with bytes of an earlier input.
// Calling Release is optional; a framer not released is collected as any value.
func (f *Framer) Release() {
	if f.buf == nil {
		return
	}
	b := f.buf[:cap(f.buf)]
	clear(b)
	f.buf, f.r = nil, nil
	spareBuffers.Put(&b)
}

// Framing returns the framing of the last packet returned (188-byte framing before the first one).
func (f *Framer) Framing() Framing {
	if f.framing.Size == 0 {
		return Framing188
	}
	return f.framing
}

// Skipped returns the number of bytes dropped so far to regain sync.
func (f *Framer) Skipped() int64 { return f.skipped }

// Truncated returns the size of a truncated last packet dropped at the end of the input (0 if none).
func (f *Framer) Truncated() int64 { return f.truncated }

// BytesRead returns the number of input bytes read so far.
func (f *Framer) BytesRead() int64 { return f.bytesRead }

// Packets returns the number of packet units returned so far.
func (f *Framer) Packets() int64 { return f.packets }

// Buffered returns the number of bytes read from the input and not yet returned in a packet or
// skipped.
func (f *Framer) Buffered() int { return f.end - f.start }

// fill reads until at least n bytes are buffered, the input ends, or the reader says ErrPending.
func (f *Framer) fill(n int) {
	f.pending = false
	if f.end-f.start >= n || f.eof {
		return
	}
	if f.start > 0 {
		f.end = copy(f.buf, f.buf[f.start:f.end])
		f.start = 0
	}
	for f.end < n && !f.eof {
		m, err := f.r.Read(f.buf[f.end:])
		f.end += m
		f.bytesRead += int64(m)
		if err == ErrPending {
			f.pending = true
			return
		}
		if err != nil {
			f.eof = true
			if err != io.EOF {
				f.err = err
			}
		}
	}
}

// Next returns the next packet unit: Framing().Size bytes with the sync byte at Framing().Prefix.
// The slice is valid until the following call. At the end of the input it returns io.EOF, or
// ErrNoSync if the input held bytes but no packet, or the read error that ended the input.
//
// When the reader returns ErrPending, Next returns a whole packet already buffered if the stream
// is in sync, or if a full chain of sync bytes (three packets) finds it, judging on the bytes it
// has rather than on the ones after them; otherwise it returns ErrPending. It waits for more
// (ErrPending) too where the bytes it has show a change of framing or garbage but are too few
// to tell which. Only a stream that loses sync or changes framing exactly where the bytes at
// hand end can be cut differently than it would be with every byte at hand.
func (f *Framer) Next() ([]byte, error) {
	for {
		f.fill(minBuffered)
		avail := f.end - f.start
		if f.pending && f.synced && avail < f.framing.Size {
			return nil, ErrPending
		}
		if avail == 0 || (!f.synced && !f.resync()) {
			if f.pending {
				return nil, ErrPending
			}
			return nil, f.endErr()
		}
		fr := f.framing
		avail = f.end - f.start
		if avail < fr.Size {
			// The input ends inside a packet: the last packet is truncated.
			if f.buf[f.start+min(fr.Prefix, avail-1)] == SyncByte || fr.Prefix >= avail {
				f.truncated += int64(avail)
			} else {
				f.skipped += int64(avail)
			}
			f.start = f.end
			return nil, f.endErr()
		}
		q := f.start + fr.Prefix
		if f.buf[q] != SyncByte {
			f.synced = false
			continue
		}
		if k := f.missingSync(q, fr); k > 0 {
			// What follows is not a packet of this framing, k units on. When a unit of another
			// framing follows, the framing changes after this unit, which is whole: the next
			// call takes up the new framing. When a unit of another framing starts here, the
			// framing changes at this unit (a 188-byte packet after 204-byte ones). Either way
			// no byte is skipped. Otherwise, when the very next sync byte is missing, either
			// this packet is whole and garbage comes after it, or this 0x47 is itself garbage
			// and a real packet starts inside this unit. A change of framing is taken only
			// where a unit ends: inside a unit, a chain in another framing is as likely to be
			// garbage followed by packets in the same framing.
			//
			// The whole chain counts, not the next sync byte alone: a unit of another framing
			// may hold 0x47 where this framing expects the next sync byte (byte 16 of the
			// second 188-byte packet after 204-byte ones), and that unit and 16 bytes of the
			// next one taken as a 204-byte unit lose a packet.
			if f.pending && f.end-f.start < minBuffered {
				// Too few bytes to tell a change of framing from garbage: wait for more
				// rather than cut on a guess.
				return nil, ErrPending
			}
			if _, ok := f.framingAt(f.start + fr.Size); !ok {
				if g, ok := f.framingAt(f.start); ok {
					f.framing = g
					continue
				}
				if g, ok := f.tailFraming(f.start, fr); ok {
					f.framing = g
					continue
				}
				if k == 1 {
					if u, ok, _ := f.findUnit(q+1, q+fr.Size, true); ok {
						f.skipped += int64(u - f.start)
						f.start = u
						continue
					}
				}
			}
		}
		unit := f.buf[f.start : f.start+fr.Size]
		f.start += fr.Size
		f.packets++
		return unit, nil
	}
}

func (f *Framer) endErr() error {
	if f.err != nil {
		return f.err
	}
	if f.packets == 0 && (f.skipped > 0 || f.truncated > 0) {
		return ErrNoSync
	}
	return io.EOF
}

// resync skips bytes up to the next confirmed packet unit and sets the framing from it.
// It reports false when the input ends first; the bytes looked at are counted as skipped.
func (f *Framer) resync() bool {
	for {
		f.fill(minBuffered)
		u, ok, stop := f.findUnit(f.start, f.end, false)
		if ok {
			f.skipped += int64(u - f.start)
			f.start = u
			f.synced = true
			return true
		}
		if f.eof {
			f.skipped += int64(f.end - f.start)
			f.start = f.end
			return false
		}
		if f.pending {
			return false // Next says ErrPending; a later call reads on
		}
		// Nothing confirmed before stop: drop what can no longer start a packet (keeping room
		// for a 192-byte unit's prefix) and read on.
		if keep := stop - 4; keep > f.start {
			f.skipped += int64(keep - f.start)
			f.start = keep
		}
		f.fill(f.end - f.start + 1)
		if f.pending {
			return false
		}
	}
}

// findUnit looks for the first sync byte at a position in [lo, hi) that starts a confirmed chain
// of sync bytes in one of the framings, and returns the start of its unit (the sync position
// minus the framing's prefix). Among framings that confirm the same sync byte, the one with more
// sync bytes seen wins, then the one whose unit starts earlier. It sets f.framing to the winner.
// When it finds none it returns the position where the search stopped: hi, or an earlier sync
// byte that needs more input before it can be confirmed. With strict set, only a full chain of
// confirmSyncs+1 sync bytes counts, never a shorter one cut by the end of the input: a stream
// in sync is not re-framed on the evidence of one or two bytes near its end.
func (f *Framer) findUnit(lo, hi int, strict bool) (unit int, ok bool, stop int) {
	for q := lo; q < hi; q++ {
		i := bytes.IndexByte(f.buf[q:hi], SyncByte)
		if i < 0 {
			return 0, false, hi
		}
		q += i
		if !f.eof && !f.pending && f.end-q < lookahead {
			return 0, false, q // not enough data to confirm; the caller reads more
		}
		best, bestSeen := -1, 0
		for j, fr := range framings {
			if q-fr.Prefix < f.start {
				continue
			}
			seen := f.confirmed(q, fr)
			if strict && seen <= confirmSyncs {
				continue
			}
			if seen > bestSeen || seen > 0 && seen == bestSeen && fr.Prefix > framings[best].Prefix {
				best, bestSeen = j, seen
			}
		}
		if best >= 0 {
			f.framing = framings[best]
			return q - f.framing.Prefix, true, q
		}
	}
	return 0, false, hi
}

// missingSync returns which of the confirmSyncs sync bytes that follow the one at q in framing
// fr, at q+size and on, is the first one missing (1 for the next), or 0 when none is, as far
// as the bytes buffered go.
func (f *Framer) missingSync(q int, fr Framing) int {
	for k, p := 1, q+fr.Size; k <= confirmSyncs && p < f.end; k, p = k+1, p+fr.Size {
		if f.buf[p] != SyncByte {
			return k
		}
	}
	return 0
}

// tailFraming returns, at the end of the input, a framing other than fr in which the bytes
// from u to the end are two or more whole units, each with its sync byte: a last section of
// another framing too short for a full chain (two 188-byte packets after 204-byte ones), which
// a unit of fr would cut across. (One unit proves nothing: a 188-byte packet and 16 bytes of
// padding would pass for a 204-byte unit.)
func (f *Framer) tailFraming(u int, fr Framing) (Framing, bool) {
	if !f.eof {
		return Framing{}, false
	}
	for _, g := range framings {
		if n := f.end - u; g == fr || n < 2*g.Size || n%g.Size != 0 {
			continue
		}
		ok := true
		for p := u + g.Prefix; ok && p < f.end; p += g.Size {
			ok = f.buf[p] == SyncByte
		}
		if ok {
			return g, true
		}
	}
	return Framing{}, false
}

// framingAt returns a framing whose unit starting at u is confirmed by a full chain of sync
// bytes.
func (f *Framer) framingAt(u int) (Framing, bool) {
	for _, fr := range framings {
		if q := u + fr.Prefix; q < f.end && f.buf[q] == SyncByte && f.confirmed(q, fr) > confirmSyncs {
			return fr, true
		}
	}
	return Framing{}, false
}

// confirmed counts the sync bytes at q, q+size, ... (up to confirmSyncs+1 of them) and returns
// the count if they all hold 0x47 and enough of them were seen, else 0. Near the end of the
// input fewer are required (see below), but the first unit must be whole.
func (f *Framer) confirmed(q int, fr Framing) int {
	seen := 0
	for k := 0; k <= confirmSyncs; k++ {
		p := q + k*fr.Size
		if p >= f.end {
			break
		}
		if f.buf[p] != SyncByte {
			return 0
		}
		seen++
	}
	if seen <= confirmSyncs {
		// The input ends before the chain is whole. Trust it only if the first unit is whole
		// and either a second sync byte confirms it or it is the very start of the input (a
		// stream of one packet): a lone 0x47 near the end of garbage is not a packet.
		whole := f.eof && q-fr.Prefix+fr.Size <= f.end
		alone := f.packets == 0 && f.skipped == 0 && q-fr.Prefix == f.start
		if !whole || seen < 2 && !alone {
			return 0
		}
	}
	return seen
}
