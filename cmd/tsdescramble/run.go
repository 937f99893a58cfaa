package main

import (
	"fmt"
	"runtime"
	"syscall"

	"github.com/urfave/cli/v2"

	"github.com/tsdescramble/tsdescramble/pipeline"
	"github.com/tsdescramble/tsdescramble/psi"
)

// ioFlags, selectionFlags and tuningFlags are shared by the descrambler and the scrambler.
func ioFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "in", Aliases: []string{"i"}, Value: "-", TakesFile: true, Usage: "input transport stream `FILE` (- for stdin)"},
		&cli.StringFlag{Name: "out", Aliases: []string{"o"}, Value: "-", TakesFile: true, Usage: "output `FILE` (- for stdout)"},
	}
}

func selectionFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "pid", Usage: "only these PIDs: a comma-separated `LIST`, decimal or 0x hex, ranges a-b allowed"},
		&cli.IntFlag{Name: "service", Usage: "only the PIDs of the service with this program `NUMBER` (from the PAT and PMT)"},
	}
}

func tuningFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "group", Value: "auto", Usage: "csa2 bitslice lanes per batch: " + groupChoices() + " or auto (the fastest on this CPU)"},
		&cli.IntFlag{Name: "workers", Value: runtime.GOMAXPROCS(0), DefaultText: "number of CPUs", Usage: "parallel cipher workers"},
		&cli.IntFlag{Name: "batch", Value: pipeline.DefaultBatch, Usage: "packets per unit of work handed to a worker"},
		&cli.StringFlag{Name: "stats", TakesFile: true, Usage: "write the run's statistics as JSON to `FILE` (per PID: packets, parities, descrambled, left clear and why, PES-start checks)"},
		&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "print nothing but errors"},
		&cli.BoolFlag{Name: "verbose", Aliases: []string{"v"}, Usage: "print details of the run"},
		&cli.BoolFlag{Name: "show-keys", Usage: "with -v, print the control words (they are secrets: off by default)"},
	}
}

func descrambleFlags() []cli.Flag {
	f := append(ioFlags(), keyFlags()...)
	f = append(f, selectionFlags()...)
	f = append(f,
		&cli.StringFlag{Name: "rescramble", Usage: "scramble again, in the same pass, with this `SYSTEM` (csa2, dvb-cissa, atis-idsa, dfc, serpent)"},
		&cli.StringFlag{Name: "rescramble-cw", Usage: "control word to rescramble with: `HEX` digits"},
		&cli.StringFlag{Name: "rescramble-cw-file", TakesFile: true, Usage: "`FILE` of control words to rescramble with, one per crypto period"},
		&cli.IntFlag{Name: "rescramble-cp-packets", Usage: "rescrambling crypto period: `N` packets, the parity alternating (0: one period)"},
	)
	return append(f, tuningFlags()...)
}

func scrambleCommand(env Env) *cli.Command {
	f := append(ioFlags(), keyFlags()...)
	f = append(f, selectionFlags()...)
	f = append(f, &cli.IntFlag{Name: "cp-packets", Usage: "crypto period of `N` packets of the scrambled PIDs: the parity alternates and a CW list advances at each (0: one even period)"})
	f = append(f, tuningFlags()...)
	return &cli.Command{
		Name:      "scramble",
		Usage:     "scramble the elementary streams of a transport stream",
		UsageText: "tsdescramble scramble [flags]   (reads stdin and writes stdout unless -in/-out are given)",
		Description: `Scrambles the packets of every elementary stream of every service (or of -pid / -service),
sets their scrambling bits, and leaves PSI and null packets clear. CSA2 payloads under 8 bytes
are marked scrambled and left clear, as DVB-CSA2 defines.
Examples:
   tsdescramble scramble -in clear.ts -out scrambled.ts -cw 11223366445566ff
   tsdescramble scramble -i clear.ts -o s.ts -cw-file keys.txt -cp-packets 5000
   tsdescramble scramble -i clear.ts -o s.ts -cipher dvb-cissa -cw 00112233445566778899aabbccddeeff`,
		Flags:  f,
		Action: func(c *cli.Context) error { return process(c, env, pipeline.Scramble) },
	}
}

