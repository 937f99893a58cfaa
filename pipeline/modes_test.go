package pipeline_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/tsdescramble/tsdescramble/csa"
	"github.com/tsdescramble/tsdescramble/keys"
	"github.com/tsdescramble/tsdescramble/pipeline"
	"github.com/tsdescramble/tsdescramble/psi"
	"github.com/tsdescramble/tsdescramble/scrambling"
	"github.com/tsdescramble/tsdescramble/ts"
)

// slotMode is a crypto period's key as a key server that sets a mode per key slot gives it:
// its system (nil: the run's input system) and its key.
type slotMode struct {
	sys scrambling.System
	cw  []byte
}

// modesStream returns a stream of one service whose video PID's crypto periods, of period
// packets each, parities alternating from even, are scrambled each with the mode and key of
// modes[n], and the clear stream. Between its PES starts (no adaptation field, every 10th
// packet) the packets carry adaptation fields of every length, so that the payloads run from 1
// to 184 bytes: short ones, and every residue, for each system. in is the input system, which
// the modes without a system use; short counts the payloads their mode leaves clear.
func modesStream(t *testing.T, period int, in scrambling.System, modes []slotMode) (clear, scrambled []byte, short int64) {
	t.Helper()
	const pid, pmtPID = 0x100, 0x1000
	section := func(p uint16, tid byte, ext uint16, body []byte) []byte {
		sec := []byte{tid, 0xB0, 0, byte(ext >> 8), byte(ext), 0xC1, 0, 0}
		sec = append(sec, body...)
		l := len(sec) - 3 + 4
		sec[1], sec[2] = 0xB0|byte(l>>8), byte(l)
		sec = binary.BigEndian.AppendUint32(sec, psi.CRC32(sec))
		pkt := bytes.Repeat([]byte{0xFF}, ts.PacketSize)
		pkt[0], pkt[1], pkt[2], pkt[3], pkt[4] = ts.SyncByte, 0x40|byte(p>>8), byte(p), 0x10, 0
		copy(pkt[5:], sec)
		return pkt
	}
	psiPackets := append(section(0, 0, 1, []byte{0, 1, 0xE0 | pmtPID>>8, pmtPID & 0xFF}),
		section(pmtPID, 2, 1, []byte{0xE1, 0x00, 0xF0, 0x00, 0x1B, 0xE1, 0x00, 0xF0, 0x00})...)
	clear = append(clear, psiPackets...)
	scrambled = append(scrambled, psiPackets...)
	for i := range period * len(modes) {
		p := make([]byte, ts.PacketSize)
		p[0], p[1], p[2], p[3] = ts.SyncByte, pid>>8, pid&0xFF, 0x10|byte(i&0xF)
		off := 4
		if i%10 == 0 {
			p[1] |= 0x40
		} else {
			af := (i * 37) % 184 // adaptation_field_length 0..183: payloads of 183..0 bytes
			if af == 183 {
				af = 182 // keep a payload: 1 byte
			}
			p[3] |= 0x20
			p[4] = byte(af)
			if af > 0 {
				p[5] = 0
				for j := 6; j < 5+af; j++ {
					p[j] = 0xFF
				}
			}
			off = 5 + af
		}
		for j := off; j < ts.PacketSize; j++ {
			p[j] = byte(j*13 + i*7)
		}
		if i%10 == 0 {
			copy(p[4:], []byte{0, 0, 1, 0xE0, 0, 0, 0x80, 0x80, 5, 0x21, 0, byte(i) | 1, 0, 1})
		}
		clear = append(clear, p...)
		n := i / period
		m := modes[n]
		sys := m.sys
		if sys == nil {
			sys = in
		}
		k, err := sys.NewKey(m.cw)
		if err != nil {
			t.Fatal(err)
		}
		payload := p[off:]
		if len(payload) >= sys.MinPayload() {
			sys.NewProcessor().Encrypt(k, [][]byte{payload})
		} else {
			short++
		}
		ts.SetTSC(p, ts.Even)
		if n%2 == 1 {
			ts.SetTSC(p, ts.Odd)
		}
		scrambled = append(scrambled, p...)
	}
	return clear, scrambled, short
}

