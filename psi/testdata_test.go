package psi

import (
	"bytes"
	"os"
	"testing"
)

// exampleStream builds testdata/two-programs.ts, the stream of the package example: a PAT with
// two programs, their PMTs (the first with a BISS CA descriptor) and a few packets of each
// elementary stream, twice over.
func exampleStream() []byte {
	c := carousel{}
	var ts []byte
	add := func(pkts ...[]byte) {
		for _, p := range pkts {
			ts = append(ts, p...)
		}
	}
	for range 2 {
		add(c.packets(PATPID, pat(1, 0, 1, 0x1000, 2, 0x1001))...)
		add(c.packets(0x1000, pmt(1, 0, 0x100, caDesc(0x2600, 0x1FF0), es{0x02, 0x100, nil}, es{0x03, 0x101, nil}))...)
		add(c.packets(0x1001, pmt(2, 0, 0x102, nil, es{0x02, 0x102, nil}, es{0x03, 0x103, nil}))...)
		for pid := uint16(0x100); pid <= 0x103; pid++ {
			p := packet(pid, true, c[pid], []byte{0, 0, 1, 0xE0, 0, 0})
			p[3] |= 0x80 // scrambled, even key
			c[pid]++
			add(p)
		}
	}
	return ts
}

// TestExampleStream checks that testdata/two-programs.ts is what exampleStream builds; run
// with PSI_WRITE_TESTDATA=1 to write it again after changing exampleStream.
func TestExampleStream(t *testing.T) {
	const path = "testdata/two-programs.ts"
	want := exampleStream()
	if os.Getenv("PSI_WRITE_TESTDATA") == "1" {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s differs from exampleStream: run the tests with PSI_WRITE_TESTDATA=1", path)
	}
}
