package psi

import "fmt"

// The scrambling_descriptor (ETSI EN 300 468, 6.2.32) says in a PMT which scrambling system a
// service uses: descriptor_tag 0x65, descriptor_length 1, and one byte, scrambling_mode. In the
// program_info loop it applies to the whole service, in an ES_info loop to one component. A PMT
// without one means the default, DVB-CSA1, which every implementation descrambles with the one
// DVB-CSA cipher it has for DVB-CSA2 too; so TSDuck's scrambler writes the descriptor for every
// system but DVB-CSA2 (tsplugin_scrambler.cpp, handlePMT: at the end of the program_info loop,
// version_number kept), and its descrambler takes the system from it when no option names one
// (tsAbstractDescrambler.cpp).

// TagScrambling is the descriptor_tag of the scrambling_descriptor.
const TagScrambling = 0x65

// ScramblingMode is the scrambling_mode of a scrambling_descriptor.
type ScramblingMode uint8

// scrambling_mode values. The DVB ones are EN 300 468's (6.2.32); TSDuck defines the same numbers
// (SCRAMBLING_DVB_CSA1 ... SCRAMBLING_DVB_CISSA1 in tsPSI.h), writes 0x70 for ATIS-IDSA
// (SCRAMBLING_ATIS_IIF_IDSA), and leaves 0x80-0xFE to users and 0xFF reserved.
const (
	ScramblingCSA1     ScramblingMode = 0x01 // DVB-CSA1
	ScramblingCSA2     ScramblingMode = 0x02 // DVB-CSA2
	ScramblingCSA3     ScramblingMode = 0x03 // DVB-CSA3 in standard mode
	ScramblingCSA3Min  ScramblingMode = 0x04 // DVB-CSA3 in minimally enhanced mode
	ScramblingCSA3Full ScramblingMode = 0x05 // DVB-CSA3 in fully enhanced mode
	ScramblingCISSA1   ScramblingMode = 0x10 // DVB-CISSA version 1 (ETSI TS 103 127)
	ScramblingATISIDSA ScramblingMode = 0x70 // ATIS IIF IDSA (ATIS-0800006)

	// DFC and Serpent in the DVS-042 chaining have no value of their own anywhere: tsdescramble
	// takes these two from the user-defined range 0x80-0xFE, away from its top, where TSDuck puts
	// the modes it defines for itself (0xF0 AES-CBC, 0xF1 AES-CTR, and more after them), so that
	// neither tool takes the other's streams for its own.
	ScramblingDFC     ScramblingMode = 0xD0 // DFC in DVS-042 chaining (tsdescramble's value)
	ScramblingSerpent ScramblingMode = 0xD1 // Serpent in DVS-042 chaining (tsdescramble's value)
)

// String names the mode as EN 300 468 does, or gives its value with what is known of it.
func (m ScramblingMode) String() string {
	switch m {
	case ScramblingCSA1:
		return "DVB-CSA1"
	case ScramblingCSA2:
		return "DVB-CSA2"
	case ScramblingCSA3:
		return "DVB-CSA3 standard mode"
	case ScramblingCSA3Min:
		return "DVB-CSA3 minimally enhanced mode"
	case ScramblingCSA3Full:
		return "DVB-CSA3 fully enhanced mode"
	case ScramblingCISSA1:
		return "DVB-CISSA version 1"
	case ScramblingATISIDSA:
		return "ATIS-IDSA"
	case ScramblingDFC:
		return "DFC (tsdescramble's user-defined 0xD0)"
	case ScramblingSerpent:
		return "Serpent (tsdescramble's user-defined 0xD1)"
	}
	what := "unknown"
	switch {
	case m >= 0x80 && m <= 0xFE:
		what = "user-defined"
	case m == 0x00 || m == 0xFF:
		what = "reserved"
	}
	return fmt.Sprintf("%s 0x%02X", what, uint8(m))
}

// walkPMT walks the descriptor loops of the PMT section s, whose loops end at s[end] (the
// CRC_32, or the end of a section being built without it), and calls fn with the offset in s of
// each descriptor and whether it is in the program_info loop. It reports false, possibly after
// some calls, when the lengths do not add up.
func walkPMT(s []byte, end int, fn func(at int, program bool)) bool {
	if end < 12 || end > len(s) {
		return false
	}
	p := 12
	info := int(be16(s[10:]) & 0x0FFF)
	if p+info > end || !walkLoop(s, p, p+info, true, fn) {
		return false
	}
	for p += info; p < end; {
		if p+5 > end {
			return false
		}
		info := int(be16(s[p+3:]) & 0x0FFF)
		p += 5
		if p+info > end || !walkLoop(s, p, p+info, false, fn) {
			return false
		}
		p += info
	}
	return true
}

