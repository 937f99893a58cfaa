package main

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/tsdescramble/tsdescramble/keys"
	"github.com/tsdescramble/tsdescramble/live"
	"github.com/tsdescramble/tsdescramble/pipeline"
	"github.com/tsdescramble/tsdescramble/probe"
	"github.com/tsdescramble/tsdescramble/scrambling"
)

// ioFlags, selectionFlags and tuningFlags are shared by the descrambler and the scrambler.
func ioFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "in", Aliases: []string{"i"}, Value: "-", TakesFile: true, Category: catIO, Usage: "read the transport stream from `FILE` (- for stdin; absent: stdin, unless it is a terminal), or receive it on udp://@:PORT, udp://[SOURCE@]GROUP:PORT, rtp://..."},
		&cli.StringFlag{Name: "out", Aliases: []string{"o"}, Value: "-", TakesFile: true, Category: catIO, Usage: "write the stream to `FILE` (- for stdout; absent: stdout, unless it is a terminal), or send it to udp://HOST:PORT, rtp://HOST:PORT (?ttl=N&pkts=N&iface=NAME...)"},
	}
}

func selectionFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "pid", Category: catSelection, Usage: "only these PIDs: a comma-separated `LIST`, decimal or 0x hex, ranges a-b allowed"},
		&cli.IntFlag{Name: "service", Category: catSelection, Usage: "only the PIDs of the service with this program `NUMBER` (from the PAT and PMT)"},
	}
}

func tuningFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "group", Value: "auto", Category: catTuning, Usage: "csa2 bitslice lanes per batch: `N` = " + groupChoices() + ", or auto (the fastest on this CPU)"},
		&cli.IntFlag{Name: "workers", Value: runtime.GOMAXPROCS(0), DefaultText: "number of CPUs", Category: catTuning, Usage: "`N` parallel cipher workers"},
		&cli.IntFlag{Name: "batch", Value: pipeline.DefaultBatch, Category: catTuning, Usage: fmt.Sprintf("`N` packets per unit of work handed to a worker (with -workers, cut down, with a note, where the work in flight would take more than %d MiB)", pipeline.MaxMemory>>20)},
		&cli.StringFlag{Name: "stats", TakesFile: true, Category: catReporting, Usage: "write the run's statistics as JSON to `FILE` (per PID: packets, parities, descrambled, left clear and why, PES-start checks)"},
		&cli.DurationFlag{Name: "stats-interval", Category: catReporting, Usage: "with -stats, rewrite the file every `DURATION` while the run goes on (replaced at once: a monitor never reads half of one)"},
		&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Category: catReporting, Usage: "print nothing but errors"},
		&cli.BoolFlag{Name: "verbose", Aliases: []string{"v"}, Category: catReporting, Usage: "print details of the run"},
		&cli.StringFlag{Name: "metrics", Category: catReporting, Usage: "serve Prometheus metrics of the run on `ADDR` ([HOST]:PORT): /metrics, and /healthz (200 while packets come and the keys fit); at most 256 connections, an idle one closed after 30 s"},
		&cli.StringFlag{Name: "log-format", Value: "text", Category: catReporting, Usage: "messages on stderr as `FORMAT`: text, or json (one object a line)"},
		&cli.BoolFlag{Name: "show-keys", Category: catReporting, Usage: "with -v, print the control words (they are secrets: off by default)"},
	}
}

func descrambleFlags() []cli.Flag {
	f := append(ioFlags(), liveFlags()...)
	f = append(f, keyFlags()...)
	f = append(f, keyServerFlags()...)
	f = append(f, selectionFlags()...)
	f = append(f,
		&cli.StringFlag{Name: "ecm-xor", Category: catKeys, Usage: "read the CWs from the ECMs of a test CA system (VideoLAN's example ECMG): its 16 `HEX` digit XOR key"},
		&cli.StringFlag{Name: "rescramble", Category: catScrambling, Usage: "scramble again, in the same pass, with this `SYSTEM` (csa2, dvb-cissa, atis-idsa, dfc, serpent)"},
		&cli.IntFlag{Name: "rescramble-cp-packets", Category: catScrambling, Usage: "rescrambling crypto period: `N` packets, the parity alternating (0: one period)"},
	)
	f = append(f, keySourceFlags("rescramble-", catScrambling, " (of the rescrambled output)")...)
	f = append(f, tuningFlags()...)
	return append(f, profileFlags()...)
}

