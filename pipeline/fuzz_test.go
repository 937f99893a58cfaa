package pipeline

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"

	"github.com/tsdescramble/tsdescramble/csa"
	"github.com/tsdescramble/tsdescramble/keys"
)

// FuzzFramer feeds arbitrary bytes to the framer: it must never panic, every unit it returns must
// be a whole unit with a sync byte in place, and the units, the skipped bytes and the truncated
// tail must account for every input byte.
func FuzzFramer(f *testing.F) {
	one := make([]byte, 188)
	one[0] = SyncByte
	f.Add(bytes.Repeat(one, 5))
	f.Add(append([]byte{1, 2, 3}, bytes.Repeat(one, 4)...))
	m2ts := append(make([]byte, 4), one...)
	f.Add(bytes.Repeat(m2ts, 4))
	f.Add(bytes.Repeat(append(append([]byte{}, one...), make([]byte, 16)...), 4))
	f.Add([]byte{SyncByte})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, in []byte) {
		fr := NewFramer(bytes.NewReader(in))
		var total int64
		for {
			u, err := fr.Next()
			if err != nil {
				if err != io.EOF && !errors.Is(err, ErrNoSync) {
					t.Fatalf("unexpected error %v", err)
				}
				break
			}
			f := fr.Framing()
			if len(u) != f.Size || u[f.Prefix] != SyncByte {
				t.Fatalf("bad unit: %d bytes, framing %v", len(u), f)
			}
			total += int64(len(u))
		}
		if total+fr.Skipped()+fr.Truncated() != int64(len(in)) {
			t.Fatalf("%d bytes in, %d in units + %d skipped + %d truncated", len(in), total, fr.Skipped(), fr.Truncated())
		}
	})
}

// FuzzPacket runs the header accessors and the whole pipeline over arbitrary packets: no panic,
// and the output is a whole number of the input's packets.
func FuzzPacket(f *testing.F) {
	p := make([]byte, 188)
	p[0], p[3], p[4] = SyncByte, 0xB0, 183
	f.Add(p)
	p2 := append([]byte{}, p...)
	p2[3], p2[4] = 0xD0, 0
	f.Add(p2)
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) < PacketSize {
			return
		}
		pkt := in[:PacketSize]
		pkt[0] = SyncByte
		if off, ok := PayloadOffset(pkt); ok && (off < HeaderSize || off >= PacketSize) {
			t.Fatalf("payload offset %d", off)
		}
		_ = Payload(pkt)
		stream := bytes.Repeat(pkt, 4)
		var out bytes.Buffer
		cw := []byte{1, 2, 3, 6, 4, 5, 6, 15}
		st, err := Run(context.Background(), bytes.NewReader(stream), &out, Options{Keys: keys.NewFixed(cw, cw), Workers: 1, Batch: 3})
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
func invarianceStream(data []byte) (ts []byte, list [][]byte) {
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
		p := make([]byte, PacketSize)
		pid := uint16(0x100 + int(b0&1))
		if b0&6 == 6 {
			pid = NullPID
		}
		p[0], p[1], p[2], p[3] = SyncByte, byte(pid>>8), byte(pid), 0x10|byte(i/3)&0xF
		if b0&0x20 != 0 {
			p[1] |= 0x40
		}
		off := HeaderSize
		if b1&3 == 0 {
			p[3] |= 0x20
			p[4] = b2 % 184
			off += 1 + int(p[4])
			if p[4] > 0 {
				p[5] = 0
			}
		}
		for j := off; j < PacketSize; j++ {
			p[j] = byte(j*7 + i)
		}
		if PUSI(p) && PacketSize-off >= 19 {
			// A PES header with a PTS: what a right key reveals.
			copy(p[off:], []byte{0, 0, 1, 0xE0, 0, 0, 0x80, 0x80, 5, 0x21, 0, 1, 0, 1})
		}
		if b0&0x10 == 0 && pid != NullPID {
			ks[int(b1>>4)%len(ks)].Encrypt(p[off:])
			SetTSC(p, parity(b0&8 != 0))
		}
		ts = append(ts, p...)
	}
	return ts, list
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
		ts, list := invarianceStream(data)
		if ts == nil {
			return
		}
		var first []byte
		var firstSt Stats
		for _, cfg := range []struct{ workers, batch int }{{1, 1}, {3, 7}, {1, 64}, {3, 1024}} {
			var out bytes.Buffer
			st, err := Run(context.Background(), bytes.NewReader(ts), &out, Options{Keys: keys.NewList(list), Workers: cfg.workers, Batch: cfg.batch})
			if err != nil {
				t.Fatal(err)
			}
			if out.Len() != len(ts) {
				t.Fatalf("%+v: %d bytes out of %d", cfg, out.Len(), len(ts))
			}
			if first == nil {
				first, firstSt = out.Bytes(), st
				continue
			}
			if !bytes.Equal(out.Bytes(), first) {
				for i := 0; i < len(ts); i += PacketSize {
					if !bytes.Equal(out.Bytes()[i:i+PacketSize], first[i:i+PacketSize]) {
						t.Fatalf("%+v: packet %d differs from the -workers 1 -batch 1 output", cfg, i/PacketSize)
					}
				}
			}
			if st.Descrambled != firstSt.Descrambled || st.LeftScrambled != firstSt.LeftScrambled || st.PeriodsLeft != firstSt.PeriodsLeft {
				t.Fatalf("%+v: stats differ from -workers 1 -batch 1: %+v\nagainst %+v", cfg, st, firstSt)
			}
		}
	})
}
