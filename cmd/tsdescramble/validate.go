package main

import (
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tsdescramble/tsdescramble/internal/livekeys"
	"github.com/tsdescramble/tsdescramble/internal/report"
	"github.com/tsdescramble/tsdescramble/internal/runfiles"
	"github.com/tsdescramble/tsdescramble/keys"
	"github.com/tsdescramble/tsdescramble/pipeline"
	"github.com/tsdescramble/tsdescramble/scrambling"
)

// checked is what validate reads the flags as, for the run to use.
type checked struct {
	lanes      int
	pids       []uint16
	outSys     scrambling.System // -rescramble's system, or nil
	ksURL      *livekeys.URL     // -key-server's (or -key-server-env's), or nil
	ksFlag     string            // the flag that gave it, as messages name it
	superCAS   uint32
	ecmPIDs    uint16
	access     []byte
	ecmWaitFor time.Duration
	ecmClear   bool
}

// validate gives the usage error (exit 2) of a command line, if it has one, before anything
// is opened: a usage error does not wait for a live input to show its PMTs, nor leave an
// output behind. What only the input can tell (the system its PMT signals, which decides how
// long a key must be) is checked once the input is open, when the keys are read.
func validate(c *config, env Env) error {
	for _, check := range []func(*config, Env) error{checkCommandLine, checkPassthrough, checkServiceOuts, checkNumbers, checkLive, checkSCS, checkKeyServer, checkMultiplex} {
		if err := check(c, env); err != nil {
			return err
		}
	}
	return nil
}

// checkCommandLine refuses what the descrambler and the scrambler cannot do anything sensible
// with: arguments that are not flags, flags that contradict each other, an empty file name,
// files that would destroy what the run reads (checkPaths), and a terminal where a transport
// stream was meant to be read or written because -in or -out was forgotten (a terminal would
// wait forever for a stream that is not coming, or fill with binary; -in - and -out - given
// explicitly still use it).
func checkCommandLine(c *config, env Env) error {
	if len(c.args) > 0 {
		if len(c.args) == len(c.cmdline) {
			if err := mistypedCommand(c.args[0], c.commands, c.flags); err != nil {
				return err
			}
		}
		return strayArgument(c.args, c.cmdline)
	}
	switch {
	case c.quiet && c.verbose:
		return usageErr("-q asks for nothing but errors and -v for details: give one or the other")
	case c.showKeys && !c.verbose:
		return usageErr("-show-keys adds the control words to what -v prints: give it with -v, or leave it out")
	case c.isSet("rescramble-cp-packets") && c.rescramble == "":
		return usageErr("-rescramble-cp-packets needs -rescramble SYSTEM")
	}
	for _, f := range fileFlags {
		if !c.isSet(f.name) || f.get(c) != "" {
			continue
		}
		if f.stdio {
			std := "stdin"
			if f.output() {
				std = "stdout"
			}
			return usageErr("-%s is empty: name a file, or - for %s", f.name, std)
		}
		return usageErr("-%s is empty: name a file", f.name)
	}
	if !c.isSet("in") && c.configFile == "" && isTerminal(env, env.Stdin) {
		return usageErr("no input: give -in FILE, or pipe a stream in (stdin is a terminal; -in - reads it anyway)")
	}
	if !c.isSet("out") && !c.isSet("out-service") && c.configFile == "" && isTerminal(env, env.Stdout) {
		return usageErr("no output: give -out FILE, or redirect stdout (it is a terminal; -out - writes the stream to it anyway)")
	}
	return checkPaths(c)
}