func scrambleCommand(env Env) *cli.Command {
	f := append(ioFlags(), liveFlags()...)
	f = append(f, keyFlags()...)
	f = append(f, selectionFlags()...)
	f = append(f, &cli.IntFlag{Name: "cp-packets", Category: catScrambling, Usage: "crypto period of `N` packets of the scrambled PIDs: the parity alternates and a CW list advances at each (0: one even period)"})
	f = append(f, simulcryptFlags()...)
	f = append(f, tuningFlags()...)
	f = append(f, profileFlags()...)
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
		Flags:  f,
		Action: profiledProcess(env, pipeline.Scramble),
	}
}

// process runs the descrambler, the rescrambler or the scrambler as the flags ask.
func process(c *cli.Context, env Env, mode pipeline.Mode) error {
	if err := checkCommandLine(c, env); err != nil {
		return err
	}
	if err := checkPaths(c.String); err != nil {
		return err
	}
	if w := c.Int("workers"); w < 1 || w > 1024 {
		return usageErr("-workers: want a number from 1 to 1024")
	}
	if b := c.Int("batch"); b < 1 || b > pipeline.MaxBatch {
		return usageErr("-batch: want a number from 1 to %d", pipeline.MaxBatch)
	}
	lanes, err := parseGroup(c.String("group"))
	if err != nil {
		return err
	}
	lo, err := readLiveFlags(c)
	if err != nil {
		return err
	}
	opts := pipeline.Options{
		Mode:    mode,
		Workers: c.Int("workers"),
		Batch:   c.Int("batch"),
		Lanes:   lanes,
	}
	// The flags that need nothing of the input are checked before it is opened: a usage error
	// does not wait for a live input to show its PMTs.
	// -pid "" is refused rather than read as no -pid: a list that came out empty (a script's
	// unset variable) must not turn into descrambling every PID.
	if c.IsSet("pid") {
		if opts.PIDs, err = parsePIDs(c.String("pid")); err != nil {
			return err
		}
	}
	if c.IsSet("service") {
		opts.Service = c.Int("service")
		if opts.Service < 1 || opts.Service > 0xFFFF {
			return usageErr("-service: want a program number from 1 to 65535 (tsdescramble probe lists them)")
		}
	}
	if c.Int("cp-packets") < 0 {
		return usageErr("-cp-packets: want 0 or more packets")
	}
	if mode == pipeline.Scramble {
		if err := checkSCSFlags(c); err != nil {
			return err
		}
	}
	if c.Int("rescramble-cp-packets") < 0 {
		return usageErr("-rescramble-cp-packets: want 0 or more packets")
	}
	var osys scrambling.System
	if name := c.String("rescramble"); name != "" {
		if osys, err = lookupSystem("rescramble", name, lanes); err != nil {
			return err
		}
	} else {
		for _, name := range rescrambleKeyFlags() {
			if c.IsSet(name) {
				return usageErr("-%s needs -rescramble SYSTEM", name)
			}
		}
	}
	if c.IsSet("metrics") {
		if err := checkMetricsAddr(c.String("metrics")); err != nil {
			return err
		}
	}
	var metrics *metricsServer
	if addr := c.String("metrics"); addr != "" {
		// Served from before the input is opened: a live input may take a while to start.
		opts.Counters = new(pipeline.Counters)
		if metrics, err = serveMetrics(addr, opts.Counters, env.Stderr); err != nil {
			return err
		}
		defer metrics.close()
	}
	// The input as it is before anything of it is read, for the statistics: a change while
	// the run reads it then shows on a later look (a batch's done).
	var inFile *fileRecord
	if c.String("stats") != "" {
		inFile = regularFile(c.String("in"), true)
	}
	// Without -cipher, a descrambling run takes the system its input's PMT signals, so it opens
	// the input now (system_detect.go).
	var sysNotes []string
	sys, la, err := chooseSystem(c, env, mode, lanes, &sysNotes)
	if err != nil {
		return err
	}
	defer la.close()
	// Keys from a key server (keyserver.go) take the place of the key flags.
	ksrv, err := keyServerFromFlags(c, env, mode)
	if err != nil {
		return err
	}
	if ksrv != nil && c.String("ecm-xor") != "" {
		return usageErr("-ecm-xor and -key-server are two sources of the same CWs: give one")
	}
	ks := &keySet{list: [][]byte{}} // random CWs for a SimulCrypt run without key flags
	switch {
	case ksrv != nil:
		ks = &keySet{sched: keys.NewList(nil)}
	case mode == pipeline.Descramble && c.String("ecm-xor") != "":
		// From a pipe or a network input, the ECMs feed a key source as a key server's answers do.
		if ks, ksrv, err = ecmKeys(c, sys); err != nil {
			return err
		}
	case mode != pipeline.Scramble || !scsWanted(c) || anyKeyFlag(c):
		if ks, err = readKeys(c, "", sys); err != nil {
			return err
		}
	}
	notes := append(sysNotes, ks.notes...)
	if n := limitsNote(opts.Workers, opts.Batch); n != "" {
		notes = append(notes, n)
	}
	switch mode {
	case pipeline.Descramble:
		opts.Keys, opts.System = ks.sched, sys
		if ksrv != nil {
			opts.LiveKeys = ksrv.lk
		}
		if osys != nil {
			oks, err := readKeys(c, "rescramble-", osys)
			if err != nil {
				return err
			}
			opts.Mode = pipeline.Rescramble
			opts.Out = &pipeline.Output{System: osys, CWs: oks.cws(), PeriodPackets: c.Int("rescramble-cp-packets")}
			notes = append(notes, oks.notes...)
		}
	case pipeline.Scramble:
		opts.Out = &pipeline.Output{System: sys, CWs: ks.cws(), PeriodPackets: c.Int("cp-packets")}
		opts.ScramblingMode = signalMode(sys)
	}

	quiet, verbose := c.Bool("quiet"), c.Bool("verbose")
	logf := func(msg string) {
		if !quiet {
			fmt.Fprintln(env.Stderr, "tsdescramble: "+msg)
		}
	}
	opts.Log = logf
	if verbose {
		opts.KeyLog = logf
	}

	inPath, outPath := c.String("in"), c.String("out")
	in, err := la.open(inPath, env)
	if err != nil {
		return err
	}
	defer in.Close()
	// A regular file is read in full units of work, as fast as it goes; a live input or a pipe
	// with the latency bound. A file sent to a network output is paced by its PCR.
	opts.Latency, opts.MaxPackets = lo.latency, lo.packets
	if !lo.latencySet && in.size >= 0 {
		opts.Latency = 0
	}
	// A network input, or a latency the user asked for, decides a crypto period on time when the
	// stream has not decided it by the bound; a pipe at the default bound keeps the file's bytes.
	opts.DecideOnTime = in.live != nil || lo.latencySet
	pace := lo.pace
	if !lo.paceSet {
		pace = in.size >= 0 && live.IsAddress(outPath)
	}
	if lo.timeout > 0 {
		if in.live == nil {
			return usageErr("-timeout watches a network input: give -in udp://@:PORT or rtp://@:PORT, or leave -timeout out")
		}
		in.live.SetIdleTimeout(lo.timeout)
	}
	var input io.Reader = in
	var simul *scsRun
	if mode == pipeline.Scramble && scsWanted(c) {
		if simul, err = startSCS(c, in, &opts, sys, ks, logf); err != nil {
			return err
		}
		input = simul.stage
	}
	out, err := openOutput(outPath, env, pace)
	if err != nil {
		return err
	}
	defer func() {
		if out.net != nil {
			out.net.w.Close() // a run that ended early; close after close is harmless
		}
	}()
	if metrics != nil {
		var w *live.Writer
		if out.net != nil {
			w = out.net.w
		}
		metrics.watch(in.live, w)
	}
	// A run that must stop, by a signal or because the output failed, must not wait for an
	// idle input pipe to send more.
	out.onFail = in.interrupt

	// The notes (the key file read, the system the PMT names) come with the first bytes of the
	// input: before a usage error, an input that cannot be opened or an empty one they would
	// only bury the message that matters.
	printNotes := func() {
		in.first.Store(time.Now().UnixNano())
		for _, n := range notes {
			logf(n)
		}
		if verbose && !quiet && ksrv == nil {
			describeKeys(env.Stderr, ks.cws(), c.Bool("show-keys"))
		}
	}

	// A live run rereads its key file on SIGHUP (key lists are edited while a feed runs), and
	// so does any run that follows a growing log (-follow: it reads on from where it was, and
	// a log edited in place is seen only by reading it again); other runs stop, as when their
	// terminal closes. A key server's keys come in as they change already.
	var hangup func()
	if ksrv != nil && ksrv.fl != nil {
		hangup = func() { ksrv.reread(logf) }
	} else if in.live != nil && opts.Mode != pipeline.Scramble && c.String("cw-file") != "" && opts.LiveKeys == nil {
		rekey := make(chan *keys.Schedule, 1)
		opts.Rekey = rekey
		hangup = func() {
			ks, err := readKeys(c, "", sys)
			if err != nil {
				logf("SIGHUP: the keys were not reread, the old ones stay: " + err.Error())
				return
			}
			for _, n := range ks.notes {
				logf("SIGHUP: " + n)
			}
			select {
			case <-rekey: // not applied yet: the newer list replaces it
			default:
			}
			rekey <- ks.sched
		}
	}
	ctx, sig := interruptible(in.interrupt, func(s os.Signal, msg string) {
		// The run ends now, whatever is in flight: the output is put aside as it stands.
		if partial := out.abort(); partial != "" {
			msg += "; the packets written so far are in " + partial
		}
		fmt.Fprintln(env.Stderr, "tsdescramble: "+msg)
		os.Exit(signalStatus(s))
	}, hangup)
	defer sig.stop()
	bar := newProgress(env, in.size, quiet, mode)
	opts.Progress = bar.set
	var every *statsEvery
	if d := c.Duration("stats-interval"); d > 0 {
		every = newStatsEvery(c.String("stats"), in, out, env.Stderr)
		opts.Report, opts.ReportEvery = every.report, d
	}
	// -duration ends the input as its end would.
	end := &ender{in: in, r: input}
	if lo.duration > 0 {
		t := time.AfterFunc(lo.duration, end.end)
		defer t.Stop()
	}
	if ksrv != nil {
		// -ecm-xor answers from the stream itself, at once: a pipe runs ahead of real time as a
		// file does, and its reading may wait for the answers.
		ksrv.start(ctx, in.size >= 0 || ksrv.url != nil && ksrv.url.scheme == "ecm-xor" && in.live == nil, logf)
	}
	st, runErr := pipeline.Run(ctx, &onFirstBytes{r: end, f: printNotes}, out.w, opts)
	if every != nil {
		every.stop()
	}
	if ksrv != nil {
		ksrv.stop(&st)
	}
	sig.finished()
	var scsErr error
	if simul != nil {
		scsErr = simul.finish(logf, quiet)
	}
	bar.finish()
	if runErr == nil && st.BytesIn == 0 {
		// Not a byte: a wrong path or a producer that failed, as probe says too.
		runErr = probe.ErrEmpty
	}
	junk := notTransportStream(&st)
	closeErr := out.close(runErr == nil && junk == "", st.BytesOut)
	// The output file was renamed into place: it is this run's (its statistics say so).
	placed := out.tmp != "" && runErr == nil && junk == "" && closeErr == nil

	ls := collectLive(in, out, &st, true)
	verdict := judgeKeys(&st)
	if ksrv != nil {
		verdict = judgeKeyServer(&st, ksrv)
	}
	if !quiet && (runErr == nil || st.Packets > 0) {
		printSummary(env.Stderr, &st, opts.Mode, verbose, verdict)
		printLive(env.Stderr, ls)
		printKeyServerSummary(env.Stderr, &st, verbose)
	}
	if w := mostlyNotTransportStream(&st); w != "" && junk == "" && runErr == nil {
		logf(w)
	}
	// The statistics say how the run ended, so that a scheduler that retries runs can tell a
	// finished one (batch.go).
	status := func() error {
		if scsErr != nil && runErr == nil {
			return scsErr
		}
		switch {
		case runErr != nil && sig.caught() != nil:
			// Stopped by a signal: every packet read before it was written out.
			s := sig.caught()
			saved := ""
			if out.partial != "" {
				saved = " to " + out.partial
			}
			return &exitError{code: signalStatus(s), msg: fmt.Sprintf("stopped by %s after writing %d packets%s", signalName(s), st.PacketsOut, saved)}
		case runErr != nil:
			return runError(runErr, inPath, outPath, out)
		case closeErr != nil:
			saved := ""
			if out.partial != "" {
				saved = "; the packets processed are in " + out.partial
			}
			return failErr("cannot write %s: %v%s", outPath, closeErr, saved)
		case junk != "":
			saved := ""
			if out.partial != "" {
				saved = "; the packets found are in " + out.partial
			}
			return failErr("%s%s", junk, saved)
		case unseenSelection(&opts, &st) != "":
			return failErr("%s; the output was written anyway", unseenSelection(&opts, &st))
		case opts.Mode == pipeline.Scramble:
		case verdict.code != exitOK:
			// keyAdvice (hints.go) names the usual mistake that would make the keys fit, if one does.
			return &exitError{code: verdict.code, msg: verdict.line + keyAdvice(c, &st, sys, ks) + "; the output was written anyway"}
		case st.PESGood == 0 && st.PESBad > 0:
			return &exitError{code: exitNoFit, msg: fmt.Sprintf(
				"the keys do not fit this stream: none of the %d scrambled PES starts descrambled to a valid PES header%s; the output was written anyway",
				st.PESBad, keyAdvice(c, &st, sys, ks))}
		}
		return nil
	}()
	if path := c.String("stats"); path != "" {
		files := &runFiles{In: inFile}
		if placed {
			files.Out = regularFile(outPath, false)
		}
		if err := writeStats(path, &st, ls, errorCode(status), files); err != nil && runErr == nil {
			return failErr("cannot write the statistics: %v", unwrapPath(err))
		}
	}
	return status
}
