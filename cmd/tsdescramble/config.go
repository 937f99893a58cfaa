package main

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/tsdescramble/tsdescramble/pipeline"
	"github.com/tsdescramble/tsdescramble/scrambling"
)

// config is what a run of the descrambler or the scrambler was asked to do: the values of its
// flags and nothing more. Each flag writes its field through its Destination, so a flag names
// its field once, where it is defined; a function reading every flag by name would repeat each
// name and type a second time. A batch's manifest line writes the same fields through the same
// flags (decodeJob), so the command line and the manifest have one parser.
type config struct {
	mode pipeline.Mode

	in, out                    string
	latency, duration, timeout time.Duration
	endOnIdle                  time.Duration
	pace                       bool
	packets                    int64

	keys, rekeys            cwFlags // the input's key flags, and those of -rescramble's output
	cipher                  string
	keyServer, keyServerEnv string
	keyWait                 time.Duration
	follow                  bool
	missingKey, ecmXor      string
	ecmCache                string
	passthrough             bool
	outService              string
	serviceOuts             []serviceOut // -out-service, parsed (validate), and -config's services
	serviceKeys             keyList      // -keys SERVICE=SOURCE, as given
	configFile              string
	cliServiceOuts          []serviceOut // -out-service as given, before -config's services join it (a reload merges them again)
	multiplex               bool         // -keys or -config: each service its keys and output (multiplex.go)

	pid     string
	service int

	rescramble                     string
	rescrambleCPPackets, cpPackets int
	cpDuration                     time.Duration
	ecmg, superCASID, ecmPID       string
	accessCriteria, ecmWait        string
	cwLog                          string
	ecmgVersion                    int

	group                    string
	workers, batch           int
	stats                    string
	statsInterval            time.Duration
	quiet, verbose, showKeys bool
	metrics, logFormat       string
	profile                  profileFiles

	given   map[string]bool // the flags given, by their first name
	args    []string        // what is left after the flags: nothing, when the command line is right
	cmdline []string        // the command line without the program's name, for messages
	// commands and flags are the app's command names and the command's flags, to suggest one
	// for a mistyped argument.
	commands []string
	flags    []cli.Flag

	checked // what validate reads the flags as
}

// cwFlags are the key flags of one side of a run (see keySourceFlags).
type cwFlags struct {
	cw, even, odd, file, biss, env string
	reduce                         bool
}

// profileFiles are the files of the profiling flags.
type profileFiles struct{ cpu, mem string }

// isSet reports whether the flag of that first name was given.
func (c *config) isSet(name string) bool { return c.given[name] }

// readGiven records which of flags the command line gave, and what it left over.
func (c *config) readGiven(ctx *cli.Context, flags []cli.Flag) {
	c.given = map[string]bool{}
	for _, f := range flags {
		if name := f.Names()[0]; ctx.IsSet(name) {
			c.given[name] = true
		}
	}
	c.args = ctx.Args().Slice()
	c.cmdline, _ = ctx.App.Metadata[argsKey].([]string)
	c.flags = flags
	if !ctx.App.HideVersion {
		c.flags = append(slices.Clip(flags), cli.VersionFlag)
	}
	c.commands = c.commands[:0]
	for _, cmd := range ctx.App.VisibleCommands() {
		c.commands = append(c.commands, cmd.Name)
	}
}