// A key slot whose mode changes from one key to the next (DVB-CSA, AES-128 in ECB and CBC with
// its own IV and with DVB-CISSA's, DES in ECB and CBC) descrambles each period with its key's
// mode: the payloads each mode changes, and those it leaves clear (short ones, residues), come
// out as the clear stream, whatever the batch, the workers and the CSA2 lanes. Under an input
// system whose shortest payload is longer (dvb-cissa, 16 bytes), a DES key still descrambles
// the payloads of 8 to 15 bytes.
func TestLiveKeysModePerKey(t *testing.T) {
	aesCBC, err := scrambling.NewAESCBC([]byte("0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	csa2, _ := scrambling.Lookup("csa2")
	cissa, _ := scrambling.NewAESCBC([]byte("DVBTMCPTAESCISSA"))
	desCBC, _ := scrambling.NewDESCBC([]byte{1, 2, 3, 4, 5, 6, 7, 8})
	for _, in := range []struct {
		sys   scrambling.System
		modes []slotMode
	}{
		{csa2, []slotMode{
			{nil, []byte{0x11, 0x22, 0x33, 0x66, 0x44, 0x55, 0x66, 0xFF}},
			{scrambling.AESECB(), []byte("AES-128 ECB key!")},
			{desCBC, []byte{0xA1, 0xB2, 0xC3, 0x16, 0xD4, 0xE5, 0xF6, 0xAF}},
			{aesCBC, []byte("AES-128 CBC key!")},
			{cissa, []byte("the CISSA key..!")},
			{scrambling.DESECB(), []byte{0x01, 0x02, 0x03, 0x06, 0x04, 0x05, 0x06, 0x0F}},
			{nil, []byte{0x7F, 0x6E, 0x5D, 0x4A, 0x3C, 0x2B, 0x1A, 0x81}},
		}},
		{cissa, []slotMode{
			{nil, []byte("the CISSA key..!")},
			{scrambling.DESECB(), []byte{0x01, 0x02, 0x03, 0x06, 0x04, 0x05, 0x06, 0x0F}},
			{nil, []byte("another CISSA k.")},
		}},
	} {
		const period = 400
		modes := in.modes
		clear, scrambled, short := modesStream(t, period, in.sys, modes)
		for _, c := range []struct{ batch, workers, lanes int }{{1, 1, 0}, {7, 2, csa.Available()[0]}, {1024, 2, 0}, {300, 3, 0}} {
			t.Run(fmt.Sprintf("in=%s/batch=%d/workers=%d/lanes=%d", in.sys.Name(), c.batch, c.workers, c.lanes), func(t *testing.T) {
				// Each period's key is set as it begins, for its parity, with its mode.
				at := map[int]func(*keys.Live){}
				for n, m := range modes {
					at[n+1] = func(l *keys.Live) { l.SetFor(0, n%2 == 1, m.sys, m.cw) }
				}
				src := &scriptedSource{Live: keys.NewLive(), atBegin: at}
				lk := &pipeline.LiveKeys{Source: src, Wait: time.Minute, FileInput: true}
				sys := in.sys
				if sys == csa2 {
					sys = nil // with Lanes
				}
				var out bytes.Buffer
				st, err := pipeline.Run(context.Background(), ts.NewSource(bytes.NewReader(scrambled)), &out,
					pipeline.Options{LiveKeys: lk, System: sys, Batch: c.batch, Workers: c.workers, Lanes: c.lanes})
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(out.Bytes(), clear) {
					for i := 0; i < len(clear); i += ts.PacketSize {
						if !bytes.Equal(out.Bytes()[i:i+ts.PacketSize], clear[i:i+ts.PacketSize]) {
							t.Fatalf("packet %d (period %d) differs from the clear stream: %+v", i/ts.PacketSize, (i/ts.PacketSize-2)/period+1, *st.LiveKeys)
						}
					}
				}
				if ps := esStatsOf(st, 0x100); ps.Periods != len(modes) || ps.PeriodsFit != len(modes) {
					t.Fatalf("%d periods, %d fit; want %d that fit: %+v", ps.Periods, ps.PeriodsFit, len(modes), *st.LiveKeys)
				}
				if st.LiveKeys.BadSize != 0 || st.LiveKeys.NotFitting != 0 {
					t.Fatalf("keys refused: %+v", *st.LiveKeys)
				}
				if st.Short != short || st.Descrambled != int64(len(modes)*period)-short {
					t.Fatalf("%d payloads short, %d descrambled; want %d and %d", st.Short, st.Descrambled, short, int64(len(modes)*period)-short)
				}
			})
		}
	}
}

// esStatsOf returns the statistics of pid.
func esStatsOf(st pipeline.Stats, pid uint16) pipeline.PIDStats {
	for _, ps := range st.PIDs {
		if ps.PID == pid {
			return ps
		}
	}
	return pipeline.PIDStats{}
}
