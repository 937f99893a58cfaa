package scs

import (
	"bytes"
	"context"
	"testing"

	"github.com/tsdescramble/tsdescramble/psi"
	"github.com/tsdescramble/tsdescramble/simulcrypt"
	"github.com/tsdescramble/tsdescramble/ts"
)

// FuzzSignalPMT: whatever a packet on the PMT PID holds, the CA_descriptor writer never panics,
// keeps the packet's size and header, and changes only PMT sections with a good CRC, into PMT
// sections with a good CRC; every other section keeps its bytes and its place in the order.
func FuzzSignalPMT(f *testing.F) {
	pmt := sectionPacket(pmtPID, withCRC([]byte{0x02, 0xB0, 0, 0x00, 0x01, 0xC1, 0, 0, 0xE1, 0x00, 0xF0, 0x00, 0x1B, 0xE1, 0x00, 0xF0, 0x00}))
	f.Add(pmt)
	f.Add(pmt[:100])
	// A section of another table, three bytes long, before the PMT: the PMT is still rewritten.
	after := append([]byte{0x30, 0x30, 0x00}, pmt[5:185]...)
	f.Add(append(append([]byte(nil), pmt[:5]...), after...))
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
		if bytes.Equal(p, before) {
			return
		}
		in, out := packetSections(before), packetSections(p)
		if len(in) != len(out) {
			t.Fatalf("%d sections became %d: % X", len(in), len(out), p)
		}
		for i := range in {
			if bytes.Equal(in[i], out[i]) {
				continue
			}
			for _, sec := range [][]byte{in[i], out[i]} {
				if sec[0] != 0x02 || psi.CRC32(sec) != 0 {
					t.Fatalf("section %d changed from % X into % X", i, in[i], out[i])
				}
			}
		}
	})
}

// packetSections cuts the whole sections that start in a packet (after its pointer_field) up
// to the stuffing, the packet's end or a section that runs past it.
func packetSections(p []byte) [][]byte {
	off, ok := ts.PayloadOffset(p)
	if !ok || off >= len(p) {
		return nil
	}
	var secs [][]byte
	for q := off + 1 + int(p[off]); q+3 <= len(p) && p[q] != 0xFF; {
		n := 3 + (int(p[q+1]&0x0F)<<8 | int(p[q+2]))
		if q+n > len(p) {
			break
		}
		secs = append(secs, p[q:q+n])
		q += n
	}
	return secs
}

// FuzzStage: whatever the input, a stage without an ECMG never panics and hands on the packets
// the framer finds, every one, unchanged.
func FuzzStage(f *testing.F) {
	f.Add(synthStream(0.004, 1000, 5, ts.Framing188, false))
	f.Add(synthStream(0.003, 1000, 0, ts.Framing204, true))
	f.Fuzz(func(t *testing.T, in []byte) {
		s, err := New(context.Background(), Config{CPDuration: 100e6,
			NextCW: func() ([]byte, error) { return make([]byte, 8), nil }})
		if err != nil {
			t.Fatal(err)
		}
		out, err := driveAll(s, in)
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