// ioFlags, selectionFlags and tuningFlags are shared by the descrambler and the scrambler.
func ioFlags(c *config) []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "in", Aliases: []string{"i"}, Value: "-", Destination: &c.in, TakesFile: true, Category: catIO, Usage: "read the transport stream from `FILE` (- for stdin; absent: stdin, unless it is a terminal), or receive it on udp://@:PORT, udp://[SOURCE@]GROUP:PORT, rtp://..., or read it from http(s)://... (a stream, or an HLS playlist: .m3u8, ?variant=N; a connection open with no byte for 5 s, or three times the stream's longest pause, is dropped: a live stream reconnects, a file resumes where it stopped), or over SRT from srt://HOST:PORT (call) or srt://:PORT (listen) (?latency=MS&passphrase=...; builds with -tags srt)"},
		&cli.StringFlag{Name: "out", Aliases: []string{"o"}, Value: "-", Destination: &c.out, TakesFile: true, Category: catIO, Usage: "write the stream to `FILE` (- for stdout; absent: stdout, unless it is a terminal), or send it to udp://HOST:PORT, rtp://HOST:PORT (?ttl=N&pkts=N&iface=NAME...), or serve it to HTTP clients at http://[HOST]:PORT/PATH (http://:PORT/PATH: on every interface), or send it over SRT to srt://HOST:PORT (call) or srt://:PORT (listen for a caller)"},
		&cli.StringFlag{Name: "out-service", Destination: &c.outService, Category: catIO, Usage: "write each service's stream, a single-program stream with its own PAT, its PMT and PIDs, its SDT entry and EIT, to an output of its own, instead of -out: `SERVICE=DEST,...`, DEST a file, a pipe or a network address as -out takes (1=one.ts,2=udp://239.1.1.2:5000)"},
	}
}

func liveFlags(c *config) []cli.Flag {
	return []cli.Flag{
		&cli.DurationFlag{Name: "latency", Value: defaultLatency, Destination: &c.latency, Category: catLive, DefaultText: "50ms; for a regular file 0, full units only",
			Usage: "a packet leaves at most `DURATION` after it came in, in a partial unit of work and datagram if need be"},
		&cli.BoolFlag{Name: "pace", Destination: &c.pace, Category: catLive,
			Usage: "send at the rate the stream's PCR says it plays (default: on from a regular file to an address; -pace=false sends as fast as it reads)"},
		&cli.DurationFlag{Name: "duration", Destination: &c.duration, Category: catLive, Usage: "end the run, as at the end of the input, after `DURATION` (a live input never ends)"},
		&cli.Int64Flag{Name: "packets", Destination: &c.packets, Category: catLive, Usage: "end the run, as at the end of the input, after `N` packets"},
		&cli.DurationFlag{Name: "timeout", Destination: &c.timeout, Category: catLive, Usage: "fail (exit 1) when the input sends nothing for `DURATION` (default: wait for ever), whatever reconnections an HTTP input tries meanwhile"},
		&cli.DurationFlag{Name: "end-on-idle", Destination: &c.endOnIdle, Category: catLive, Usage: "end the run as at the end of the input (exit 0) when a network input sends nothing for `DURATION`: a feed that stops when it is done; the input bitrate leaves that silence out"},
	}
}

// keyFlags are the flags that give control words, with the input's scrambling system; the
// descrambler and the scrambler share them.
func keyFlags(c *config) []cli.Flag {
	return append(keySourceFlags(&c.keys, "", catKeys, ""),
		&cli.StringFlag{Name: "cipher", Value: "csa2", Destination: &c.cipher, Category: catScrambling, Usage: "scrambling `SYSTEM`: " + strings.Join(scrambling.Names(), ", ")})
}

