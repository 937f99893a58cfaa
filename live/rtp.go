package live

import "encoding/binary"

// RTP as RFC 3550 frames it and RFC 2250 / RFC 3551 use it for MPEG transport streams:
// payload type 33 (MP2T), a 90 kHz timestamp, whole TS packets in the payload.

const (
	rtpHeaderSize = 12
	rtpVersion    = 2
	// PayloadTypeMP2T is the static RTP payload type of an MPEG-2 transport stream (RFC 3551).
	PayloadTypeMP2T = 33
)

// rtpStatus says what parseRTP made of a datagram.
type rtpStatus int

const (
	rtpOK        rtpStatus = iota
	rtpNotRTP              // not version 2: a plain datagram
	rtpTruncated           // version 2, but the headers or padding run past the end
)

// rtpPacket is the part of an RTP header the reader acts on.
type rtpPacket struct {
	seq     uint16
	pt      uint8
	ssrc    uint32
	payload []byte
}

// parseRTP reads an RTP header, honouring the CSRC list, a header extension and padding, and
// returns the payload that follows them.
func parseRTP(b []byte) (rtpPacket, rtpStatus) {
	if len(b) < 1 || b[0]>>6 != rtpVersion {
		return rtpPacket{}, rtpNotRTP
	}
	if len(b) < rtpHeaderSize {
		return rtpPacket{}, rtpTruncated
	}
	p := rtpPacket{seq: binary.BigEndian.Uint16(b[2:]), pt: b[1] & 0x7F, ssrc: binary.BigEndian.Uint32(b[8:])}
	off := rtpHeaderSize + 4*int(b[0]&0x0F)
	if b[0]&0x10 != 0 { // extension: 16-bit profile field, 16-bit length in 32-bit words
		if off+4 > len(b) {
			return rtpPacket{}, rtpTruncated
		}
		off += 4 + 4*int(binary.BigEndian.Uint16(b[off+2:]))
	}
	end := len(b)
	if b[0]&0x20 != 0 { // padding: the last byte counts the padding bytes, itself included
		if end == 0 || int(b[end-1]) == 0 {
			return rtpPacket{}, rtpTruncated
		}
		end -= int(b[end-1])
	}
	if off > end {
		return rtpPacket{}, rtpTruncated
	}
	p.payload = b[off:end]
	return p, rtpOK
}

// looksLikeRTP tells, for a udp:// input, an RTP datagram from a plain one, for each datagram.
// A plain datagram of 188 or 204-byte packets starts with a sync byte (0x47: version bits 01);
// one of 192-byte units starts with a time code, which may have the version bits of RTP, but
// what would follow its header is then not whole packets. A version-2 header with payload
// type 33 followed by whole packets is RTP beyond reasonable doubt; anything else is plain.
func looksLikeRTP(b []byte) bool {
	if len(b) < rtpHeaderSize+1 || b[0]>>6 != rtpVersion || b[1]&0x7F != PayloadTypeMP2T {
		return false
	}
	p, st := parseRTP(b)
	return st == rtpOK && wholePackets(p.payload)
}

// putRTPHeader writes a 12-byte RTP header: version 2, no padding, extension or CSRC, marker 0.
func putRTPHeader(b []byte, seq uint16, timestamp, ssrc uint32) {
	b[0] = rtpVersion << 6
	b[1] = PayloadTypeMP2T
	binary.BigEndian.PutUint16(b[2:], seq)
	binary.BigEndian.PutUint32(b[4:], timestamp)
	binary.BigEndian.PutUint32(b[8:], ssrc)
}

// Sequence-number tracking, after RFC 3550 appendix A.1 (MAX_DROPOUT 3000, MAX_MISORDER 100):
// a datagram up to maxDropout ahead of the expected number is taken as the stream moving on
// past a gap, one up to maxMisorder behind as late or duplicated; anything further is the
// sender starting over (a restart draws a new random first number), which is followed rather
// than counted as loss. A.1 also holds a new source on probation until MIN_SEQUENTIAL (2)
// datagrams came in sequence, and drops the first datagram after such a jump unless the next
// one follows it; the sequencer takes that first datagram at once instead, as the first of a
// new sequence with nothing seen behind it, so that a restarted sender loses none.
const (
	reorderWindow = 4
	maxDropout    = 3000
	maxMisorder   = 100
)

type held struct {
	seq  uint16
	data []byte
}

