package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/tsdescramble/tsdescramble/internal/runfiles"
	"github.com/tsdescramble/tsdescramble/srt"
	"github.com/tsdescramble/tsdescramble/ts"
	"github.com/tsdescramble/tsdescramble/web"

	"github.com/urfave/cli/v2"

	"github.com/tsdescramble/tsdescramble/csa"
	"github.com/tsdescramble/tsdescramble/keys"
	"github.com/tsdescramble/tsdescramble/live"
	"github.com/tsdescramble/tsdescramble/pipeline"
	"github.com/tsdescramble/tsdescramble/probe"
	"github.com/tsdescramble/tsdescramble/scs"
)

// Exit statuses (the command-line contract).
const (
	exitOK    = 0
	exitFail  = 1 // runtime failure: I/O, input that is not a transport stream
	exitUsage = 2 // bad flag, bad key, unreadable key file
	exitNoFit = 3 // the keys do not fit the stream: no scrambled PES start decrypted to a valid header
	// exitJob is a batch's alone: a job's own values are wrong (a key file or input that is not
	// there, a bad CW, an index past the manifest's end), while the manifest and the batch's flags
	// are right. On the command line the same mistakes are usage errors (2); in a batch, 2 would
	// stop every job of the manifest for one line's mistake.
	exitJob = 4
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
	app := newApp(env)
	if len(args) > 0 {
		app.Metadata = map[string]any{argsKey: args[1:]}
	}
	return errorStatus(app.Run(args), env)
}

func newApp(env Env) *cli.App {
	c := &config{mode: pipeline.Descramble}
	flags := descrambleFlags(c)
	return &cli.App{
		Name:      "tsdescramble",
		Usage:     "descramble DVB-CSA2 scrambled MPEG transport streams",
		UsageText: "tsdescramble [flags]\ntsdescramble COMMAND [flags] [ARGS]",
		Description: `Descrambles -in (or stdin, when it is not a terminal) to -out (or stdout, when it is not a
terminal). Flags go after the command's name; tsdescramble help COMMAND shows a command's.
Examples:
   tsdescramble -in scrambled.ts -out clear.ts -cw 11223366445566ff
   cat scrambled.ts | tsdescramble -cw-file keys.txt > clear.ts
   tsdescramble -i rec.ts -o out.ts -cw-even 0102030608090a1b -cw-odd 1112133624252661
   tsdescramble -i feed.ts -o clear.ts -biss 112233445566 -service 2
   tsdescramble -i rec.ts -o out.ts -cw-file oscam.cwl -stats run.json
   tsdescramble -i csa.ts -o s.ts -cw-file keys.txt -rescramble serpent -rescramble-cw-file k2

A CW file holds one control word per line, EVEN ODD pairs, or an OSCam .cwl log ('#' starts a
comment): the first key applies to the first crypto period, and each change of scrambling parity
moves to the next, cyclically; the list is aligned to the stream on its first PES start.`,
		EnableBashCompletion: true,
		Version:              version(),
		Reader:               env.Stdin,
		// Help, the version and bench's results are what was asked for: they go to stdout, so
		// that tsdescramble -h | less shows them. stdout carries TS data only when a run
		// writes its stream there, and then nothing else.
		Writer:         env.Stdout,
		ErrWriter:      env.Stderr,
		ExitErrHandler: func(*cli.Context, error) {},
		OnUsageError:   onUsageError,
		// urfave/cli adds -h only to an app without a help command of its own (helpCommand).
		Flags:    append(flags, cli.HelpFlag),
		Action:   processAction(env, c, flags),
		Commands: commands(scrambleCommand(env), probeCommand(env), benchCommand(env), batchCommand(env)),
	}
}

