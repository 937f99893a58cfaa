package live

import (
	"io"
	"time"

	"github.com/tsdescramble/tsdescramble/ts"
)

// DefaultMaxLate is how far behind its schedule a Pacer may fall before it gives up catching
// up: past it, the schedule restarts from the present instead of sending the backlog in one
// burst, which is what makes receivers' buffers overflow (tsduck#1104). A source that keeps up
// never falls behind, since each packet is given the time its own PCRs say.
const DefaultMaxLate = 100 * time.Millisecond

// maxAhead: a packet due further ahead than this means a clock the schedule cannot follow.
const maxAhead = 2 * time.Second

// maxPaceHold bounds the packets a Pacer holds while it waits for the next PCR: about 3 MB, more
// than a second (ts.MaxPCRStep, the longest step the clock takes as time) of a stream of
// 20 Mbit/s. Past it, the oldest are timed at the rate of the last step.
const maxPaceHold = 16 << 10

// Pacer delays writes to an io.Writer so that the PCR of the stream (of the first PID seen
// carrying one) follows the wall clock, as TSDuck's regulate plugin and multicat do: a file or
// a fast source sent at the rate it plays. It writes Burst packets at a time, each group when
// the time of its first packet comes.
//
// A packet's time is interpolated between the PCRs before and after it, as a multiplexer
// placed it (ISO/IEC 13818-1, 2.4.2.2: the rate is constant between two PCRs), so the Pacer
// holds the packets after a PCR until the next one comes. Extrapolating from the last
// interval's rate instead runs ahead of the stream wherever its rate drops, as it does between
// the frames of a variable-rate video, and the schedule then falls behind at the next PCR:
// played that way the bundled sample took 26 % longer than its PCRs span. Packets before the
// first PCR pass at once. A PCR jump is bridged by the clock (ts.PCRClock.Time), so the
// schedule goes on across a splice or a looped file without a restart.
type Pacer struct {
	w       io.Writer
	burst   int
	MaxLate time.Duration // see DefaultMaxLate

	hold      []byte  // the packets not yet written, hold[start:], from packet holdFirst
	start     int     //
	holdFirst int64   //
	due       []int64 // the clock time of each held group's first packet, once a PCR at or after it came
	idx       int64   // packets taken so far
	clock     ts.PCRClock
	anchored  bool
	t0        time.Time // the wall time at which clock time anchor was due
	anchor    int64
	resets    int64

	now   func() time.Time
	sleep func(time.Duration)
}

// NewPacer returns a Pacer writing to w, burst packets at a time (a Writer's Address.Packets,
// so that each write makes one datagram).
func NewPacer(w io.Writer, burst int) *Pacer {
	if burst < 1 {
		burst = 1
	}
	return &Pacer{w: w, burst: burst, MaxLate: DefaultMaxLate, now: time.Now, sleep: time.Sleep}
}

// Resets returns how often the schedule restarted after falling more than MaxLate behind (a
// source slower than real time).
func (p *Pacer) Resets() int64 { return p.resets }

// Write takes b's packets and writes each whole group at its time: a group waits for the PCR
// after its first packet. A packet cut at the end of b is completed by the next Write.
func (p *Pacer) Write(b []byte) (int, error) {
	n := len(b)
	for len(b) > 0 {
		// Complete the last packet held, then take the packets of b one at a time: each may
		// carry the PCR that times the groups before it.
		k := ts.PacketSize - p.held()%ts.PacketSize
		k = min(k, len(b))
		p.hold = append(p.hold, b[:k]...)
		b = b[k:]
		if p.held()%ts.PacketSize != 0 {
			break
		}
		if err := p.took(); err != nil {
			return 0, err
		}
	}
	return n, nil
}

// held is the number of bytes held.
func (p *Pacer) held() int { return len(p.hold) - p.start }

// took reads the packet just completed at the end of the hold, times the groups its PCR
// covers and writes the groups whose time came.
func (p *Pacer) took() error {
	pkt := p.hold[len(p.hold)-ts.PacketSize:]
	i := p.idx
	p.idx++
	if observePCR(&p.clock, pkt, i) != ts.NoPCR {
		p.timeUpTo(i)
	}
	if _, started := p.clock.PID(); !started {
		// Before the first PCR nothing says when a packet is due: it passes at once.
		return p.writeGroups(false, false)
	}
	if p.held()/ts.PacketSize > maxPaceHold {
		p.timeUpTo(p.holdFirst + int64(len(p.due)*p.burst))
	}
	return p.writeGroups(true, false)
}

// timeUpTo gives each held group whose first packet is at or before packet i its time on the
// clock: between the last two PCRs, the interpolation; past the last, the last step's rate.
func (p *Pacer) timeUpTo(i int64) {
	for first := p.holdFirst + int64(len(p.due)*p.burst); first <= i && first < p.idx; first += int64(p.burst) {
		p.due = append(p.due, p.clock.Time(first))
	}
}

// writeGroups writes the held groups that are whole and timed (or, with wait false, whole),
// each when its time comes; with all, the last group even if it is not whole.
func (p *Pacer) writeGroups(wait, all bool) error {
	g := p.burst * ts.PacketSize
	sent := 0
	var err error
	for p.held() > 0 && (p.held() >= g || all) && (!wait || sent < len(p.due)) {
		if wait {
			p.wait(p.due[sent])
		}
		k := min(g, p.held())
		_, err = p.w.Write(p.hold[p.start : p.start+k])
		p.start += k
		p.holdFirst += int64(k / ts.PacketSize)
		sent++
		if err != nil {
			break
		}
	}
	if sent > 0 {
		p.due = p.due[:copy(p.due, p.due[min(sent, len(p.due)):])]
	}
	if p.start > 0 && p.start >= len(p.hold)/2 {
		// Keep the hold from growing: move what remains to its front.
		p.hold = p.hold[:copy(p.hold, p.hold[p.start:])]
		p.start = 0
	}
	return err
}

// Flush writes every packet held, the ones after the last PCR at the last step's rate, then
// flushes the underlying writer if it can.
func (p *Pacer) Flush() error {
	_, started := p.clock.PID()
	if started {
		p.timeUpTo(p.idx - 1)
	}
	if err := p.writeGroups(started, true); err != nil {
		return err
	}
	if p.held() > 0 {
		// A piece of a packet (a stream cut short): it goes out as it came.
		if _, err := p.w.Write(p.hold[p.start:]); err != nil {
			return err
		}
		p.hold, p.start = p.hold[:0], 0
	}
	if f, ok := p.w.(interface{ Flush() error }); ok {
		return f.Flush()
	}
	return nil
}

// wait sleeps until clock time t is due on the wall clock.
func (p *Pacer) wait(t int64) {
	now := p.now()
	if !p.anchored {
		p.anchored, p.t0, p.anchor = true, now, t
		return
	}
	d := p.t0.Add(time.Duration((t - p.anchor) * 1000 / 27)).Sub(now) // 27 MHz ticks to ns
	if d > maxAhead || d < -p.MaxLate {
		p.resets++
		p.t0, p.anchor = now, t
		return
	}
	if d > 0 {
		p.sleep(d)
	}
}

// observePCR hands packet idx to c when it starts with the sync byte: a Pacer or a Writer is
// given bytes, not framed packets, and reads no PCR from bytes that are not a packet.
func observePCR(c *ts.PCRClock, p []byte, idx int64) ts.Tick {
	if p[0] != ts.SyncByte {
		return ts.NoPCR
	}
	return c.Observe(p, idx)
}
