package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/tsdescramble/tsdescramble/keys"
	"github.com/tsdescramble/tsdescramble/keyserver"
	"github.com/tsdescramble/tsdescramble/live"
	"github.com/tsdescramble/tsdescramble/pipeline"
	"github.com/tsdescramble/tsdescramble/psi"
	"github.com/tsdescramble/tsdescramble/scrambling"
	"github.com/tsdescramble/tsdescramble/scs"
	"github.com/tsdescramble/tsdescramble/simulcrypt"
	"github.com/tsdescramble/tsdescramble/testca"
)

// simulcryptFlags are the scrambler's flags for crypto periods in time and a SimulCrypt ECMG.
func simulcryptFlags() []cli.Flag {
	return []cli.Flag{
		&cli.DurationFlag{Name: "cp-duration", Category: catScrambling, Usage: "crypto period of `DURATION` in stream time, from the PCRs (the wall clock for a network input) (e.g. 10s): a fresh random CW each unless key flags give them"},
		&cli.StringFlag{Name: "ecmg", Category: catScrambling, Usage: "act as a DVB SimulCrypt SCS: get the ECMs from the ECMG at `HOST:PORT` (ETSI TS 103 197) and put them in the stream"},
		&cli.StringFlag{Name: "super-cas-id", Category: catScrambling, Usage: "with -ecmg: the Super_CAS_id, 8 `HEX` digits (CA_system_id then CA_subsystem_id); the PMT's CA_descriptor takes the CA_system_id"},
		&cli.StringFlag{Name: "ecm-pid", Category: catScrambling, Usage: "with -ecmg: the `PID` of the ECMs, decimal or 0x hex"},
		&cli.StringFlag{Name: "access-criteria", Category: catScrambling, Usage: "with -ecmg: access criteria sent with every CW, `HEX` bytes"},
		&cli.IntFlag{Name: "ecmg-version", Value: 2, Category: catScrambling, Usage: "with -ecmg: ECMG⇔SCS protocol `VERSION`, 2 or 3"},
		&cli.StringFlag{Name: "ecm-wait", Value: defaultECMWait, Category: catScrambling, Usage: "with -ecmg: what the stream does before its first ECM, `hold|clear[:DURATION]`: no packet goes out scrambled before an ECM with its CW, so the stream waits up to DURATION of wall time (the input waits too); then hold stops the run, clear sends the stream clear, with no CA_descriptor, until the ECM comes; either way the exit status is 1"},
		&cli.StringFlag{Name: "cw-log", TakesFile: true, Category: catScrambling, Usage: "with -cp-duration or -ecmg: write each crypto period's CW to `FILE` as an OSCam .cwl log (created 0600: keys are secrets), for -cw-file later"},
	}
}

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

// scsWanted reports whether the flags ask for the SimulCrypt stage.
func scsWanted(c *cli.Context) bool {
	return c.String("ecmg") != "" || c.IsSet("cp-duration") || c.String("cw-log") != ""
}

// anyKeyFlag reports whether a key flag of the input side is given.
func anyKeyFlag(c *cli.Context) bool { return givenKeyFlag(c, "") != "" }

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

// checkSCSFlags checks the flags of the stage before anything is opened.
func checkSCSFlags(c *cli.Context) error {
	if c.String("ecmg") == "" && c.IsSet("ecm-wait") {
		return usageErr("-ecm-wait needs -ecmg HOST:PORT")
	}
	if !scsWanted(c) {
		for _, f := range []string{"super-cas-id", "ecm-pid", "access-criteria"} {
			if c.String(f) != "" {
				return usageErr("-%s needs -ecmg HOST:PORT", f)
			}
		}
		return nil
	}
	if c.IsSet("cp-packets") {
		return usageErr("-cp-packets counts periods in packets, -cp-duration (and -ecmg, -cw-log) in stream time: give one")
	}
	if !c.IsSet("cp-duration") {
		return usageErr("-ecmg and -cw-log need -cp-duration DURATION (e.g. -cp-duration 10s)")
	}
	if d := c.Duration("cp-duration"); d < 100*time.Millisecond || d > 6553*time.Second {
		return usageErr("-cp-duration: want 100ms to 6553s")
	}
	if c.String("ecmg") == "" {
		for _, f := range []string{"super-cas-id", "ecm-pid", "access-criteria"} {
			if c.String(f) != "" {
				return usageErr("-%s needs -ecmg HOST:PORT", f)
			}
		}
		if !anyKeyFlag(c) && c.String("cw-log") == "" {
			return usageErr("-cp-duration without -ecmg scrambles with the key flags' CWs, or random ones logged with -cw-log FILE: give one")
		}
		return nil
	}
	if _, _, err := net.SplitHostPort(c.String("ecmg")); err != nil {
		return usageErr("-ecmg: want HOST:PORT (example: -ecmg 127.0.0.1:2222)")
	}
	if c.String("super-cas-id") == "" || c.String("ecm-pid") == "" {
		return usageErr("-ecmg needs -super-cas-id HEX and -ecm-pid PID")
	}
	if v := c.Int("ecmg-version"); v != 2 && v != 3 {
		return usageErr("-ecmg-version: want 2 or 3")
	}
	if _, _, err := parseECMWait(c.String("ecm-wait")); err != nil {
		return err
	}
	return nil
}