// runError turns an error of the pipeline into the message and exit status of the contract.
func runError(err error, inPath string, out *output) error {
	name := redacted(inPath) // a password in a URL, an SRT passphrase, is never printed
	if name == "-" {
		name = "stdin"
	}
	saved := ""
	if out.partial() != "" {
		saved = "; the packets processed so far are in " + out.partial()
	}
	switch {
	case errors.Is(err, ts.ErrNoSync):
		return failErr("%s: %v%s", name, err, saved)
	case errors.Is(err, probe.ErrEmpty):
		return failErr("%s: %v", name, err)
	case errors.Is(err, scs.ErrECMPIDInUse):
		return failErr("-ecm-pid: %v%s", err, saved)
	case errors.Is(err, scs.ErrNoECM):
		// -ecm-wait hold: the run stops rather than scramble with a CW no receiver can learn.
		return failErr("-ecm-wait: %v: the stream stops rather than go out scrambled without its ECM (-ecm-wait clear sends it clear meanwhile)%s", err, saved)
	case errors.Is(err, syscall.EPIPE) && out.stdout:
		// The reader of our stdout went away (head, a closed player): nothing is wrong here.
		return quietExit
	case errors.As(err, new(*writeError)):
		return failErr("%v%s", err, saved)
	case errors.Is(err, live.ErrIdle):
		// -timeout: the message names the address and what to check.
		return failErr("%v%s", err, saved)
	}
	return failErr("cannot read %s: %v%s", name, err, saved)
}

// groupChoices lists the -group widths this CPU runs, as csa reports them: "32, 64, 128, 256".
func groupChoices() string {
	var ws []string
	for _, n := range csa.Available() {
		ws = append(ws, strconv.Itoa(n))
	}
	return strings.Join(ws, ", ")
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
	var lanes []string
	for _, n := range csa.Available() {
		lanes = append(lanes, strconv.Itoa(n))
	}
	return 0, usageErr("-group: want %s or auto", strings.Join(lanes, ", "))
}

func describeKeys(w io.Writer, list [][]byte, show bool) {
	for i, cw := range list {
		note := ""
		if len(cw) == keys.CWSize && !keys.ChecksumOK(cw) {
			note = " (bytes 3 and 7 are not the checksums of 0-2 and 4-6; all 64 bits are used as given, see -reduce-entropy)"
		}
		if show {
			fmt.Fprintf(w, "tsdescramble: CW %d: %x%s\n", i+1, cw, note)
		} else {
			fmt.Fprintf(w, "tsdescramble: CW %d loaded%s\n", i+1, note)
		}
	}
}

// input is the stream a run reads, with a way to end a read that waits on an idle pipe.
type input struct {
	io.Reader              // the bytes: a file, a pipe or a socket
	src       *ts.Source   // its packets, for the look-ahead and the run (source)
	size      int64        // bytes, or -1 when not known (a pipe)
	file      *os.File     // the file to close, if this run opened one
	poll      *os.File     // a pollable descriptor of a pipe, if reads go through one
	live      *live.Reader // a network input: UDP or RTP
	web       *web.Reader  // a network input: HTTP or HLS
	srt       *srt.Reader  // a network input: SRT
	first     atomic.Int64 // when the run got its first bytes, in Unix nanoseconds (0: not yet)
	// With -end-on-idle: when the last bytes came, in Unix nanoseconds, and whether the
	// input ended on a silence, which the input bitrate leaves out.
	last      atomic.Int64
	idleEnded atomic.Bool
	closed    bool
}

// interrupt makes a read that waits for more input return at once, so that a run that must
// stop does not hang on an idle pipe.
func (in *input) interrupt() {
	if in.live != nil {
		// Read returns what the socket gave, then the end of the input.
		in.live.Close()
	}
	if in.web != nil {
		in.web.Close() // likewise
	}
	if in.srt != nil {
		in.srt.Close() // likewise
	}
	if in.poll != nil {
		in.poll.SetReadDeadline(time.Now())
	}
}

// network reports whether the input is a network end (UDP, RTP, HTTP, HLS, SRT): its packets
// come at the pace of the source, which a run must keep up with and never hold back for long.
func (in *input) network() bool { return in.live != nil || in.web != nil || in.srt != nil }

