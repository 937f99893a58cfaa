package psi

// SectionStartOK checks the section that starts in payload, the payload of a TS packet with
// payload_unit_start_indicator set (after the header and any adaptation field), as it is after
// descrambling: it reads the pointer_field, then the header of the section that starts there.
//
// ok is false when the packet cannot be the start of a section: an empty payload, a
// pointer_field that points past the packet, a table_id of 0xFF (stuffing), a
// section_syntax_indicator the table forbids, a section_length over 4093 (1021 for the
// tables limited to 1024 bytes), or one too short for the long syntax's header and CRC_32.
//
// When the whole section lies in this payload and carries a CRC_32 (section_syntax_indicator
// 1, or the DVB TOT), the CRC is verified: checked is true and ok says whether it matched, a
// test that wrong bytes pass with a chance of one in 2^32. Otherwise checked is false: the
// header is plausible, which is all that can be told from this packet.
//
// It neither allocates nor panics, whatever the input.
func SectionStartOK(payload []byte) (ok, checked bool) {
	if len(payload) == 0 {
		return false, false
	}
	// pointer_field: the bytes that end the previous section come first (2.4.4.2). They are
	// not checked: the start of their section lies in an earlier packet.
	ptr := int(payload[0])
	p := payload[1:]
	if ptr >= len(p) {
		return false, false // the start this packet announces is not in it
	}
	s := p[ptr:]
	tid := s[0]
	if tid == tableIDEnd {
		return false, false
	}
	if len(s) < 3 {
		return true, false // a section may start in the last bytes of a packet
	}
	syntax := s[1]&0x80 != 0
	length := int(s[1]&0x0F)<<8 | int(s[2])
	if !headerOK(tid, syntax, length) {
		return false, false
	}
	if 3+length > len(s) {
		return true, false
	}
	// The TOT has the short syntax but ends with a CRC_32 all the same (EN 300 468 5.2.6).
	if syntax || tid == 0x73 {
		return CRC32(s[:3+length]) == 0, true
	}
	return true, false
}

// headerOK checks the first three bytes of a section: a table_id that is not stuffing nor
// reserved, the section_syntax_indicator its table requires, a section_length within its
// table's bound and long enough for what the syntax puts in every section.
func headerOK(tid byte, syntax bool, length int) bool {
	if tid == tableIDEnd || tid >= 0x10 && tid <= 0x37 {
		// 0x10-0x37 are reserved by ISO/IEC 13818-1 (Table 2-31): no section has them, while
		// other payloads that start with a pointer_field (T2-MI, ETSI TS 102 773) have
		// packet types there. The lowest reserved values are left out: each edition of the
		// standard assigns a few more of them.
		return false
	}
	if length > maxLength(tid) {
		return false
	}
	switch {
	case tid <= 0x03, // PAT, CAT, PMT, TSDT (ISO/IEC 13818-1 2.4.4)
		tid >= 0x40 && tid <= 0x42, tid == 0x46, tid == 0x4A, // NIT, SDT, BAT (ETSI EN 300 468 5.2)
		tid >= 0x4E && tid <= 0x6F, tid == 0x7F: // EIT (5.2.4), SIT (EN 300 468 7.1.2)
		if !syntax {
			return false
		}
	case tid == 0x70 || tid == 0x73: // TDT and TOT: the short syntax (EN 300 468 5.2.5, 5.2.6)
		if syntax {
			return false
		}
	}
	// The long syntax has 5 header bytes after section_length, then the CRC_32; the TDT is
	// UTC_time alone, the TOT UTC_time, a descriptor loop length and the CRC_32.
	return !(syntax && length < 5+4 || tid == 0x70 && length != 5 || tid == 0x73 && length < 5+2+4)
}

// maxLength returns the largest section_length of a table: 1021 for the PSI of ISO/IEC
// 13818-1 (2.4.4.5, 2.4.4.9, 2.4.4.11, 2.4.4.13) and the NIT, BAT and SDT of ETSI EN 300 468
// (5.2.1-5.2.3), so that their sections fit in 1024 bytes; 4093 for every other table
// (private_section, 2.4.4.10).
func maxLength(tid byte) int {
	switch tid {
	case 0x00, 0x01, 0x02, 0x03, 0x40, 0x41, 0x42, 0x46, 0x4A:
		return 1021
	}
	return 4093
}
