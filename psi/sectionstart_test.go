package psi

import (
	"bytes"
	"testing"
)

// startPayload returns the payload of a packet that starts sect, after count bytes that end
// a previous section, padded with stuffing to 184 bytes.
func startPayload(tail int, sect ...[]byte) []byte {
	p := append([]byte{byte(tail)}, bytes.Repeat([]byte{0x5A}, tail)...)
	p = append(p, bytes.Join(sect, nil)...)
	for len(p) < PacketSize-4 {
		p = append(p, 0xFF)
	}
	return p
}

// short builds a section with the short syntax (section_syntax_indicator 0).
func short(tid byte, body []byte) []byte {
	return append([]byte{tid, 0x70 | byte(len(body)>>8), byte(len(body))}, body...)
}

func TestSectionStartOK(t *testing.T) {
	long := pmt(1, 0, 0x101, nil, func() (ss []es) {
		for i := range 40 {
			ss = append(ss, es{0x1B, 0x1000 + uint16(i), nil})
		}
		return ss
	}()...)
	badCRC := bytes.Clone(demoPMT1)
	badCRC[len(badCRC)-1] ^= 1
	badBody := bytes.Clone(demoPAT)
	badBody[9] ^= 0x40
	tdt := short(0x70, []byte{0xE7, 0x5A, 0x12, 0x34, 0x56})
	// UTC_time, an empty descriptor loop and room for the CRC_32, which recrc fills in.
	tot := recrc(short(0x73, []byte{0xE7, 0x5A, 0x12, 0x34, 0x56, 0xF0, 0x00, 0, 0, 0, 0}))
	badTOT := bytes.Clone(tot)
	badTOT[5] ^= 1
	ecm := section(0x80, 0, 0, 0, 0, bytes.Repeat([]byte{0x11}, 50))
	ecm[1] &^= 0x80 // an ECM: a private section with the short syntax, no CRC
	ecm = ecm[:len(ecm)-4]
	ecm[2] = byte(len(ecm) - 3)
	sit := section(0x7F, 0xFFFF, 0, 0, 0, []byte{0xF0, 0x00, 0x00, 0x01, 0x80, 0x00})
	hugePrivate := []byte{0x90, 0xBF, 0xFD, 1, 2, 3} // section_length 4093
	tooLongPrivate := []byte{0x90, 0xBF, 0xFE, 1, 2, 3}
	tooLongPMT := []byte{0x02, 0xB3, 0xFE, 0, 1, 0xC1}

	for _, c := range []struct {
		name        string
		payload     []byte
		ok, checked bool
	}{
		{"PAT", startPayload(0, demoPAT), true, true},
		{"PMT after the tail of another section", startPayload(20, demoPMT1), true, true},
		{"two sections", startPayload(0, demoPMT1, demoPMT2), true, true},
		{"bad CRC", startPayload(0, badCRC), false, true},
		{"bad body", startPayload(7, badBody), false, true},
		{"bad CRC then a good section", startPayload(0, badCRC, demoPMT2), false, true},
		{"SIT", startPayload(0, sit), true, true},
		{"TOT", startPayload(0, tot), true, true},
		{"TOT with a bad CRC", startPayload(0, badTOT), false, true},
		{"TDT", startPayload(3, tdt), true, false},
		{"TDT of the wrong length", startPayload(0, short(0x70, []byte{1, 2, 3})), false, false},
		{"ECM", startPayload(0, ecm), true, false},
		{"PMT longer than the packet", startPayload(0, long)[:PacketSize-4], true, false},
		{"PMT that the packet cuts", startPayload(160, demoPMT1)[:PacketSize-4], true, false},
		{"private section of 4096 bytes", startPayload(0, hugePrivate), true, false},
		{"section_length 4094", startPayload(0, tooLongPrivate), false, false},
		{"PMT section_length 1022", startPayload(0, tooLongPMT), false, false},
		{"PMT with the short syntax", startPayload(0, short(0x02, []byte{1, 2, 3})), false, false},
		{"TDT with the long syntax", startPayload(0, section(0x70, 0, 0, 0, 0, nil)), false, false},
		{"long syntax too short for its CRC", startPayload(0, []byte{0x80, 0xB0, 0x08, 0, 0, 0, 0, 0, 0, 0, 0}), false, false},
		{"stuffing table_id", startPayload(0, []byte{0xFF, 0xFF, 0xFF}), false, false},
		{"reserved table_id", startPayload(0, section(0x20, 1, 0, 0, 0, []byte{1, 2})), false, false},
		{"T2-MI L1-current packet", startPayload(0, []byte{0x10, 0x05, 0x30, 0x00, 0x00, 0x58}), false, false},
		{"EIT with the short syntax", startPayload(0, short(0x4E, []byte{1, 2, 3})), false, false},
		{"SIT", startPayload(0, section(0x7F, 0xFFFF, 0, 0, 0, nil)), true, true},
		{"table_id 0x0A", startPayload(0, section(0x0A, 1, 0, 0, 0, nil)), true, true},
		{"pointer past the payload", append([]byte{184}, make([]byte, 183)...), false, false},
		{"pointer to the end of the payload", append([]byte{183}, make([]byte, 183)...), false, false},
		{"one byte of a section", append(append([]byte{182}, make([]byte, 182)...), 0x02), true, false},
		{"two bytes of a section", append(append([]byte{181}, make([]byte, 181)...), 0x02, 0xB0), true, false},
		{"empty", nil, false, false},
		{"pointer alone", []byte{0}, false, false},
		{"short payload, whole PAT", append([]byte{0}, demoPAT...), true, true},
	} {
		ok, checked := SectionStartOK(c.payload)
		if ok != c.ok || checked != c.checked {
			t.Errorf("%s: ok %v checked %v, want %v %v", c.name, ok, checked, c.ok, c.checked)
		}
	}
}

// TestSectionStartOKPackets runs SectionStartOK over the start packets a carousel makes.
func TestSectionStartOKPackets(t *testing.T) {
	c := carousel{}
	for _, s := range [][]byte{demoPAT, demoPMT1, demoPMT2} {
		p := c.packets(0x100, s)[0]
		if ok, checked := SectionStartOK(p[4:]); !ok || !checked {
			t.Errorf("section %#02x: %v %v", s[0], ok, checked)
		}
	}
}

func TestSectionStartOKDoesNotAllocate(t *testing.T) {
	p := startPayload(0, demoPMT1)
	if n := testing.AllocsPerRun(1000, func() { SectionStartOK(p) }); n != 0 {
		t.Fatalf("%v allocations", n)
	}
}

func FuzzSectionStartOK(f *testing.F) {
	f.Add(startPayload(0, demoPAT))
	f.Add(startPayload(9, demoPMT1, demoPMT2))
	f.Add(startPayload(0, short(0x73, []byte{1, 2, 3, 4, 5, 0xF0, 0, 1, 2, 3, 4})))
	f.Add([]byte{0})
	f.Add([]byte{1, 0x02})
	f.Fuzz(func(t *testing.T, p []byte) {
		ok, checked := SectionStartOK(p)
		if !checked {
			return
		}
		// A checked answer is the CRC of a whole section inside the payload.
		s := p[1+int(p[0]):]
		n := 3 + (int(s[1]&0x0F)<<8 | int(s[2]))
		if n > len(s) {
			t.Fatalf("checked a section of %d bytes in %d", n, len(s))
		}
		if ok != (CRC32(s[:n]) == 0) {
			t.Fatalf("ok %v for CRC %#x", ok, CRC32(s[:n]))
		}
	})
}
