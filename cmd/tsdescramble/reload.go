package main

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/tsdescramble/tsdescramble/internal/report"
	"github.com/tsdescramble/tsdescramble/split"
)

// A multiplex run's config reread on SIGHUP (-config FILE): the services the file gains, loses
// or changes are added, ended or started again while the others go on untouched, their runs,
// outputs and continuity counters and all. The file is read, checked, and every new output
// and key source opened in a goroutine of the reload's own, away from the packets; the split
// takes the difference between two of its writes, where no packet is half routed, so a service
// removed ends at a packet boundary and one added starts at the input's next PAT. A file that does not
// read or check leaves the run as it was. The input, and missing-key, which every service
// follows, cannot change under a running split: a new one in the file is refused with a line,
// the rest applied.

// reloadAction is what a reload does with a service.
type reloadAction int

const (
	keepService    reloadAction = iota // the same keys and output: left untouched
	addService                         // new, or with another output: a run and an output of its own
	restartService                     // other keys, the same output: a new run writes on to it
)

// reloader applies the config file reread on SIGHUP to a multiplex run.
type reloader struct {
	r *runState
	// serial makes the reloads one at a time, from reading the file to the split applying it.
	serial sync.Mutex
	// mu guards the list of services (r.cfg.serviceOuts, r.out.services) and ended against
	// /metrics and a quit, which read them while the split writes.
	mu      sync.Mutex
	ended   []serviceOut // services a reload ended, or whose run it replaced
	stopped bool
	stop    chan struct{}
	plans   chan *reloadPlan // to the split's writer, which applies a plan between two writes

	applied, refused atomic.Int64
	ending           sync.WaitGroup // the runs a reload ended, finishing
}

// reloadPlan is the difference a reload makes: the services after it, each with its action,
// and the services whose output ends.
type reloadPlan struct {
	outs    []serviceOut
	remove  []serviceOut
	changes []string // what it does, for its line
	done    chan struct{}
}

func newReloader(r *runState) *reloader {
	return &reloader{r: r, stop: make(chan struct{}), plans: make(chan *reloadPlan, 1)}
}

// hangup is what SIGHUP does: the reload runs by itself, so that the signal goroutine stays
// free for a stop signal whatever the reload waits for.
func (rl *reloader) hangup() { go rl.reload() }

// reload rereads the config and hands the difference to the split, then waits until the split
// has applied it or the run is over.
func (rl *reloader) reload() {
	rl.serial.Lock()
	defer rl.serial.Unlock()
	r := rl.r
	rl.mu.Lock()
	over := rl.stopped
	rl.mu.Unlock()
	if over {
		return // the input has ended: nothing more to apply it to
	}
	p, err := rl.prepare()
	if err != nil {
		rl.refused.Add(1)
		r.warnf("SIGHUP: " + r.cfg.configFile + " not applied, the services go on as they were: " + strings.TrimPrefix(err.Error(), "-config "+r.cfg.configFile+": "))
		return
	}
	if len(p.changes) == 0 {
		rl.applied.Add(1)
		r.logf("SIGHUP: " + r.cfg.configFile + " reread: no service changed")
		return
	}
	rl.mu.Lock()
	if rl.stopped {
		rl.mu.Unlock()
		p.discard()
		return
	}
	rl.plans <- p // empty: serial lets one plan out at a time
	rl.mu.Unlock()
	select {
	case <-p.done:
	case <-rl.stop:
	}
}