// keySourceFlags defines the key flags once for every side that takes keys: the input's (no
// prefix) and a rescrambling run's output ("rescramble-"), whose usage lines end with what.
func keySourceFlags(k *cwFlags, prefix, category, what string) []cli.Flag {
	flag := func(name string, dst *string, usage string, file bool) cli.Flag {
		return &cli.StringFlag{Name: prefix + name, Destination: dst, TakesFile: file, Category: category, Usage: usage + what}
	}
	return []cli.Flag{
		flag("cw", &k.cw, "control word for both parities: `HEX` digits (16 for csa2, 32 for AES, 32/48/64 for dfc and serpent); spaces, ':' and '-' allowed", false),
		flag("cw-even", &k.even, "control word for the even parity (TSC 10): `HEX` digits", false),
		flag("cw-odd", &k.odd, "control word for the odd parity (TSC 11): `HEX` digits", false),
		flag("cw-file", &k.file, "`FILE` of control words: one per line (used in turn, one per crypto period), EVEN ODD pairs per line, or an OSCam .cwl log; the format is detected", true),
		flag("biss", &k.biss, "BISS-1 session word: 12 `HEX` digits (checksum bytes inserted) or 16", false),
		flag("cw-env", &k.env, "read the control word from the environment variable `NAME` (keeps it out of ps)", false),
		&cli.BoolFlag{Name: prefix + "reduce-entropy", Destination: &k.reduce, Category: category, Usage: "force CW bytes 3 and 7 to the checksums of bytes 0-2 and 4-6 (TSDuck's default; csa2 only)" + what},
	}
}

// keyServerFlags are the flags of keys that come from a key server while the stream runs.
func keyServerFlags(c *config) []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "key-server", Destination: &c.keyServer, Category: catKeys, Usage: "take the keys from a key server that answers the stream's ECMs: `URL` cs378x://USER:PASS@HOST:PORT[?caid=HEX&ecm-pid=PID] (camd35 over TCP, as OSCam serves it), newcamd://USER:PASS@HOST:PORT[?key=HEX&provid=HEX] (newcamd 525: key= the port's DES key in 28 hex digits, default 0102030405060708091011121314; caid= and ecm-pid= as for cs378x) or dvbapi://HOST:PORT (OSCam's DVBAPI network protocol)"},
		&cli.StringFlag{Name: "key-server-env", Destination: &c.keyServerEnv, Category: catKeys, Usage: "read the -key-server URL from the environment variable `NAME` (keeps the password out of ps)"},
		&cli.DurationFlag{Name: "key-wait", Value: 2 * time.Second, Destination: &c.keyWait, Category: catKeys, Usage: "how long a crypto period waits for its key from the key server (`DURATION`), in all: the server's own timeouts, reconnects and replays fit inside it"},
		&cli.BoolFlag{Name: "follow", Destination: &c.follow, Category: catKeys, Usage: "with -cw-file, read an OSCam .cwl log (or EVEN ODD pairs) that another program is still writing, like tail -f: each key applies from the next crypto period of its parity"},
		&cli.StringFlag{Name: "missing-key", Value: "pass", Destination: &c.missingKey, Category: catKeys, Usage: "what happens to the packets of a period whose key did not come in time: `pass` them as they came, or drop them (counted either way)"},
		&cli.BoolFlag{Name: "passthrough", Destination: &c.passthrough, Category: catKeys, Usage: "change no packet: take the input to the output as it came, with the statistics and live figures, to record a feed or see what it carries (no key)"},
		&cli.StringFlag{Name: "ecm-cache", Destination: &c.ecmCache, TakesFile: true, Category: catKeys, Usage: "with -key-server, append each ECM the server answers and its CWs to `FILE`, an ECM cache (created 0600: keys are secrets); without, take the keys from the answers it holds, without a server, at the speed of the file (an ECM not in it has no key)"},
	}
}

func selectionFlags(c *config) []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "pid", Destination: &c.pid, Category: catSelection, Usage: "only these PIDs: a comma-separated `LIST`, decimal or 0x hex, ranges a-b allowed"},
		&cli.IntFlag{Name: "service", Destination: &c.service, Category: catSelection, Usage: "only the PIDs of the service with this program `NUMBER` (from the PAT and PMT)"},
	}
}

