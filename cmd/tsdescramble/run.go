package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/tsdescramble/tsdescramble/internal/livekeys"
	"github.com/tsdescramble/tsdescramble/internal/metrics"
	"github.com/tsdescramble/tsdescramble/internal/report"
	"github.com/tsdescramble/tsdescramble/internal/runfiles"
	"github.com/tsdescramble/tsdescramble/internal/signals"
	"github.com/tsdescramble/tsdescramble/internal/units"
	"github.com/tsdescramble/tsdescramble/keys"
	"github.com/tsdescramble/tsdescramble/live"
	"github.com/tsdescramble/tsdescramble/pipeline"
	"github.com/tsdescramble/tsdescramble/probe"
	"github.com/tsdescramble/tsdescramble/scrambling"
)

func scrambleCommand(env Env) *cli.Command {
	c := &config{mode: pipeline.Scramble}
	flags := scrambleFlags(c)
	return &cli.Command{
		Name:      "scramble",
		Usage:     "scramble the elementary streams of a transport stream",
		UsageText: "tsdescramble scramble [flags]",
		Description: `Scrambles the packets of every elementary stream of every service (or of -pid / -service),
sets their scrambling bits, and leaves PSI and null packets clear. CSA2 payloads under 8 bytes
are marked scrambled and left clear, as DVB-CSA2 defines. Reads -in (or stdin, when it is not
a terminal) and writes -out (or stdout, when it is not a terminal).
Examples:
   tsdescramble scramble -in clear.ts -out scrambled.ts -cw 11223366445566ff
   tsdescramble scramble -i clear.ts -o s.ts -cw-file keys.txt -cp-packets 5000
   tsdescramble scramble -i c.ts -o s.ts -cipher dvb-cissa -cw 00112233445566778899aabbccddeeff
   tsdescramble scramble -i c.ts -o s.ts -cp-duration 10s -ecmg 127.0.0.1:2222 \
       -super-cas-id 4ADC0000 -ecm-pid 0x1FF0 -cw-log s.cwl`,
		Flags:  flags,
		Action: processAction(env, c, flags),
	}
}

// processAction is the action of the descrambler and the scrambler: the flags parsed into c,
// process, under the log format and the profiles they ask for.
func processAction(env Env, c *config, flags []cli.Flag) cli.ActionFunc {
	return func(ctx *cli.Context) error {
		c.readGiven(ctx, flags)
		return withLogFormat(c.logFormat, env, func(env Env) error {
			return profiled(c, func() error { return process(c, env) })
		})
	}
}

// runState is one run of the descrambler, the rescrambler or the scrambler, from its checked
// config to its exit status.
type runState struct {
	cfg      *config
	env      Env
	opts     pipeline.Options
	sys      scrambling.System
	keys     *keySet
	ksrv     *livekeys.Source // keys that come while the stream runs, or nil
	notes    []string         // told once the first bytes come
	warnings []string         // and these, what is wrong with the keys, at level warn
	logf     func(string)
	warnf    func(string) // the lines of logf that say something went wrong (logWarn)

	metrics *metrics.Server
	inFile  *runfiles.Record // the input as it was before anything of it was read (-stats)
	la      *lookahead
	in      *input
	out     *output
	simul   *scsRun
	cleanup []func()
	names   map[string]uint16 // the SDT's service names read at the start, for services given by name
	reload  *reloader         // a multiplex run's config reread on SIGHUP (reload.go), or nil

	ctx   context.Context
	sig   *signals.Signals
	bar   *progress
	every *statsEvery

	st             pipeline.Stats
	runErr, scsErr error
}

// process runs the descrambler, the rescrambler or the scrambler as c asks: validate, open,
// configure, run and judge.
func process(c *config, env Env) error {
	if err := validate(c, env); err != nil {
		return err
	}
	r := &runState{cfg: c, env: env}
	defer func() {
		for i := len(r.cleanup) - 1; i >= 0; i-- {
			r.cleanup[i]()
		}
	}()
	if err := r.open(); err != nil {
		return err
	}
	r.configure()
	r.run()
	return r.judge()
}