// checkNumbers checks the tuning, the selection, the crypto periods, -rescramble and -metrics.
func checkNumbers(c *config, _ Env) (err error) {
	if c.workers < 1 || c.workers > 1024 {
		return usageErr("-workers: want a number from 1 to 1024")
	}
	if c.batch < 1 || c.batch > pipeline.MaxBatch {
		return usageErr("-batch: want a number from 1 to %d", pipeline.MaxBatch)
	}
	if c.lanes, err = parseGroup(c.group); err != nil {
		return err
	}
	// -pid "" is refused rather than read as no -pid: a list that came out empty (a script's
	// unset variable) must not turn into descrambling every PID.
	if c.isSet("pid") {
		if c.pids, err = parsePIDs(c.pid); err != nil {
			return err
		}
	}
	switch {
	case c.isSet("service") && (c.service < 1 || c.service > 0xFFFF):
		return usageErr("-service: want a program number from 1 to 65535 (tsdescramble probe lists them)")
	case c.cpPackets < 0:
		return usageErr("-cp-packets: want 0 or more packets")
	case c.rescrambleCPPackets < 0:
		return usageErr("-rescramble-cp-packets: want 0 or more packets")
	}
	if c.rescramble != "" {
		if c.outSys, err = lookupSystem("rescramble", c.rescramble, c.lanes); err != nil {
			return err
		}
	} else {
		for _, name := range rescrambleKeyFlags() {
			if c.isSet(name) {
				return usageErr("-%s needs -rescramble SYSTEM", name)
			}
		}
	}
	if c.isSet("metrics") {
		return checkMetricsAddr(c.metrics, c.out)
	}
	return nil
}

// checkLive checks the flags that bound what a live run adds and how long it lasts.
func checkLive(c *config, _ Env) error {
	switch {
	case c.latency < 0:
		return usageErr("-latency: want a duration of 0 or more (50ms, 1s; 0 sends full units of work only)")
	case c.isSet("duration") && c.duration <= 0:
		return usageErr("-duration: want a duration above 0 (10s, 5m, 2h)")
	case c.isSet("packets") && c.packets <= 0:
		return usageErr("-packets: want a number of packets above 0")
	case c.isSet("timeout") && c.timeout <= 0:
		return usageErr("-timeout: want a duration above 0 (5s, 1m)")
	case c.isSet("stats-interval") && (c.statsInterval <= 0 || c.stats == ""):
		return usageErr("-stats-interval: want a duration above 0 (10s, 1m), with -stats FILE to write to")
	case c.pace && c.isSet("pace") && !isNetwork(c.out):
		return usageErr("-pace paces a network output: give -out udp://HOST:PORT, rtp://HOST:PORT, http://[HOST]:PORT/PATH or srt://…, or leave -pace out")
	case c.timeout > 0 && !isNetwork(c.in):
		return usageErr("-timeout watches a network input: give -in udp://@:PORT, rtp://@:PORT, http(s)://… or srt://…, or leave -timeout out")
	case c.isSet("end-on-idle") && c.endOnIdle <= 0:
		return usageErr("-end-on-idle: want a duration above 0 (5s, 1m)")
	case c.endOnIdle > 0 && !isNetwork(c.in):
		return usageErr("-end-on-idle watches a network input: give -in udp://@:PORT, rtp://@:PORT, http(s)://… or srt://…, or leave -end-on-idle out (a file or a pipe ends by itself)")
	case c.endOnIdle > 0 && c.timeout > 0:
		return usageErr("-timeout fails the run on a silence and -end-on-idle ends it there as done: give one")
	}
	return nil
}

// checkSCS checks the flags of a scrambling run's SimulCrypt stage.
func checkSCS(c *config, _ Env) error {
	if c.mode != pipeline.Scramble {
		return nil
	}
	if c.ecmg == "" && c.isSet("ecm-wait") {
		return usageErr("-ecm-wait needs -ecmg HOST:PORT")
	}
	if !c.scsWanted() {
		return needsECMG(c)
	}
	switch d := c.cpDuration; {
	case c.isSet("cp-packets"):
		return usageErr("-cp-packets counts periods in packets, -cp-duration (and -ecmg, -cw-log) in stream time: give one")
	case !c.isSet("cp-duration"):
		return usageErr("-ecmg and -cw-log need -cp-duration DURATION (e.g. -cp-duration 10s)")
	case d < 100*time.Millisecond || d > 6553*time.Second:
		return usageErr("-cp-duration: want 100ms to 6553s")
	case c.ecmg != "":
		return checkECMG(c)
	}
	if err := needsECMG(c); err != nil {
		return err
	}
	if !c.anyKeyFlag() && c.cwLog == "" {
		return usageErr("-cp-duration without -ecmg scrambles with the key flags' CWs, or random ones logged with -cw-log FILE: give one")
	}
	return nil
}