// startSCS connects to the ECMG and returns the stage that reads in, with opts set to take its
// crypto periods. ks holds the key flags' CWs (empty for random ones).
func startSCS(c *cli.Context, in *input, opts *pipeline.Options, sys scrambling.System, ks *keySet, logf func(string)) (*scsRun, error) {
	// A network input's periods follow the wall clock (see scs.Config.Live); a pipe's, like a
	// file's, its PCRs, so that the same bytes scramble the same way.
	cfg := scs.Config{CPDuration: c.Duration("cp-duration"), Log: logf, Live: in.live != nil}
	run := &scsRun{ecmg: c.String("ecmg"), cp: cfg.CPDuration, live: cfg.Live}
	if addr := c.String("ecmg"); addr != "" {
		id, err := strconv.ParseUint(strings.TrimPrefix(strings.ToLower(c.String("super-cas-id")), "0x"), 16, 32)
		if err != nil {
			return nil, usageErr("-super-cas-id: want 8 hex digits (example: -super-cas-id 4ADC0000)")
		}
		pids, err := parsePIDs(c.String("ecm-pid"))
		if err != nil || len(pids) != 1 || pids[0] < 0x20 || pids[0] == 0x1FFF {
			return nil, usageErr("-ecm-pid: want one PID from 0x20 to 0x1FFE")
		}
		if slices.Contains(opts.PIDs, pids[0]) {
			return nil, usageErr("-ecm-pid %#x is among the -pid list to scramble", pids[0])
		}
		if s := c.String("access-criteria"); s != "" {
			if cfg.AccessCriteria, err = hex.DecodeString(strings.ReplaceAll(s, " ", "")); err != nil {
				return nil, usageErr("-access-criteria: want hex bytes")
			}
		}
		wait, clear, err := parseECMWait(c.String("ecm-wait"))
		if err != nil {
			return nil, err
		}
		cfg.ECMWait, cfg.SendClear, run.wait = wait, clear, c.String("ecm-wait")
		if wait == 0 {
			cfg.ECMWait = -1 // clear:0s: no wait at all (0 is the stage's default)
		}
		cfg.ECMPID, run.pid = pids[0], pids[0]
		cfg.ECMG = &simulcrypt.Config{Addr: addr, Version: uint8(c.Int("ecmg-version")), SuperCASID: uint32(id),
			Channel: 1, Stream: 1, ECMID: 1, NominalCPDuration: cfg.CPDuration}
	}
	switch {
	case anyKeyFlag(c):
		list := ks.cws()
		i := 0
		cfg.NextCW = func() ([]byte, error) {
			cw := list[i%len(list)]
			i++
			return cw, nil
		}
	default:
		size, reduce := sys.KeySizes()[0], c.Bool("reduce-entropy")
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
	if path := c.String("cw-log"); path != "" {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
		if err != nil {
			return nil, failErr("cannot create the CW log: %v", unwrapPath(err))
		}
		// An existing file keeps its mode through O_TRUNC: make it private too.
		f.Chmod(0o600)
		fmt.Fprintf(f, "# control word log (OSCam .cwl form) of tsdescramble scramble: one crypto period a line, parity then CW; crypto period %v\n", cfg.CPDuration)
		cfg.CWLog, run.log = f, f
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	stage, err := scs.New(ctx, in, cfg)
	if err != nil {
		if run.log != nil {
			run.log.Close()
		}
		return nil, failErr("ECMG %s: %v", c.String("ecmg"), err)
	}
	run.stage = stage
	return run, nil
}

// finish closes the ECMG channel and the log, and says what the stage did.
func (r *scsRun) finish(logf func(string), quiet bool) error {
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
			logf(fmt.Sprintf("ECMG %s: delay_start %v, delay_stop %v, ECM_rep_period %v, min_CP_duration %v, lead_CW %d, CW_per_msg %d, max_comp_time %v; %d ECMs received",
				r.ecmg, p.DelayStart, p.DelayStop, p.RepPeriod, p.MinCPDuration, p.LeadCW, p.CWPerMsg, p.MaxCompTime, st.ECMs))
			logf(fmt.Sprintf("ECM PID %#04x: %d packets, %d in the place of null packets, %d inserted; CA_descriptor in %d PMT sections, %d left without",
				r.pid, st.ECMPackets, st.Replaced, st.Inserted, st.PMTSignalled, st.PMTLeft))
			if st.Lost > 0 || st.ECMGErrors > 0 || st.Held > 0 || st.ECMRefused > 0 || st.Skipped > 0 {
				logf(fmt.Sprintf("ECMG trouble: lost %d times (back %d), %d error replies, %d ECMs refused, %d crypto periods prolonged while no ECM carried the next CW, %d given up before the first ECM",
					st.Lost, st.Reconnected, st.ECMGErrors, st.ECMRefused, st.Held, st.Skipped))
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
		return failErr("ECMG %s: no ECM came within -ecm-wait %s, and the first %d packets went out clear, without CA_descriptor", r.ecmg, r.wait, st.Clear)
	}
	if closeErr != nil && st.Lost == 0 {
		logf(fmt.Sprintf("closing the ECMG channel: %v", closeErr))
	}
	return nil
}

// ecmKeys reads the CWs of -ecm-xor. From a regular file, they are read in a pass before the
// run: the pipeline then follows them per PID as it follows a .cwl log, each CW in force from
// the flip to its period's parity. From a pipe or a network input, which cannot be read twice,
// the ECMs go to a key source as they come, as a key server's do (testca.Answerer): each CW
// applies from the next period of its parity, and a period waits for its key up to -key-wait.
func ecmKeys(c *cli.Context, sys scrambling.System) (*keySet, *keyServer, error) {
	if anyKeyFlag(c) {
		return nil, nil, usageErr("-ecm-xor reads the CWs from the stream: give no other key flag")
	}
	if sys.Name() != "csa2" {
		return nil, nil, usageErr("-ecm-xor carries 8-byte CWs: use it with -cipher csa2")
	}
	key, err := keys.ParseCW(c.String("ecm-xor"), 8)
	if err != nil {
		return nil, nil, usageErr("-ecm-xor: %v (example: -ecm-xor 4212022421206688)", err)
	}
	path := c.String("in")
	fi, err := os.Stat(path)
	if path == "-" || live.IsAddress(path) || err == nil && !fi.Mode().IsRegular() {
		ks, err := newECMKeys(c, &keyServerURL{scheme: "ecm-xor"}, testca.Answerer{Key: key}, keyserver.Choice{})
		if err != nil {
			return nil, nil, err
		}
		return &keySet{sched: keys.NewList(nil)}, ks, nil
	}
	if name := givenWaitFlag(c); name != "" {
		return nil, nil, usageErr("-%s: -ecm-xor reads a file's ECMs before the run, and no period waits for its key: leave -%s out", name, name)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, failErr("cannot open the input: %v", unwrapPath(err))
	}
	defer f.Close()
	res, err := testca.ReadCWs(f, key, c.Int("service"))
	if err != nil {
		return nil, nil, failErr("%s: -ecm-xor: %v", path, err)
	}
	var pids []string
	for _, p := range res.PIDs {
		pids = append(pids, fmt.Sprintf("%#04x", p))
	}
	note := fmt.Sprintf("ECMs: %d read on PID %s, %d distinct: %d crypto periods' CWs", res.ECMs, strings.Join(pids, ", "), res.Distinct, len(res.Periods))
	ks := &keySet{sched: keys.NewPeriods(res.Periods), notes: []string{note}, format: keys.FormatCWL}
	return ks, nil, nil
}
