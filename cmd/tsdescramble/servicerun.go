package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/tsdescramble/tsdescramble/internal/livekeys"
	"github.com/tsdescramble/tsdescramble/internal/metrics"
	"github.com/tsdescramble/tsdescramble/internal/report"
	"github.com/tsdescramble/tsdescramble/keys"
	"github.com/tsdescramble/tsdescramble/pipeline"
	"github.com/tsdescramble/tsdescramble/psi"
	"github.com/tsdescramble/tsdescramble/scrambling"
	"github.com/tsdescramble/tsdescramble/ts"
)

// serviceRun descrambles one service of a multiplex run: the split writes the service's
// single-program stream into a pipe, and a pipeline of its own reads it there, with the
// service's keys, and writes its output. The pipe holds no more than one write: the split waits
// for the slowest service, so that memory stays bounded whatever the rates.
type serviceRun struct {
	number uint16
	cfg    *config
	keys   *keySet
	ksrv   *livekeys.Source // keys that come while the stream runs, or nil
	notes  []string
	opts   pipeline.Options
	pr     *io.PipeReader
	pw     *io.PipeWriter
	done   chan struct{}
	// release closes what its key source holds open (an ECM cache it appends to), once its run
	// is over: at the end of the whole run, or when a reload ends the service.
	release func()

	st      pipeline.Stats
	err     error
	verdict report.Verdict
}

// openServiceRun reads the keys of service s under the system sys; the run starts with start.
func openServiceRun(s *serviceOut, sys scrambling.System, r *runState) (*serviceRun, error) {
	sc := s.plan.sub
	sr := &serviceRun{number: s.number, cfg: sc, done: make(chan struct{})}
	prefix := fmt.Sprintf("service %d: ", s.number)
	ks, notes, done, err := newKeyServer(sc)
	if err != nil {
		return nil, withPrefix(prefix, err)
	}
	sr.release = done
	sr.ksrv = ks
	if ks != nil {
		sr.keys = &keySet{sched: keys.NewList(nil)}
	} else if sr.keys, err = readKeys(&sc.keys, "", sys); err != nil {
		sr.close()
		return nil, withPrefix(prefix, err)
	}
	for _, n := range append(notes, sr.keys.notes...) {
		sr.notes = append(sr.notes, prefix+n)
	}
	sr.opts = pipeline.Options{Mode: pipeline.Descramble, Keys: sr.keys.sched, System: sys,
		Workers: sc.workers, Batch: sc.batch, Lanes: sc.lanes, Observer: new(pipeline.Observer)}
	if ks != nil {
		sr.opts.LiveKeys = ks.LiveKeys()
	}
	sr.opts.Log = func(msg string) { r.logf(prefix + msg) }
	sr.opts.Warn = func(msg string) { r.warnf(prefix + msg) }
	if sc.verbose {
		sr.opts.KeyLog = sr.opts.Log
	}
	sr.pr, sr.pw = io.Pipe()
	return sr, nil
}

// start runs the service's pipeline until its pipe is closed (finish) or ctx is done; the
// latency bound and the deciding on time are the whole run's.
func (sr *serviceRun) start(ctx context.Context, w io.Writer, main *pipeline.Options, fileInput bool) {
	sr.opts.Latency, sr.opts.DecideOnTime = main.Latency, main.DecideOnTime
	if sr.ksrv != nil {
		sr.ksrv.Start(ctx, fileInput || sr.ksrv.AnswersAtOnce(), sr.opts.Warn)
	}
	go func() {
		defer close(sr.done)
		sr.st, sr.err = pipeline.Run(ctx, ts.NewSource(sr.pr), w, sr.opts)
		if sr.ksrv != nil {
			sr.ksrv.Stop(&sr.st)
		}
		// A run that stopped early fails the split's writes to it, which stops the whole run.
		err := sr.err
		if err == nil {
			err = io.ErrClosedPipe
		}
		sr.pr.CloseWithError(err)
	}()
}

// finish ends the service's input and waits for its run; it judges the keys as the whole
// stream's run would be judged.
func (sr *serviceRun) finish() {
	sr.pw.Close()
	<-sr.done
	sr.verdict = report.JudgeKeys(&sr.st)
	if sr.ksrv != nil {
		sr.verdict = sr.ksrv.Judge(&sr.st)
	}
	sr.close()
}

// close releases what the key source holds open; for a run that never started (a reload not
// applied), it is all there is to end.
func (sr *serviceRun) close() {
	if sr.release != nil {
		sr.release()
		sr.release = nil
	}
}

// failed says why the service failed, or "": its run's error, or keys that do not fit.
func (sr *serviceRun) failed() (code int, why string) {
	switch st := &sr.st; {
	case sr.err != nil:
		return exitFail, sr.err.Error()
	case sr.verdict.NoFit:
		return exitNoFit, sr.verdict.Line
	case st.PESGood == 0 && st.PESBad > 0:
		return exitNoFit, fmt.Sprintf("the keys do not fit: none of the %d scrambled PES starts descrambled to a valid PES header", st.PESBad)
	}
	return 0, ""
}

