package keys

import (
	"bytes"
	"testing"
)

func TestParseCW(t *testing.T) {
	want := []byte{0x11, 0x22, 0x33, 0x66, 0x44, 0x55, 0x66, 0xff}
	for _, s := range []string{"11223366445566ff", "11 22 33 66 44 55 66 FF", "11:22:33:66:44:55:66:ff", "1122-3366-4455-66ff", "0x11223366445566ff", "  11223366445566ff\t"} {
		got, err := ParseCW(s, CWSize)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("ParseCW(%q) = %x, %v", s, got, err)
		}
	}
	for _, s := range []string{"", "1122", "11223366445566f", "11223366445566ff00", "1122336644556gff", "11223366445566f f0"} {
		if got, err := ParseCW(s, CWSize); err == nil {
			t.Errorf("ParseCW(%q) = %x, want an error", s, got)
		}
	}
	if got, err := ParseCW("000102030405060708090a0b0c0d0e0f", 16); err != nil || len(got) != 16 || got[15] != 15 {
		t.Errorf("16-byte key: %x %v", got, err)
	}
}

func TestReduceEntropy(t *testing.T) {
	cw := []byte{0x11, 0x22, 0x33, 0x00, 0x44, 0x55, 0x66, 0x00}
	if ChecksumOK(cw) {
		t.Fatal("zero checksums accepted")
	}
	ReduceEntropy(cw)
	if !bytes.Equal(cw, []byte{0x11, 0x22, 0x33, 0x66, 0x44, 0x55, 0x66, 0xff}) || !ChecksumOK(cw) {
		t.Fatalf("reduced %x", cw)
	}
	// The sums wrap modulo 256.
	cw = []byte{0xff, 0xff, 0x03, 0, 0x80, 0x80, 0x80, 0}
	ReduceEntropy(cw)
	if cw[3] != 0x01 || cw[7] != 0x80 {
		t.Fatalf("wrapped sums %x", cw)
	}
}

func TestScheduleList(t *testing.T) {
	cws := [][]byte{{0}, {1}, {2}}
	s := NewList(cws)
	// E E O O E O E: parity changes at packets 2, 4, 5, 6 move through the list cyclically.
	parities := []bool{false, false, true, true, false, true, false}
	want := []int{0, 0, 1, 1, 2, 0, 1}
	for i, odd := range parities {
		if got := s.KeyFor(odd); got != want[i] {
			t.Fatalf("packet %d: key %d, want %d", i, got, want[i])
		}
	}
	if s.Changes() != 4 {
		t.Fatalf("changes %d", s.Changes())
	}
	// A stream that starts odd uses the first CW for its first period too.
	s = NewList(cws)
	if s.KeyFor(true) != 0 || s.KeyFor(false) != 1 {
		t.Fatal("odd start")
	}
}

func TestScheduleFixed(t *testing.T) {
	s := NewFixed([]byte{1}, nil)
	if s.KeyFor(false) != 0 || s.KeyFor(true) != NoKey || s.KeyFor(false) != 0 || len(s.CWs()) != 1 {
		t.Fatal("even-only schedule")
	}
	s = NewFixed([]byte{1}, []byte{2})
	for range 3 {
		if s.KeyFor(false) != 0 || s.KeyFor(true) != 1 {
			t.Fatal("fixed keys rotated")
		}
	}
}
