package psi

// PMTSignaller is the one rewriter of PMT sections: it writes a scrambling_mode (for a
// scrambler that signals its system; see AppendScramblingMode for what changes in a section),
// a CA_descriptor (for a SimulCrypt scrambler that names its ECM PID; see AppendCADescriptor),
// or both, into the PMT sections of TS packets as they pass, in place, one packet at a time. A
// packet keeps its size, so a section can only grow into the stuffing after the last section
// of its packet: a PMT section that starts and ends in one packet with as many bytes of 0xFF
// stuffing after it as its descriptors take (3 for a scrambling_descriptor, 6 and the private
// bytes for a CA_descriptor) takes them; a section that continues into the next packet, or has
// no room, is left as it came, and Packet says so. Holding back packets to re-cut a table
// across them would delay and reorder the stream; broadcast PMTs of a few components fit one
// packet with room to spare.
//
// A PMTSignaller has no memory of past packets, so every repetition of a section comes out the
// same, and new versions are treated like the first. It does not allocate. The caller tells it
// which packets carry PMTs (a Tracker's IsPMTPID) and is left to count what it did.
type PMTSignaller struct {
	// Mode is the scrambling_mode to write; 0, a value EN 300 468 reserves, writes none.
	Mode ScramblingMode
	// CA, when not nil, is the CA_descriptor to add at the start of each wanted section's
	// program_info loop, after the scrambling_mode is written; a section that carries it
	// already keeps it as it is.
	CA *CA
	// Want, when not nil, says whether the PMT of a program is to carry Mode and CA; PMT
	// sections of other programs pass unchanged. Nil means every program.
	Want func(program uint16) bool
	// ReplaceOnly, when set, sets the mode of the scrambling_descriptors already there and adds
	// none: for DVB-CSA2, since a PMT without the descriptor means the DVB-CSA cipher anyway,
	// while one left from an earlier scrambling would name the wrong system. Without CA,
	// sections without one, or that span packets, are then neither signalled nor left.
	ReplaceOnly bool
	// Remove, with Mode 0 and no CA, takes every scrambling_descriptor out of the wanted
	// sections (AppendWithoutScrambling), for a descrambler whose output is clear. A section
	// shrinks, and the stuffing at the end of its packet grows to fill its place; a section
	// followed in its packet by one that runs into the next packet cannot shrink, and is left.
	Remove bool

	out [PacketSize]byte
	sec [maxSection + 3]byte // a section with its scrambling_mode
	ca  [maxSection + 3]byte // and then its CA_descriptor
}

// SignalResult says what PMTSignaller.Packet did with one packet.
type SignalResult struct {
	// Changed is set when the packet was rewritten.
	Changed bool
	// Signalled counts the wanted PMT sections of the packet that carry Mode and CA now.
	Signalled int
	// Left counts the wanted PMT sections starting in the packet that were left as they came:
	// nothing in the packet changes then.
	Left int
	// Spans says why they were left: a wanted section continues into the next packet. When it
	// is false (and Left is not 0) the packet has no stuffing for the section to grow into.
	Spans bool
	// Program is the program_number of the first section left, or 0 when the packet ends
	// before the section says (program_number 0 is never a PMT's).
	Program uint16
}

