package pipeline

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tsdescramble/tsdescramble/ts"

	"github.com/tsdescramble/tsdescramble/csa"
	"github.com/tsdescramble/tsdescramble/internal/synth"
	"github.com/tsdescramble/tsdescramble/keys"
	"github.com/tsdescramble/tsdescramble/psi"
)

// muxPID describes one PID of a test multiplex: how its packets are scrambled.
type muxPID struct {
	pid        uint16
	streamType uint8  // in the PMT; 0: not listed
	esInfo     []byte // ES descriptors in the PMT
	cws        [][]byte
	period     int  // packets of this PID per crypto period, 0: one period
	sections   bool // payloads are sections (with a CRC) rather than PES
	long       bool // with sections: each claims 1000 bytes, so that its CRC lies in a later packet
}

// muxStream builds a clear multiplex and its scrambled form: a PAT and a PMT (program 1, PMT
// PID 0x1000) listing the PIDs with a stream type, then packets of the PIDs in turn; each PID
// starts a PES packet (or a one-packet section) every 5 of its packets; the PID's crypto periods
// use its CWs in turn, parities alternating from even. Every packet is 188 bytes.
func muxStream(t testing.TB, n int, pids []muxPID) (clear, scrambled []byte) {
	t.Helper()
	var body []byte
	body = append(body, 0xE1, 0x00, 0xF0, 0x00) // PCR PID 0x100, no program info
	for _, m := range pids {
		if m.streamType == 0 {
			continue
		}
		body = append(body, m.streamType, 0xE0|byte(m.pid>>8), byte(m.pid), 0xF0|byte(len(m.esInfo)>>8), byte(len(m.esInfo)))
		body = append(body, m.esInfo...)
	}
	psiPacket := func(pid uint16, tid byte, ext uint16, body []byte) []byte {
		sec := []byte{tid, 0xB0, 0, byte(ext >> 8), byte(ext), 0xC1, 0, 0}
		sec = append(sec, body...)
		l := len(sec) - 3 + 4
		sec[1], sec[2] = 0xB0|byte(l>>8), byte(l)
		sec = binary.BigEndian.AppendUint32(sec, psi.CRC32(sec))
		p := bytes.Repeat([]byte{0xFF}, ts.PacketSize)
		p[0], p[1], p[2], p[3], p[4] = ts.SyncByte, 0x40|byte(pid>>8), byte(pid), 0x10, 0
		copy(p[5:], sec)
		return p
	}
	pat := psiPacket(0, 0, 1, []byte{0, 1, 0xF0, 0x00})
	pmt := psiPacket(0x1000, 2, 1, body)
	clear = append(append(clear, pat...), pmt...)
	scrambled = append(append(scrambled, pat...), pmt...)
	count := make([]int, len(pids))
	keys := map[string]*csa.Key{}
	var later synth.Scrambler // the payloads of scrambled, scrambled once it is whole
	for i := range n {
		m := pids[i%len(pids)]
		k := count[i%len(pids)]
		count[i%len(pids)]++
		p := make([]byte, ts.PacketSize)
		p[0], p[1], p[2], p[3] = ts.SyncByte, byte(m.pid>>8), byte(m.pid), 0x10|byte(k&0xF)
		for j := 4; j < ts.PacketSize; j++ {
			p[j] = byte(j*13 + i*7)
		}
		if k%5 == 0 {
			p[1] |= 0x40
			if m.sections {
				// A private section with the long syntax, wholly in the packet.
				sec := []byte{0x80, 0xB0, 0, 0, 1, 0xC1, 0, 0}
				sec = append(sec, p[13:13+150]...)
				l := len(sec) - 3 + 4
				sec[1], sec[2] = 0xB0|byte(l>>8), byte(l)
				sec = binary.BigEndian.AppendUint32(sec, psi.CRC32(sec))
				if m.long {
					sec[1], sec[2] = 0xB0|byte(1000>>8), byte(1000&0xFF)
				}
				p[4] = 0
				copy(p[5:], sec)
				for j := 5 + len(sec); j < ts.PacketSize; j++ {
					p[j] = 0xFF
				}
			} else {
				copy(p[4:], []byte{0, 0, 1, 0xE0, 0, 0, 0x80, 0x80, 5, 0x21, 0, byte(k) | 1, 0, 1})
			}
		}
		clear = append(clear, p...)
		period := 0
		if m.period > 0 {
			period = k / m.period
		}
		cw := string(m.cws[period%len(m.cws)])
		if keys[cw] == nil {
			key, err := csa.NewKey([]byte(cw))
			if err != nil {
				t.Fatal(err)
			}
			keys[cw] = key
		}
		later.Add(keys[cw], len(scrambled)+4, len(scrambled)+ts.PacketSize)
		ts.SetTSC(p, parity(period%2 == 1))
		scrambled = append(scrambled, p...)
	}
	later.EncryptIn(scrambled)
	return clear, scrambled
}