// process runs the descrambler, the rescrambler or the scrambler as the flags ask.
func process(c *cli.Context, env Env, mode pipeline.Mode) error {
	if c.NArg() > 0 {
		return usageErr("unexpected argument %q: give the input with -in FILE", c.Args().First())
	}
	if err := checkPaths(c.String); err != nil {
		return err
	}
	if w := c.Int("workers"); w < 1 || w > 1024 {
		return usageErr("-workers %d: want a number from 1 to 1024", w)
	}
	if b := c.Int("batch"); b < 1 || b > pipeline.MaxBatch {
		return usageErr("-batch %d: want a number from 1 to %d", b, pipeline.MaxBatch)
	}
	lanes, err := parseGroup(c.String("group"))
	if err != nil {
		return err
	}
	// Without -cipher, a descrambling run takes the system its input's PMT signals, so it opens
	// the input now (system_detect.go).
	sys, la, err := chooseSystem(c, env, mode, lanes)
	if err != nil {
		return err
	}
	defer la.close()
	ks, err := readKeys(c, "", sys)
	if err != nil {
		return err
	}
	opts := pipeline.Options{
		Mode:    mode,
		Workers: c.Int("workers"),
		Batch:   c.Int("batch"),
		Lanes:   lanes,
	}
	notes := ks.notes
	switch mode {
	case pipeline.Descramble:
		opts.Keys, opts.System = ks.sched, sys
		if name := c.String("rescramble"); name != "" {
			osys, err := lookupSystem("rescramble", name, lanes)
			if err != nil {
				return err
			}
			oks, err := readKeys(c, "rescramble-", osys)
			if err != nil {
				return err
			}
			if n := c.Int("rescramble-cp-packets"); n < 0 {
				return usageErr("-rescramble-cp-packets %d: want 0 or more packets", n)
			}
			opts.Mode = pipeline.Rescramble
			opts.Out = &pipeline.Output{System: osys, CWs: oks.cws(), PeriodPackets: c.Int("rescramble-cp-packets")}
			notes = append(notes, oks.notes...)
		} else if c.String("rescramble-cw") != "" || c.String("rescramble-cw-file") != "" {
			return usageErr("-rescramble-cw and -rescramble-cw-file need -rescramble SYSTEM")
		}
	case pipeline.Scramble:
		if n := c.Int("cp-packets"); n < 0 {
			return usageErr("-cp-packets %d: want 0 or more packets", n)
		}
		opts.Out = &pipeline.Output{System: sys, CWs: ks.cws(), PeriodPackets: c.Int("cp-packets")}
		opts.ScramblingMode = signalMode(sys)
	}
	if s := c.String("pid"); s != "" {
		if opts.PIDs, err = psi.ParsePIDList(s); err != nil {
			return usageErr("-pid: %v (example: -pid 0x100,0x101 or -pid 256-259)", err)
		}
	}
	if c.IsSet("service") {
		opts.Service = c.Int("service")
		if opts.Service < 1 || opts.Service > 0xFFFF {
			return usageErr("-service %d: want a program number from 1 to 65535 (tsdescramble probe lists them)", opts.Service)
		}
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
	for _, n := range notes {
		logf(n)
	}
	if verbose && !quiet {
		describeKeys(env.Stderr, ks.cws(), c.Bool("show-keys"))
	}

	inPath, outPath := c.String("in"), c.String("out")
	in, err := la.open(inPath, env)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := openOutput(outPath, env)
	if err != nil {
		return err
	}
	// A run that must stop, by a signal or because the output failed, must not wait for an
	// idle input pipe to send more.
	out.onFail = in.interrupt

	ctx, sig := interruptible(in.interrupt)
	defer sig.stop()
	bar := newProgress(env, in.size, quiet, mode)
	opts.Progress = bar.set
	st, runErr := pipeline.Run(ctx, in, out.w, opts)
	bar.finish()
	closeErr := out.close(runErr == nil, st.BytesOut > 0)

	verdict := judgeKeys(&st)
	if !quiet && (runErr == nil || st.Packets > 0) {
		printSummary(env.Stderr, &st, opts.Mode, verbose, verdict)
	}
	if path := c.String("stats"); path != "" {
		if err := writeStats(path, &st); err != nil && runErr == nil {
			return failErr("cannot write the statistics: %v", unwrapPath(err))
		}
	}
	switch {
	case runErr != nil && sig.caught() != nil:
		// Stopped by a signal: every packet read before it was written out.
		s := sig.caught().(syscall.Signal)
		name := "SIGTERM"
		if s == syscall.SIGINT {
			name = "SIGINT"
		}
		saved := ""
		if out.partial != "" {
			saved = " to " + out.partial
		}
		return &exitError{code: 128 + int(s), msg: fmt.Sprintf("stopped by %s after writing %d packets%s", name, st.BytesOut/int64(max(st.Framing.Size, 1)), saved)}
	case runErr != nil:
		return runError(runErr, inPath, outPath, out)
	case closeErr != nil:
		return failErr("cannot write %s: %v", outPath, closeErr)
	case opts.Mode == pipeline.Scramble:
	case verdict.code != exitOK:
		return &exitError{code: verdict.code, msg: verdict.line +
			" (check the control words, their parity and order, -cipher and -reduce-entropy); the output was written anyway"}
	case st.PESGood == 0 && st.PESBad > 0:
		return &exitError{code: exitNoFit, msg: fmt.Sprintf(
			"the keys do not fit this stream: none of the %d scrambled PES starts descrambled to a valid PES header "+
				"(check the control words, their parity and order, -cipher and -reduce-entropy); the output was written anyway", st.PESBad)}
	}
	return nil
}
