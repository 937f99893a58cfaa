package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/tsdescramble/tsdescramble/internal/livekeys"
	"github.com/tsdescramble/tsdescramble/internal/report"
	"github.com/tsdescramble/tsdescramble/internal/runfiles"
	"github.com/tsdescramble/tsdescramble/keys"
	"github.com/tsdescramble/tsdescramble/keyserver"
	"github.com/tsdescramble/tsdescramble/pipeline"
	"github.com/tsdescramble/tsdescramble/psi"
	"github.com/tsdescramble/tsdescramble/scrambling"
	"github.com/tsdescramble/tsdescramble/scs"
	"github.com/tsdescramble/tsdescramble/simulcrypt"
	"github.com/tsdescramble/tsdescramble/testca"
)

// defaultECMWait is -ecm-wait's default: a stream never goes out scrambled with a CW whose ECM
// is not in it, nor clear unless asked; 5 s is many times an ECMG's max_comp_time.
const defaultECMWait = "hold:5s"

// parseECMWait reads -ecm-wait: hold or clear, a colon and a duration, or one of them alone.
func parseECMWait(v string) (wait time.Duration, clear bool, err error) {
	choice, d, hasD := strings.Cut(v, ":")
	switch choice {
	case "hold", "clear":
	default:
		// A duration alone holds.
		choice, d, hasD = "hold", v, true
	}
	wait = 5 * time.Second
	if hasD {
		if wait, err = time.ParseDuration(d); err != nil || wait < 0 || wait > time.Hour {
			return 0, false, usageErr("-ecm-wait: want hold or clear, then :DURATION up to 1h if not 5s (example: -ecm-wait clear:2s)")
		}
	}
	if choice == "hold" && wait == 0 {
		return 0, false, usageErr("-ecm-wait hold:0s would stop every run before its first ECM: give the ECMG some time (example: -ecm-wait hold:5s)")
	}
	return wait, choice == "clear", nil
}

// scsRun is a scrambling run's SimulCrypt stage, with what it needs to end.
type scsRun struct {
	stage *scs.Stage
	feed  *pipeline.PeriodFeed
	log   *os.File
	ecmg  string
	pid   uint16
	cp    time.Duration
	live  bool // periods on the wall clock
	wait  string
}