// needsECMG refuses the flags of an ECMG connection without -ecmg.
func needsECMG(c *config) error {
	for i, v := range []string{c.superCASID, c.ecmPID, c.accessCriteria} {
		if v != "" && c.ecmg == "" {
			return usageErr("-%s needs -ecmg HOST:PORT", []string{"super-cas-id", "ecm-pid", "access-criteria"}[i])
		}
	}
	return nil
}

// checkECMG checks and reads the flags of the ECMG connection.
func checkECMG(c *config) (err error) {
	if _, _, err := net.SplitHostPort(c.ecmg); err != nil {
		return usageErr("-ecmg: want HOST:PORT (example: -ecmg 127.0.0.1:2222)")
	}
	if c.superCASID == "" || c.ecmPID == "" {
		return usageErr("-ecmg needs -super-cas-id HEX and -ecm-pid PID")
	}
	if c.ecmgVersion != 2 && c.ecmgVersion != 3 {
		return usageErr("-ecmg-version: want 2 or 3")
	}
	if c.ecmWaitFor, c.ecmClear, err = parseECMWait(c.ecmWait); err != nil {
		return err
	}
	id, err := strconv.ParseUint(strings.TrimPrefix(strings.ToLower(c.superCASID), "0x"), 16, 32)
	if err != nil {
		return usageErr("-super-cas-id: want 8 hex digits (example: -super-cas-id 4ADC0000)")
	}
	c.superCAS = uint32(id)
	pids, err := parsePIDs(c.ecmPID)
	if err != nil || len(pids) != 1 || pids[0] < 0x20 || pids[0] == 0x1FFF {
		return usageErr("-ecm-pid: want one PID from 0x20 to 0x1FFE")
	}
	if slices.Contains(c.pids, pids[0]) {
		return usageErr("-ecm-pid %#04x is among the -pid list to scramble", pids[0])
	}
	c.ecmPIDs = pids[0]
	if s := c.accessCriteria; s != "" {
		if c.access, err = hex.DecodeString(strings.ReplaceAll(s, " ", "")); err != nil {
			return usageErr("-access-criteria: want hex bytes")
		}
	}
	return nil
}

// checkKeyServer checks the flags of keys that come while the stream runs: a key server, and
// what a period does while it waits for its key.
func checkKeyServer(c *config, _ Env) error {
	raw, flag := c.keyServer, "-key-server"
	if name := c.keyServerEnv; name != "" {
		if raw != "" {
			return usageErr("give -key-server or -key-server-env, not both")
		}
		v, ok := os.LookupEnv(name)
		if !ok || v == "" {
			return usageErr("-key-server-env: the environment variable %s is not set or empty", name)
		}
		raw, flag = v, "-key-server-env "+name
	}
	// A value no key source could take is named first, whatever else is missing.
	if c.givenWaitFlag() != "" {
		if err := checkWaitFlags(c); err != nil {
			return err
		}
	}
	switch {
	case c.follow && c.ecmCache != "":
		return usageErr("-ecm-cache records a key server's answers, or gives them without one: not with -follow, whose keys come from a log")
	case c.follow:
		return checkFollow(c, raw != "")
	case raw == "" && c.ecmCache != "":
		return checkECMCache(c)
	case raw == "":
		// -ecm-xor takes them too, and says itself when it does not (ecmKeys).
		// A multiplex run's services take them, each with its own key source (checkMultiplex).
		if name := c.givenWaitFlag(); name != "" && c.ecmXor == "" && c.configFile == "" && len(c.serviceKeys.items) == 0 {
			return usageErr("-%s needs -key-server or -key-server-env", name)
		}
		return nil
	case c.mode == pipeline.Scramble:
		return usageErr("a key server gives keys to descramble with: scramble takes -cw, -cw-file and the like")
	}
	if name := c.givenKeyFlag(""); name != "" {
		return usageErr("give one key source: %s or -%s, not both", strings.Fields(flag)[0], name)
	}
	u, err := livekeys.ParseURL(flag, raw)
	if err != nil {
		return usageErr("%v", err)
	}
	if c.ecmXor != "" {
		return usageErr("-ecm-xor and -key-server are two sources of the same CWs: give one")
	}
	c.ksURL, c.ksFlag = u, flag
	return nil
}