// open starts what the run needs before its first packet: the metrics server, the system and
// the keys (which may read the start of the input), the input and the output.
func (r *runState) open() (err error) {
	c := r.cfg
	r.opts = pipeline.Options{Mode: c.mode, Workers: c.workers, Batch: c.batch, Lanes: c.lanes, PIDs: c.pids}
	if c.isSet("service") {
		r.opts.Service = c.service
	}
	var handlers map[string]http.Handler
	switch {
	case c.metrics != "" && metricsOnRelay(c):
		// On the HTTP output's listener, which opens after the input.
		r.metrics = metrics.New(r.snapshot)
		handlers = r.metrics.Handlers()
		r.cleanup = append(r.cleanup, r.metrics.Close)
	case c.metrics != "":
		// Served from before the input is opened: a live input may take a while to start.
		logf := func(msg string) { logError(r.env.Stderr, "-metrics: "+msg) }
		if r.metrics, err = metrics.Serve(c.metrics, r.snapshot, logf); err != nil {
			return failErr("-metrics: %v", err)
		}
		r.cleanup = append(r.cleanup, r.metrics.Close)
	}
	if c.stats != "" {
		r.inFile = runfiles.RecordOf(c.in, true)
	}
	if err := r.openKeys(); err != nil {
		return err
	}
	r.logf = func(msg string) {
		if !c.quiet {
			fmt.Fprintln(r.env.Stderr, "tsdescramble: "+msg)
		}
	}
	r.warnf = func(msg string) {
		if !c.quiet {
			logWarn(r.env.Stderr, msg)
		}
	}
	r.opts.Log, r.opts.Warn = r.logf, r.warnf
	if c.verbose {
		r.opts.KeyLog = r.logf
	}
	if r.in, err = r.la.open(c, r.env); err != nil {
		return err
	}
	r.cleanup = append(r.cleanup, r.in.Close)
	if c.scsWanted() {
		if r.simul, err = startSCS(c, r.in, &r.opts, r.sys, r.keys, r.logf, r.warnf); err != nil {
			return err
		}
		r.in.source().SetStage(r.simul.stage)
	}
	pace := c.pace
	if !c.isSet("pace") {
		// A file sent to a network output is paced by its PCR.
		pace = r.in.size >= 0 && isNetwork(c.out)
	}
	if c.multiplex {
		if err := r.openServices(); err != nil {
			return err
		}
	}
	if len(c.serviceOuts) > 0 {
		r.out, err = openServiceOutputs(c.serviceOuts, c, r.env, servicePaced(c, r.in.size >= 0), handlers)
	} else {
		r.out, err = openOutput(c.out, r.env, pace, handlers)
	}
	if err != nil {
		return err
	}
	if reloadSupported(c) {
		r.reload = newReloader(r)
		r.out.w = &reloadingSplit{rl: r.reload, sp: r.out.splitter}
		r.out.servicesMu = &r.reload.mu
	}
	r.cleanup = append(r.cleanup, func() {
		if r.out.net != nil {
			r.out.net.close() // a run that ended early; close after close is harmless
		}
	})
	return nil
}

// openKeys chooses the system (without -cipher, a descrambling run opens its input for it:
// system_detect.go) and reads the keys, from the key flags or from a key server.
func (r *runState) openKeys() (err error) {
	c := r.cfg
	if r.sys, r.la, err = chooseSystem(c, r.env, &r.notes); err != nil {
		return err
	}
	r.cleanup = append(r.cleanup, r.la.close)
	var ksNotes []string
	var ksDone func()
	if r.ksrv, ksNotes, ksDone, err = newKeyServer(c); err != nil {
		return err
	}
	if ksDone != nil {
		r.cleanup = append(r.cleanup, ksDone)
	}
	r.notes = append(r.notes, ksNotes...)
	r.keys = &keySet{list: [][]byte{}} // random CWs for a SimulCrypt run without key flags
	switch {
	case c.mode == pipeline.Passthrough:
		// No key: nothing is descrambled.
	case r.ksrv != nil:
		r.keys = &keySet{sched: keys.NewList(nil)}
	case c.mode == pipeline.Descramble && c.ecmXor != "":
		// From a pipe or a network input, the ECMs feed a key source as a key server's answers do.
		r.keys, r.ksrv, err = ecmKeys(c, r.sys)
	case c.mode != pipeline.Scramble || !c.scsWanted() || c.anyKeyFlag():
		r.keys, err = readKeys(&c.keys, "", r.sys)
	}
	if err != nil {
		return err
	}
	r.notes = append(r.notes, r.keys.notes...)
	r.warnings = append(r.warnings, r.keys.warnings...)
	if n := report.LimitsNote(c.workers, c.batch); n != "" {
		r.notes = append(r.notes, n)
	}
	switch c.mode {
	case pipeline.Descramble:
		r.opts.Keys, r.opts.System = r.keys.sched, r.sys
		if r.ksrv != nil {
			r.opts.LiveKeys = r.ksrv.LiveKeys()
		}
		if c.outSys != nil {
			oks, err := readKeys(&c.rekeys, "rescramble-", c.outSys)
			if err != nil {
				return err
			}
			r.opts.Mode = pipeline.Rescramble
			r.opts.Out = &pipeline.Output{System: c.outSys, CWs: oks.cws(), PeriodPackets: c.rescrambleCPPackets}
			r.notes = append(r.notes, oks.notes...)
			r.warnings = append(r.warnings, oks.warnings...)
		}
	case pipeline.Scramble:
		r.opts.Out = &pipeline.Output{System: r.sys, CWs: r.keys.cws(), PeriodPackets: c.cpPackets}
		r.opts.ScramblingMode = signalMode(r.sys)
	}
	return nil
}