// walkLoop calls fn for each descriptor of s[p:end] and reports whether they fill it exactly.
func walkLoop(s []byte, p, end int, program bool, fn func(at int, program bool)) bool {
	for p < end {
		if p+2 > end || p+2+int(s[p+1]) > end {
			return false
		}
		fn(p, program)
		p += 2 + int(s[p+1])
	}
	return true
}

// isPMTSection reports whether s is one whole TS_program_map_section (ISO/IEC 13818-1, 2.4.4.8)
// that can be trusted: table_id 0x02, the long syntax, section_length that matches len(s) and
// stays within 1021, section_number and last_section_number 0, and a good CRC_32.
func isPMTSection(s []byte) bool {
	return len(s) >= 16 && len(s) <= maxSection && s[0] == tableIDPMT && s[1]&0x80 != 0 &&
		3+int(be16(s[1:])&0x0FFF) == len(s) && s[6] == 0 && s[7] == 0 && CRC32(s) == 0
}

// PMTScramblingMode returns the scrambling_mode that the TS_program_map_section s signals: that
// of the first scrambling_descriptor of its program_info loop, or else of the first one in its
// ES_info loops (TSDuck's descrambler reads both). s is the whole section, CRC_32 included; ok is
// false when s is not a PMT section with a good CRC_32 and consistent lengths, or carries no
// scrambling_descriptor.
func PMTScramblingMode(s []byte) (mode ScramblingMode, ok bool) {
	if !isPMTSection(s) {
		return 0, false
	}
	var program, component = -1, -1
	if !walkPMT(s, len(s)-4, func(at int, prog bool) {
		if s[at] != TagScrambling || s[at+1] < 1 {
			return
		}
		if prog && program < 0 {
			program = int(s[at+2])
		} else if !prog && component < 0 {
			component = int(s[at+2])
		}
	}) {
		return 0, false
	}
	switch {
	case program >= 0:
		return ScramblingMode(program), true
	case component >= 0:
		return ScramblingMode(component), true
	}
	return 0, false
}

// AppendScramblingMode appends to dst the TS_program_map_section s with mode as its
// scrambling_mode, and returns the extended slice. Every scrambling_descriptor already in s, in
// the program_info loop or an ES_info loop, gets mode, so a section never carries two that
// disagree; if the program_info loop has none, one is added at its end (where TSDuck's scrambler
// adds it), and section_length and program_info_length grow by 3. The CRC_32 is computed again.
//
// version_number stays as it is: the section keeps its place in the version sequence of the
// input, which is also TSDuck's choice. Every repetition of one input section comes out the same,
// so a receiver never sees two contents under one version; and a new input version comes out as
// a new version, signalled the same way.
//
// ok is false, and dst is returned unchanged, when s is not one whole PMT section with a good
// CRC_32 and consistent lengths (a damaged section is passed on as it came, never given a CRC
// that would make it look right), or when the descriptor would make it longer than a section
// may be. The result is 3 bytes longer than s when a descriptor was added, as long otherwise.
func AppendScramblingMode(dst, s []byte, mode ScramblingMode) ([]byte, bool) {
	return appendScramblingMode(dst, s, mode, true)
}

// appendScramblingMode is AppendScramblingMode; without add, a section whose program_info loop
// has no scrambling_descriptor gets none, and one that has none at all is appended unchanged.
func appendScramblingMode(dst, s []byte, mode ScramblingMode, add bool) ([]byte, bool) {
	if !isPMTSection(s) {
		return dst, false
	}
	info := int(be16(s[10:]) & 0x0FFF)
	found := false
	if !walkPMT(s, len(s)-4, func(at int, prog bool) {
		if s[at] == TagScrambling && s[at+1] >= 1 {
			found = found || prog || !add
		}
	}) {
		return dst, false
	}
	if !found && !add {
		return append(dst, s...), true
	}
	grow := 3
	if found {
		grow = 0
	}
	// section_length is at most 1021 in a PMT and the first two bits of program_info_length
	// are 00 (2.4.4.8, 2.4.4.9).
	if len(s)+grow > maxSection || info+grow > 0x3FF {
		return dst, false
	}
	start := len(dst)
	infoEnd := 12 + info
	dst = append(dst, s[:infoEnd]...)
	if !found {
		dst = append(dst, TagScrambling, 1, byte(mode))
	}
	dst = append(dst, s[infoEnd:len(s)-4]...)
	out := dst[start:]
	if grow > 0 {
		n := len(out) + 4 - 3
		out[1], out[2] = out[1]&0xF0|byte(n>>8), byte(n)
		out[10], out[11] = out[10]&0xF0|byte((info+grow)>>8), byte(info+grow)
	}
	// Set the mode of every scrambling_descriptor, the one just added included; the lengths
	// were checked on s, and the walk reads those just written.
	walkPMT(out, len(out), func(at int, _ bool) {
		if out[at] == TagScrambling && out[at+1] >= 1 {
			out[at+2] = byte(mode)
		}
	})
	c := CRC32(out)
	return append(dst, byte(c>>24), byte(c>>16), byte(c>>8), byte(c)), true
}

