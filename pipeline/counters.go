package pipeline

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Counters are the counts of a run while it goes, for a caller that reports them before the
// run ends, as the metrics of a live service do. The run adds to them once per unit of work
// (Options.Batch packets), never per packet, so a reader sees counts at most a unit of work
// behind. Set Options.Counters to have them kept; one Counters serves one run at a time.
type Counters struct {
	BytesIn     atomic.Int64 // bytes read
	PacketsIn   atomic.Int64 // packets read
	PacketsOut  atomic.Int64 // packet units written
	Descrambled atomic.Int64 // packets descrambled
	Scrambled   atomic.Int64 // packets scrambled or rescrambled
	LeftAsCame  atomic.Int64 // scrambled packets left as they came: no key, no key fits, glitches
	KeyChanges  atomic.Int64 // changes of scrambling parity
	PESGood     atomic.Int64 // unit-start checks passed after descrambling
	PESBad      atomic.Int64 // and failed
	CCErrors    atomic.Int64 // continuity-counter errors (see Stats.CCErrors)
	// Latency is how long the first packet of the unit of work written last waited in the
	// run, from its arrival to its write, in nanoseconds; LatencyMax the longest so far. Kept
	// only with Options.Latency, whose input notes when each packet arrives.
	Latency    atomic.Int64
	LatencyMax atomic.Int64

	mu   sync.Mutex
	pids map[uint16]*PIDCount
}

// PIDCount is what Counters.PIDs reports of one PID.
type PIDCount struct {
	PID         uint16
	Packets     int64
	Descrambled int64
	PESGood     int64
	PESBad      int64
	CCErrors    int64
}

// PIDs returns the counts of every PID seen so far, in PID order.
func (c *Counters) PIDs() []PIDCount {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]PIDCount, 0, len(c.pids))
	for _, p := range c.pids {
		out = append(out, *p)
	}
	slices.SortFunc(out, func(a, b PIDCount) int { return int(a.PID) - int(b.PID) })
	return out
}

func (c *Counters) pid(pid uint16) *PIDCount {
	if c.pids == nil {
		c.pids = map[uint16]*PIDCount{}
	}
	p := c.pids[pid]
	if p == nil {
		p = &PIDCount{PID: pid}
		c.pids[pid] = p
	}
	return p
}

// fromReader publishes what the reading goroutine counts, after each unit of work.
func (c *Counters) fromReader(st *Stats, pids *[8192]*PIDStats) {
	c.BytesIn.Store(st.BytesIn)
	c.PacketsIn.Store(st.Packets)
	c.Descrambled.Store(st.Descrambled)
	c.Scrambled.Store(st.Scrambled)
	c.LeftAsCame.Store(st.NoKey + st.LeftScrambled)
	c.KeyChanges.Store(int64(st.KeyChanges))
	c.CCErrors.Store(st.CCErrors)
	c.mu.Lock()
	for pid, ps := range pids {
		if ps != nil {
			p := c.pid(uint16(pid))
			p.Packets, p.Descrambled, p.CCErrors = ps.Packets, ps.Descrambled, ps.CCErrors
		}
	}
	c.mu.Unlock()
}

// fromWriter publishes what the writing goroutine counts, after each unit of work.
func (c *Counters) fromWriter(st *Stats, checks *[8192]*pesChecks) {
	c.PacketsOut.Store(st.PacketsOut)
	c.PESGood.Store(st.PESGood)
	c.PESBad.Store(st.PESBad)
	c.mu.Lock()
	for pid, ck := range checks {
		if ck != nil {
			p := c.pid(uint16(pid))
			p.PESGood, p.PESBad = ck.good[0]+ck.good[1], ck.bad[0]+ck.bad[1]
		}
	}
	c.mu.Unlock()
}

// wrote notes the latency of a unit of work whose first packet arrived at arrived, written
// now. Called from the writing goroutine alone, so the maximum needs no compare-and-swap.
func (c *Counters) wrote(arrived, now time.Time) {
	d := int64(now.Sub(arrived))
	c.Latency.Store(d)
	if d > c.LatencyMax.Load() {
		c.LatencyMax.Store(d)
	}
}
