package live

// The program clock reference gives the RTP timestamps of an output and the schedule of a Pacer.

const (
	pcrHz    = 27_000_000
	pcrRange = 1 << 33 * 300 // the PCR wraps after 2^33 periods of 90 kHz (26.5 hours)
	// maxPCRGap: a PCR further than this from the one extrapolated is a discontinuity (a
	// splice, a looped file, a restarted encoder), not the clock moving on. The standard asks
	// for a PCR at least every 100 ms.
	maxPCRGap = pcrHz // 1 s
)

// pcrOf returns the PCR of a 188-byte packet, if it carries one, and its discontinuity_indicator.
func pcrOf(p []byte) (pcr int64, disc, ok bool) {
	if len(p) < 12 || p[0] != 0x47 || p[3]&0x20 == 0 || p[4] < 7 || p[5]&0x10 == 0 {
		return 0, false, false
	}
	base := int64(p[6])<<25 | int64(p[7])<<17 | int64(p[8])<<9 | int64(p[9])<<1 | int64(p[10])>>7
	ext := int64(p[10]&1)<<8 | int64(p[11])
	return base*300 + ext, p[5]&0x80 != 0, true
}

func pid(p []byte) int { return int(p[1]&0x1F)<<8 | int(p[2]) }

// pcrClock follows the PCR of the first PID seen carrying one and tells the PCR time of any
// packet by its index in the stream, extrapolating at the rate of the last two PCRs.
type pcrClock struct {
	pid     int   // the PCR PID; -1 until the first PCR
	last    int64 // the last PCR, 27 MHz
	lastIdx int64 // its packet index
	rate    float64
	// jumped is set when a PCR broke the timeline: the users of the clock re-anchor.
	jumped bool
}

func newPCRClock() pcrClock { return pcrClock{pid: -1} }

// observe reads packet number idx.
func (c *pcrClock) observe(p []byte, idx int64) {
	pcr, disc, ok := pcrOf(p)
	if !ok || c.pid >= 0 && pid(p) != c.pid {
		return
	}
	if c.pid < 0 {
		c.pid, c.last, c.lastIdx = pid(p), pcr, idx
		return
	}
	d := (pcr - c.last + pcrRange) % pcrRange
	n := idx - c.lastIdx
	if disc || n <= 0 || d > maxPCRGap {
		c.rate, c.jumped = 0, true
	} else {
		c.rate = float64(d) / float64(n)
	}
	c.last, c.lastIdx = pcr, idx
}

// at returns the PCR time of packet idx, and false before the first PCR.
func (c *pcrClock) at(idx int64) (int64, bool) {
	if c.pid < 0 {
		return 0, false
	}
	t := c.last + int64(float64(idx-c.lastIdx)*c.rate)
	return (t%pcrRange + pcrRange) % pcrRange, true
}