// configure sets what the run does as it goes: its latency, its signals, its reports.
func (r *runState) configure() {
	c, in := r.cfg, r.in
	// A regular file is read in full units of work, as fast as it goes; a live input or a pipe
	// with the latency bound.
	r.opts.Latency, r.opts.MaxPackets = c.latency, c.packets
	if !c.isSet("latency") && in.size >= 0 {
		r.opts.Latency = 0
	}
	// A network input, or a latency the user asked for, decides a crypto period on time when the
	// stream has not decided it by the bound; a pipe at the default bound keeps the file's bytes.
	r.opts.DecideOnTime = in.network() || c.isSet("latency")
	if c.timeout > 0 {
		in.setIdleTimeout(c.timeout)
	}
	if c.endOnIdle > 0 {
		in.setIdleTimeout(c.endOnIdle) // read as the end of the input (openRunInput)
	}
	if r.metrics != nil && c.multiplex {
		r.metrics.SetExtra(func(b *strings.Builder) {
			metrics.WriteServices(b, r.serviceCounts())
			if r.reload != nil {
				metrics.WriteReloads(b, r.reload.applied.Load(), r.reload.refused.Load())
			}
		})
	}
	if r.metrics != nil {
		var w *live.Writer
		if r.out.net != nil {
			w = r.out.net.w
		}
		r.metrics.Watch(in.live, w)
		if ks, simul, obs := r.ksrv, r.simul, r.observer(); ks != nil || simul != nil && simul.ecmg != "" {
			r.metrics.SetExtra(func(b *strings.Builder) {
				if ks != nil {
					if proto, st, ok := ks.ServerStats(); ok {
						metrics.WriteKeyServer(b, proto, st)
					}
					if proto, server, state, ok := ks.ServerState(); ok {
						metrics.WriteKeyServerState(b, proto, server, state)
					}
					metrics.WriteCWsApplied(b, obs.CWsApplied())
					if waited, gaveUp, ok := obs.KeyWaits(); ok {
						metrics.WriteKeyWaits(b, waited, gaveUp)
					}
				}
				if simul != nil && simul.ecmg != "" {
					st := simul.stage.Running()
					metrics.WriteECMG(b, metrics.ECMG{Connected: st.Connected, Replaced: st.Replaced,
						Inserted: st.Inserted, Refused: st.ECMRefused})
				}
			})
		}
	}
	// A run that must stop, by a signal or because the output failed, must not wait for an
	// idle input pipe to send more.
	r.out.onFail = in.interrupt
	r.ctx, r.sig = signals.Interruptible(in.interrupt, func(s os.Signal, msg string) {
		// The run ends now, whatever is in flight: the output is put aside as it stands.
		if partial := r.out.abort(); partial != "" {
			msg += "; the packets written so far are in " + partial
		}
		logError(r.env.Stderr, msg)
		os.Exit(signals.Status(s))
	}, r.hangup())
	r.cleanup = append(r.cleanup, r.sig.Stop)
	r.bar = newProgress(r.env, in.size, c.quiet, c.mode)
	if r.bar.active() {
		r.bar.follow(r.observer())
	}
	if d := c.statsInterval; d > 0 {
		r.every = newStatsEvery(c.stats, d, r.observer(), in, r.out, r.env.Stderr)
	}
	// -duration ends the input as its end would.
	if c.duration > 0 {
		t := time.AfterFunc(c.duration, in.source().End)
		r.cleanup = append(r.cleanup, func() { t.Stop() })
	}
}