var muxCWs = [][]byte{
	{0x11, 0x22, 0x33, 0x66, 0x44, 0x55, 0x66, 0xff},
	{0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01, 0x00},
	{0xde, 0xad, 0xbe, 0xef, 0x01, 0x23, 0x45, 0x67},
}

var foreignCW = []byte{0x99, 0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22}

// runMux descrambles a stream at several batch sizes and worker counts and requires the same
// output from each; it returns the output and the statistics of the first run.
func runMux(t *testing.T, in []byte, sched func() *keys.Schedule) ([]byte, Stats) {
	t.Helper()
	var first []byte
	var firstSt Stats
	for _, cfg := range []struct{ workers, batch int }{{1, 1}, {2, 7}, {3, 64}, {2, 1024}} {
		var out bytes.Buffer
		st, err := Run(context.Background(), ts.NewSource(bytes.NewReader(in)), &out, Options{Keys: sched(), Workers: cfg.workers, Batch: cfg.batch})
		if err != nil {
			t.Fatal(err)
		}
		if first == nil {
			first, firstSt = out.Bytes(), st
		} else if !bytes.Equal(out.Bytes(), first) {
			t.Fatalf("%+v: output differs from -workers 1 -batch 1", cfg)
		}
	}
	return first, firstSt
}

// packetsOf returns the packets of pid in a 188-byte stream.
func packetsOf(stream []byte, pid uint16) [][]byte {
	var ps [][]byte
	for i := 0; i+ts.PacketSize <= len(stream); i += ts.PacketSize {
		if ts.PID(stream[i:]) == pid {
			ps = append(ps, stream[i:i+ts.PacketSize])
		}
	}
	return ps
}

func samePackets(t *testing.T, what string, got, want []byte, pid uint16) {
	t.Helper()
	g, w := packetsOf(got, pid), packetsOf(want, pid)
	if len(g) != len(w) || len(g) == 0 {
		t.Fatalf("%s: PID %#x: %d packets, want %d", what, pid, len(g), len(w))
	}
	for i := range g {
		if !bytes.Equal(g[i], w[i]) {
			t.Fatalf("%s: PID %#x: packet %d differs", what, pid, i)
		}
	}
}

func pidStats(st Stats, pid uint16) PIDStats {
	for _, ps := range st.PIDs {
		if ps.PID == pid {
			return ps
		}
	}
	return PIDStats{}
}

// Another CA system's service beside ours: its PID keeps one parity (or changes at its own
// times) under a key nobody has. Our PIDs come out clear, its packets as they came, and no
// selection flag is needed.
func TestMixedCAS(t *testing.T) {
	t.Parallel()
	for _, foreignPeriod := range []int{0, 37} {
		clear, scrambled := muxStream(t, 6000, []muxPID{
			{pid: 0x100, streamType: 0x1B, cws: muxCWs, period: 400},
			{pid: 0x101, streamType: 0x0F, cws: muxCWs, period: 400},
			{pid: 0x200, streamType: 0x1B, cws: [][]byte{foreignCW}, period: foreignPeriod},
		})
		out, st := runMux(t, scrambled, func() *keys.Schedule { return keys.NewList(muxCWs) })
		samePackets(t, "our video", out, clear, 0x100)
		samePackets(t, "our audio", out, clear, 0x101)
		samePackets(t, "the other CAS", out, scrambled, 0x200)
		if ps := pidStats(st, 0x200); ps.KeyFit != "none" || ps.PeriodsFit != 0 || ps.LeftScrambled != 2000 {
			t.Fatalf("foreign period %d: PID 0x200 stats %+v", foreignPeriod, ps)
		}
		if ps := pidStats(st, 0x100); ps.KeyFit != "all" || ps.PeriodsFit != 5 {
			t.Fatalf("PID 0x100 stats %+v", ps)
		}
	}
}