// passWriter is the writer of a service without keys: its packets go to its output as they
// came, or, under -missing-key drop, without its scrambled ones, as a period without its key
// drops them. It counts them for /metrics, which reads while the run writes.
type passWriter struct {
	w       io.Writer
	drop    bool
	buf     []byte
	written atomic.Int64 // packets
	dropped atomic.Int64
}

func (d *passWriter) Write(p []byte) (int, error) {
	if !d.drop {
		d.written.Add(int64(len(p) / ts.PacketSize))
		return d.w.Write(p)
	}
	d.buf = d.buf[:0]
	var dropped int64
	for i := 0; i+ts.PacketSize <= len(p); i += ts.PacketSize {
		pkt := p[i : i+ts.PacketSize]
		if ts.TSC(pkt) == ts.Clear {
			d.buf = append(d.buf, pkt...)
		} else {
			dropped++
		}
	}
	d.dropped.Add(dropped)
	if len(d.buf) > 0 {
		if _, err := d.w.Write(d.buf); err != nil {
			return 0, err
		}
		d.written.Add(int64(len(d.buf) / ts.PacketSize))
	}
	return len(p), nil
}

// Flush passes a flush on to the output (a network output's partial datagram).
func (d *passWriter) Flush() error {
	if f, ok := d.w.(interface{ Flush() error }); ok {
		return f.Flush()
	}
	return nil
}

// openServices reads the keys of each service of a multiplex run that has some, once the
// input is open: a service given by its SDT name takes its number from the stream first.
func (r *runState) openServices() error {
	names, err := resolveNames(r.cfg.serviceOuts, r.in)
	if err != nil {
		return err
	}
	r.names = names
	for i := range r.cfg.serviceOuts {
		s := &r.cfg.serviceOuts[i]
		if s.plan.sub == nil {
			continue
		}
		sr, err := openServiceRun(s, r.sys, r)
		if err != nil {
			return err
		}
		r.cleanup = append(r.cleanup, sr.close) // a run that ends before its services start
		s.run = sr
		r.notes = append(r.notes, sr.notes...)
	}
	return nil
}

// services returns the services of a multiplex run now: a reload may change them while
// /metrics reads.
func (r *runState) services() []serviceOut {
	if r.reload != nil {
		return r.reload.services()
	}
	return r.cfg.serviceOuts
}

// serviceWriter is what the split writes service s's stream to: its run's pipe, its output,
// or, in a multiplex run, its output through a passWriter.
func serviceWriter(s *serviceOut, c *config) io.Writer {
	switch {
	case s.run != nil:
		return s.run.pw
	case c.multiplex:
		s.pass = &passWriter{w: s.out.w, drop: c.missingKey == "drop"}
		return s.pass
	}
	return s.out.w
}

// snapshot is the run's counts for /metrics and its health: in a multiplex run, the split's
// packets with the services' descrambling added, so that /healthz says whether keys fit.
func (r *runState) snapshot() pipeline.Stats {
	st := r.observer().Snapshot()
	if !r.cfg.multiplex {
		return st
	}
	// The scrambled packets are those the services' runs read, published with what they
	// descrambled of them: the split's own, counted earlier, would make a run that keeps up look
	// as if it descrambled nothing; and a service without keys passes its packets by choice.
	st.Even, st.Odd = 0, 0
	for _, s := range r.services() {
		if s.run == nil {
			continue
		}
		sst := s.run.opts.Observer.Snapshot()
		st.Even += sst.Even
		st.Odd += sst.Odd
		st.Descrambled += sst.Descrambled
		st.PESGood += sst.PESGood
		st.PESBad += sst.PESBad
		st.LeftScrambled += sst.LeftScrambled
		st.KeyFailures += sst.KeyFailures
		st.UnseenKeyChanges += sst.UnseenKeyChanges
	}
	return st
}

// serviceCounts are each service's series for /metrics.
func (r *runState) serviceCounts() []metrics.Service {
	var out []metrics.Service
	for _, s := range r.services() {
		m := metrics.Service{Number: s.number}
		if s.run != nil {
			sst := s.run.opts.Observer.Snapshot()
			m.Packets, m.Descrambled, m.LeftScrambled, m.KeyFailures = sst.PacketsOut, sst.Descrambled, sst.LeftScrambled, sst.KeyFailures
			m.Good, m.Bad = sst.PESGood, sst.PESBad
		} else if s.pass != nil {
			m.Packets = s.pass.written.Load()
		}
		out = append(out, m)
	}
	return out
}

