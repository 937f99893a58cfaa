package pipeline

import (
	"slices"
	"sync"
	"time"

	"github.com/tsdescramble/tsdescramble/keys/period"
	"github.com/tsdescramble/tsdescramble/psi"
)

// An Observer holds the counts of a run while it goes, for whoever reports them before it
// ends: a progress bar, a statistics file rewritten now and then, a metrics endpoint. Each
// reads them as the Stats the run returns, from Snapshot.
//
// The run publishes its counts to the Observer once per unit of work (Options.Batch packets,
// or fewer when a latency bound cuts it), never per packet, each from the goroutine that keeps
// them: the reading goroutine its counts and those of each PID, the writing goroutine the
// output's and the unit-start checks. A snapshot is made by its caller, from any goroutine
// and as often as it likes: the copying, sorting and summing are its cost, not the run's. A
// snapshot is at most a unit of work behind the run, and the reader's counts may be a unit of
// work ahead of the writer's. Once the run has ended, Snapshot returns what Run returned.
//
// Set Options.Observer to have one kept; an Observer serves one run at a time.
type Observer struct {
	mu    sync.Mutex
	start time.Time
	ended bool
	final Stats // what Run returned, once ended

	// The reading goroutine's counts, without PIDs, Services and Samples.
	read     Stats
	services []uint16
	pids     map[uint16]*observedPID
	// The writing goroutine's counts.
	bytesOut, packetsOut, pesGood, pesBad int64
	latency, latencyMax                   time.Duration

	// The key waits of a run with LiveKeys (period.Waits' Waited and GaveUp), from the reading
	// goroutine; keyWaits says there are some.
	waited, gaveUp int64
	keyWaits       bool
	// applied counts the crypto periods of each PID that took a CW from LiveKeys
	// (period.Tracker.EachApplied), from the reading goroutine.
	applied map[uint16]int64

	// servicesOf is the generation of the tables the services were published from: read
	// and written by the reading goroutine alone.
	servicesOf uint64
}

// observedPID is what the run published of one PID.
type observedPID struct {
	stats    PIDStats     // the reading goroutine's counts
	carriage psi.Carriage // what the tables said it carries then
	checks   pesChecks    // the writing goroutine's unit-start checks
	read     bool         // the reading goroutine published it (the writer may come first)
}

// Snapshot returns the counts of the run so far, as Stats: those of a run still going have
// no Samples, nor LiveKeys.
func (o *Observer) Snapshot() Stats {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.ended {
		s := o.final
		s.Services, s.PIDs = slices.Clone(s.Services), slices.Clone(s.PIDs)
		return s
	}
	var elapsed time.Duration
	if !o.start.IsZero() { // else the run has not begun
		elapsed = time.Since(o.start)
	}
	return o.summary(elapsed)
}

// begin readies the Observer for a run that starts now.
func (o *Observer) begin(start time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.start, o.ended, o.final = start, false, Stats{}
	o.read, o.services, o.pids = Stats{}, nil, map[uint16]*observedPID{}
	o.bytesOut, o.packetsOut, o.pesGood, o.pesBad = 0, 0, 0, 0
	o.latency, o.latencyMax = 0, 0
	o.servicesOf = 0
	o.waited, o.gaveUp, o.keyWaits = 0, 0, false
	o.applied = nil
}

// KeyWaits returns the crypto periods of a run with Options.LiveKeys that waited for their key
// (their key came after their first packet) and those whose key never came in time, as
// published with the reading goroutine's counts; ok is false for a run without LiveKeys. Once
// the run has ended, they are those of Stats.LiveKeys.
func (o *Observer) KeyWaits() (waited, gaveUp int64, ok bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.ended && o.final.LiveKeys != nil {
		return o.final.LiveKeys.Waited, o.final.LiveKeys.GaveUp, true
	}
	return o.waited, o.gaveUp, o.keyWaits
}

// PIDCount is a count of one PID.
type PIDCount struct {
	PID uint16
	N   int64
}

// CWsApplied returns, in PID order, the crypto periods of each PID that took a CW from the
// run's Options.LiveKeys so far, as published with the reading goroutine's counts: every CW
// given to a period, one taken back because it did not fit among them, so that a count only
// grows. It is nil for a run without LiveKeys, or before any CW was applied.
func (o *Observer) CWsApplied() []PIDCount {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.applied) == 0 {
		return nil
	}
	out := make([]PIDCount, 0, len(o.applied))
	for pid, n := range o.applied {
		out = append(out, PIDCount{pid, n})
	}
	slices.SortFunc(out, func(a, b PIDCount) int { return int(a.PID) - int(b.PID) })
	return out
}

// pid returns what was published of pid, adding it the first time; o.mu is held.
func (o *Observer) pid(pid uint16) *observedPID {
	p := o.pids[pid]
	if p == nil {
		p = &observedPID{}
		o.pids[pid] = p
	}
	return p
}

