package probe

import (
	"bytes"
	"encoding/json"
	"io"
	"math/rand/v2"
	"testing"
)

// FuzzProbe feeds arbitrary bytes to Probe: it must return a report or an error, never panic
// or hang, and a report must print in both forms.
func FuzzProbe(f *testing.F) {
	// Small seeds: the fuzzer minimises every new input it finds, and that is slow on large ones.
	syn := buildSynthetic(1).ts
	f.Add(syn[:188*24])
	f.Add(syn[:188*7])
	f.Add(reframe(syn[:188*10], 204))
	f.Add([]byte{0x47})
	// A PSI-only stream, to let the fuzzer work on the tables rather than on the framing.
	sb := newStreamBuilder()
	sb.psi(0x0000, patSection(1, 1, 0x100))
	sb.psi(0x0001, catSection(caDesc(0x0B00, 0x300)))
	sb.psi(0x0100, pmtSection(1, 0x101, caDesc(0x0B00, 0x200), esInfo{0x06, 0x101, []byte{0x05, 4, 'A', 'C', '-', '3'}}))
	sb.psi(0x0011, sdtSection(1, 1, sdtEntry{1, []byte("p"), []byte("\x10\x00\x01n")}))
	f.Add(sb.buf)
	f.Fuzz(func(t *testing.T, data []byte) {
		rep, err := Probe(bytes.NewReader(data))
		if err != nil {
			if rep != nil {
				t.Fatalf("a report with an error: %v", err)
			}
			return
		}
		if rep.Packets == 0 && rep.SkippedBytes+rep.TruncatedBytes == 0 {
			t.Fatalf("a report of nothing for %d bytes", len(data))
		}
		if rep.Bytes != int64(len(data)) {
			t.Fatalf("report counts %d bytes of %d", rep.Bytes, len(data))
		}
		if err := rep.WriteText(io.Discard); err != nil {
			t.Fatal(err)
		}
		if _, err := json.Marshal(rep); err != nil {
			t.Fatal(err)
		}
	})
}

// TestProbeMutations runs Probe over damaged copies of a stream (a few bytes changed at
// random, with a fixed seed): the tables may be lost, but every byte is accounted for and
// Probe returns.
func TestProbeMutations(t *testing.T) {
	sb := newStreamBuilder()
	sb.psi(0x0000, patSection(1, 1, 0x100))
	sb.psi(0x0001, catSection(caDesc(0x0B00, 0x300)))
	sb.psi(0x0100, pmtSection(1, 0x101, caDesc(0x0B00, 0x200), esInfo{0x06, 0x101, []byte{0x05, 4, 'A', 'C', '-', '3'}}))
	sb.psi(0x0011, sdtSection(1, 1, sdtEntry{1, []byte("p"), []byte("\x10\x00\x01n")}))
	seeds := [][]byte{buildSynthetic(1).ts, sb.buf}
	rng := rand.New(rand.NewPCG(1, 2))
	n := 400
	if testing.Short() {
		n = 50
	}
	for i := range n {
		d := bytes.Clone(seeds[i%2])
		for k := rng.IntN(8) + 1; k > 0; k-- {
			d[rng.IntN(len(d))] = byte(rng.IntN(256))
		}
		rep, err := Probe(bytes.NewReader(d))
		if err != nil {
			continue // no sync left at all
		}
		if rep.Bytes != int64(len(d)) {
			t.Fatalf("mutation %d: report counts %d bytes of %d", i, rep.Bytes, len(d))
		}
		if err := rep.WriteText(io.Discard); err != nil {
			t.Fatal(err)
		}
	}
}