// checkECMCache checks -ecm-cache FILE without a key server: the keys are the answers the
// cache holds, and nothing else.
func checkECMCache(c *config) error {
	if name := c.givenKeyFlag(""); name != "" {
		return usageErr("give one key source: -ecm-cache or -%s, not both", name)
	}
	if c.ecmXor != "" {
		return usageErr("-ecm-xor and -ecm-cache are two sources of the same CWs: give one")
	}
	if c.in != "-" && !isNetwork(c.in) && runfiles.SameFile(c.in, c.ecmCache) {
		return usageErr("-in and -ecm-cache name the same file %s: the ECM cache is the key server's answers, the input the recording", c.ecmCache)
	}
	return checkWaitFlags(c)
}

// keyServerGiven reports whether a key server is named (by -key-server or -key-server-env):
// with one, -ecm-cache is written; without, read.
func (c *config) keyServerGiven() bool { return c.keyServer != "" || c.keyServerEnv != "" }

// checkFollow checks -cw-file FILE -follow: keys from a log that grows while the run reads.
func checkFollow(c *config, server bool) error {
	switch {
	case server:
		return usageErr("-follow reads a growing -cw-file: give it or a key server, not both")
	case c.keys.file == "":
		return usageErr("-follow needs -cw-file FILE: the OSCam .cwl log (or file of EVEN ODD pairs) to follow")
	}
	if name := c.givenKeyFlag("cw-file"); name != "" {
		return usageErr("give one key source: -cw-file or -%s, not both", name)
	}
	if c.cipher != "csa2" {
		return usageErr("-follow reads DVB-CSA2 control words: use it with -cipher csa2")
	}
	return nil
}

// checkWaitFlags checks -key-wait and -missing-key.
func checkWaitFlags(c *config) error {
	if c.missingKey != "pass" && c.missingKey != "drop" {
		return usageErr("-missing-key: want pass (the packets of a period without its key pass as they came) or drop")
	}
	if d := c.keyWait; d <= 0 || d > time.Hour {
		return usageErr("-key-wait: want a duration from 1ms to 1h, 2s for instance")
	}
	return nil
}

// scsWanted reports whether the flags ask for the SimulCrypt stage.
func (c *config) scsWanted() bool {
	return c.mode == pipeline.Scramble && (c.ecmg != "" || c.isSet("cp-duration") || c.cwLog != "")
}

// anyKeyFlag reports whether a key flag of the input side is given.
func (c *config) anyKeyFlag() bool { return c.givenKeyFlag("") != "" }

// givenKeyFlag returns the name of the first key flag of the input side given, but own, or "":
// a source of keys that come while the stream runs (-key-server, -ecm-xor, -follow) takes no
// other.
func (c *config) givenKeyFlag(own string) string {
	k := c.keys
	for i, v := range []string{k.cw, k.even, k.odd, k.file, k.biss, k.env} {
		if name := keyFlagNames[i]; name != own && v != "" {
			return name
		}
	}
	return ""
}

// keyFlagNames are the names of the string key flags of a side, in cwFlags' order.
var keyFlagNames = []string{"cw", "cw-even", "cw-odd", "cw-file", "biss", "cw-env"}

// givenWaitFlag returns the name of the first flag given of those that say how a crypto period
// waits for its key (-key-wait, -missing-key), or "": only a source of keys that come while
// the stream runs takes them.
func (c *config) givenWaitFlag() string {
	for _, name := range []string{"key-wait", "missing-key"} {
		if c.isSet(name) {
			return name
		}
	}
	return ""
}

