package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"syscall"

	"github.com/urfave/cli/v2"

	"github.com/tsdescramble/tsdescramble/csa"
	"github.com/tsdescramble/tsdescramble/keys"
	"github.com/tsdescramble/tsdescramble/pipeline"
	"github.com/tsdescramble/tsdescramble/psi"
)

// Exit statuses (the command-line contract).
const (
	exitOK    = 0
	exitFail  = 1 // runtime failure: I/O, input that is not a transport stream
	exitUsage = 2 // bad flag, bad key, unreadable key file
	exitNoFit = 3 // the keys do not fit the stream: no scrambled PES start decrypted to a valid header
)

// Env is what the command touches of the process, so tests can run it in-process.
type Env struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// IsTerminal reports whether f is a terminal (the progress bar shows only on one).
	IsTerminal func(f *os.File) bool
}

// exitError carries an exit status and a one-line message.
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

func usageErr(format string, a ...any) error {
	return &exitError{code: exitUsage, msg: fmt.Sprintf(format, a...)}
}

func failErr(format string, a ...any) error {
	return &exitError{code: exitFail, msg: fmt.Sprintf(format, a...)}
}

// quietExit ends the run with a status and no message (a reader that closed its pipe).
var quietExit = &exitError{code: exitOK}

// Main runs the command with the given arguments and returns its exit status.
func Main(args []string, env Env) int {
	err := newApp(env).Run(args)
	if err == nil {
		return exitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.msg != "" {
			fmt.Fprintln(env.Stderr, "tsdescramble: "+ee.msg)
		}
		return ee.code
	}
	// Errors from the flag parser are usage errors.
	fmt.Fprintf(env.Stderr, "tsdescramble: %v (see tsdescramble -h)\n", err)
	return exitUsage
}

func newApp(env Env) *cli.App {
	return &cli.App{
		Name:      "tsdescramble",
		Usage:     "descramble DVB-CSA2 scrambled MPEG transport streams",
		UsageText: "tsdescramble [flags]   (reads stdin and writes stdout unless -in/-out are given)",
		Description: `Examples:
   tsdescramble -in scrambled.ts -out clear.ts -cw 11223366445566ff
   cat scrambled.ts | tsdescramble -cw-file keys.txt > clear.ts
   tsdescramble -i rec.ts -o out.ts -cw-even 0102030608090a1b -cw-odd 1112133624252661

A CW file holds one control word per line ('#' starts a comment): the first one applies to
the first crypto period, and each change of scrambling parity moves to the next, cyclically.`,
		HideHelpCommand:      true,
		EnableBashCompletion: true,
		Version:              version(),
		Reader:               env.Stdin,
		Writer:               env.Stderr,
		ErrWriter:            env.Stderr,
		ExitErrHandler:       func(*cli.Context, error) {},
		OnUsageError: func(_ *cli.Context, err error, _ bool) error {
			return usageErr("%v (see tsdescramble -h)", err)
		},
		Flags:    descrambleFlags(),
		Action:   func(c *cli.Context) error { return descramble(c, env) },
		Commands: []*cli.Command{benchCommand(env)},
	}
}

func descrambleFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "in", Aliases: []string{"i"}, Value: "-", TakesFile: true, Usage: "input transport stream `FILE` (- for stdin)"},
		&cli.StringFlag{Name: "out", Aliases: []string{"o"}, Value: "-", TakesFile: true, Usage: "output `FILE` (- for stdout)"},
		&cli.StringFlag{Name: "cw", Usage: "control word for both parities: 16 `HEX` digits (spaces, ':' and '-' allowed)"},
		&cli.StringFlag{Name: "cw-even", Usage: "control word for packets scrambled with the even key (TSC 10): 16 `HEX` digits"},
		&cli.StringFlag{Name: "cw-odd", Usage: "control word for packets scrambled with the odd key (TSC 11): 16 `HEX` digits"},
		&cli.StringFlag{Name: "cw-file", TakesFile: true, Usage: "`FILE` of control words: one per line (used in turn, one per crypto period), EVEN ODD pairs per line, or an OSCam .cwl log; the format is detected"},
		&cli.StringFlag{Name: "biss", Usage: "BISS-1 session word: 12 `HEX` digits (checksum bytes inserted) or 16"},
		&cli.StringFlag{Name: "cw-env", Usage: "read the control word from the environment variable `NAME` (keeps it out of ps)"},
		&cli.StringFlag{Name: "pid", Usage: "descramble only these PIDs: a comma-separated `LIST`, decimal or 0x hex, ranges a-b allowed"},
		&cli.IntFlag{Name: "service", Usage: "descramble only the PIDs of the service with this program `NUMBER` (from the PAT and PMT)"},
		&cli.BoolFlag{Name: "reduce-entropy", Usage: "force CW bytes 3 and 7 to the checksums of bytes 0-2 and 4-6 (TSDuck's default)"},
		&cli.StringFlag{Name: "group", Value: "auto", Usage: "bitslice lanes per batch: 32, 64, 128, 256 or auto (the fastest on this CPU)"},
		&cli.IntFlag{Name: "workers", Value: runtime.GOMAXPROCS(0), DefaultText: "number of CPUs", Usage: "parallel cipher workers"},
		&cli.IntFlag{Name: "batch", Value: pipeline.DefaultBatch, Usage: "packets per unit of work handed to a worker"},
		&cli.StringFlag{Name: "stats", TakesFile: true, Usage: "write the run's statistics as JSON to `FILE` (per PID: packets, parities, descrambled, left clear and why, PES-start checks)"},
		&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "print nothing but errors"},
		&cli.BoolFlag{Name: "verbose", Aliases: []string{"v"}, Usage: "print details of the run"},
		&cli.BoolFlag{Name: "show-keys", Usage: "with -v, print the control words (they are secrets: off by default)"},
	}
}

// keySchedule builds the key schedule from the key flags, and returns notes on the keys
// worth telling the user (never the keys themselves).
func keySchedule(c *cli.Context) (*keys.Schedule, []string, error) {
	cw, even, odd, file := c.String("cw"), c.String("cw-even"), c.String("cw-odd"), c.String("cw-file")
	biss, env := c.String("biss"), c.String("cw-env")
	n := 0
	for _, s := range []string{cw, file, biss, env} {
		if s != "" {
			n++
		}
	}
	if even != "" || odd != "" {
		n++
	}
	switch {
	case n == 0:
		return nil, nil, usageErr("no control word given: use -cw HEX, -cw-even/-cw-odd HEX, -cw-file FILE, -biss HEX or -cw-env NAME")
	case n > 1:
		return nil, nil, usageErr("give one key source: -cw, -cw-even/-cw-odd, -cw-file, -biss or -cw-env, not several")
	}
	reduce := c.Bool("reduce-entropy")
	parse := func(flag, s string) ([]byte, error) {
		if s == "" {
			return nil, nil
		}
		b, err := keys.ParseCW(s, keys.CWSize)
		if err != nil {
			return nil, usageErr("-%s: %v (example: -%s 11223366445566ff)", flag, err, flag)
		}
		if reduce {
			keys.ReduceEntropy(b)
		}
		return b, nil
	}
	switch {
	case cw != "":
		b, err := parse("cw", cw)
		if err != nil {
			return nil, nil, err
		}
		return keys.NewFixed(b, b), nil, nil
	case biss != "":
		b, err := keys.ParseBISS(biss)
		if err != nil {
			return nil, nil, usageErr("-biss: %v (example: -biss 112233445566, or the 16-digit form 11223366445566ff)", err)
		}
		if reduce {
			keys.ReduceEntropy(b)
		}
		return keys.NewFixed(b, b), nil, nil
	case env != "":
		b, err := keys.FromEnv(env, keys.CWSize)
		if err != nil {
			return nil, nil, usageErr("-cw-env %s: %v", env, err)
		}
		if reduce {
			keys.ReduceEntropy(b)
		}
		return keys.NewFixed(b, b), nil, nil
	case file != "":
		kf, err := keys.LoadKeyFile(file, keys.CWSize)
		if err != nil {
			var le *keys.LineError
			if errors.As(err, &le) {
				return nil, nil, usageErr("%v", err)
			}
			return nil, nil, usageErr("cannot read the CW file: %v", unwrapPath(err))
		}
		if reduce {
			for _, b := range kf.Keys() {
				keys.ReduceEntropy(b)
			}
		}
		notes := append([]string{fmt.Sprintf("%s: %d control words, %s", file, len(kf.Keys()), kf.Format)}, kf.Notes...)
		return kf.Schedule(), notes, nil
	default:
		e, err := parse("cw-even", even)
		if err != nil {
			return nil, nil, err
		}
		o, err := parse("cw-odd", odd)
		if err != nil {
			return nil, nil, err
		}
		return keys.NewFixed(e, o), nil, nil
	}
}

