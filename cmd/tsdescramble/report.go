package main

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/urfave/cli/v2"

	"github.com/tsdescramble/tsdescramble/csa"
	"github.com/tsdescramble/tsdescramble/internal/report"
	"github.com/tsdescramble/tsdescramble/internal/runfiles"
	"github.com/tsdescramble/tsdescramble/pipeline"
	"github.com/tsdescramble/tsdescramble/srt"
)

// progress shows a progress bar on stderr when stderr is a terminal, and costs nothing otherwise.
type progress struct {
	bar        *progressbar.ProgressBar
	last       int64
	obs        *pipeline.Observer // the run's counts, once followed
	stop, done chan struct{}      // of the goroutine that follows them
}

// progressEvery is how often the bar reads the run's counts: as often as the bar may redraw.
const progressEvery = 100 * time.Millisecond

func newProgress(env Env, size int64, quiet bool, mode pipeline.Mode) *progress {
	f, ok := env.Stderr.(*os.File)
	if quiet || !ok || env.IsTerminal == nil || !env.IsTerminal(f) {
		return &progress{}
	}
	bar := progressbar.NewOptions64(size,
		progressbar.OptionSetWriter(f),
		progressbar.OptionSetDescription(map[pipeline.Mode]string{pipeline.Descramble: "descrambling", pipeline.Scramble: "scrambling", pipeline.Rescramble: "rescrambling"}[mode]),
		// Bytes done / total (bytes done for a pipe), speed, and elapsed:left time.
		progressbar.OptionShowBytes(true),
		progressbar.OptionShowTotalBytes(true),
		progressbar.OptionShowCount(),
		progressbar.OptionSetPredictTime(true),
		// No spinner ticker for a pipe: the library's ticker goroutine reads the bar's state
		// without its lock (a data race under -race); follow redraws the bar anyway.
		progressbar.OptionSetSpinnerChangeInterval(0),
		progressbar.OptionThrottle(progressEvery),
		progressbar.OptionSetWidth(30),
		progressbar.OptionClearOnFinish(),
	)
	// The run starts now: the first frame's speed is then its bytes over the time since,
	// where the library would start its clock at that frame and divide by next to nothing
	// (57 GB/s for a run reading 100 MB/s).
	bar.StartWithoutRender()
	return &progress{bar: bar}
}

// active reports whether a bar is shown.
func (p *progress) active() bool { return p.bar != nil }

// follow redraws the bar from the input bytes of the run's counts, from a goroutine of its
// own, until finish.
func (p *progress) follow(obs *pipeline.Observer) {
	if p.bar == nil {
		return
	}
	p.obs, p.stop, p.done = obs, make(chan struct{}), make(chan struct{})
	go func() {
		defer close(p.done)
		t := time.NewTicker(progressEvery)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				p.set(obs.Snapshot().BytesIn)
			case <-p.stop:
				return
			}
		}
	}()
}

// set is called with the input bytes read so far.
func (p *progress) set(n int64) {
	if p.bar != nil && n > p.last {
		p.bar.Add64(n - p.last)
		p.last = n
	}
}

func (p *progress) finish() {
	if p.bar == nil {
		return
	}
	if p.obs != nil {
		close(p.stop)
		<-p.done
		p.set(p.obs.Snapshot().BytesIn) // a run shorter than a redraw is shown too
	}
	p.bar.Finish()
}

// statsEvery rewrites the -stats file every interval with the counts of a run still going, from
// a goroutine of its own, so that a slow disk never holds the run up, and on time while the
// input is quiet.
type statsEvery struct {
	stop, done chan struct{}
}

func newStatsEvery(path string, every time.Duration, obs *pipeline.Observer, in *input, out *output, stderr io.Writer) *statsEvery {
	s := &statsEvery{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		t := time.NewTicker(every)
		defer t.Stop()
		// A rewrite that fails (a full disk, no file descriptor left) is said once per
		// streak, as an error in the chosen -log-format: a monitor reading a file that has
		// stopped changing must be able to find why, and a failure every few seconds must
		// not bury the run's other lines.
		failing := false
		for {
			select {
			case <-t.C:
			case <-s.stop:
				return
			}
			st := obs.Snapshot()
			err := report.WriteStats(path, &st, collectLive(in, out, &st, false), report.GoingOn, nil)
			switch {
			case err != nil && !failing:
				logError(stderr, fmt.Sprintf("-stats-interval: cannot rewrite %s: %v; the run goes on (said once until a rewrite succeeds)", path, runfiles.UnwrapPath(err)))
			case err == nil && failing:
				fmt.Fprintln(stderr, "tsdescramble: -stats-interval: "+path+" is rewritten again")
			}
			failing = err != nil
		}
	}()
	return s
}

// end stops the rewrites and waits for one being written, before the final statistics
// replace it.
func (s *statsEvery) end() {
	close(s.stop)
	<-s.done
}

// version returns the module version and the engine this CPU runs, for -version and the help
// page.
func version() string {
	v := "(devel)"
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		v = bi.Main.Version
	}
	e, err := csa.NewEngine(0)
	if err != nil {
		return v
	}
	// The widths -group takes on this CPU, so that a report of a version says what it could run.
	s := fmt.Sprintf("%s (%s, %s/%s; -group %s)", v, e, runtime.GOOS, runtime.GOARCH, groupChoices())
	if c := e.Choice(); c != "" {
		s += "; " + c
	}
	return s
}

// -version prints, after the version, on a line of its own, whether the build has SRT: the
// help page's VERSION keeps to the version, whose line is long enough. urfave/cli's printer is
// a package variable, set once here, before any app runs.
func init() {
	cli.VersionPrinter = func(c *cli.Context) {
		fmt.Fprintf(c.App.Writer, "%s version %s\n%s\n", c.App.Name, c.App.Version, srtVersion())
	}
}

// srtVersion says whether this build has SRT (srt.go), and how to get one that has.
func srtVersion() string {
	if srt.Built {
		return "srt: yes (libsrt " + srt.LibraryVersion() + ")"
	}
	return "srt: not in this build (build with -tags srt)"
}
