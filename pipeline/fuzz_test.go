package pipeline

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"

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