// One packet of the other parity inside a period (a flipped bit) changes nothing else: that
// packet is left as it came, the schedule does not move.
func TestParityGlitch(t *testing.T) {
	t.Parallel()
	clear, scrambled := muxStream(t, 3000, []muxPID{{pid: 0x100, streamType: 0x1B, cws: muxCWs, period: 500}})
	for _, at := range []int{2 + 101, 2 + 703, 2 + 1104} { // inside even, odd and even periods
		in := append([]byte{}, scrambled...)
		p := in[at*ts.PacketSize : (at+1)*ts.PacketSize]
		if ts.PUSI(p) {
			t.Fatalf("packet %d starts a PES packet: pick another", at)
		}
		ts.SetTSC(p, ts.TSC(p)^1)
		out, st := runMux(t, in, func() *keys.Schedule { return keys.NewList(muxCWs) })
		diff := 0
		for i := 0; i < len(out); i += ts.PacketSize {
			if !bytes.Equal(out[i:i+ts.PacketSize], clear[i:i+ts.PacketSize]) {
				diff++
				if i != at*ts.PacketSize || !bytes.Equal(out[i:i+ts.PacketSize], p) {
					t.Fatalf("glitch at %d: packet %d differs from the clear stream", at, i/ts.PacketSize)
				}
			}
		}
		if diff != 1 || st.ParityGlitches != 1 || st.KeySyncs != 0 {
			t.Fatalf("glitch at %d: %d packets differ, %d glitches, %d key syncs", at, diff, st.ParityGlitches, st.KeySyncs)
		}
	}
}

// Keys that fit only some periods: the others are left as they came, and counted.
func TestPeriodsNoKeyFits(t *testing.T) {
	t.Parallel()
	clear, scrambled := muxStream(t, 3000, []muxPID{{pid: 0x100, streamType: 0x1B, cws: muxCWs, period: 500}})
	out, st := runMux(t, scrambled, func() *keys.Schedule { return keys.NewFixed(muxCWs[0], muxCWs[0]) })
	for i := 2; i < len(out)/ts.PacketSize; i++ {
		period := (i - 2) / 500
		want := clear
		if period%3 != 0 {
			want = scrambled
		}
		if !bytes.Equal(out[i*ts.PacketSize:(i+1)*ts.PacketSize], want[i*ts.PacketSize:(i+1)*ts.PacketSize]) {
			t.Fatalf("packet %d (period %d) is neither clear nor as it came", i, period)
		}
	}
	if ps := pidStats(st, 0x100); ps.KeyFit != "some" || ps.PeriodsFit != 2 || ps.PeriodsLeft != 4 || st.LeftScrambled != 2000 {
		t.Fatalf("stats %+v", ps)
	}
}

// Section PIDs are checked by their CRC, never as PES; a T2-MI PID (stream type 0x06 with the
// T2-MI extension descriptor) is not checked at all and takes the schedule's keys.
func TestSectionsAndT2MI(t *testing.T) {
	t.Parallel()
	t2mi := []byte{0x7F, 0x01, 0x11}
	clear, scrambled := muxStream(t, 3000, []muxPID{
		{pid: 0x300, streamType: 0x05, cws: muxCWs, period: 300, sections: true},
		{pid: 0x301, streamType: 0x06, esInfo: t2mi, cws: muxCWs, period: 300},
	})
	out, st := runMux(t, scrambled, func() *keys.Schedule { return keys.NewList(muxCWs) })
	if !bytes.Equal(out, clear) {
		t.Fatal("output differs from the clear stream")
	}
	sec, other := pidStats(st, 0x300), pidStats(st, 0x301)
	if sec.Carriage != "sections" || sec.PeriodsFit != 5 || sec.PESBad != [2]int64{} || sec.PESGood[0] == 0 {
		t.Fatalf("section PID %+v", sec)
	}
	if other.Carriage != "other" || other.PeriodsUnchecked != 5 || other.PESBad != [2]int64{} || other.PESGood != [2]int64{} {
		t.Fatalf("T2-MI PID %+v", other)
	}
}

// A key search through a long list stops within a second of the run being cancelled (SIGINT
// cancels the command's context), and every packet read is still written.
func TestCancelDuringKeySearch(t *testing.T) {
	_, scrambled := muxStream(t, 200, []muxPID{{pid: 0x100, streamType: 0x1B, cws: [][]byte{foreignCW}}})
	list := make([][]byte, 1_000_000)
	for i := range list {
		list[i] = binary.BigEndian.AppendUint64(nil, uint64(i)*0x9E3779B97F4A7C15)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var cancelled atomic.Int64 // when cancel was called, in Unix nanoseconds
	timer := time.AfterFunc(200*time.Millisecond, func() { cancelled.Store(time.Now().UnixNano()); cancel() })
	var out bytes.Buffer
	st, err := Run(ctx, ts.NewSource(bytes.NewReader(scrambled)), &out, Options{Keys: keys.NewList(list), Workers: 2, Batch: 64})
	timer.Stop()
	if cancelled.Load() == 0 {
		t.Skip("the search ended before the cancellation: nothing to measure")
	}
	if d := time.Since(time.Unix(0, cancelled.Load())); d > time.Second {
		t.Fatalf("Run returned %v after the cancellation", d)
	}
	if !errors.Is(err, context.Canceled) || int64(out.Len()) != st.Packets*ts.PacketSize {
		t.Fatalf("err %v, %d bytes written for %d packets read", err, out.Len(), st.Packets)
	}
}
