package psi

import (
	"bytes"
	"testing"
)

func TestAppendCADescriptor(t *testing.T) {
	// A PMT of program 1: PCR on 0x100, one H.264 stream on 0x100, no program descriptors.
	body := []byte{0x02, 0xB0, 0, 0x00, 0x01, 0xC1, 0x00, 0x00, 0xE1, 0x00, 0xF0, 0x00,
		0x1B, 0xE1, 0x00, 0xF0, 0x00}
	body[2] = byte(len(body) + 4 - 3)
	c := CRC32(body)
	pmt := append(body, byte(c>>24), byte(c>>16), byte(c>>8), byte(c))

	out, ok := AppendCADescriptor(nil, pmt, 0x4ADC, 0x1FF0, []byte{0xAA})
	if !ok {
		t.Fatal("not appended")
	}
	if CRC32(out) != 0 || len(out) != len(pmt)+7 {
		t.Fatalf("length %d, CRC %08X", len(out), CRC32(out))
	}
	svc, ok := ParsePMT(0x1000, out)
	if !ok || len(svc.CA) != 1 || svc.CA[0].SystemID != 0x4ADC || svc.CA[0].PID != 0x1FF0 || len(svc.Streams) != 1 || svc.Streams[0].PID != 0x100 {
		t.Fatalf("parsed %+v, %v", svc, ok)
	}
	// Twice makes no second descriptor.
	again, ok := AppendCADescriptor(nil, out, 0x4ADC, 0x1FF0, []byte{0xAA})
	if !ok || !bytes.Equal(again, out) {
		t.Fatal("a second descriptor was added")
	}
	// A damaged section is refused.
	pmt[len(pmt)-1] ^= 1
	if _, ok := AppendCADescriptor(nil, pmt, 0x4ADC, 0x1FF0, nil); ok {
		t.Fatal("bad CRC accepted")
	}
}
