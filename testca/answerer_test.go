package testca

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/tsdescramble/tsdescramble/keyserver"
)

func TestAnswerer(t *testing.T) {
	even, odd := []byte{1, 2, 3, 4, 5, 6, 7, 8}, []byte{9, 10, 11, 12, 13, 14, 15, 16}
	sec := ecm(3, even, odd)[5:] // the section, after the header and pointer_field
	a := Answerer{Key: xorKey}
	e, o, err := a.Answer(context.Background(), keyserver.ECM{Section: sec})
	if err != nil || !bytes.Equal(e, even) || !bytes.Equal(o, odd) {
		t.Fatalf("Answer: %X %X %v, want %X %X", e, o, err, even, odd)
	}
	for _, bad := range [][]byte{nil, sec[:10], append([]byte{0x82}, sec[1:]...)} {
		if _, _, err := a.Answer(context.Background(), keyserver.ECM{Section: bad}); !errors.Is(err, keyserver.ErrNotFound) {
			t.Errorf("Answer(% X): %v, want ErrNotFound", bad, err)
		}
	}
	if _, _, err := (Answerer{Key: xorKey[:4]}).Answer(context.Background(), keyserver.ECM{Section: sec}); err == nil {
		t.Error("a key of 4 bytes was taken")
	}
}

// The example ECMG's ECM of an odd crypto period (table_id 0x81), decoded with its key.
func ExampleAnswerer() {
	sec := []byte{0x81, 0x00, 0x10}
	for _, cw := range [][]byte{{0, 0, 0, 0, 0, 0, 0, 0}, {0x11, 0x22, 0x33, 0x66, 0x44, 0x55, 0x66, 0xFF}} {
		for i, b := range cw {
			sec = append(sec, b^xorKey[i])
		}
	}
	even, odd, err := Answerer{Key: xorKey}.Answer(context.Background(), keyserver.ECM{Section: sec})
	fmt.Printf("even %X odd %X %v\n", even, odd, err)
	// Output: even 0000000000000000 odd 11223366445566FF <nil>
}