// startSCS connects to the ECMG and returns the stage that reads in, with opts set to take its
// crypto periods. ks holds the key flags' CWs (empty for random ones).
func startSCS(c *config, in *input, opts *pipeline.Options, sys scrambling.System, ks *keySet, logf, warnf func(string)) (*scsRun, error) {
	// A network input's periods follow the wall clock (see scs.Config.Live); a pipe's, like a
	// file's, its PCRs, so that the same bytes scramble the same way.
	cfg := scs.Config{CPDuration: c.cpDuration, Log: logf, Warn: warnf, Live: in.network()}
	run := &scsRun{ecmg: c.ecmg, cp: cfg.CPDuration, live: cfg.Live}
	if c.ecmg != "" {
		// The flags were read by checkECMG.
		cfg.AccessCriteria = c.access
		cfg.ECMWait, cfg.SendClear, run.wait = c.ecmWaitFor, c.ecmClear, c.ecmWait
		if c.ecmWaitFor == 0 {
			cfg.ECMWait = -1 // clear:0s: no wait at all (0 is the stage's default)
		}
		cfg.ECMPID, run.pid = c.ecmPIDs, c.ecmPIDs
		cfg.ECMG = &simulcrypt.Config{Addr: c.ecmg, Version: uint8(c.ecmgVersion), SuperCASID: c.superCAS,
			Channel: 1, Stream: 1, ECMID: 1, NominalCPDuration: cfg.CPDuration}
	}
	switch {
	case c.anyKeyFlag():
		list := ks.cws()
		i := 0
		cfg.NextCW = func() ([]byte, error) {
			cw := list[i%len(list)]
			i++
			return cw, nil
		}
	default:
		size, reduce := sys.KeySizes()[0], c.keys.reduce
		cfg.NextCW = func() ([]byte, error) {
			cw := make([]byte, size)
			if _, err := rand.Read(cw); err != nil {
				return nil, err
			}
			if reduce && size == keys.CWSize {
				keys.ReduceEntropy(cw)
			}
			return cw, nil
		}
	}
	service, pids := opts.Service, opts.PIDs
	cfg.Scrambled = func(svc psi.Service) bool {
		switch {
		case service > 0:
			return int(svc.Number) == service
		case len(pids) > 0:
			for _, st := range svc.Streams {
				if slices.Contains(pids, st.PID) {
					return true
				}
			}
			return false
		}
		return len(svc.Streams) > 0
	}
	feed := new(pipeline.PeriodFeed)
	cfg.OnPeriod, run.feed = feed.Start, feed
	opts.Out = &pipeline.Output{System: sys, Feed: feed}
	if path := c.cwLog; path != "" {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
		if err != nil {
			return nil, failErr("cannot create the CW log: %v", runfiles.UnwrapPath(err))
		}
		// An existing file keeps its mode through O_TRUNC: make it private too.
		f.Chmod(0o600)
		fmt.Fprintf(f, "# control word log (OSCam .cwl form) of tsdescramble scramble: one crypto period a line, parity then CW; crypto period %v\n", cfg.CPDuration)
		cfg.CWLog, run.log = f, f
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	stage, err := scs.New(ctx, cfg)
	if err != nil {
		if run.log != nil {
			run.log.Close()
		}
		return nil, failErr("ECMG %s: %v", c.ecmg, err)
	}
	run.stage = stage
	return run, nil
}

// finish closes the ECMG channel and the log, and says what the stage did: what went wrong
// to warnf.
func (r *scsRun) finish(logf, warnf func(string), quiet bool) error {
	closeErr := r.stage.Close()
	var logErr error
	if r.log != nil {
		logErr = r.log.Close()
	}
	st := r.stage.Stats()
	if !quiet {
		clock := "stream time"
		if r.live {
			clock = "wall time (a live input)"
		}
		msg := fmt.Sprintf("crypto periods: %d of %v over %v of %s", st.Periods, r.cp, st.StreamTime.Round(time.Millisecond), clock)
		if st.PCRs == 0 && !r.live {
			msg += " (the input has no PCR: one crypto period)"
		}
		logf(msg)
		if r.ecmg != "" {
			p := st.ChannelParams
			logf(fmt.Sprintf("ECMG %s: delay_start %v, delay_stop %v, ECM_rep_period %v, min_CP_duration %v, lead_CW %d, CW_per_msg %d, max_comp_time %v; %s received",
				r.ecmg, p.DelayStart, p.DelayStop, p.RepPeriod, p.MinCPDuration, p.LeadCW, p.CWPerMsg, p.MaxCompTime, report.Plural(int(st.ECMs), "ECM")))
			logf(fmt.Sprintf("ECM PID %#04x: %s, %d in the place of null packets, %d inserted; CA_descriptor in %s, %d left without",
				r.pid, report.Plural(int(st.ECMPackets), "packet"), st.Replaced, st.Inserted, report.Plural(int(st.PMTSignalled), "PMT section"), st.PMTLeft))
			if st.Lost > 0 || st.ECMGErrors > 0 || st.Held > 0 || st.ECMRefused > 0 || st.Skipped > 0 {
				warnf(fmt.Sprintf("ECMG trouble: lost %s (back %d), %s, %s refused, %s prolonged while no ECM carried the next CW, %d given up before the first ECM",
					report.Plural(int(st.Lost), "time"), st.Reconnected, report.Plural(int(st.ECMGErrors), "error reply"), report.Plural(int(st.ECMRefused), "ECM"),
					report.Plural(int(st.Held), "crypto period"), st.Skipped))
			}
		}
	}
	if logErr != nil {
		return failErr("cannot write the CW log: %v", logErr)
	}
	if err := r.feed.Err(); err != nil {
		return failErr("%v: that period's packets were left clear", err)
	}
	if st.Clear > 0 {
		// Asked for (-ecm-wait clear), and still a failure of the head-end: a scheduler
		// should know that the service went out unprotected.
		return failErr("ECMG %s: no ECM came within -ecm-wait %s, and the first %s went out clear, without CA_descriptor", r.ecmg, r.wait, report.Plural(int(st.Clear), "packet"))
	}
	if closeErr != nil && st.Lost == 0 {
		warnf(fmt.Sprintf("closing the ECMG channel: %v", closeErr))
	}
	return nil
}

// ecmKeys reads the CWs of -ecm-xor. From a regular file, they are read in a pass before the
// run: the pipeline then follows them per PID as it follows a .cwl log, each CW in force from
// the flip to its period's parity. From a pipe or a network input, which cannot be read twice,
// the ECMs go to a key source as they come, as a key server's do (testca.Answerer): each CW
// applies from the next period of its parity, and a period waits for its key up to -key-wait.
func ecmKeys(c *config, sys scrambling.System) (*keySet, *livekeys.Source, error) {
	if c.anyKeyFlag() {
		return nil, nil, usageErr("-ecm-xor reads the CWs from the stream: give no other key flag")
	}
	if sys.Name() != "csa2" {
		return nil, nil, usageErr("-ecm-xor carries 8-byte CWs: use it with -cipher csa2")
	}
	key, err := keys.ParseCW(c.ecmXor, 8)
	if err != nil {
		return nil, nil, usageErr("-ecm-xor: %v (example: -ecm-xor 4212022421206688)", err)
	}
	path := c.in
	fi, err := os.Stat(path)
	if path == "-" || isNetwork(path) || err == nil && !fi.Mode().IsRegular() {
		o, err := liveKeyOptions(c)
		if err != nil {
			return nil, nil, err
		}
		ks := livekeys.NewECM(livekeys.ECMXor(), testca.Answerer{Key: key}, keyserver.Choice{}, o)
		return &keySet{sched: keys.NewList(nil)}, ks, nil
	}
	if name := c.givenWaitFlag(); name != "" {
		return nil, nil, usageErr("-%s: -ecm-xor reads a file's ECMs before the run, and no period waits for its key: leave -%s out", name, name)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, failErr("cannot open the input: %v", runfiles.UnwrapPath(err))
	}
	defer f.Close()
	res, err := testca.ReadCWs(f, key, c.service)
	if err != nil {
		return nil, nil, failErr("%s: -ecm-xor: %v", path, err)
	}
	var pids []string
	for _, p := range res.PIDs {
		pids = append(pids, fmt.Sprintf("%#04x", p))
	}
	note := fmt.Sprintf("ECMs: %d read on PID %s, %d distinct: the CWs of %s", res.ECMs, strings.Join(pids, ", "), res.Distinct, report.Plural(len(res.Periods), "crypto period"))
	ks := &keySet{sched: keys.NewPeriods(res.Periods), notes: []string{note}, format: keys.FormatCWL}
	return ks, nil, nil
}
