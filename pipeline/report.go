package pipeline

import (
	"sync/atomic"
	"time"

	"github.com/tsdescramble/tsdescramble/psi"
)

// writerCounts are the writer's counters as it last published them, for the reading goroutine's
// reports (Options.Report).
type writerCounts struct {
	bytesOut, packetsOut, pesGood, pesBad atomic.Int64
}

func (w *writerCounts) publish(st *Stats) {
	w.bytesOut.Store(st.BytesOut)
	w.packetsOut.Store(st.PacketsOut)
	w.pesGood.Store(st.PESGood)
	w.pesBad.Store(st.PESBad)
}

// snapshot returns the statistics of a run still going: the reading goroutine's counters, the
// writer's as last published, and the per-PID ones without the writer's unit-start checks.
// Called from the reading goroutine.
func snapshot(st *Stats, pids *[8192]*PIDStats, w *writerCounts, tr *psi.Tracker, start time.Time) Stats {
	s := *st
	s.Samples, s.PIDs, s.Services = nil, nil, nil
	s.BytesOut, s.PacketsOut = w.bytesOut.Load(), w.packetsOut.Load()
	s.PESGood, s.PESBad = w.pesGood.Load(), w.pesBad.Load()
	s.Elapsed = time.Since(start)
	var copies [8192]*PIDStats
	for pid, ps := range pids {
		if ps != nil {
			c := *ps
			copies[pid] = &c
		}
	}
	summarize(&s, &copies, nil, tr)
	return s
}

// summarize completes st from the per-PID counters: the services of the PAT, each PID's unit-
// start checks (when checks is given), carriage and key fit, and the crypto-period totals.
func summarize(st *Stats, pids *[8192]*PIDStats, checks *[8192]*pesChecks, tr *psi.Tracker) {
	for _, svc := range tr.Services() {
		st.Services = append(st.Services, svc.Number)
	}
	for pid, ps := range pids {
		if ps == nil {
			continue
		}
		carriage := tr.Carriage(uint16(pid))
		if checks != nil {
			if ck := checks[pid]; ck != nil {
				ps.PESGood, ps.PESBad = ck.good, ck.bad
				if carriage == psi.CarriageUnknown {
					// No PMT ever said what the PID carries: a unit start that was neither
					// a PES header nor a whole section did not fit.
					for i := range ck.undescribed {
						ps.PESBad[i] += ck.undescribed[i]
						st.PESBad += ck.undescribed[i]
					}
				}
			}
		}
		ps.Carriage = carriage.String()
		switch {
		case ps.Periods == 0:
		case ps.PeriodsLeft == 0 && ps.PeriodsFit == 0:
			ps.KeyFit = "unchecked"
		case ps.PeriodsLeft == 0:
			ps.KeyFit = "all"
		case ps.PeriodsFit > 0:
			ps.KeyFit = "some"
		default:
			ps.KeyFit = "none"
		}
		st.Periods += ps.Periods
		st.PeriodsLeft += ps.PeriodsLeft
		st.PeriodsUnplaced += ps.PeriodsUnplaced
		st.PIDs = append(st.PIDs, *ps)
	}
}
