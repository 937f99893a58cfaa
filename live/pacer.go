package live

import (
	"io"
	"time"

	"github.com/tsdescramble/tsdescramble/ts"
)

// DefaultMaxLate is how far behind its schedule a Pacer may fall before it gives up catching
// up: past it, the schedule restarts from the present instead of sending the backlog in one
// burst, which is what makes receivers' buffers overflow (tsduck#1104).
const DefaultMaxLate = 100 * time.Millisecond

// maxAhead: a packet due further ahead than this means a PCR jump the clock did not flag.
const maxAhead = 2 * time.Second

// Pacer delays writes to an io.Writer so that the PCR of the stream (of the first PID seen
// carrying one) follows the wall clock, as TSDuck's regulate plugin and multicat do: a file or
// a fast source sent at the rate it plays. It writes Burst packets at a time, each group when
// the PCR time of its first packet comes, interpolating between PCRs at the stream's rate.
// Packets before the first PCR pass at once; a discontinuity restarts the schedule.
type Pacer struct {
	w       io.Writer
	burst   int           // packets per write
	MaxLate time.Duration // see DefaultMaxLate

	pend     []byte
	idx      int64 // packets written so far
	clock    ts.PCRClock
	jumped   bool // a PCR jumped since the last wait: the schedule restarts
	anchored bool
	t0       time.Time
	pcr0     int64
	resets   int64

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

// Resets returns how often the schedule restarted: at a PCR discontinuity, or after falling
// more than MaxLate behind (a source slower than real time).
func (p *Pacer) Resets() int64 { return p.resets }

// Write writes b's whole groups of packets, each at its time, and keeps the rest.
func (p *Pacer) Write(b []byte) (int, error) {
	n := len(b)
	g := p.burst * 188
	if len(p.pend) > 0 {
		k := min(g-len(p.pend), len(b))
		p.pend = append(p.pend, b[:k]...)
		b = b[k:]
		if len(p.pend) < g {
			return n, nil
		}
		if err := p.put(p.pend); err != nil {
			return 0, err
		}
		p.pend = p.pend[:0]
	}
	for len(b) >= g {
		if err := p.put(b[:g]); err != nil {
			return 0, err
		}
		b = b[g:]
	}
	p.pend = append(p.pend, b...)
	return n, nil
}

// Flush writes what waits for a full group, then flushes the underlying writer if it can.
func (p *Pacer) Flush() error {
	if len(p.pend) > 0 {
		if err := p.put(p.pend); err != nil {
			return err
		}
		p.pend = p.pend[:0]
	}
	if f, ok := p.w.(interface{ Flush() error }); ok {
		return f.Flush()
	}
	return nil
}

// put waits for the time of the group's first packet, then writes the group.
func (p *Pacer) put(group []byte) error {
	first := p.idx
	for off := 0; off+188 <= len(group); off += 188 {
		if observePCR(&p.clock, group[off:off+188], p.idx) == ts.PCRJumped {
			p.jumped = true
		}
		p.idx++
	}
	if pcr, ok := p.clock.PCRAt(first); ok {
		p.wait(pcr)
	}
	_, err := p.w.Write(group)
	return err
}

func (p *Pacer) wait(pcr int64) {
	now := p.now()
	if p.jumped || !p.anchored {
		if p.anchored {
			p.resets++
		}
		p.jumped = false
		p.anchored, p.t0, p.pcr0 = true, now, pcr
		return
	}
	elapsed := time.Duration((pcr - p.pcr0 + ts.PCRWrap) % ts.PCRWrap * 1000 / 27) // 27 MHz ticks to ns
	d := p.t0.Add(elapsed).Sub(now)
	if d > maxAhead || d < -p.MaxLate {
		p.resets++
		p.t0, p.pcr0 = now, pcr
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