// fromReader publishes the reading goroutine's counts: st, and those of the PIDs seen (in
// pids), with what the tables say of them, and the key waits of tr (nil without a tracker).
// Called from the reading goroutine.
func (o *Observer) fromReader(st *Stats, pids *[8192]*PIDStats, seen []uint16, tables *psi.Tracker, tr *period.Tracker) {
	var waited, gaveUp int64
	var keyWaits bool
	if tr != nil {
		waited, gaveUp, keyWaits = tr.WaitCounts()
	}
	var services []uint16
	changed := tables.Generation() != o.servicesOf
	if changed {
		o.servicesOf = tables.Generation()
		for _, svc := range tables.Services() {
			services = append(services, svc.Number)
		}
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.read = *st
	o.read.PIDs, o.read.Services, o.read.Samples = nil, nil, nil
	o.waited, o.gaveUp, o.keyWaits = waited, gaveUp, keyWaits
	if tr != nil {
		tr.EachApplied(o.setApplied)
	}
	if changed {
		o.services = services
	}
	for _, pid := range seen {
		p := o.pid(pid)
		p.stats, p.carriage, p.read = *pids[pid], tables.Carriage(pid), true
	}
}

// setApplied publishes the CWs applied to pid's periods; o.mu is held.
func (o *Observer) setApplied(pid uint16, n int64) {
	if o.applied == nil {
		o.applied = map[uint16]int64{}
	}
	o.applied[pid] = n
}

// fromWriter publishes the writing goroutine's counts: the output's and the unit-start checks
// in st, those of each PID checked, and, when arrived is not zero, the latency of the unit of
// work whose first packet arrived then, written now. Called from the writing goroutine.
func (o *Observer) fromWriter(st *Stats, checks *[8192]*pesChecks, checked []uint16, arrived time.Time) {
	var d time.Duration
	if !arrived.IsZero() {
		d = time.Since(arrived)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.bytesOut, o.packetsOut, o.pesGood, o.pesBad = st.BytesOut, st.PacketsOut, st.PESGood, st.PESBad
	for _, pid := range checked {
		o.pid(pid).checks = *checks[pid]
	}
	if !arrived.IsZero() {
		o.latency, o.latencyMax = d, max(o.latencyMax, d)
	}
}

// finish ends the run with what was last published: the Stats Run returns, which Snapshot
// returns from now on.
func (o *Observer) finish(elapsed time.Duration, samples []Sample, live *LiveKeyStats) Stats {
	o.mu.Lock()
	defer o.mu.Unlock()
	s := o.summary(elapsed)
	s.Samples, s.LiveKeys = samples, live
	o.final, o.ended = s, true
	return s
}

// summary makes Stats of what was published: the reader's counts with the writer's, and each
// PID's counts with its unit-start checks, carriage and key fit, summed up. o.mu is held.
func (o *Observer) summary(elapsed time.Duration) Stats {
	s := o.read
	s.BytesOut, s.PacketsOut, s.PESGood, s.PESBad = o.bytesOut, o.packetsOut, o.pesGood, o.pesBad
	s.Latency, s.LatencyMax = o.latency, o.latencyMax
	s.Services = slices.Clone(o.services)
	s.Elapsed = elapsed
	pids := make([]uint16, 0, len(o.pids))
	for pid, p := range o.pids {
		if p.read {
			pids = append(pids, pid)
		}
	}
	slices.Sort(pids)
	if len(pids) > 0 {
		s.PIDs = make([]PIDStats, 0, len(pids))
	}
	for _, pid := range pids {
		p := o.pids[pid]
		ps := p.stats
		ps.PESGood, ps.PESBad = p.checks.good, p.checks.bad
		if p.carriage == psi.CarriageUnknown {
			// No PMT said what the PID carries: a unit start that was neither a PES header
			// nor a whole section did not fit.
			for i, n := range p.checks.undescribed {
				ps.PESBad[i] += n
				s.PESBad += n
			}
		}
		ps.Carriage = p.carriage.String()
		ps.KeyFit = keyFit(&ps)
		s.Periods += ps.Periods
		s.PeriodsLeft += ps.PeriodsLeft
		s.PeriodsUnplaced += ps.PeriodsUnplaced
		s.PIDs = append(s.PIDs, ps)
	}
	return s
}

// keyFit sums up the crypto periods of a PID (PIDStats.KeyFit).
func keyFit(ps *PIDStats) string {
	switch {
	case ps.Periods == 0:
		return ""
	case ps.PeriodsLeft == 0 && ps.PeriodsFit == 0:
		return "unchecked"
	case ps.PeriodsLeft == 0:
		return "all"
	case ps.PeriodsFit > 0:
		return "some"
	}
	return "none"
}
