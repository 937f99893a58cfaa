package pipeline

import (
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/tsdescramble/tsdescramble/internal/synth"
	"github.com/tsdescramble/tsdescramble/ts"

	"github.com/tsdescramble/tsdescramble/csa"
	"github.com/tsdescramble/tsdescramble/keys"
)

var damageCW = []byte{0x11, 0x22, 0x33, 0x66, 0x44, 0x55, 0x66, 0xff}

func runBytes(t *testing.T, in []byte) ([]byte, Stats, error) {
	t.Helper()
	var out bytes.Buffer
	st, err := Run(context.Background(), ts.NewSource(bytes.NewReader(in)), &out, Options{Keys: keys.NewFixed(damageCW, damageCW), Workers: 2, Batch: 5})
	return out.Bytes(), st, err
}

// A stream cut at every offset of its first packets: never a panic, every whole packet out.
func TestRunCutAtEveryOffset(t *testing.T) {
	t.Parallel()
	k, _ := csa.NewKey(damageCW)
	stream := synth.SyntheticStream(6, 3, k)
	want, _, err := runBytes(t, stream)
	if err != nil {
		t.Fatal(err)
	}
	for cut := 0; cut <= len(stream); cut++ {
		out, st, err := runBytes(t, stream[:cut])
		whole := cut / ts.PacketSize
		if whole == 0 {
			if cut > 0 && err == nil {
				t.Fatalf("cut %d: no packet and no error", cut)
			}
			continue
		}
		if err != nil || !bytes.Equal(out, want[:whole*ts.PacketSize]) || st.Truncated != int64(cut%ts.PacketSize) {
			t.Fatalf("cut %d: %d bytes out, truncated %d, err %v", cut, len(out), st.Truncated, err)
		}
	}
}

// Damaged packets pass through untouched and are counted; the good ones around them are
// descrambled.
func TestRunDamagedPackets(t *testing.T) {
	t.Parallel()
	k, _ := csa.NewKey(damageCW)
	stream := synth.SyntheticStream(40, 0, k)
	want, _, _ := runBytes(t, stream)
	in := append([]byte{}, stream...)
	pkt := func(i int) []byte { return in[i*ts.PacketSize : (i+1)*ts.PacketSize] }
	// Adaptation field length past the packet.
	pkt(3)[3] = 0xB0 | pkt(3)[3]&0x0F
	pkt(3)[4] = 200
	// A PUSI whose PES header is broken: the start code, then flags no PES header has.
	pkt(5)[1] |= 0x40
	copy(pkt(5)[4:], []byte{0, 0, 1, 0xE0, 0, 0, 0x00, 0x40, 5})
	k.Encrypt(pkt(5)[4:])
	// Payloads of 0 to 7 bytes.
	for n := 0; n < 8; n++ {
		p := pkt(10 + n)
		p[3] = 0xB0 | p[3]&0x0F
		p[4] = byte(183 - n)
	}
	// A transport error indicator.
	pkt(20)[1] |= 0x80
	// A good PES start on the same PID after the broken one, so that the key is seen to fit
	// the PID's period.
	p := pkt(31)
	p[1] |= 0x40
	off, _ := ts.PayloadOffset(p)
	copy(p[off:], []byte{0, 0, 1, 0xE0, 0, 0, 0x80, 0x80, 5, 0x21, 0, 1, 0, 1})
	k.Encrypt(p[off:])
	out, st, err := runBytes(t, in)
	if err != nil || len(out) != len(in) {
		t.Fatalf("%d bytes out of %d, err %v", len(out), len(in), err)
	}
	if !bytes.Equal(out[3*ts.PacketSize:4*ts.PacketSize], in[3*ts.PacketSize:4*ts.PacketSize]) {
		t.Fatal("packet with a damaged adaptation field was changed")
	}
	if st.NoPayload != 2 { // the damaged one, and the 183-byte adaptation field (0-byte payload)
		t.Fatalf("no-payload count %d", st.NoPayload)
	}
	if st.Short != 7 {
		t.Fatalf("short payloads %d, want 7 (1 to 7 bytes)", st.Short)
	}
	for n := 1; n < 8; n++ {
		i := 10 + n
		if ts.TSC(out[i*ts.PacketSize:]) != ts.Clear || !bytes.Equal(out[i*ts.PacketSize+4:(i+1)*ts.PacketSize], in[i*ts.PacketSize+4:(i+1)*ts.PacketSize]) {
			t.Fatalf("short payload of %d bytes: TSC not cleared or payload changed", n)
		}
	}
	if st.PESBad != 1 {
		t.Fatalf("PES checks: %d bad, want 1 (the broken PES start)", st.PESBad)
	}
	// Packets untouched by the damage come out as in the undamaged run.
	for _, i := range []int{0, 1, 2, 4, 6, 30, 39} {
		if !bytes.Equal(out[i*ts.PacketSize:(i+1)*ts.PacketSize], want[i*ts.PacketSize:(i+1)*ts.PacketSize]) {
			t.Fatalf("packet %d differs from the undamaged run", i)
		}
	}
}

// Random bytes: an error saying there is no transport stream, no output, no panic.
func TestRunRandomBytes(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(7, 7))
	for _, n := range []int{1, 100, 188, 5000, 100000} {
		in := make([]byte, n)
		for i := range in {
			in[i] = byte(rng.Uint32())
		}
		out, _, err := runBytes(t, in)
		if err == nil && len(out) == 0 {
			t.Fatalf("%d random bytes: no error and no output", n)
		}
		if len(out)%188 != 0 {
			t.Fatalf("%d random bytes: %d bytes out", n, len(out))
		}
	}
}

// Packets of different framings in one stream: every TS packet goes out; the framing changes
// where the stream's does (a trailer or prefix cut off at the change is counted as skipped).
func TestRunMixedFramings(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(9, 9))
	a := makeUnits(10, ts.Framing188, rng)
	b := makeUnits(10, ts.Framing204, rng)
	c := makeUnits(10, ts.Framing192, rng)
	in := append(append(append([]byte{}, a...), b...), c...)
	st, err := Run(context.Background(), ts.NewSource(bytes.NewReader(in)), io.Discard, Options{Keys: keys.NewFixed(damageCW, damageCW)})
	if err != nil || st.Packets != 30 {
		t.Fatalf("%d packets of 30, skipped %d, err %v", st.Packets, st.Skipped, err)
	}
}