// hangup returns what SIGHUP does, or nil when it stops the run as other signals do. A run
// over a whole multiplex given by -config rereads the file and applies what changed (reload.go),
// as daemons that read a config do. A live
// run rereads its key file on SIGHUP (key lists are edited while a feed runs), and so does
// any run that follows a growing log (-follow: it reads on from where it was, and a log edited
// in place is seen only by reading it again); other runs stop, as when their terminal closes.
// A key server's keys come in as they change already.
func (r *runState) hangup() func() {
	c := r.cfg
	if r.reload != nil {
		return r.reload.hangup
	}
	if r.ksrv != nil && r.ksrv.Follows() {
		return func() { r.ksrv.Reread(r.logf) }
	}
	if !r.in.network() || r.opts.Mode == pipeline.Scramble || c.keys.file == "" || r.opts.LiveKeys != nil {
		return nil
	}
	rekey := make(chan *keys.Schedule, 1)
	r.opts.Rekey = rekey
	return func() {
		ks, err := readKeys(&c.keys, "", r.sys)
		if err != nil {
			r.warnf("SIGHUP: the keys were not reread, the old ones stay: " + err.Error())
			return
		}
		for _, n := range ks.notes {
			r.logf("SIGHUP: " + n)
		}
		for _, w := range ks.warnings {
			r.warnf("SIGHUP: " + w)
		}
		select {
		case <-rekey: // not applied yet: the newer list replaces it
		default:
		}
		rekey <- ks.sched
	}
}

// observer returns the Observer of the run's counts, which the progress bar, -stats-interval and
// -metrics read while it goes; the first to need it sets it.
func (r *runState) observer() *pipeline.Observer {
	if r.opts.Observer == nil {
		r.opts.Observer = new(pipeline.Observer)
	}
	return r.opts.Observer
}

// run runs the pipeline to the end of the input, or to a stop.
func (r *runState) run() {
	c, in := r.cfg, r.in
	if r.ksrv != nil {
		// -ecm-xor answers from the stream itself, at once: a pipe runs ahead of real time as a
		// file does, and its reading may wait for the answers.
		r.ksrv.Start(r.ctx, in.size >= 0 || r.ksrv.AnswersAtOnce() && !in.network(), r.warnf)
	}
	// The notes (the key file read, the system the PMT names) come with the first bytes of the
	// input: before a usage error, an input that cannot be opened or an empty one they would
	// only bury the message that matters.
	printNotes := func() {
		in.first.Store(time.Now().UnixNano())
		for _, n := range r.notes {
			r.logf(n)
		}
		for _, w := range r.warnings {
			r.warnf(w)
		}
		if c.verbose && !c.quiet && r.ksrv == nil {
			describeKeys(r.env.Stderr, r.keys.cws(), c.showKeys)
		}
	}
	src := in.source()
	src.SetOnFirst(printNotes)
	for _, s := range c.serviceOuts {
		if s.run != nil {
			s.run.start(r.ctx, s.out.w, &r.opts, in.size >= 0)
		}
	}
	r.st, r.runErr = pipeline.Run(r.ctx, src, r.out.w, r.opts)
	if r.reload != nil {
		r.reload.end()
	}
	for _, s := range c.serviceOuts {
		if s.run != nil {
			s.run.finish()
		}
	}
	if r.every != nil {
		r.every.end()
	}
	if r.ksrv != nil {
		r.ksrv.Stop(&r.st)
	}
	r.sig.Finished()
	if r.simul != nil {
		r.scsErr = r.simul.finish(r.logf, r.warnf, c.quiet)
	}
	r.bar.finish()
	if r.runErr == nil && r.st.BytesIn == 0 {
		// Not a byte: a wrong path or a producer that failed, as probe says too.
		r.runErr = probe.ErrEmpty
	}
}