func tuningFlags(c *config) []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "group", Value: "auto", Destination: &c.group, Category: catTuning, Usage: "csa2 bitslice lanes per batch: `N` = " + groupChoices() + ", or auto (the fastest on this CPU)"},
		&cli.IntFlag{Name: "workers", Value: runtime.GOMAXPROCS(0), Destination: &c.workers, DefaultText: "number of CPUs", Category: catTuning, Usage: "`N` parallel cipher workers"},
		&cli.IntFlag{Name: "batch", Value: pipeline.DefaultBatch, Destination: &c.batch, Category: catTuning, Usage: fmt.Sprintf("`N` packets per unit of work handed to a worker (with -workers, cut down, with a note, where the work in flight would take more than %d MiB)", pipeline.MaxMemory>>20)},
		&cli.StringFlag{Name: "stats", Destination: &c.stats, TakesFile: true, Category: catReporting, Usage: "write the run's statistics as JSON to `FILE` (per PID: packets, parities, descrambled, left clear and why, PES-start checks)"},
		&cli.DurationFlag{Name: "stats-interval", Destination: &c.statsInterval, Category: catReporting, Usage: "with -stats, rewrite the file every `DURATION` while the run goes on (replaced at once: a monitor never reads half of one)"},
		&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Destination: &c.quiet, Category: catReporting, Usage: "print nothing but errors"},
		&cli.BoolFlag{Name: "verbose", Aliases: []string{"v"}, Destination: &c.verbose, Category: catReporting, Usage: "print details of the run"},
		&cli.StringFlag{Name: "metrics", Destination: &c.metrics, Category: catReporting, Usage: "serve Prometheus metrics of the run on `ADDR` ([HOST]:PORT): /metrics, and /healthz (200 while packets come and the keys fit); at most 256 connections, an idle one closed after 30 s. ADDR out, or the very address of -out http://HOST:PORT/PATH, serves them on the HTTP output's listener beside the stream, whose PATH must then be neither"},
		&cli.StringFlag{Name: "log-format", Value: "text", Destination: &c.logFormat, Category: catReporting, Usage: "messages on stderr as `FORMAT`: text, or json (one object a line)"},
		&cli.BoolFlag{Name: "show-keys", Destination: &c.showKeys, Category: catReporting, Usage: "with -v, print the control words (they are secrets: off by default)"},
	}
}

// profileFlags are the profiling flags Go programs conventionally have, so that anyone can
// measure where the shipped binary spends its time on their own machine and stream.
func profileFlags(p *profileFiles) []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "cpuprofile", Destination: &p.cpu, TakesFile: true, Category: catReporting, Usage: "write a CPU profile of the run to `FILE` (read it with go tool pprof)"},
		&cli.StringFlag{Name: "memprofile", Destination: &p.mem, TakesFile: true, Category: catReporting, Usage: "write a heap profile at the end of the run to `FILE` (read it with go tool pprof)"},
	}
}

// simulcryptFlags are the scrambler's flags for crypto periods in time and a SimulCrypt ECMG.
func simulcryptFlags(c *config) []cli.Flag {
	return []cli.Flag{
		&cli.DurationFlag{Name: "cp-duration", Destination: &c.cpDuration, Category: catScrambling, Usage: "crypto period of `DURATION` in stream time, from the PCRs (the wall clock for a network input) (e.g. 10s): a fresh random CW each unless key flags give them"},
		&cli.StringFlag{Name: "ecmg", Destination: &c.ecmg, Category: catScrambling, Usage: "act as a DVB SimulCrypt SCS: get the ECMs from the ECMG at `HOST:PORT` (ETSI TS 103 197) and put them in the stream"},
		&cli.StringFlag{Name: "super-cas-id", Destination: &c.superCASID, Category: catScrambling, Usage: "with -ecmg: the Super_CAS_id, 8 `HEX` digits (CA_system_id then CA_subsystem_id); the PMT's CA_descriptor takes the CA_system_id"},
		&cli.StringFlag{Name: "ecm-pid", Destination: &c.ecmPID, Category: catScrambling, Usage: "with -ecmg: the `PID` of the ECMs, decimal or 0x hex"},
		&cli.StringFlag{Name: "access-criteria", Destination: &c.accessCriteria, Category: catScrambling, Usage: "with -ecmg: access criteria sent with every CW, `HEX` bytes"},
		&cli.IntFlag{Name: "ecmg-version", Value: 2, Destination: &c.ecmgVersion, Category: catScrambling, Usage: "with -ecmg: ECMG⇔SCS protocol `VERSION`, 2 or 3"},
		&cli.StringFlag{Name: "ecm-wait", Value: defaultECMWait, Destination: &c.ecmWait, Category: catScrambling, Usage: "with -ecmg: what the stream does before its first ECM, `hold|clear[:DURATION]`: no packet goes out scrambled before an ECM with its CW, so the stream waits up to DURATION of wall time (the input waits too); then hold stops the run, clear sends the stream clear, with no CA_descriptor, until the ECM comes; either way the exit status is 1"},
		&cli.StringFlag{Name: "cw-log", Destination: &c.cwLog, TakesFile: true, Category: catScrambling, Usage: "with -cp-duration or -ecmg: write each crypto period's CW to `FILE` as an OSCam .cwl log (created 0600: keys are secrets), for -cw-file later"},
	}
}

