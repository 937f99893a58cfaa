package pipeline

import (
	"bytes"
	"context"
	"testing"

	"github.com/tsdescramble/tsdescramble/ts"

	"github.com/tsdescramble/tsdescramble/csa"
	"github.com/tsdescramble/tsdescramble/keys"
)

// FuzzPacket runs the header accessors and the whole pipeline over arbitrary packets: no panic,
// and the output is a whole number of the input's packets.
func FuzzPacket(f *testing.F) {
	p := make([]byte, 188)
	p[0], p[3], p[4] = ts.SyncByte, 0xB0, 183
	f.Add(p)
	p2 := append([]byte{}, p...)
	p2[3], p2[4] = 0xD0, 0
	f.Add(p2)
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) < ts.PacketSize {
			return
		}
		pkt := in[:ts.PacketSize]
		pkt[0] = ts.SyncByte
		if off, ok := ts.PayloadOffset(pkt); ok && (off < ts.HeaderSize || off >= ts.PacketSize) {
			t.Fatalf("payload offset %d", off)
		}
		_ = ts.Payload(pkt)
		stream := bytes.Repeat(pkt, 4)
		var out bytes.Buffer
		cw := []byte{1, 2, 3, 6, 4, 5, 6, 15}
		st, err := Run(context.Background(), ts.NewSource(bytes.NewReader(stream)), &out, Options{Keys: keys.NewFixed(cw, cw), Workers: 1, Batch: 3})
		if err != nil {
			t.Fatal(err)
		}
		if st.Packets != 4 || out.Len() != len(stream) {
			t.Fatalf("%d packets, %d bytes out", st.Packets, out.Len())
		}
	})
}

// invarianceCWs are the control words of FuzzBatchInvariance's streams.
var invarianceCWs = [][]byte{
	{0x11, 0x22, 0x33, 0x66, 0x44, 0x55, 0x66, 0xff},
	{0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01, 0x00},
	{0xde, 0xad, 0xbe, 0xef, 0x01, 0x23, 0x45, 0x67},
}

// invarianceStream builds a small stream from fuzz data, three bytes a packet: its PID (two
// PIDs and null packets), its parity or clear, a PES start or not, an adaptation field, and
// which CW of invarianceCWs scrambles it (any: crypto periods, parity glitches and keys out of
// order all arise). The key list handed to the run is rotated by the first byte, so that it
// must be found by synchronisation.
func invarianceStream(data []byte) (stream []byte, list [][]byte) {
	if len(data) == 0 {
		return nil, nil
	}
	ks := make([]*csa.Key, len(invarianceCWs))
	for i, cw := range invarianceCWs {
		ks[i], _ = csa.NewKey(cw)
	}
	rot := int(data[0]) % len(invarianceCWs)
	list = append(append([][]byte{}, invarianceCWs[rot:]...), invarianceCWs[:rot]...)
	for i := 0; i+3 <= len(data[1:]) && i < 3*200; i += 3 {
		b0, b1, b2 := data[1+i], data[2+i], data[3+i]
		p := make([]byte, ts.PacketSize)
		pid := uint16(0x100 + int(b0&1))
		if b0&6 == 6 {
			pid = ts.NullPID
		}
		p[0], p[1], p[2], p[3] = ts.SyncByte, byte(pid>>8), byte(pid), 0x10|byte(i/3)&0xF
		if b0&0x20 != 0 {
			p[1] |= 0x40
		}
		off := ts.HeaderSize
		if b1&3 == 0 {
			p[3] |= 0x20
			p[4] = b2 % 184
			off += 1 + int(p[4])
			if p[4] > 0 {
				p[5] = 0
			}
		}
		for j := off; j < ts.PacketSize; j++ {
			p[j] = byte(j*7 + i)
		}
		if ts.PUSI(p) && ts.PacketSize-off >= 19 {
			// A PES header with a PTS: what a right key reveals.
			copy(p[off:], []byte{0, 0, 1, 0xE0, 0, 0, 0x80, 0x80, 5, 0x21, 0, 1, 0, 1})
		}
		if b0&0x10 == 0 && pid != ts.NullPID {
			ks[int(b1>>4)%len(ks)].Encrypt(p[off:])
			ts.SetTSC(p, parity(b0&8 != 0))
		}
		stream = append(stream, p...)
	}
	return stream, list
}

// FuzzBatchInvariance holds the pipeline to its promise: the output does not depend on how
// the stream is cut into units of work (-batch) or how many workers run, even when the key list
// must be found by synchronisation and realigned, periods fit no key, and parity bits flip.
func FuzzBatchInvariance(f *testing.F) {
	// Two even packets of one PID: the first with no PES start, the second a PES start whose
	// key is another CW of the list. Deciding the key of the period only for the unit of work
	// that holds the PES start gets the first packet wrong at -batch 1 (testdata/fuzz has the
	// fuzzer's form of it).
	f.Add([]byte{0x83, 0x83, 0x83, 0x83, 0x61, 0x30, 0x30})
	f.Add([]byte{1, 0x20, 0x10, 0, 0x28, 0x00, 0})
	f.Add([]byte{2, 0x20, 0x10, 0, 0x00, 0x10, 0, 0x28, 0x20, 0, 0x08, 0x20, 0, 0x20, 0x00, 0})
	f.Add([]byte{0, 0x21, 0x10, 0, 0x20, 0x10, 0, 0x29, 0x20, 0, 0x28, 0x20, 0, 0x01, 0x24, 9, 0x21, 0x10, 7})
	f.Fuzz(func(t *testing.T, data []byte) {
		stream, list := invarianceStream(data)
		if stream == nil {
			return
		}
		var first []byte
		var firstSt Stats
		for _, cfg := range []struct{ workers, batch int }{{1, 1}, {3, 7}, {1, 64}, {3, 1024}} {
			var out bytes.Buffer
			st, err := Run(context.Background(), ts.NewSource(bytes.NewReader(stream)), &out, Options{Keys: keys.NewList(list), Workers: cfg.workers, Batch: cfg.batch})
			if err != nil {
				t.Fatal(err)
			}
			if out.Len() != len(stream) {
				t.Fatalf("%+v: %d bytes out of %d", cfg, out.Len(), len(stream))
			}
			if first == nil {
				first, firstSt = out.Bytes(), st
				continue
			}
			if !bytes.Equal(out.Bytes(), first) {
				for i := 0; i < len(stream); i += ts.PacketSize {
					if !bytes.Equal(out.Bytes()[i:i+ts.PacketSize], first[i:i+ts.PacketSize]) {
						t.Fatalf("%+v: packet %d differs from the -workers 1 -batch 1 output", cfg, i/ts.PacketSize)
					}
				}
			}
			if st.Descrambled != firstSt.Descrambled || st.LeftScrambled != firstSt.LeftScrambled || st.PeriodsLeft != firstSt.PeriodsLeft {
				t.Fatalf("%+v: stats differ from -workers 1 -batch 1: %+v\nagainst %+v", cfg, st, firstSt)
			}
		}
	})
}