// prepare reads the config file again and opens what the services it adds or changes need.
func (rl *reloader) prepare() (*reloadPlan, error) {
	r := rl.r
	c := r.cfg
	file, err := readConfigFile(c.configFile)
	if err != nil {
		return nil, err
	}
	if file.Input != "" && !c.isSet("in") && file.Input != c.in {
		r.warnf(fmt.Sprintf("SIGHUP: %s: the input cannot change while the run reads it: %s is read on (restart the run for %s)", c.configFile, redacted(c.in), redacted(file.Input)))
	}
	if mk := cmp.Or(file.MissingKey, "pass"); !c.isSet("missing-key") && mk != c.missingKey {
		r.warnf(fmt.Sprintf("SIGHUP: %s: missing-key applies to every service and cannot change while the run goes: %s stays (restart the run for %s)", c.configFile, c.missingKey, mk))
	}
	outs, err := mergeServices(c, file)
	if err != nil {
		return nil, err
	}
	rl.mu.Lock()
	old := slices.Clone(c.serviceOuts)
	rl.mu.Unlock()
	p := &reloadPlan{done: make(chan struct{})}
	for i := range outs {
		s := &outs[i]
		if s.number == 0 {
			n, ok := r.names[s.name]
			if !ok {
				p.discard()
				return nil, fmt.Errorf("%s is not among the names the SDT gave at the start: name it by its number (probe lists the services)", s.plan.label())
			}
			s.number, s.plan.number = n, n
		}
		if j := slices.IndexFunc(outs[:i], func(o serviceOut) bool { return o.number == s.number }); j >= 0 {
			p.discard()
			return nil, fmt.Errorf("%s is %s too: give it once", outs[j].plan.label(), s.plan.label())
		}
		j := slices.IndexFunc(old, func(o serviceOut) bool { return o.number == s.number })
		switch {
		case j >= 0 && old[j].dest == s.dest && old[j].plan.keys == s.plan.keys:
			*s = old[j]
			continue
		case j >= 0 && old[j].dest == s.dest:
			s.action, s.out = restartService, old[j].out
			p.changes = append(p.changes, fmt.Sprintf("service %d with other keys", s.number))
		default:
			s.action, s.fresh = addService, true
			if j >= 0 {
				p.changes = append(p.changes, fmt.Sprintf("service %d to %s", s.number, redactItem(s.dest)))
			} else {
				p.changes = append(p.changes, fmt.Sprintf("service %d added", s.number))
			}
			pace := servicePaced(c, r.in.size >= 0)
			if s.out, err = openOutput(s.dest, r.env, pace(s.dest), nil); err != nil {
				s.fresh = false
				p.outs = outs
				p.discard()
				return nil, withPrefix(s.plan.label()+": ", err)
			}
		}
		if s.plan.sub != nil {
			if s.run, err = openServiceRun(s, r.sys, r); err != nil {
				p.outs = outs
				p.discard()
				return nil, err
			}
			for _, n := range s.run.notes {
				r.logf("SIGHUP: " + n)
			}
		}
	}
	p.outs = outs
	for _, o := range old {
		j := slices.IndexFunc(outs, func(s serviceOut) bool { return s.number == o.number })
		if j < 0 {
			o.ended = "removed"
			p.remove = append(p.remove, o)
			p.changes = append(p.changes, fmt.Sprintf("service %d removed", o.number))
		} else if outs[j].action == addService {
			o.ended = "changed"
			p.remove = append(p.remove, o) // its output ends; the new one starts afresh
		}
	}
	return p, nil
}

// discard closes what a plan opened that will not run: the outputs it opened, removed as
// a failed run's are, and its services' key sources.
func (p *reloadPlan) discard() {
	for _, s := range p.outs {
		if s.action == keepService {
			continue
		}
		if s.run != nil {
			s.run.close()
		}
		if s.fresh && s.out != nil {
			s.out.close(false, 0)
		}
	}
}

// apply makes the difference, between two writes of the split: it runs in the split's writer,
// which it never holds up for a run that ends: each drains what it was given by itself.
func (rl *reloader) apply(p *reloadPlan) {
	r := rl.r
	sp := r.out.splitter
	var ended []serviceOut
	for _, o := range p.remove {
		o.final = sp.Remove(o.number)
		rl.finishLater(o, true)
		ended = append(ended, o)
	}
	rl.mu.Lock()
	old := r.cfg.serviceOuts
	rl.mu.Unlock()
	for i := range p.outs {
		s := &p.outs[i]
		switch s.action {
		case addService:
			w := serviceWriter(s, r.cfg)
			rl.start(s)
			sp.Add(s.number, w)
		case restartService:
			o := old[slices.IndexFunc(old, func(o serviceOut) bool { return o.number == s.number })]
			if o.run != nil {
				// Its input ends here; what it was given goes to the output before anything of
				// the new run does.
				o.run.pw.Close()
				s.out.w = &afterWriter{prev: o.run.done, w: s.out.w}
			}
			w := serviceWriter(s, r.cfg)
			rl.start(s)
			o.final, o.ended = sp.Restart(s.number, w), "changed"
			rl.finishLater(o, false)
			ended = append(ended, o)
		}
		s.action, s.fresh = keepService, false
	}
	rl.mu.Lock()
	r.cfg.serviceOuts, r.out.services = p.outs, p.outs
	rl.ended = append(rl.ended, ended...)
	rl.mu.Unlock()
	rl.applied.Add(1)
	r.logf(fmt.Sprintf("SIGHUP: %s applied: %s", r.cfg.configFile, strings.Join(p.changes, ", ")))
	close(p.done)
}

