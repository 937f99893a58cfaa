package ts

import "testing"

// pcrPacket is a packet of pid whose adaptation field carries pcr (27 MHz ticks), flagged as a
// discontinuity when disc is set.
func pcrPacket(pid uint16, pcr int64, disc bool) []byte {
	p := make([]byte, PacketSize)
	p[0], p[1], p[2], p[3] = SyncByte, byte(pid>>8), byte(pid), 0x30
	p[4], p[5] = 183-10, 0x10
	if disc {
		p[5] |= 0x80
	}
	base, ext := pcr/300, pcr%300
	p[6], p[7], p[8], p[9] = byte(base>>25), byte(base>>17), byte(base>>9), byte(base>>1)
	p[10] = byte(base<<7) | 0x7E | byte(ext>>8)
	p[11] = byte(ext)
	return p
}

func TestPCR(t *testing.T) {
	for _, pcr := range []int64{0, 1, 299, 300, 27_000_000, PCRWrap - 1} {
		for _, disc := range []bool{false, true} {
			got, gotDisc, ok := PCR(pcrPacket(0x100, pcr, disc))
			if !ok || got != pcr || gotDisc != disc {
				t.Errorf("PCR of %d (discontinuity %v) = %d, %v, %v", pcr, disc, got, gotDisc, ok)
			}
		}
	}
	noPCR := map[string]func(p []byte){
		"no adaptation field":     func(p []byte) { p[3] = 0x10 },
		"no PCR_flag":             func(p []byte) { p[5] = 0x80 },
		"field too short":         func(p []byte) { p[4] = 6 },
		"field past the packet":   func(p []byte) { p[4] = 184 },
		"payload-only, all flags": func(p []byte) { p[3], p[5] = 0x10, 0xFF },
	}
	for name, spoil := range noPCR {
		t.Run(name, func(t *testing.T) {
			p := pcrPacket(0x100, 1000, false)
			spoil(p)
			if _, _, ok := PCR(p); ok {
				t.Error("a PCR read")
			}
		})
	}
}