// AppendWithoutScrambling appends to dst the TS_program_map_section s without its
// scrambling_descriptors, of the program_info loop and of every ES_info loop, and returns the
// extended slice: what a descrambler writes of a service whose output is clear, so that the
// next reader does not take it for scrambled with the system the descriptor named. The loop
// lengths and section_length shrink by 3 bytes a descriptor, the CRC_32 is computed again, and
// version_number stays as it is (see AppendScramblingMode). A section without one is appended
// unchanged; ok is false, and dst returned unchanged, when s is not one whole PMT section with a
// good CRC_32 and consistent lengths.
func AppendWithoutScrambling(dst, s []byte) ([]byte, bool) {
	if !isPMTSection(s) {
		return dst, false
	}
	var drop []int // offsets of the descriptors to take out
	if !walkPMT(s, len(s)-4, func(at int, _ bool) {
		if s[at] == TagScrambling {
			drop = append(drop, at)
		}
	}) {
		return dst, false
	}
	if len(drop) == 0 {
		return append(dst, s...), true
	}
	start := len(dst)
	// Copy the section without the descriptors, then fix each loop length on the copy: the
	// program_info_length at 10, and the ES_info_length of each ES entry.
	prev := 0
	for _, at := range drop {
		dst = append(dst, s[prev:at]...)
		prev = at + 2 + int(s[at+1])
	}
	dst = append(dst, s[prev:len(s)-4]...)
	out := dst[start:]
	removedBefore := func(lo, hi int) int { // bytes dropped from s[lo:hi]
		n := 0
		for _, at := range drop {
			if at >= lo && at < hi {
				n += 2 + int(s[at+1])
			}
		}
		return n
	}
	info := int(be16(s[10:]) & 0x0FFF)
	newInfo := info - removedBefore(12, 12+info)
	out[10], out[11] = out[10]&0xF0|byte(newInfo>>8), byte(newInfo)
	// Walk the ES loop of s, and write each entry's new length where that entry sits in out.
	shift := info - newInfo
	for p := 12 + info; p+5 <= len(s)-4; {
		esInfo := int(be16(s[p+3:]) & 0x0FFF)
		gone := removedBefore(p+5, p+5+esInfo)
		q := p - shift
		n := esInfo - gone
		out[q+3], out[q+4] = out[q+3]&0xF0|byte(n>>8), byte(n)
		shift += gone
		p += 5 + esInfo
	}
	n := len(out) + 4 - 3
	out[1], out[2] = out[1]&0xF0|byte(n>>8), byte(n)
	c := CRC32(out)
	return append(dst, byte(c>>24), byte(c>>16), byte(c>>8), byte(c)), true
}

// ScramblingMode returns the scrambling_mode the PMT of the service signals, as
// PMTScramblingMode reads it from the section: the first scrambling_descriptor of the
// program_info loop, or else the first of the ES_info loops. ok is false while the PMT has not
// been read, or when it carries none.
func (s Service) ScramblingMode() (mode ScramblingMode, ok bool) {
	if mode, ok = scramblingIn(s.Descriptors); ok {
		return mode, true
	}
	for i := range s.Streams {
		if mode, ok = scramblingIn(s.Streams[i].Descriptors); ok {
			return mode, true
		}
	}
	return 0, false
}

// scramblingIn returns the mode of the first scrambling_descriptor of a descriptor loop; it stops
// where the loop's lengths stop adding up.
func scramblingIn(d []byte) (ScramblingMode, bool) {
	for len(d) >= 2 && 2+int(d[1]) <= len(d) {
		if d[0] == TagScrambling && d[1] >= 1 {
			return ScramblingMode(d[2]), true
		}
		d = d[2+int(d[1]):]
	}
	return 0, false
}
