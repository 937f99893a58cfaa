// Package pmtcorpus makes the TS packets of PMT sections that the tests of the PMT rewriter
// share: the one rewriter serves scrambling signalling (psi) and SimulCrypt (scs), and both
// are pinned on the same packets, shaped as broadcast PMTs are and as they go wrong: room or
// none for a descriptor, sections that span packets, several sections in a packet, pointer
// fields, adaptation fields, dirty stuffing, damaged sections, descriptors already there.
//
// It reads no PSI itself (psi's own tests use it), so it computes its CRC_32 by itself.
package pmtcorpus

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// PID is the PMT PID of every program of the corpus.
const PID = 0x100

// Programs are the program numbers of the PAT; the corpus's sections are of these.
var Programs = []uint16{1, 2, 3}

// PAT returns a packet with the PAT that puts every program of Programs on PID.
func PAT() []byte {
	s := []byte{0x00, 0xB0, 0, 0x00, 0x01, 0xC1, 0, 0}
	for _, n := range Programs {
		s = append(s, byte(n>>8), byte(n), 0xE0|PID>>8, PID&0xFF)
	}
	return packet(0, true, 0, nil, 0, withCRC(s))
}

// CRC32 is the CRC_32 of ISO/IEC 13818-1 Annex A (polynomial 0x04C11DB7, no reflection),
// written out bit by bit so that fixtures built with it do not rest on the package under test.
func CRC32(b []byte) uint32 {
	c := uint32(0xFFFFFFFF)
	for _, x := range b {
		c ^= uint32(x) << 24
		for range 8 {
			if c&0x80000000 != 0 {
				c = c<<1 ^ 0x04C11DB7
			} else {
				c <<= 1
			}
		}
	}
	return c
}

// withCRC sets section_length of the section s (CRC_32 not yet there) and appends its CRC_32.
func withCRC(s []byte) []byte {
	s[1], s[2] = s[1]&0xF0|byte((len(s)+1)>>8), byte(len(s)+1)
	c := CRC32(s)
	return append(s, byte(c>>24), byte(c>>16), byte(c>>8), byte(c))
}

// es is an elementary stream of a PMT.
type es struct {
	typ  byte
	pid  uint16
	desc []byte
}

// pmt returns the PMT section of program with the program_info descriptors info and the streams.
func pmt(program uint16, info []byte, streams ...es) []byte {
	s := []byte{0x02, 0xB0, 0, byte(program >> 8), byte(program), 0xC3, 0, 0, 0xE1, 0x01, 0xF0 | byte(len(info)>>8), byte(len(info))}
	s = append(s, info...)
	for _, e := range streams {
		s = append(s, e.typ, 0xE0|byte(e.pid>>8), byte(e.pid), 0xF0|byte(len(e.desc)>>8), byte(len(e.desc)))
		s = append(s, e.desc...)
	}
	return withCRC(s)
}

// packet returns a packet of pid: payload_unit_start_indicator start, scrambling bits tsc, an
// adaptation field of af bytes (after its length byte) when af is not nil, the pointer_field
// pointer with head before the sections (the end of a section begun earlier), the sections,
// then 0xFF stuffing.
func packet(pid uint16, start bool, tsc byte, af []byte, pointer byte, sections ...[]byte) []byte {
	p := bytes.Repeat([]byte{0xFF}, 188)
	p[0], p[1], p[2], p[3] = 0x47, byte(pid>>8)&0x1F, byte(pid), tsc<<6|0x10
	if start {
		p[1] |= 0x40
	}
	at := 4
	if af != nil {
		p[3] |= 0x20
		p[4] = byte(len(af))
		copy(p[5:], af)
		at += 1 + len(af)
	}
	if start {
		p[at] = pointer
		at++
		for i := range int(pointer) {
			p[at+i] = byte(0x20 + i) // the tail of an earlier section
		}
		at += int(pointer)
	}
	for _, s := range sections {
		at += copy(p[at:], s)
	}
	return p
}

