package pipeline

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/tsdescramble/tsdescramble/scrambling"
)

// PeriodFeed hands a Scramble run its output crypto periods from a stage that decides them as it
// goes (on a clock, with a fresh control word each, as a SimulCrypt scrambler does): Start says
// at which packet of the run's input a period begins and its control word. The first period
// is even and the parity alternates at each Start. Starts are given in stream order, each
// before the run takes its packet: a ts.Stage in the run's source (scs.Stage) calls Start in
// the call that hands that packet on.
//
// A PeriodFeed is safe for one goroutine calling Start while the run reads.
type PeriodFeed struct {
	mu     sync.Mutex
	starts []feedStart
	pushed atomic.Int64
	err    error
}

// Err returns the first error of the run with the feed's periods: a control word the output
// system refused. The packets of such a period pass clear, unmarked; check Err after Run.
func (f *PeriodFeed) Err() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}

type feedStart struct {
	packet int64
	cw     []byte
}

// Start says that the next crypto period begins at the packet-th packet unit the run reads
// (counting from 1, as the run's ts.Source hands them on) and is scrambled with cw. A nil cw begins a
// period whose packets pass clear: a stage whose first period is odd starts one of no packet
// before it, to keep the parity of its crypto period numbers.
func (f *PeriodFeed) Start(packet int64, cw []byte) {
	f.mu.Lock()
	f.starts = append(f.starts, feedStart{packet, append([]byte(nil), cw...)})
	f.mu.Unlock()
	f.pushed.Add(1)
}

// fedPeriods is the classifier's side of a PeriodFeed: the period in force and its key.
type fedPeriods struct {
	feed   *PeriodFeed
	seen   int64          // starts taken from the feed
	next   int64          // packet of the first start not yet in force, 0 when none is queued
	period int64          // periods begun, the current one included
	key    scrambling.Key // nil before the first period and in a period whose CW was refused
}

// at returns the key and parity of the crypto period of the packet-th packet: a lock is taken
// only when a start is queued at or before it, or a new one was pushed.
func (fp *fedPeriods) at(cs *ciphers, packet int64) (scrambling.Key, bool) {
	if (fp.next == 0 || packet < fp.next) && fp.feed.pushed.Load() == fp.seen {
		return fp.key, fp.period%2 == 0
	}
	f := fp.feed
	f.mu.Lock()
	fp.seen = f.pushed.Load()
	for len(f.starts) > 0 && f.starts[0].packet <= packet {
		var k scrambling.Key
		if cw := f.starts[0].cw; cw != nil {
			var err error
			if k, err = cs.out.NewKey(cw); err != nil && f.err == nil {
				f.err = fmt.Errorf("crypto period %d: %w", fp.period+1, err)
			}
		}
		fp.key = k // nil when refused or not given: the period's packets stay clear
		fp.period++
		f.starts[0].cw = nil
		f.starts = f.starts[1:]
	}
	fp.next = 0
	if len(f.starts) > 0 {
		fp.next = f.starts[0].packet
	}
	f.mu.Unlock()
	return fp.key, fp.period%2 == 0
}

// slot returns the index in c's output keys of the key of the current fed period, adding it
// when the chunk has not used it yet. The chunk's table is emptied the first time the chunk is
// seen under a new sequence number.
func (fp *fedPeriods) slot(c *chunk) int32 {
	if c.oseq != c.seq+1 {
		c.oseq, c.okeys = c.seq+1, c.okeys[:0]
	}
	if n := len(c.okeys); n > 0 && c.operiod == fp.period {
		return int32(n - 1)
	}
	c.okeys = append(c.okeys, fp.key)
	c.operiod = fp.period
	return int32(len(c.okeys) - 1)
}