// descrambleFlags are the descrambler's flags, writing into c.
func descrambleFlags(c *config) []cli.Flag {
	f := append(ioFlags(c), liveFlags(c)...)
	f = append(f, keyFlags(c)...)
	f = append(f, keyServerFlags(c)...)
	f = append(f, multiplexFlags(c)...)
	f = append(f, selectionFlags(c)...)
	f = append(f,
		&cli.StringFlag{Name: "ecm-xor", Destination: &c.ecmXor, Category: catKeys, Usage: "read the CWs from the ECMs of a test CA system (VideoLAN's example ECMG): its 16 `HEX` digit XOR key"},
		&cli.StringFlag{Name: "rescramble", Destination: &c.rescramble, Category: catScrambling, Usage: "scramble again, in the same pass, with this `SYSTEM` (csa2, dvb-cissa, atis-idsa, dfc, serpent)"},
		&cli.IntFlag{Name: "rescramble-cp-packets", Destination: &c.rescrambleCPPackets, Category: catScrambling, Usage: "rescrambling crypto period: `N` packets, the parity alternating (0: one period)"},
	)
	f = append(f, keySourceFlags(&c.rekeys, "rescramble-", catScrambling, " (of the rescrambled output)")...)
	f = append(f, tuningFlags(c)...)
	return append(f, profileFlags(&c.profile)...)
}

// scrambleFlags are the scrambler's flags, writing into c.
func scrambleFlags(c *config) []cli.Flag {
	f := append(ioFlags(c), liveFlags(c)...)
	f = append(f, keyFlags(c)...)
	f = append(f, selectionFlags(c)...)
	f = append(f, &cli.IntFlag{Name: "cp-packets", Destination: &c.cpPackets, Category: catScrambling, Usage: "crypto period of `N` packets of the scrambled PIDs: the parity alternates and a CW list advances at each (0: one even period)"})
	f = append(f, simulcryptFlags(c)...)
	f = append(f, tuningFlags(c)...)
	return append(f, profileFlags(&c.profile)...)
}

// flagsOf returns the flags of the command of mode, writing into c.
func flagsOf(mode pipeline.Mode, c *config) []cli.Flag {
	if mode == pipeline.Scramble {
		return scrambleFlags(c)
	}
	return descrambleFlags(c)
}

// setDefaults writes each flag's default into its field, as the parser does before it parses.
func setDefaults(flags []cli.Flag) {
	for _, f := range flags {
		switch f := f.(type) {
		case *cli.StringFlag:
			*f.Destination = f.Value
		case *cli.BoolFlag:
			*f.Destination = f.Value
		case *cli.IntFlag:
			*f.Destination = f.Value
		case *cli.Int64Flag:
			*f.Destination = f.Value
		case *cli.DurationFlag:
			*f.Destination = f.Value
		}
	}
}