// finishLater waits, away from the split, for the run of a service that ended to write what
// it was given, then counts its bytes on its output and, when the output ends with it, finishes
// the output as at a normal end (a file put in place). The end of the whole run waits for it.
func (rl *reloader) finishLater(o serviceOut, closeOut bool) {
	rl.ending.Add(1)
	go func() {
		defer rl.ending.Done()
		if o.run != nil {
			o.run.finish()
		}
		o.out.earlier.Add(written(&o))
		if !closeOut {
			return
		}
		if err := o.out.close(true, o.out.earlier.Load()); err != nil {
			rl.r.warnf(fmt.Sprintf("SIGHUP: service %d: %v", o.number, err))
		}
	}()
}

// afterWriter holds the writes of a service's new run until its former run, which writes to
// the same output, is done.
type afterWriter struct {
	prev <-chan struct{}
	w    io.Writer
}

func (a *afterWriter) Write(b []byte) (int, error) {
	<-a.prev
	return a.w.Write(b)
}

func (a *afterWriter) Flush() error {
	<-a.prev
	if f, ok := a.w.(interface{ Flush() error }); ok {
		return f.Flush()
	}
	return nil
}

// start starts the run of a service a reload adds or changes.
func (rl *reloader) start(s *serviceOut) {
	if s.run != nil {
		s.run.start(rl.r.ctx, s.out.w, &rl.r.opts, rl.r.in.size >= 0)
	}
}

// written is the bytes a service's run (or the split, for a service without keys) wrote to its
// output, once that run is over.
func written(s *serviceOut) int64 {
	switch {
	case s.run != nil:
		return s.run.st.BytesOut
	case s.pass != nil:
		return s.pass.written.Load() * 188
	}
	return s.final.Packets * 188
}

// end stops the reloads at the end of the run: a plan the split did not take is discarded.
func (rl *reloader) end() {
	rl.mu.Lock()
	rl.stopped = true
	close(rl.stop)
	rl.mu.Unlock()
	select {
	case p := <-rl.plans:
		p.discard()
		rl.refused.Add(1)
		rl.r.warnf("SIGHUP: " + rl.r.cfg.configFile + " not applied: the input ended first")
	default:
	}
	rl.serial.Lock() // a reload still opening what it needs sees the run stopped and discards it
	rl.serial.Unlock()
	rl.ending.Wait()
}

// services returns the services now, for readers beside the split's writer.
func (rl *reloader) services() []serviceOut {
	rl.mu.Lock()
	defer rl.mu.Unlock()
	return slices.Clone(rl.r.cfg.serviceOuts)
}

// counts are the reloads applied and refused, for the summary, -stats and /metrics.
func (rl *reloader) counts() *report.Reloads {
	return &report.Reloads{Applied: rl.applied.Load(), Refused: rl.refused.Load()}
}

// reloadingSplit is the split of a run whose config may be reloaded: before each write, and
// each flush, it applies the reload waiting, if one does (one channel look per write of many
// packets, never per packet).
type reloadingSplit struct {
	rl *reloader
	sp *split.Splitter
}

func (w *reloadingSplit) Write(b []byte) (int, error) {
	w.pending()
	return w.sp.Write(b)
}

func (w *reloadingSplit) Flush() error {
	w.pending()
	return w.sp.Flush()
}

func (w *reloadingSplit) pending() {
	select {
	case p := <-w.rl.plans:
		w.rl.apply(p)
	default:
	}
}

var _ io.Writer = (*reloadingSplit)(nil)

// reloadSupported says whether SIGHUP reloads the run's config rather than stops it.
func reloadSupported(c *config) bool { return c.multiplex && c.configFile != "" }