// Packets returns the corpus: packets of PID, each to be fed after PAT, in order. caSystem and
// ecmPID name a CA_descriptor that some sections carry already, as a rewriter adding that very
// descriptor would meet them.
func Packets(caSystem, ecmPID uint16) [][]byte {
	video := es{0x1B, 0x101, nil}
	audio := es{0x0F, 0x102, []byte{0x0A, 4, 'e', 'n', 'g', 0}} // ISO_639_language_descriptor
	ca := []byte{0x09, 4, byte(caSystem >> 8), byte(caSystem), 0xE0 | byte(ecmPID>>8), byte(ecmPID)}
	otherCA := []byte{0x09, 6, 0x0B, 0x00, 0xE1, 0x50, 0xAB, 0xCD}
	scrambling := func(mode byte) []byte { return []byte{0x65, 1, mode} }
	reg := []byte{0x05, 4, 'H', 'D', 'M', 'V'} // registration_descriptor

	// fill returns the bytes of program_info that leave room bytes of stuffing after a
	// section of program with one video stream, in a packet without adaptation field.
	fill := func(room int) []byte {
		n := 188 - 5 - len(pmt(1, nil, video)) - room - 2
		return append([]byte{0x80, byte(n)}, make([]byte, n)...)
	}
	long := pmt(1, bytes.Repeat(reg, 40), video, audio) // spans packets
	bad := pmt(1, nil, video)
	bad[len(bad)-1] ^= 1
	secNumber := pmt(2, nil, video)
	secNumber[6] = 1
	secNumber = withCRC(secNumber[:len(secNumber)-4])
	loose := pmt(1, []byte{0x80, 9, 1, 2}, video) // program_info_length runs into the ES loop
	loose[11] = 4
	loose = withCRC(loose[:len(loose)-4])
	cut := []byte{0x02, 0xB0} // a section header the packet ends in

	var out [][]byte
	add := func(p []byte) { out = append(out, p) }
	add(packet(PID, true, 0, nil, 0, pmt(1, nil, video)))
	add(packet(PID, true, 0, nil, 0, pmt(3, nil, video)))                          // not wanted
	add(packet(PID, true, 0, nil, 0, pmt(1, ca, video, audio)))                    // the descriptor is there
	add(packet(PID, true, 0, nil, 0, pmt(1, otherCA, video, audio)))               // another CA system
	add(packet(PID, true, 0, nil, 0, pmt(2, scrambling(0x10), video)))             // a scrambling_descriptor
	add(packet(PID, true, 0, nil, 0, pmt(2, nil, es{0x06, 0x103, scrambling(1)}))) // in an ES loop only
	add(packet(PID, true, 0, nil, 0, pmt(1, append(scrambling(2), ca...), video)))
	add(packet(PID, true, 0, nil, 0, pmt(1, nil, video), pmt(2, reg, video, audio))) // two sections
	add(packet(PID, true, 0, nil, 0, pmt(3, nil, video), pmt(2, nil, video)))        // one wanted of two
	add(packet(PID, true, 0, nil, 0, pmt(1, nil, video, audio, video, audio)))
	for _, room := range []int{0, 2, 3, 5, 6, 7, 9, 12} {
		add(packet(PID, true, 0, nil, 0, pmt(1, fill(room), video)))
	}
	add(packet(PID, true, 0, nil, 0, pmt(1, fill(29), video), pmt(2, nil, video))) // 8 bytes of room for two
	add(packet(PID, true, 0, nil, 7, pmt(1, nil, video)))                          // pointer_field
	add(packet(PID, true, 0, []byte{0x00, 0xFF, 0xFF, 0xFF}, 0, pmt(1, nil, video)))
	add(packet(PID, true, 0, make([]byte, 150), 0, pmt(1, nil, video))) // little payload
	add(packet(PID, true, 0, nil, 0, long[:183]))                       // spans packets
	add(packet(PID, false, 0, nil, 0, long[183:]))                      // and goes on
	add(packet(PID, true, 0, nil, 0, pmt(1, nil, video), long[:100]))
	add(packet(PID, true, 0, nil, 0, pmt(3, nil, video), long[:140]))
	add(packet(PID, true, 0, nil, 0, pmt(1, nil, video), []byte{0x4E, 0xF0, 0xF0, 1, 2, 3})) // an EIT that spans
	add(packet(PID, true, 0, nil, 0, pmt(1, nil, video), bytes.Repeat([]byte{0xFF}, 3), []byte{0x55}))
	add(packet(PID, true, 2, nil, 0, pmt(1, nil, video))) // scrambled
	add(packet(PID, true, 0, nil, 0, bad))
	add(packet(PID, true, 0, nil, 0, secNumber))
	add(packet(PID, true, 0, nil, 0, loose))
	p := packet(PID, true, 0, nil, 0, pmt(2, nil, video))
	copy(p[186:], cut)
	add(p)
	p = packet(PID, true, 0, nil, 0)
	add(p) // a pointer_field and stuffing
	p = packet(PID, true, 0, nil, 0, pmt(1, nil, video))
	p[3] = p[3]&^0x30 | 0x20 // adaptation field only
	add(p)
	p = packet(PID, true, 0, nil, 0, pmt(1, nil, video))
	p[4] = 184 // a pointer_field past the packet
	add(p)
	return out
}

// CheckGolden compares got with the golden file at path, line by line, after rewriting the file
// with got when update is set (a test's -update flag).
func CheckGolden(t testing.TB, path, got string, update bool) {
	t.Helper()
	if update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got == string(want) {
		return
	}
	gl, wl := strings.Split(got, "\n"), strings.Split(string(want), "\n")
	for i := range min(len(gl), len(wl)) {
		if gl[i] != wl[i] {
			t.Errorf("%s, line %d:\n got %s\nwant %s", path, i+1, gl[i], wl[i])
		}
	}
	if len(gl) != len(wl) {
		t.Errorf("%s: %d lines, want %d", path, len(gl), len(wl))
	}
}