// sequencer restores the order of RTP datagrams within a window of reorderWindow datagrams
// held after a gap, drops duplicates, and counts losses. Datagrams come out through emit.
type sequencer struct {
	emit    func([]byte)
	started bool
	next    uint16 // the sequence number expected next
	held    []held // datagrams that arrived ahead of a gap, in sequence order
	free    [][]byte
	// seen and lost hold one bit per sequence number: emitted, or given up as lost. A datagram
	// behind next is a duplicate if seen, a late arrival if not (and one loss fewer if lost).
	seen, lost [1 << 16 / 64]uint64

	Lost, Reordered, Late, Duplicates, Jumps int64
}

func bit(set *[1 << 16 / 64]uint64, s uint16) bool { return set[s>>6]&(1<<(s&63)) != 0 }
func setBit(set *[1 << 16 / 64]uint64, s uint16)   { set[s>>6] |= 1 << (s & 63) }
func clearBit(set *[1 << 16 / 64]uint64, s uint16) { set[s>>6] &^= 1 << (s & 63) }

// holding reports whether datagrams wait behind a gap.
func (q *sequencer) holding() bool { return len(q.held) > 0 }

func (q *sequencer) out(s uint16, b []byte) {
	setBit(&q.seen, s)
	clearBit(&q.lost, s)
	q.emit(b)
}

// start takes s as the first number of a new sequence: nothing behind it was seen or lost,
// whatever the numbers' last cycle left in the bits (a datagram that comes late behind it is
// no duplicate).
func (q *sequencer) start(s uint16) {
	q.started, q.next = true, s
	for d := uint16(1); d <= maxMisorder; d++ {
		clearBit(&q.seen, s-d)
		clearBit(&q.lost, s-d)
	}
}

// restart gives up every gap, emits what is held, and takes the next datagram as the first of
// a new sequence: another sender, or plain datagrams between RTP ones.
func (q *sequencer) restart() {
	q.flush()
	q.started = false
}

// push takes one datagram's payload. The payload is emitted at once or copied, never kept.
func (q *sequencer) push(s uint16, b []byte) {
	if !q.started {
		q.start(s)
	}
	d := int(int16(s - q.next))
	switch {
	case d == 0:
		if len(q.held) > 0 {
			q.Reordered++ // it fills the gap that later datagrams waited behind
		}
		q.out(s, b)
		q.next++
		q.release()
	case d > 0 && d < maxDropout:
		i := 0
		for i < len(q.held) && int16(q.held[i].seq-s) < 0 {
			i++
		}
		if i < len(q.held) && q.held[i].seq == s {
			q.Duplicates++
			return
		}
		var c []byte
		if n := len(q.free); n > 0 {
			c, q.free = q.free[n-1][:0], q.free[:n-1]
		}
		q.held = append(q.held, held{})
		copy(q.held[i+1:], q.held[i:])
		q.held[i] = held{s, append(c, b...)}
		if i < len(q.held)-1 {
			q.Reordered++ // it arrived before a later datagram already held
		}
		if len(q.held) > reorderWindow {
			q.giveUp()
		}
	case d < 0 && d >= -maxMisorder:
		if bit(&q.seen, s) {
			q.Duplicates++
			return
		}
		if bit(&q.lost, s) {
			q.Lost--
		}
		q.Late++
		q.out(s, b)
	default:
		q.flush()
		q.Jumps++
		q.start(s)
		q.out(s, b)
		q.next++
	}
}

// giveUp declares the gap before the first held datagram lost and releases what follows it.
func (q *sequencer) giveUp() {
	for s := q.next; s != q.held[0].seq; s++ {
		setBit(&q.lost, s)
		clearBit(&q.seen, s)
		q.Lost++
	}
	q.next = q.held[0].seq
	q.release()
}

// release emits the held datagrams that are next in sequence.
func (q *sequencer) release() {
	n := 0
	for n < len(q.held) && q.held[n].seq == q.next {
		q.out(q.next, q.held[n].data)
		q.free = append(q.free, q.held[n].data)
		q.next++
		n++
	}
	if n > 0 {
		k := copy(q.held, q.held[n:])
		clear(q.held[k:])
		q.held = q.held[:k]
	}
}

// flush gives up every gap and emits everything held: the stream paused or ended.
func (q *sequencer) flush() {
	for len(q.held) > 0 {
		q.giveUp()
	}
}