// newKeyServer returns the source of the keys that come while the stream runs, as the flags
// name it (a key server, checked by checkKeyServer, an ECM cache without one, or -follow's
// log), or nil; with notes to tell, and what to close once the run is over.
func newKeyServer(c *config) (ks *livekeys.Source, notes []string, done func(), err error) {
	if !c.follow && c.ksURL == nil && c.ecmCache == "" {
		return nil, nil, nil, nil
	}
	o, err := liveKeyOptions(c)
	if err != nil {
		return nil, nil, nil, err
	}
	switch {
	case c.ksURL != nil && c.ecmCache != "":
		w, err := keys.AppendECMCache(c.ecmCache)
		if err != nil {
			return nil, nil, nil, cacheError(c.ecmCache, err)
		}
		st := w.Stats()
		notes = append(notes, fmt.Sprintf("%s: the key server's answers are appended to this ECM cache (it holds %s)", c.ecmCache, report.Plural(st.Entries, "answer")))
		o.Record = w
		return livekeys.Dial(c.ksURL, o), notes, func() { w.Close() }, nil
	case c.ksURL != nil:
		return livekeys.Dial(c.ksURL, o), nil, nil, nil
	case c.ecmCache != "":
		cache, err := keys.LoadECMCache(c.ecmCache)
		if err != nil {
			return nil, nil, nil, cacheError(c.ecmCache, err)
		}
		if cache.Len() == 0 {
			return nil, nil, nil, usageErr("-ecm-cache %s holds no answer: record one first, with -key-server URL -ecm-cache %s", c.ecmCache, c.ecmCache)
		}
		var pids []string
		for _, p := range cache.ECMPIDs() {
			pids = append(pids, fmt.Sprintf("%#04x (CA system %04X)", p.PID, p.CAID))
		}
		notes = append(notes, fmt.Sprintf("%s: ECM cache of %s, from ECM PID %s", c.ecmCache, report.Plural(cache.Len(), "answer"), strings.Join(pids, ", ")))
		if cache.Skipped > 0 {
			// A torn last line is what a crash leaves: said, and not a reason to stop.
			notes = append(notes, fmt.Sprintf("%s (%s not read in all; an ECM on such a line has no key)",
				cache.FirstSkipped, report.Plural(cache.Skipped, "line")))
		}
		return livekeys.FromCache(cache, o), notes, nil, nil
	}
	ks, err = livekeys.Follow(c.keys.file, o)
	if err != nil {
		return nil, nil, nil, usageErr("%v", err)
	}
	return ks, nil, nil, nil
}

// cacheError is the usage error for an ECM cache that cannot be read or appended to.
func cacheError(path string, err error) error {
	if errors.Is(err, keys.ErrNotECMCache) {
		return usageErr("-ecm-cache %s is not an ECM cache (its first line is not %q): name a new file, or one a run with -key-server -ecm-cache wrote", path, keys.ECMCacheHeader)
	}
	if errors.Is(err, fs.ErrNotExist) {
		return usageErr("-ecm-cache: cannot read %v: record the ECM cache first, with -key-server URL -ecm-cache FILE", runfiles.UnwrapPath(err))
	}
	return usageErr("-ecm-cache: %v", runfiles.UnwrapPath(err))
}

// liveKeyOptions reads -key-wait and -missing-key, and what a key source says.
func liveKeyOptions(c *config) (livekeys.Options, error) {
	o := livekeys.Options{Wait: c.keyWait, Drop: c.missingKey == "drop", ShowKeys: c.showKeys, Verbose: c.verbose}
	if c.isSet("service") {
		o.Service = uint16(c.service)
	}
	return o, checkWaitFlags(c)
}

// checkPassthrough makes a -passthrough run one that changes nothing, and refuses what would
// change packets with it.
func checkPassthrough(c *config, _ Env) error {
	if !c.passthrough {
		return nil
	}
	for _, name := range append(append([]string(nil), keyFlagNames...), "key-server", "key-server-env", "ecm-xor", "ecm-cache",
		"follow", "cipher", "reduce-entropy", "rescramble", "key-wait", "missing-key") {
		if c.isSet(name) {
			return usageErr("-passthrough changes no packet: it takes no -%s", name)
		}
	}
	c.mode = pipeline.Passthrough
	return nil
}

// checkServiceOuts reads -out-service, which takes the place of -out.
func checkServiceOuts(c *config, _ Env) error {
	if !c.isSet("out-service") {
		return nil
	}
	if c.isSet("out") {
		return usageErr("-out writes the whole stream and -out-service one stream per service: give one")
	}
	outs, err := parseServiceOuts(c.outService)
	if err != nil {
		return err
	}
	for _, o := range outs {
		if o.dest == c.in && c.in != "-" {
			return usageErr("-out-service: %s is the input", redactItem(o.dest))
		}
		if o.dest == "-" {
			return usageErr("-out-service: service %d to stdout: only one stream can go there; give -out - for the whole stream, or a file", o.number)
		}
	}
	c.serviceOuts = outs
	return nil
}
