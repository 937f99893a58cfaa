package testca

import (
	"bytes"
	"errors"
	"testing"

	"github.com/tsdescramble/tsdescramble/psi"
)

var xorKey = []byte{0x42, 0x12, 0x02, 0x24, 0x21, 0x20, 0x66, 0x88}

// section returns a packet of pid that starts with section s, stuffed with 0xFF.
func section(pid uint16, s []byte) []byte {
	p := bytes.Repeat([]byte{0xFF}, 188)
	p[0], p[1], p[2], p[3], p[4] = 0x47, 0x40|byte(pid>>8), byte(pid), 0x10, 0
	copy(p[5:], s)
	return p
}

func withCRC(s []byte) []byte {
	s[1], s[2] = s[1]&0xF0|byte((len(s)+1)>>8), byte(len(s)+1)
	c := psi.CRC32(s)
	return append(s, byte(c>>24), byte(c>>16), byte(c>>8), byte(c))
}

// ecm is the example ECMG's ECM of crypto period cp carrying even and odd.
func ecm(cp int, even, odd []byte) []byte {
	s := []byte{0x80 | byte(cp&1), 0x70, 16}
	for i := range 8 {
		s = append(s, even[i]^xorKey[i])
	}
	for i := range 8 {
		s = append(s, odd[i]^xorKey[i])
	}
	return section(0x1FF0, s)
}

func TestReadCWs(t *testing.T) {
	pat := section(0, withCRC([]byte{0x00, 0xB0, 0, 0x00, 0x01, 0xC1, 0, 0, 0x00, 0x01, 0xF0, 0x00}))
	pmt := section(0x1000, withCRC([]byte{0x02, 0xB0, 0, 0x00, 0x01, 0xC1, 0, 0, 0xE1, 0x00, 0xF0, 0x06,
		0x09, 0x04, 0x4A, 0xDC, 0xFF, 0xF0, 0x1B, 0xE1, 0x00, 0xF0, 0x00}))
	cw := [][]byte{{1, 2, 3, 6, 5, 6, 7, 18}, {9, 8, 7, 24, 6, 5, 4, 15}, {0x11, 0x22, 0x33, 0x66, 0x44, 0x55, 0x66, 0xFF}, {7, 7, 7, 21, 8, 8, 8, 24}}
	var stream []byte
	// The first ECM before the PAT and PMT, then each repeated, the even slot holding the even
	// period's CW as the ECMG's parity rule says.
	stream = append(stream, ecm(0, cw[0], cw[1])...)
	stream = append(stream, pat...)
	stream = append(stream, pmt...)
	stream = append(stream, ecm(0, cw[0], cw[1])...)
	stream = append(stream, ecm(1, cw[2], cw[1])...)
	stream = append(stream, ecm(1, cw[2], cw[1])...)
	stream = append(stream, ecm(2, cw[2], cw[3])...)
	res, err := ReadCWs(bytes.NewReader(stream), xorKey, 0)
	if err != nil {
		t.Fatal(err)
	}
	if res.ECMs != 5 || res.Distinct != 3 || len(res.PIDs) != 1 || res.PIDs[0] != 0x1FF0 || len(res.Periods) != 4 {
		t.Fatalf("got %+v", res)
	}
	for i, p := range res.Periods {
		if p.Odd != (i%2 == 1) || !bytes.Equal(p.CW, cw[i]) {
			t.Errorf("period %d: odd %v CW %X, want %X", i, p.Odd, p.CW, cw[i])
		}
	}
	// Another service's: nothing.
	if _, err := ReadCWs(bytes.NewReader(stream), xorKey, 2); !errors.Is(err, ErrNoECM) {
		t.Fatalf("service 2: %v", err)
	}
}
