package scs

import (
	"bytes"
	"context"
	"io"
	"testing"

	"github.com/tsdescramble/tsdescramble/psi"
	"github.com/tsdescramble/tsdescramble/simulcrypt"
	"github.com/tsdescramble/tsdescramble/ts"
)

// FuzzSignalPMT: whatever a packet on the PMT PID holds, the CA_descriptor writer never panics,
// keeps the packet's size and header, and changes it only into PMT sections with a good CRC.
func FuzzSignalPMT(f *testing.F) {
	pmt := sectionPacket(pmtPID, withCRC([]byte{0x02, 0xB0, 0, 0x00, 0x01, 0xC1, 0, 0, 0xE1, 0x00, 0xF0, 0x00, 0x1B, 0xE1, 0x00, 0xF0, 0x00}))
	f.Add(pmt)
	f.Add(pmt[:100])
	f.Fuzz(func(t *testing.T, b []byte) {
		p := bytes.Repeat([]byte{0xFF}, 188)
		copy(p, b)
		p[0], p[1], p[2] = 0x47, p[1]&0xE0|byte(pmtPID>>8), byte(pmtPID&0xFF)
		s := &Stage{cfg: Config{ECMPID: ecmPID, ECMG: &simulcrypt.Config{SuperCASID: 0x4ADC0000}, Log: func(string) {}},
			tracker: psi.NewTracker(), wanted: map[uint16]bool{}}
		pat := sectionPacket(0, withCRC([]byte{0x00, 0xB0, 0, 0x00, 0x01, 0xC1, 0, 0, 0x00, 0x01, 0xE0 | pmtPID>>8, pmtPID & 0xFF}))
		s.signalPMT(pat, 0)
		before := append([]byte(nil), p...)
		s.signalPMT(p, pmtPID)
		if len(p) != 188 || !bytes.Equal(p[:4], before[:4]) {
			t.Fatal("the header changed")
		}
		if !bytes.Equal(p, before) {
			off, _ := ts.PayloadOffset(p)
			q := off + 1 + int(p[off])
			n := 3 + (int(p[q+1]&0x0F)<<8 | int(p[q+2]))
			if p[q] != 0x02 || psi.CRC32(p[q:q+n]) != 0 {
				t.Fatalf("rewritten into % X", p)
			}
		}
	})
}

// FuzzStage: whatever the input, a stage without an ECMG never panics and hands on the packets
// the framer finds, every one, unchanged.
func FuzzStage(f *testing.F) {
	f.Add(synthStream(0.004, 1000, 5, ts.Framing188, false))
	f.Add(synthStream(0.003, 1000, 0, ts.Framing204, true))
	f.Fuzz(func(t *testing.T, in []byte) {
		s, err := New(context.Background(), bytes.NewReader(in), Config{CPDuration: 100e6,
			NextCW: func() ([]byte, error) { return make([]byte, 8), nil }})
		if err != nil {
			t.Fatal(err)
		}
		out, err := io.ReadAll(s)
		if err != nil && err != ts.ErrNoSync {
			t.Fatal(err)
		}
		fr := ts.NewFramer(bytes.NewReader(in))
		var want []byte
		for {
			u, err := fr.Next()
			if err != nil {
				break
			}
			want = append(want, u...)
		}
		if err == nil && !bytes.Equal(out, want) {
			t.Fatalf("%d bytes out, the framer finds %d", len(out), len(want))
		}
	})
}
