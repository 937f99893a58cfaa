package scs

import "time"

const (
	pcrHz    = 27_000_000
	pcrRange = 1 << 33 * 300 // the PCR wraps after 2^33 periods of 90 kHz
	// maxPCRGap: a PCR further than this from the last is a discontinuity (a splice, a looped
	// file), not the clock moving on: the standard asks for a PCR at least every 100 ms.
	maxPCRGap = pcrHz
)

// pcrOf returns the PCR of a 188-byte packet, if it carries one, and its discontinuity_indicator.
func pcrOf(p []byte) (pcr int64, disc, ok bool) {
	if p[3]&0x20 == 0 || p[4] < 7 || p[5]&0x10 == 0 {
		return 0, false, false
	}
	base := int64(p[6])<<25 | int64(p[7])<<17 | int64(p[8])<<9 | int64(p[9])<<1 | int64(p[10])>>7
	ext := int64(p[10]&1)<<8 | int64(p[11])
	return base*300 + ext, p[5]&0x80 != 0, true
}

// clock tells the stream time of each input packet from the PCRs of the first PID that
// carries one: time 0 at the first PCR (and before it), the PCR's progress after it, packets
// between PCRs placed at the rate of the last two. A discontinuity (a PCR jump) is bridged: the
// time goes on from where it was, so crypto periods keep their length across a splice.
type clock struct {
	pid     int   // the PCR PID; -1 until the first PCR
	last    int64 // the last PCR, 27 MHz
	lastIdx int64 // its packet index
	lastT   int64 // its stream time, 27 MHz
	rate    float64
	pIdx    int64 // the PCR before the last: packets between it and the last are interpolated
	pT      int64
	pcrs    int64
	jumps   int64
}

func newClock() clock { return clock{pid: -1} }

// observe reads the input packet of index idx and reports whether it moved the clock.
func (c *clock) observe(p []byte, pid uint16, idx int64) bool {
	pcr, disc, ok := pcrOf(p)
	if !ok || c.pid >= 0 && int(pid) != c.pid {
		return false
	}
	c.pcrs++
	if c.pid < 0 {
		c.pid, c.last, c.lastIdx = int(pid), pcr, idx
		c.pIdx = idx
		return true
	}
	c.pIdx, c.pT = c.lastIdx, c.lastT
	d := (pcr - c.last + pcrRange) % pcrRange
	n := idx - c.lastIdx
	t := c.lastT
	if disc || n <= 0 || d > maxPCRGap {
		c.jumps++
		t = c.ticks(idx)
	} else {
		c.rate = float64(d) / float64(n)
		t += d
	}
	c.last, c.lastIdx, c.lastT = pcr, idx, t
	return true
}

// ticks places packet idx between the last two PCRs when it lies there (the rate between two
// PCRs is constant, ISO/IEC 13818-1, 2.4.2.2), after the last at the rate before it.
func (c *clock) ticks(idx int64) int64 {
	if c.pid < 0 {
		return 0
	}
	if idx <= c.lastIdx && idx >= c.pIdx {
		return c.pT + int64(float64(idx-c.pIdx)*c.rate)
	}
	return c.lastT + int64(float64(idx-c.lastIdx)*c.rate)
}

// at returns the stream time of input packet idx.
func (c *clock) at(idx int64) time.Duration {
	return time.Duration(c.ticks(idx) * 1000 / 27)
}