// judgeServices returns each service's report for -stats, the summary's lines, and the error
// of the services that failed: exit 1 when a service's run or output failed, else 3 when the
// keys of one do not fit; the message names every service that failed and why.
func (r *runState) judgeServices() ([]report.Service, []string, error) {
	var svcs []report.Service
	var lines, failed []string
	code := 0
	split := r.out.splitter.Stats()
	all := r.cfg.serviceOuts
	if r.reload != nil {
		// The services a reload ended or changed, as they were until then, first.
		all = append(slices.Clone(r.reload.ended), all...)
	}
	for _, s := range all {
		sst := split[s.number]
		if s.ended != "" {
			sst = s.final
		}
		rs := report.Service{Number: s.number, Output: redacted(s.dest), Packets: sst.Packets, Ended: s.ended}
		line := fmt.Sprintf("  service %d → %s: %d packets", s.number, redactItem(s.dest), rs.Packets)
		if sst.PATs == 0 {
			rs.ExitStatus, rs.Error = exitFail, "not in the stream's PAT: nothing was written"
		}
		if sr := s.run; sr != nil {
			st := sr.st
			rs.Keys, rs.Descrambling, rs.Packets = redactSource(s.plan.keys), &st, st.PacketsOut
			line = fmt.Sprintf("  service %d → %s: %d packets, %d descrambled, %d left scrambled (keys %s)",
				s.number, redactItem(s.dest), st.PacketsOut, st.Descrambled, st.LeftScrambled+st.Unplaced, rs.Keys)
			if c, why := sr.failed(); c != 0 && rs.ExitStatus == 0 {
				rs.ExitStatus, rs.Error = c, why
			}
		} else if s.pass != nil && s.pass.drop {
			rs.Packets = s.pass.written.Load()
			line = fmt.Sprintf("  service %d → %s: %d packets (no keys: %d scrambled packets dropped)", s.number, redactItem(s.dest), rs.Packets, s.pass.dropped.Load())
		} else {
			line += " (no keys: as it came)"
		}
		if s.ended != "" {
			// Ended by a reload: reported, but the config in force at the end decides the status.
			line += " [until " + s.ended + " by SIGHUP]"
			if rs.ExitStatus != 0 {
				line += " (" + rs.Error + ")"
			}
			svcs = append(svcs, rs)
			lines = append(lines, line)
			continue
		}
		if rs.ExitStatus != 0 {
			failed = append(failed, fmt.Sprintf("service %d: %s", s.number, rs.Error))
			if code == 0 || rs.ExitStatus == exitFail {
				code = rs.ExitStatus
			}
			line += " FAILED: " + rs.Error
		}
		svcs = append(svcs, rs)
		lines = append(lines, line)
		if s.run != nil && s.run.st.LiveKeys != nil {
			// The key server's line (ECMs sent and answered), under its service's.
			var b strings.Builder
			report.KeyServerSummary(&b, &s.run.st, r.cfg.verbose)
			for _, l := range strings.Split(strings.TrimRight(b.String(), "\n"), "\n") {
				if l != "" {
					lines = append(lines, "    "+strings.TrimPrefix(l, "tsdescramble: "))
				}
			}
		}
	}
	if code == 0 {
		return svcs, lines, nil
	}
	return svcs, lines, &exitError{code: code, msg: fmt.Sprintf("%d of %d services failed: %s", len(failed), len(svcs), strings.Join(failed, "; "))}
}

// resolveNames gives each service of outs given by its SDT name the number the stream's SDT
// (actual, table 0x42) gives that name, from the start of the input as peekServices reads it:
// the run sees the same packets whether or not anything looked.
func resolveNames(outs []serviceOut, in *input) (map[string]uint16, error) {
	want := 0
	for _, s := range outs {
		if s.number == 0 {
			want++
		}
	}
	if want == 0 {
		return nil, nil
	}
	names := map[string]uint16{}
	sections := psi.NewSectionReader()
	peekStart(in, func(p []byte) bool {
		if ts.PID(p) != 0x11 {
			return true
		}
		sections.Feed(p, func(_ uint16, sec []byte) {
			sdt, ok := psi.ParseSDT(sec)
			if !ok || !sdt.Actual {
				return
			}
			for _, svc := range sdt.Services {
				if _, seen := names[dvbName(svc.Name)]; !seen {
					names[dvbName(svc.Name)] = svc.ID
				}
			}
		})
		found := 0
		for _, s := range outs {
			if _, ok := names[s.name]; s.number == 0 && ok {
				found++
			}
		}
		return found < want
	})
	for i := range outs {
		s := &outs[i]
		if s.number != 0 {
			continue
		}
		n, ok := names[s.name]
		if !ok {
			return nil, failErr("service %q is not in the stream's SDT: name it by its number (probe lists the services, with their names)", s.name)
		}
		for _, o := range outs {
			if o.number == n {
				return nil, usageErr("service %q is service %d, which is given too: give it once", s.name, n)
			}
		}
		s.number, s.plan.number = n, n
	}
	return names, nil
}

// dvbName is a service_name as text: its bytes after a character table selector (EN 300 468
// Annex A), which a name typed in a config does not carry.
func dvbName(b []byte) string {
	switch {
	case len(b) > 0 && b[0] == 0x10 && len(b) >= 3:
		return string(b[3:])
	case len(b) > 0 && b[0] < 0x20:
		return string(b[1:])
	}
	return string(b)
}
