package psi

// MaxSectionSize is the largest section of any table: 3 header bytes and a section_length of
// at most 4093 (ISO/IEC 13818-1 2.4.4.10, private_section).
const MaxSectionSize = 3 + 4093

// Limits of a SectionReader, so that its memory stays bounded whatever the input.
const (
	// maxReaderPIDs is how many PIDs a SectionReader gathers sections on at once; each costs
	// a MaxSectionSize buffer, given back when the PID is given up. Real multiplexes carry
	// sections on a few dozen PIDs.
	maxReaderPIDs = 512
	// giveUp is how many damaged sections a PID may yield, without a single good one, before
	// the SectionReader stops reading it: a PID whose payloads only look like sections now and
	// then (T2-MI, private data) would otherwise cost a section's work, and an error, at
	// every payload unit start. It is high enough for a PMT PID to survive seconds of bad
	// reception before its first good section; the reserved PIDs (below 0x20) are never
	// given up.
	giveUp = 64
)

// SectionReader gathers whole sections from the packets of every PID that carries them,
// whatever the tables say: it needs no PAT to read a PMT, an SDT or a SIT, so the order in
// which tables come does not matter. A PID is read from its first clear packet that starts
// with the header of a section (SectionStartOK: a plausible header, whether or not the CRC_32
// of a section that fits the packet is right); packets before it are not. It is not safe for
// concurrent use.
//
// A section is handed over only when its header keeps its table's rules (those SectionStartOK
// checks) and, with the long syntax (section_syntax_indicator 1), when its CRC_32 is right;
// one with the short syntax has no CRC to check (except the TOT's, which is checked). Damaged
// sections are counted by PID. A PID above 0x1F that yields 64 damaged sections before a
// good one is read no more: its payloads only looked like sections.
type SectionReader struct {
	pids    [MaxPID + 1]*pidSections // an array, not a map: Feed looks here for every packet
	adopted int
}

type pidSections struct {
	asm   *assembler // nil once the PID has been given up
	stats Stats
	good  int // sections handed over
}

// NewSectionReader returns a SectionReader that has read nothing.
func NewSectionReader() *SectionReader {
	return &SectionReader{}
}

// Feed reads one TS packet from the first PacketSize bytes of pkt, which it does not retain,
// and calls fn with the PID and the bytes of each section the packet completes (table_id to
// CRC_32). The section is only valid during the call. Packets that are too short, out of sync
// or scrambled, and null packets, are ignored.
func (r *SectionReader) Feed(pkt []byte, fn func(pid uint16, section []byte)) {
	if len(pkt) < PacketSize || pkt[0] != 0x47 {
		return
	}
	pkt = pkt[:PacketSize]
	pid := uint16(pkt[1]&0x1F)<<8 | uint16(pkt[2])
	if pid == NullPID {
		return
	}
	ps := r.pids[pid]
	if ps == nil {
		// Adopt the PID at a clear packet that starts something that looks like a section.
		// A PES packet never does: its start code 00 00 01 reads as a PAT without the long
		// syntax.
		if pkt[1]&0xC0 != 0x40 || r.adopted >= maxReaderPIDs {
			return
		}
		if p, ok := packetPayload(pkt); !ok {
			return
		} else if ok, checked := SectionStartOK(p); !ok && !checked {
			return // not even the header of a section; a bad CRC_32 is followed, and counted
		}
		ps = &pidSections{asm: newAssembler(MaxSectionSize)}
		r.pids[pid] = ps
		r.adopted++
	}
	if ps.asm == nil {
		return
	}
	ps.asm.packet(pkt, &ps.stats, func(s []byte) {
		if !sectionOK(s) {
			if !headerOK(s[0], s[1]&0x80 != 0, len(s)-3) {
				ps.stats.Malformed++
			} else {
				ps.stats.CRCErrors++
			}
			if ps.asm != nil && ps.good == 0 && pid >= 0x20 && ps.stats.CRCErrors+ps.stats.Malformed >= giveUp {
				ps.asm = nil // not sections after all: stop reading this PID, free its buffer
				r.adopted--
			}
			return
		}
		ps.stats.Sections++
		ps.good++
		fn(pid, s)
	})
}

// sectionOK checks a whole section: a header SectionStartOK would accept, and for a
// long-syntax section (and the TOT) a good CRC_32; a short one has nothing more to check.
func sectionOK(s []byte) bool {
	if !headerOK(s[0], s[1]&0x80 != 0, len(s)-3) {
		return false
	}
	if s[1]&0x80 != 0 || s[0] == 0x73 { // TOT: short syntax, but a CRC_32 (ETSI EN 300 468 5.2.6)
		return CRC32(s) == 0
	}
	return true
}

// Stats returns the counts of sections read and dropped on every PID.
func (r *SectionReader) Stats() Stats {
	var sum Stats
	for _, ps := range r.pids {
		if ps == nil {
			continue
		}
		sum.Sections += ps.stats.Sections
		sum.CRCErrors += ps.stats.CRCErrors
		sum.Malformed += ps.stats.Malformed
		sum.Discontinuities += ps.stats.Discontinuities
	}
	return sum
}

// PIDStats returns the counts of sections read and dropped on pid.
func (r *SectionReader) PIDStats(pid uint16) Stats {
	if ps := r.pids[pid&MaxPID]; ps != nil {
		return ps.stats
	}
	return Stats{}
}
