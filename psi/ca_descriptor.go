package psi

// TagCA is the descriptor_tag of the CA_descriptor (ISO/IEC 13818-1, 2.6.16): CA_system_ID (16
// bits), three reserved bits, CA_PID (13 bits), then private data. In a PMT's program_info loop
// it names the PID of the ECMs of the whole service.
const TagCA = 0x09

// AppendCADescriptor appends to dst the TS_program_map_section s with a CA_descriptor of
// caSystemID and ecmPID (and private, when not empty) at the start of its program_info loop,
// and returns the extended slice: section_length and program_info_length grow by the
// descriptor's size and the CRC_32 is computed again; version_number stays (see
// AppendScramblingMode for why). A section that already carries a CA_descriptor of that system
// and PID in its program_info loop is appended unchanged.
//
// ok is false, and dst is returned unchanged, when s is not one whole PMT section with a good
// CRC_32 and consistent lengths, or when the descriptor would make it longer than a section
// may be.
func AppendCADescriptor(dst, s []byte, caSystemID, ecmPID uint16, private []byte) ([]byte, bool) {
	if !isPMTSection(s) || len(private) > 251 {
		return dst, false
	}
	has := false
	if !walkPMT(s, len(s)-4, func(at int, program bool) {
		if program && s[at] == TagCA && s[at+1] >= 4 && be16(s[at+2:]) == caSystemID && be16(s[at+4:])&0x1FFF == ecmPID {
			has = true
		}
	}) {
		return dst, false
	}
	if has {
		return append(dst, s...), true
	}
	info := int(be16(s[10:]) & 0x0FFF)
	grow := 6 + len(private)
	if len(s)+grow > maxSection || info+grow > 0x3FF {
		return dst, false
	}
	start := len(dst)
	dst = append(dst, s[:12]...)
	dst = append(dst, TagCA, byte(4+len(private)), byte(caSystemID>>8), byte(caSystemID), 0xE0|byte(ecmPID>>8&0x1F), byte(ecmPID))
	dst = append(dst, private...)
	dst = append(dst, s[12:len(s)-4]...)
	out := dst[start:]
	n := len(out) + 4 - 3
	out[1], out[2] = out[1]&0xF0|byte(n>>8), byte(n)
	out[10], out[11] = out[10]&0xF0|byte((info+grow)>>8), byte(info+grow)
	c := CRC32(out)
	return append(dst, byte(c>>24), byte(c>>16), byte(c>>8), byte(c)), true
}