// setIdleTimeout makes the input fail when its source sends nothing for d (-timeout).
func (in *input) setIdleTimeout(d time.Duration) {
	if in.live != nil {
		in.live.SetIdleTimeout(d)
	}
	if in.web != nil {
		in.web.SetIdleTimeout(d)
	}
	if in.srt != nil {
		in.srt.SetIdleTimeout(d)
	}
}

// source returns the one reader of the input's packets, which the look-ahead for the PMTs
// (peekServices) and the run share: what the look-ahead read, the run reads again from it.
func (in *input) source() *ts.Source {
	if in.src == nil {
		in.src = ts.NewSource(in.Reader, ts.SourceOptions{Interrupt: in.interrupt})
	}
	return in.src
}

func (in *input) Close() {
	if in.src != nil {
		in.src.Close()
	}
	if in.live != nil {
		in.live.Close()
	}
	if in.web != nil {
		in.web.Close()
	}
	if in.srt != nil {
		in.srt.Close()
	}
	if in.poll != nil {
		in.poll.Close()
	}
	if in.file != nil {
		in.file.Close()
	}
}

// openRunInput opens the input of a run: with -end-on-idle, a network input's silence reads
// as its end.
func openRunInput(c *config, env Env) (*input, error) {
	in, err := openInput(c.in, env)
	if err == nil && c.endOnIdle > 0 && in.network() {
		in.endOnIdle()
	}
	return in, err
}

func openInput(path string, env Env) (*input, error) {
	if live.IsAddress(path) {
		return openLiveInput(path)
	}
	if web.IsURL(path) {
		return openWebInput(path)
	}
	if srt.IsURL(path) {
		return openSRTInput(path, env)
	}
	in := &input{Reader: env.Stdin, size: -1}
	f, ok := env.Stdin.(*os.File)
	if path != "-" {
		var err error
		if f, err = os.Open(path); err != nil {
			return nil, failErr("cannot open the input: %v", runfiles.UnwrapPath(err))
		}
		in.Reader, in.file, ok = f, f, true
	}
	if !ok {
		return in, nil
	}
	if fi, err := f.Stat(); err == nil {
		if fi.IsDir() {
			in.Close()
			return nil, failErr("cannot read the input: %s is a directory", path)
		}
		if fi.Mode().IsRegular() {
			in.size = fi.Size()
		}
	}
	if p := pollable(f); p != nil {
		in.Reader, in.poll = p, p
	}
	return in, nil
}

// pathReason is the reason of a path error without the path, for a message that names the
// path already.
func pathReason(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// endOnIdle makes the idle error of a network input (-end-on-idle, set by setIdleTimeout) read
// as the end of the input, so that the run ends as a file's does: everything written, exit 0.
// The source must not have been made yet.
func (in *input) endOnIdle() {
	e := idleEnd{r: in.Reader, in: in}
	if br, ok := in.Reader.(ts.BlockReader); ok {
		in.Reader = &idleEndBlocks{e, br}
		return
	}
	in.Reader = &e
}

// idleEnd is an input whose silence is its end (input.endOnIdle).
type idleEnd struct {
	r  io.Reader
	in *input
}

func (e *idleEnd) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	return n, e.end(n, err)
}

// end notes when bytes came, and turns the idle error into io.EOF.
func (e *idleEnd) end(n int, err error) error {
	if n > 0 {
		e.in.last.Store(time.Now().UnixNano())
	}
	if errors.Is(err, live.ErrIdle) {
		e.in.idleEnded.Store(true)
		return io.EOF
	}
	return err
}

// idleEndBlocks is an idleEnd over an input that hands over its own buffers.
type idleEndBlocks struct {
	idleEnd
	br ts.BlockReader
}

func (e *idleEndBlocks) ReadBlock(buf []byte) ([]byte, error) {
	b, err := e.br.ReadBlock(buf)
	return b, e.end(len(b), err)
}
