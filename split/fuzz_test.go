package split_test

import (
	"bytes"
	"io"
	"os"
	"testing"

	"github.com/tsdescramble/tsdescramble/split"
	"github.com/tsdescramble/tsdescramble/ts"
)

// FuzzSplit feeds the splitter any bytes, cut at a point the input chooses: it never panics,
// every output is whole packets, and each packet it wrote is either one of the input's or a
// table of its own (PID 0 or the SDT's 0x11, EIT 0x12).
func FuzzSplit(f *testing.F) {
	if b, err := os.ReadFile("../samples/demo-clear.ts"); err == nil {
		f.Add(uint16(300), b[:60*ts.PacketSize])
	}
	f.Add(uint16(5), packet(0, 0, pat(0, 1, 0x100, 2, 0x200)))
	f.Fuzz(func(t *testing.T, cut uint16, stream []byte) {
		outs := map[uint16]*bytes.Buffer{1: {}, 2: {}}
		s := split.New(map[uint16]io.Writer{1: outs[1], 2: outs[2]})
		k := min(int(cut), len(stream))
		s.Write(stream[:k])
		s.Write(stream[k:])
		in := map[string]bool{}
		for i := 0; i+ts.PacketSize <= len(stream); i++ {
			if stream[i] == ts.SyncByte {
				in[string(stream[i:i+ts.PacketSize])] = true
			}
		}
		for n, out := range outs {
			b := out.Bytes()
			if len(b)%ts.PacketSize != 0 {
				t.Fatalf("service %d: %d bytes, not whole packets", n, len(b))
			}
			for i := 0; i < len(b); i += ts.PacketSize {
				p := b[i : i+ts.PacketSize]
				if pid := ts.PID(p); pid != 0 && pid != 0x11 && pid != 0x12 && !in[string(p)] {
					t.Fatalf("service %d: a packet of PID %#x that the input does not hold", n, pid)
				}
			}
		}
	})
}
