package psi

import "bytes"

// assembler gathers the sections of one PID from its packets, one section at a time, and
// checks the continuity of the packets they span.
type assembler struct {
	buf     []byte // len is the largest section this assembler accepts
	n       int    // bytes of buf in use
	active  bool   // a section is under way
	tooLong bool   // the last add met a section_length over len(buf)
	cc      uint8
	ccKnown bool
	last    [PacketSize]byte // the last packet read, to recognise a duplicate
}

// newAssembler returns an assembler for sections of at most max bytes.
func newAssembler(max int) *assembler { return &assembler{buf: make([]byte, max)} }

// packet reads one 188-byte packet of the assembler's PID, counting what goes wrong in stats,
// and calls done with each section it completes. done may not keep the slice it is given:
// the next packet reuses it.
func (a *assembler) packet(pkt []byte, stats *Stats, done func([]byte)) {
	if pkt[1]&0x80 != 0 { // transport_error_indicator: the packet cannot be trusted
		if a.active {
			stats.Discontinuities++
		}
		a.active = false
		return
	}
	p, ok := packetPayload(pkt)
	if !ok {
		if p != nil { // an adaptation_field_length that leaves no payload: a damaged header
			stats.Malformed++
		}
		return
	}
	cc := pkt[3] & 0x0F
	if a.ccKnown {
		// 2.4.3.3: a packet may be sent twice, identical; the copy is ignored. The same counter
		// on a different packet is taken to follow on: some muxers never advance it on PSI.
		if cc == a.cc && bytes.Equal(pkt[4:], a.last[4:]) {
			return
		}
		if cc != a.cc && cc != (a.cc+1)&0x0F && a.active {
			stats.Discontinuities++
			a.active = false
		}
	}
	a.cc, a.ccKnown = cc, true
	copy(a.last[:], pkt)
	a.payload(pkt[1]&0x40 != 0, p, stats, done)
}

// packetPayload returns the payload of a clear 188-byte packet. ok is false for a scrambled packet
// (its payload cannot be read as sections), for adaptation_field_control 00 (reserved) or 10
// (no payload; neither carries sections nor advances the continuity counter), and for an
// adaptation field that leaves no room for a payload, the one case where p is not nil.
func packetPayload(pkt []byte) (p []byte, ok bool) {
	afc := pkt[3] >> 4 & 3
	if pkt[3]&0xC0 != 0 || afc&1 == 0 {
		return nil, false
	}
	off := 4
	if afc == 3 {
		off += 1 + int(pkt[4])
		if off >= PacketSize {
			return pkt[:0], false
		}
	}
	return pkt[off:], true
}

// payload gathers sections from the payload of one packet (2.4.4.1-2: with
// payload_unit_start_indicator set, the first byte is the pointer_field, the number of bytes
// that still belong to the section under way before the next one starts).
func (a *assembler) payload(start bool, p []byte, stats *Stats, done func([]byte)) {
	if !start {
		// After a section's end, the rest of a packet that starts no section is stuffing.
		if a.active {
			_, complete := a.add(p)
			a.finish(complete, stats, done)
		}
		return
	}
	ptr := int(p[0])
	p = p[1:]
	if ptr > len(p) {
		stats.Malformed++
		a.active = false
		return
	}
	if a.active {
		_, complete := a.add(p[:ptr])
		if !complete && a.active {
			stats.Malformed++ // a new section starts before this one is complete
			a.active = false
		}
		a.finish(complete, stats, done)
	}
	p = p[ptr:]
	for len(p) > 0 && p[0] != tableIDEnd {
		a.n, a.active = 0, true
		used, complete := a.add(p)
		a.finish(complete, stats, done)
		if !complete {
			return
		}
		p = p[used:]
	}
}

// finish handles the outcome of an add: a complete section goes to done, and one whose
// length is impossible is counted.
func (a *assembler) finish(complete bool, stats *Stats, done func([]byte)) {
	if a.tooLong {
		stats.Malformed++
		a.tooLong = false
	}
	if complete {
		a.active = false
		done(a.buf[:a.n])
	}
}

// add appends the bytes of p that belong to the section under way. It returns how many it took
// and whether the section is now complete.
func (a *assembler) add(p []byte) (used int, complete bool) {
	for a.n < 3 && used < len(p) {
		a.buf[a.n] = p[used]
		a.n++
		used++
	}
	if a.n < 3 {
		return used, false
	}
	total := 3 + (int(a.buf[1]&0x0F)<<8 | int(a.buf[2]))
	if total > len(a.buf) {
		a.active, a.tooLong = false, true
		return len(p), false
	}
	k := copy(a.buf[a.n:total], p[used:])
	a.n += k
	return used + k, a.n == total
}
