package csa

import (
	"bufio"
	"encoding/hex"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// readHex reads a testdata file holding one line of hex.
func readHex(t testing.TB, name string) []byte {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	b, err := hex.DecodeString(strings.TrimSpace(string(raw)))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return b
}

// mustKey expands a control word read from testdata.
func mustKey(t testing.TB, cw []byte) *Key {
	t.Helper()
	k, err := NewKey(cw)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// payloadVector is one published payload-only vector.
type payloadVector struct {
	name             string
	cw               []byte
	clear, scrambled []byte
}

// payloadVectors returns the libdvbcsa and TSDuck payload vectors.
func payloadVectors(t testing.TB) []payloadVector {
	var vs []payloadVector
	for _, base := range []string{"libdvbcsa_test1", "libdvbcsa_test2", "tsduck_csa2_1", "tsduck_csa2_2"} {
		vs = append(vs, payloadVector{
			name:      base,
			cw:        readHex(t, base+".cw.hex"),
			clear:     readHex(t, base+".clear.hex"),
			scrambled: readHex(t, base+".scrambled.hex"),
		})
	}
	return vs
}

// lengthVector is one line of the generated length tables.
type lengthVector struct {
	clear, scrambled []byte
}

// readLengthTable reads a "LEN CLEAR SCRAMBLED" table ("-" is empty).
func readLengthTable(t testing.TB, name string) []lengthVector {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var vs []lengthVector
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 {
			continue
		}
		if len(fields) != 3 {
			t.Fatalf("%s: bad line %q", name, sc.Text())
		}
		n, err := strconv.Atoi(fields[0])
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var v lengthVector
		for i, dst := range []*[]byte{&v.clear, &v.scrambled} {
			s := fields[1+i]
			if s == "-" {
				s = ""
			}
			if *dst, err = hex.DecodeString(s); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if len(*dst) != n {
				t.Fatalf("%s: length %d line has %d bytes", name, n, len(*dst))
			}
		}
		vs = append(vs, v)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return vs
}

// lengthTableCW is the control word of both generated length tables.
var lengthTableCW = []byte{0x11, 0x22, 0x33, 0x66, 0x44, 0x55, 0x66, 0xff}