// TestPCRClock walks a clock through a stream, one PCR packet (or none) per step, and checks
// after each what the packet did and where the clock stands.
func TestPCRClock(t *testing.T) {
	const sec = PCRHz
	type step struct {
		pkt  []byte // nil: a packet without PCR
		idx  int64
		want Tick
		// after the step:
		pcrAt, pcrAtIdx int64 // PCRAt(pcrAtIdx)
		time, timeIdx   int64 // Time(timeIdx)
		jumps           int64
		elapsed         int64
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"no PCR", []step{
			{nil, 0, NoPCR, -1, 0, 0, 0, 0, 0},
			{pcrPacket(0x100, 0, false), 1, FirstPCR, 0, 1, 0, 5, 0, 0},
		}},
		{"steady", []step{
			{pcrPacket(0x100, 1000, false), 10, FirstPCR, 1000, 10, 0, 10, 0, 0},
			{pcrPacket(0x100, 2000, false), 20, PCRStepped, 2500, 25, 1500, 25, 0, 1000},
			{nil, 21, NoPCR, 1500, 15, 500, 15, 0, 1000}, // between two PCRs: interpolated
		}},
		{"other PID", []step{
			{pcrPacket(0x200, 5000, false), 3, FirstPCR, 5000, 3, 0, 3, 0, 0},
			{pcrPacket(0x100, 1_000_000, false), 5, NoPCR, 5000, 5, 0, 5, 0, 0},
			{pcrPacket(0x200, 6000, false), 13, PCRStepped, 7000, 23, 500, 8, 0, 1000},
		}},
		{"wrap of the base", []step{
			{pcrPacket(0x100, PCRWrap-sec/2, false), 0, FirstPCR, PCRWrap - sec/2, 0, 0, 0, 0, 0},
			{pcrPacket(0x100, sec/4, false), 100, PCRStepped, sec/4 + sec*3/4, 200, sec * 3 / 2, 200, 0, sec * 3 / 4},
		}},
		{"discontinuity flag", []step{
			{pcrPacket(0x100, 0, false), 0, FirstPCR, 0, 0, 0, 0, 0, 0},
			{pcrPacket(0x100, 100, false), 10, PCRStepped, 100, 10, 100, 10, 0, 100},
			// A flagged step, however short, is a jump: the time is bridged at the rate.
			{pcrPacket(0x100, 150, true), 20, PCRJumped, 250, 30, 300, 30, 1, 100},
			{pcrPacket(0x100, 450, false), 30, PCRStepped, 600, 35, 500, 30, 1, 400},
		}},
		{"jump forward", []step{
			{pcrPacket(0x100, 0, false), 0, FirstPCR, 0, 0, 0, 0, 0, 0},
			{pcrPacket(0x100, sec/10, false), 10, PCRStepped, sec / 10, 10, sec / 10, 10, 0, sec / 10},
			{pcrPacket(0x100, sec/10+MaxPCRStep, false), 20, PCRStepped, sec/10 + MaxPCRStep, 20, sec/10 + MaxPCRStep, 20, 0, sec/10 + MaxPCRStep},
			{pcrPacket(0x100, sec/10+2*MaxPCRStep+1, false), 30, PCRJumped, sec/10 + 2*MaxPCRStep + 1 + sec, 40, sec/10 + MaxPCRStep + sec*2, 40, 1, sec/10 + MaxPCRStep},
		}},
		{"jump back", []step{
			{pcrPacket(0x100, 5*sec, false), 0, FirstPCR, 5 * sec, 0, 0, 0, 0, 0},
			{pcrPacket(0x100, 5*sec+300, false), 10, PCRStepped, 5*sec + 300, 10, 300, 10, 0, 300},
			{pcrPacket(0x100, 5*sec+299, false), 20, PCRJumped, 5*sec + 299 + 300, 30, 900, 30, 1, 300},
			// Back to just short of the wrap, then on across it: a jump, then a step.
			{pcrPacket(0x100, PCRWrap-100, false), 30, PCRJumped, PCRWrap - 100, 30, 900, 30, 2, 300},
			{pcrPacket(0x100, 200, false), 40, PCRStepped, 500, 50, 1200, 40, 2, 600},
		}},
		{"same packet index", []step{
			{pcrPacket(0x100, 0, false), 7, FirstPCR, 0, 7, 0, 7, 0, 0},
			{pcrPacket(0x100, 300, false), 7, PCRJumped, 300, 7, 0, 7, 1, 0},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c PCRClock
			for i, s := range tc.steps {
				p := s.pkt
				if p == nil {
					p = make([]byte, PacketSize)
					p[0], p[3] = SyncByte, 0x10
				}
				if got := c.Observe(p, s.idx); got != s.want {
					t.Fatalf("step %d: %v, want %v", i, got, s.want)
				}
				pcr, ok := c.PCRAt(s.pcrAtIdx)
				if s.pcrAt < 0 {
					if ok {
						t.Errorf("step %d: a PCR before the first", i)
					}
				} else if !ok || pcr != s.pcrAt {
					t.Errorf("step %d: PCRAt(%d) = %d, %v; want %d", i, s.pcrAtIdx, pcr, ok, s.pcrAt)
				}
				if got := c.Time(s.timeIdx); got != s.time {
					t.Errorf("step %d: Time(%d) = %d, want %d", i, s.timeIdx, got, s.time)
				}
				if e, _ := c.Elapsed(); c.Jumps() != s.jumps || e != s.elapsed {
					t.Errorf("step %d: %d jumps, %d ticks elapsed; want %d, %d", i, c.Jumps(), e, s.jumps, s.elapsed)
				}
			}
		})
	}
}

func TestPCRStep(t *testing.T) {
	for _, tc := range []struct {
		last, next int64
		disc       bool
		ticks      int64
		jump       bool
	}{
		{0, 0, false, 0, false},
		{0, MaxPCRStep, false, MaxPCRStep, false},
		{0, MaxPCRStep + 1, false, MaxPCRStep + 1, true},
		{PCRWrap - 1, 0, false, 1, false},
		{10, 9, false, PCRWrap - 1, true},
		{10, 11, true, 1, true},
	} {
		ticks, jump := PCRStep(tc.last, tc.next, tc.disc)
		if ticks != tc.ticks || jump != tc.jump {
			t.Errorf("PCRStep(%d, %d, %v) = %d, %v; want %d, %v", tc.last, tc.next, tc.disc, ticks, jump, tc.ticks, tc.jump)
		}
	}
}