func descramble(c *cli.Context, env Env) error {
	if c.NArg() > 0 {
		return usageErr("unexpected argument %q: give the input with -in FILE", c.Args().First())
	}
	sched, notes, err := keySchedule(c)
	if err != nil {
		return err
	}
	var pids []uint16
	if s := c.String("pid"); s != "" {
		if pids, err = psi.ParsePIDList(s); err != nil {
			return usageErr("-pid: %v (example: -pid 0x100,0x101 or -pid 256-259)", err)
		}
	}
	service := 0
	if c.IsSet("service") {
		service = c.Int("service")
		if service < 1 || service > 0xFFFF {
			return usageErr("-service %d: want a program number from 1 to 65535 (tsdescramble probe lists them)", service)
		}
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
	quiet, verbose := c.Bool("quiet"), c.Bool("verbose")
	logf := func(msg string) {
		if !quiet {
			fmt.Fprintln(env.Stderr, "tsdescramble: "+msg)
		}
	}
	for _, n := range notes {
		logf(n)
	}
	if verbose && !quiet {
		describeKeys(env.Stderr, sched, c.Bool("show-keys"))
	}

	inPath, outPath := c.String("in"), c.String("out")
	if inPath != "-" && outPath != "-" && sameFile(inPath, outPath) {
		return usageErr("-in and -out name the same file %s: write the output elsewhere", outPath)
	}

	in, inSize, err := openInput(inPath, env)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := openOutput(outPath, env)
	if err != nil {
		return err
	}

	ctx, sig := interruptible()
	defer sig.stop()

	bar := newProgress(env, inSize, quiet)
	st, runErr := pipeline.Run(ctx, in, out.w, pipeline.Options{
		Keys:     sched,
		Workers:  c.Int("workers"),
		Batch:    c.Int("batch"),
		Lanes:    lanes,
		Progress: bar.set,
		Log:      logf,
		PIDs:     pids,
		Service:  service,
	})
	bar.finish()
	closeErr := out.close(runErr == nil, st.BytesOut > 0)

	if !quiet && (runErr == nil || st.Packets > 0) {
		printSummary(env.Stderr, &st, verbose)
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
		return &exitError{code: 128 + int(s), msg: fmt.Sprintf("stopped by %s after writing %d packets", name, st.BytesOut/int64(max(st.Framing.Size, 1)))}
	case runErr != nil:
		return runError(runErr, inPath, outPath, out)
	case closeErr != nil:
		return failErr("cannot write %s: %v", outPath, closeErr)
	case st.PESGood == 0 && st.PESBad > 0:
		return &exitError{code: exitNoFit, msg: fmt.Sprintf(
			"the keys do not fit this stream: none of the %d scrambled PES starts descrambled to a valid PES header "+
				"(check the control words, their parity and order, and -reduce-entropy); the output was written anyway", st.PESBad)}
	}
	return nil
}

// runError turns an error of the pipeline into the message and exit status of the contract.
func runError(err error, inPath, outPath string, out *output) error {
	name := inPath
	if name == "-" {
		name = "stdin"
	}
	saved := ""
	if out.partial != "" {
		saved = "; the packets processed so far are in " + out.partial
	}
	switch {
	case errors.Is(err, pipeline.ErrNoSync):
		return failErr("%s: %v%s", name, err, saved)
	case errors.Is(err, syscall.EPIPE) && outPath == "-":
		// The reader of our stdout went away (head, a closed player): nothing is wrong here.
		return quietExit
	case errors.As(err, new(*writeError)):
		return failErr("%v%s", err, saved)
	}
	return failErr("cannot read %s: %v%s", name, err, saved)
}

// parseGroup reads the -group flag: a lane count this CPU supports, or auto (0).
func parseGroup(s string) (int, error) {
	if s == "auto" {
		return 0, nil
	}
	n, err := strconv.Atoi(s)
	if err == nil && slices.Contains(csa.Available(), n) {
		return n, nil
	}
	return 0, usageErr("-group %s: want one of %v or auto", s, csa.Available())
}

func describeKeys(w io.Writer, s *keys.Schedule, show bool) {
	for i, cw := range s.CWs() {
		note := ""
		if !keys.ChecksumOK(cw) {
			note = " (bytes 3 and 7 are not the checksums of 0-2 and 4-6; all 64 bits are used as given, see -reduce-entropy)"
		}
		if show {
			fmt.Fprintf(w, "tsdescramble: CW %d: %x%s\n", i+1, cw, note)
		} else {
			fmt.Fprintf(w, "tsdescramble: CW %d loaded%s\n", i+1, note)
		}
	}
}

// signals turns SIGINT and SIGTERM into the cancellation of a run and remembers which came.
type signals struct {
	c      chan os.Signal
	cancel context.CancelFunc
	mu     sync.Mutex
	got    os.Signal
}

func interruptible() (context.Context, *signals) {
	ctx, cancel := context.WithCancel(context.Background())
	s := &signals{c: make(chan os.Signal, 1), cancel: cancel}
	signal.Notify(s.c, os.Interrupt, syscall.SIGTERM)
	go func() {
		select {
		case sig := <-s.c:
			s.mu.Lock()
			s.got = sig
			s.mu.Unlock()
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, s
}

func (s *signals) caught() os.Signal {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.got
}

func (s *signals) stop() {
	signal.Stop(s.c)
	s.cancel()
}

// sameFile reports whether two paths name the same file (or would, once created).
func sameFile(a, b string) bool {
	if filepath.Clean(a) == filepath.Clean(b) {
		return true
	}
	sa, err1 := os.Stat(a)
	sb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(sa, sb)
}

func openInput(path string, env Env) (io.ReadCloser, int64, error) {
	if path == "-" {
		size := int64(-1)
		if f, ok := env.Stdin.(*os.File); ok {
			if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
				size = fi.Size()
			}
		}
		return io.NopCloser(env.Stdin), size, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, failErr("cannot open the input: %v", unwrapPath(err))
	}
	size := int64(-1)
	if fi, err := f.Stat(); err == nil {
		if fi.IsDir() {
			f.Close()
			return nil, 0, failErr("cannot read the input: %s is a directory", path)
		}
		if fi.Mode().IsRegular() {
			size = fi.Size()
		}
	}
	return f, size, nil
}

func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: %v", pe.Path, pe.Err)
	}
	return err
}

func init() {
	// urfave/cli's default -v for the version would take -v from -verbose.
	cli.VersionFlag = &cli.BoolFlag{Name: "version", Usage: "print the version and the engine this CPU runs"}
}