// judge closes the output, says how the run went and returns its exit status; the statistics
// say it too, so that a scheduler that retries runs can tell a finished one (batch.go).
func (r *runState) judge() error {
	c, st := r.cfg, &r.st
	junk := report.NotTransportStream(st)
	closeErr := r.out.close(r.runErr == nil && junk == "", st.BytesOut)
	// The output file was renamed into place: it is this run's (its statistics say so).
	placed := r.out.temp != nil && r.runErr == nil && junk == "" && closeErr == nil
	ls := collectLive(r.in, r.out, st, true)
	verdict := report.JudgeKeys(st)
	if r.ksrv != nil {
		verdict = r.ksrv.Judge(st)
	}
	if !c.quiet && (r.runErr == nil || st.Packets > 0) && c.multiplex {
		fmt.Fprintf(r.env.Stderr, "tsdescramble: %d packets in (%s-byte framing), %s in %.2f s (%.1f MB/s), split into %s:\n",
			st.Packets, st.Framing, units.Bytes(st.BytesIn, 1), st.Elapsed.Seconds(), st.MBPerSecond(), report.Plural(len(c.serviceOuts), "service"))
		report.PrintLive(r.env.Stderr, ls)
	} else if !c.quiet && (r.runErr == nil || st.Packets > 0) {
		report.Summary(r.env.Stderr, st, r.opts.Mode, c.verbose, verdict)
		report.PrintLive(r.env.Stderr, ls)
		report.KeyServerSummary(r.env.Stderr, st, c.verbose)
	}
	var missing error
	var services []report.Service
	if c.multiplex {
		var lines []string
		services, lines, missing = r.judgeServices()
		if !c.quiet && (r.runErr == nil || st.Packets > 0) {
			for _, l := range lines {
				fmt.Fprintln(r.env.Stderr, l)
			}
			if rl := r.reload; rl != nil && rl.applied.Load()+rl.refused.Load() > 0 {
				fmt.Fprintf(r.env.Stderr, "  %s reread on SIGHUP: %s applied, %s refused\n", redacted(c.configFile),
					report.Plural(int(rl.applied.Load()), "reload"), report.Plural(int(rl.refused.Load()), "reload"))
			}
		}
	} else if r.out.splitter != nil {
		var lines []string
		lines, missing = r.out.serviceLines()
		if !c.quiet && (r.runErr == nil || st.Packets > 0) {
			for _, l := range lines {
				fmt.Fprintln(r.env.Stderr, l)
			}
		}
	}
	if w := report.MostlyNotTransportStream(st); w != "" && junk == "" && r.runErr == nil {
		r.warnf(w)
	}
	status := r.status(closeErr, junk, verdict)
	if status == nil && missing != nil {
		status = missing
	}
	if c.stats != "" {
		files := &runfiles.Records{In: r.inFile}
		if placed {
			files.Out = runfiles.RecordOf(c.out, false)
		}
		var reloads *report.Reloads
		if r.reload != nil {
			reloads = r.reload.counts()
		}
		if err := report.WriteServiceStats(c.stats, st, ls, errorCode(status), files, services, reloads); err != nil && r.runErr == nil {
			return failErr("cannot write the statistics: %v", runfiles.UnwrapPath(err))
		}
	}
	return status
}

// status is the error the run ends with, nil for success.
func (r *runState) status(closeErr error, junk string, verdict report.Verdict) error {
	st, out := &r.st, r.out
	saved := func(what string) string {
		if out.partial() == "" {
			return ""
		}
		return what + out.partial()
	}
	if r.scsErr != nil && r.runErr == nil {
		return r.scsErr
	}
	switch s := r.sig.Caught(); {
	case r.runErr != nil && s != nil:
		// Stopped by a signal: every packet read before it was written out.
		return &exitError{code: signals.Status(s), msg: fmt.Sprintf("stopped by %s after writing %s%s", signals.Name(s), report.Plural(int(st.PacketsOut), "packet"), saved(" to "))}
	case r.runErr != nil:
		return runError(r.runErr, r.cfg.in, out)
	case closeErr != nil:
		return failErr("cannot write %s: %v%s", redacted(r.cfg.out), closeErr, saved("; the packets processed are in "))
	case junk != "":
		return failErr("%s%s", junk, saved("; the packets found are in "))
	case report.UnseenSelection(&r.opts, st) != "":
		return failErr("%s; the output was written anyway", report.UnseenSelection(&r.opts, st))
	case r.opts.Mode == pipeline.Scramble, r.opts.Mode == pipeline.Passthrough:
	case verdict.NoFit && verdict.Damaged:
		return &exitError{code: exitNoFit, msg: verdict.Line + "; the output was written anyway"}
	case verdict.NoFit:
		// keyAdvice (hints.go) names the usual mistake that would make the keys fit, if one does.
		return &exitError{code: exitNoFit, msg: verdict.Line + keyAdvice(r.cfg, st, r.sys, r.keys) + "; the output was written anyway"}
	case st.PESGood == 0 && st.PESBad > 0:
		return &exitError{code: exitNoFit, msg: fmt.Sprintf(
			"the keys do not fit this stream: none of the %d scrambled PES starts descrambled to a valid PES header%s; the output was written anyway",
			st.PESBad, keyAdvice(r.cfg, st, r.sys, r.keys))}
	}
	return nil
}