// Packet rewrites the PMT sections that start in the 188-byte TS packet pkt. Packets that start
// no section (payload_unit_start_indicator 0), are scrambled or flagged with a transport error,
// or are too damaged to read, are left as they are and give a zero result. Sections with other
// table_ids, of programs not wanted, or damaged (bad CRC_32) pass unchanged, moved only as far
// as a section before them grew. It is all or nothing: when one wanted section cannot take the
// descriptor, the packet keeps every byte, and all its wanted sections count as left.
func (s *PMTSignaller) Packet(pkt []byte) SignalResult {
	var r SignalResult
	if len(pkt) < PacketSize || pkt[0] != 0x47 || pkt[1]&0x80 != 0 || pkt[1]&0x40 == 0 ||
		pkt[3]&0xC0 != 0 || pkt[3]&0x10 == 0 {
		return r
	}
	pkt = pkt[:PacketSize]
	off := 4
	if pkt[3]&0x20 != 0 {
		off += 1 + int(pkt[4])
	}
	if off >= PacketSize {
		return r
	}
	// pointer_field: the bytes before q end a section begun in an earlier packet.
	q := off + 1 + int(pkt[off])
	if q > PacketSize {
		return r
	}
	w := copy(s.out[:], pkt[:q])
	wanted, first := 0, uint16(0)
	fits, spans := true, false
	for q < PacketSize && pkt[q] != tableIDEnd {
		total := PacketSize // unknown: the header itself is cut by the end of the packet
		if q+3 <= PacketSize {
			total = 3 + int(be16(pkt[q+1:])&0x0FFF)
		}
		if q+total > PacketSize || q+3 > PacketSize {
			// The section continues in the next packet: it stays as it is, and where it is.
			spans = true
			if pkt[q] == tableIDPMT {
				var program uint16 // 0: the packet ends before program_number
				if q+5 <= PacketSize {
					program = be16(pkt[q+3:])
				}
				if s.changesAll() && (program == 0 || s.wants(program)) {
					if wanted == 0 {
						first = program
					}
					wanted++
					r.Spans = true
				}
			}
			break
		}
		sec := pkt[q : q+total]
		q += total
		if sec[0] == tableIDPMT && total >= 5 && s.wants(be16(sec[3:])) && s.takes(sec) {
			if out, ok := s.edit(sec); ok {
				if wanted == 0 {
					first = be16(sec[3:])
				}
				wanted++
				sec = out
			}
		}
		if w+len(sec) > PacketSize {
			fits = false
			break
		}
		w += copy(s.out[w:], sec)
	}
	// q is where the tail starts: stuffing, or a section that runs into the next packet. The
	// sections before it grew by w-q bytes, which only stuffing can give; or shrank, which
	// only stuffing can fill, as a section that runs on must keep its bytes where they are.
	if grow := w - q; fits && grow > 0 {
		fits = !spans && PacketSize-q >= grow
		for i := q; fits && i < PacketSize; i++ {
			fits = pkt[i] == tableIDEnd
		}
	} else if grow < 0 && spans {
		fits = false
	}
	if !fits || r.Spans {
		r.Left, r.Program = wanted, first
		return r
	}
	r.Signalled = wanted
	if w == q { // nothing grew or shrank
		copy(s.out[w:], pkt[q:])
	} else {
		for i := w; i < PacketSize; i++ {
			s.out[i] = tableIDEnd
		}
	}
	if string(s.out[:]) != string(pkt) {
		copy(pkt, s.out[:])
		r.Changed = true
	}
	return r
}

func (s *PMTSignaller) wants(program uint16) bool { return s.Want == nil || s.Want(program) }

// changesAll reports whether every wanted PMT section is to change, whatever it carries: a
// section that spans packets is then one left, since it would have changed.
func (s *PMTSignaller) changesAll() bool {
	return s.CA != nil || s.Mode != 0 && !s.ReplaceOnly
}

// takes reports whether a wanted PMT section is one to signal: any that changesAll, else one
// that carries a scrambling_descriptor whose mode is to be replaced.
func (s *PMTSignaller) takes(sec []byte) bool {
	if s.changesAll() {
		return true
	}
	if s.Mode == 0 && !s.Remove {
		return false
	}
	_, has := PMTScramblingMode(sec)
	return has
}

// edit returns the wanted PMT section sec with its descriptors written, and false when sec is
// not one whole PMT section with a good CRC_32 or would grow too long: it then passes as it
// came, never given a CRC_32 that would make it look right.
func (s *PMTSignaller) edit(sec []byte) ([]byte, bool) {
	ok := true
	if s.Remove && s.Mode == 0 && s.CA == nil {
		if sec, ok = AppendWithoutScrambling(s.sec[:0], sec); !ok {
			return nil, false
		}
		return sec, true
	}
	if s.Mode != 0 {
		if sec, ok = appendScramblingMode(s.sec[:0], sec, s.Mode, !s.ReplaceOnly); !ok {
			return nil, false
		}
	}
	if s.CA != nil {
		if sec, ok = AppendCADescriptor(s.ca[:0], sec, s.CA.SystemID, s.CA.PID, s.CA.Private); !ok {
			return nil, false
		}
	}
	return sec, true
}
