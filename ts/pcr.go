package ts

// The program clock reference (ISO/IEC 13818-1, 2.4.2.2 and 2.4.3.5): one reader of it and one
// clock over it, with one rule for when the clock jumps, for every part of the project that
// tells time by the stream (live pacing and RTP timestamps, SimulCrypt crypto periods, probe's
// duration and bitrate).

// PCRHz is the rate of the program clock reference: 27 MHz.
const PCRHz = 27_000_000

// PCRWrap is the period of the PCR: a 33-bit base at 90 kHz times 300, plus the 9-bit
// extension (about 26.5 hours). PCR values and steps are taken modulo PCRWrap.
const PCRWrap = 1 << 33 * 300

// MaxPCRStep is the longest step between two PCRs of a PID that a PCRClock takes as time that
// passed; a longer one, like one backwards (a step taken modulo PCRWrap is then nearly a whole
// period) or one flagged by the discontinuity_indicator, is a jump of the clock.
//
// ISO/IEC 13818-1 (2.7.2) asks for a PCR at least every 100 ms, and ETSI TR 101 290 (5.2.2,
// PCR_discontinuity_indicator_error) reports an unflagged step of more than 100 ms as an
// error. Such steps are common all the same, and the time they span has passed: PCRs sent a
// little late, or packets lost from a capture. Taken as jumps, they would drop that time from
// probe's duration and bitrate and restart the pacer's schedule. A splice or a looped file
// leaps much further, or backwards. One second, ten times the limit, keeps late PCRs and
// gaps of lost packets on the clock and bounds what an unflagged jump costs: a live output
// paced by the PCR stalls at most that long, a crypto period is cut short by at most that.
const MaxPCRStep = PCRHz

// PCR returns the program clock reference of the 188-byte packet p in 27 MHz ticks
// (base × 300 + extension) and its discontinuity_indicator, if its adaptation field carries
// one. An adaptation field whose length runs past the packet carries none.
func PCR(p []byte) (pcr int64, discontinuity, ok bool) {
	// The PCR takes the 6 bytes after the flags byte: a length of at least 7.
	if !HasAdaptationField(p) || p[4] < 7 || HeaderSize+1+int(p[4]) > PacketSize || p[5]&0x10 == 0 {
		return 0, false, false
	}
	base := int64(p[6])<<25 | int64(p[7])<<17 | int64(p[8])<<9 | int64(p[9])<<1 | int64(p[10])>>7
	ext := int64(p[10]&1)<<8 | int64(p[11])
	return base*300 + ext, p[5]&0x80 != 0, true
}

// PCRStep returns the ticks from PCR last to PCR next, across a wrap of the 33-bit base, and
// whether the step is a jump: flagged by the discontinuity_indicator of next, or longer than
// MaxPCRStep (which a step backwards always is, taken modulo PCRWrap).
func PCRStep(last, next int64, discontinuity bool) (ticks int64, jump bool) {
	ticks = ((next-last)%PCRWrap + PCRWrap) % PCRWrap
	return ticks, discontinuity || ticks > MaxPCRStep
}

// Tick says what a packet did to a PCRClock.
type Tick uint8

const (
	NoPCR      Tick = iota // no PCR, or a PCR of a PID other than the clock's
	FirstPCR               // the clock's first PCR: it starts there
	PCRStepped             // a PCR on from the last by time that passed
	PCRJumped              // a PCR that broke the timeline (see PCRStep), or came on the same packet index as the last
)

// PCRClock follows the PCRs of one PID, the first it sees carrying one, and tells the time of
// any packet by its index in the stream. Between two PCRs the rate is constant (ISO/IEC
// 13818-1, 2.4.2.2), so packets between them are placed by interpolation and packets after
// the last by extrapolation at that rate. The rate is that of the last step that was not a
// jump; a jump keeps it, as a splice seldom changes the rate of the stream. The zero value is
// a clock before its first PCR.
type PCRClock struct {
	pid     uint16
	started bool
	last    int64   // the last PCR, 27 MHz
	lastIdx int64   // the index of the packet that carried it
	lastT   int64   // its time on the bridged timeline
	prevIdx int64   // the packet of the PCR before it, and its time: packets between the
	prevT   int64   // two are interpolated
	rate    float64 // ticks per packet

	pcrs, jumps    int64
	elapsed        int64 // ticks of the steps that were not jumps
	elapsedPackets int64 // packets over those steps
}

// Observe reads packet number idx (indices increase along the stream) and says what it did.
func (c *PCRClock) Observe(p []byte, idx int64) Tick {
	pcr, disc, ok := PCR(p)
	if !ok || c.started && PID(p) != c.pid {
		return NoPCR
	}
	c.pcrs++
	if !c.started {
		c.started, c.pid = true, PID(p)
		c.last, c.lastIdx, c.prevIdx = pcr, idx, idx
		return FirstPCR
	}
	c.prevIdx, c.prevT = c.lastIdx, c.lastT
	d, jump := PCRStep(c.last, pcr, disc)
	n := idx - c.lastIdx
	tick := PCRStepped
	if jump || n <= 0 {
		// The timeline is bridged: the time goes on from the last PCR at the last rate.
		c.jumps++
		c.lastT = c.Time(idx)
		tick = PCRJumped
	} else {
		c.rate = float64(d) / float64(n)
		c.lastT += d
		c.elapsed += d
		c.elapsedPackets += n
	}
	c.last, c.lastIdx = pcr, idx
	return tick
}

// PID returns the PID whose PCRs the clock follows, and false before the first PCR.
func (c *PCRClock) PID() (uint16, bool) { return c.pid, c.started }

// PCRAt returns the PCR value of packet idx, modulo PCRWrap: the last PCR moved on at the
// clock's rate. It follows the stream's own timeline, jumps included (the RTP timestamps of
// RFC 2250 are the PCR's). False before the first PCR.
func (c *PCRClock) PCRAt(idx int64) (int64, bool) {
	if !c.started {
		return 0, false
	}
	t := c.last + int64(float64(idx-c.lastIdx)*c.rate)
	return (t%PCRWrap + PCRWrap) % PCRWrap, true
}

// Time returns the time of packet idx in 27 MHz ticks on a timeline that starts at 0 at the
// first PCR (and before it) and bridges every jump, so that durations measured on it do not
// leap with a splice.
func (c *PCRClock) Time(idx int64) int64 {
	if !c.started {
		return 0
	}
	if idx <= c.lastIdx && idx >= c.prevIdx {
		return c.prevT + int64(float64(idx-c.prevIdx)*c.rate)
	}
	return c.lastT + int64(float64(idx-c.lastIdx)*c.rate)
}

// PCRs returns the PCRs read on the clock's PID.
func (c *PCRClock) PCRs() int64 { return c.pcrs }

// Jumps returns the steps between them that were jumps.
func (c *PCRClock) Jumps() int64 { return c.jumps }

// Elapsed returns the ticks summed over the steps that were not jumps, and the packets over
// those steps: the stream's duration and, with it, its rate, jumps left out.
func (c *PCRClock) Elapsed() (ticks, packets int64) { return c.elapsed, c.elapsedPackets }
