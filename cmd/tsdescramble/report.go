package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/tsdescramble/tsdescramble/csa"
	"github.com/tsdescramble/tsdescramble/internal/runfiles"
	"github.com/tsdescramble/tsdescramble/internal/units"
	"github.com/tsdescramble/tsdescramble/pipeline"
	"github.com/tsdescramble/tsdescramble/ts"
)

// progress shows a progress bar on stderr when stderr is a terminal, and costs nothing otherwise.
type progress struct {
	bar  *progressbar.ProgressBar
	last int64
}

func newProgress(env Env, size int64, quiet bool, mode pipeline.Mode) *progress {
	f, ok := env.Stderr.(*os.File)
	if quiet || !ok || env.IsTerminal == nil || !env.IsTerminal(f) {
		return &progress{}
	}
	return &progress{bar: progressbar.NewOptions64(size,
		progressbar.OptionSetWriter(f),
		progressbar.OptionSetDescription(map[pipeline.Mode]string{pipeline.Descramble: "descrambling", pipeline.Scramble: "scrambling", pipeline.Rescramble: "rescrambling"}[mode]),
		// Bytes done / total (bytes done for a pipe), speed, and elapsed:left time.
		progressbar.OptionShowBytes(true),
		progressbar.OptionShowTotalBytes(true),
		progressbar.OptionShowCount(),
		progressbar.OptionSetPredictTime(true),
		// No spinner ticker for a pipe: the library's ticker goroutine reads the bar's state
		// without its lock (a data race under -race); the bar is redrawn at each unit of
		// work anyway.
		progressbar.OptionSetSpinnerChangeInterval(0),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionSetWidth(30),
		progressbar.OptionClearOnFinish(),
	)}
}

// set is called with the input bytes read so far.
func (p *progress) set(n int64) {
	if p.bar != nil && n > p.last {
		p.bar.Add64(n - p.last)
		p.last = n
	}
}

func (p *progress) finish() {
	if p.bar != nil {
		p.bar.Finish()
	}
}

// onFirstBytes reads r and calls f once, when the first bytes come and before they are handed
// on, so that what f prints comes before anything the run says of them.
type onFirstBytes struct {
	r    io.Reader
	once sync.Once
	f    func()
}

func (o *onFirstBytes) Read(p []byte) (int, error) {
	n, err := o.r.Read(p)
	if n > 0 {
		o.once.Do(o.f)
	}
	return n, err
}

// ArrivedAt passes on what the input says of when the bytes of the last Read arrived.
func (o *onFirstBytes) ArrivedAt() time.Time { return ts.ArrivedAt(o.r) }

// printSummary writes the short summary of a run to w.
func printSummary(w io.Writer, st *pipeline.Stats, mode pipeline.Mode, verbose bool, v keyVerdict) {
	fmt.Fprintf(w, "tsdescramble: %d packets in, %d out (%s-byte framing), %s in %.2f s (%.1f MB/s)\n",
		st.Packets, st.PacketsOut, st.Framing, units.Bytes(st.BytesIn, 1), st.Elapsed.Seconds(), st.MBPerSecond())
	if mode != pipeline.Scramble {
		// What the keys did comes first: it is what a person must read.
		if v.line != "" {
			fmt.Fprintf(w, "  %s\n", v.line)
		}
		for _, f := range v.foreign {
			fmt.Fprintf(w, "  %s\n", f)
		}
	}
	switch mode {
	case pipeline.Scramble:
		fmt.Fprintf(w, "  scrambled %d packets (%d of them with payloads too short for the cipher, marked and left clear); %d already scrambled, left as they were\n",
			st.Scrambled, st.Short, st.Even+st.Odd)
	default:
		fmt.Fprintf(w, "  scrambled on input: %d even, %d odd; descrambled %d, and %d payloads too short for the cipher (clear by definition) unmarked; %d crypto-period changes\n",
			st.Even, st.Odd, st.Descrambled, st.Short, st.KeyChanges)
		if mode == pipeline.Rescramble {
			fmt.Fprintf(w, "  rescrambled %d packets\n", st.Scrambled)
		}
	}
	if mode == pipeline.Scramble {
		fmt.Fprintf(w, "  passed through clear: %d (PSI, null packets, PIDs not selected, packets without payload)\n", st.Clear-st.Scrambled)
	} else {
		fmt.Fprintf(w, "  passed through untouched: %d clear, %d TSC 01, %d scrambled without payload, %d scrambled without a key, %d scrambled outside -pid/-service, %d scrambled left as they came (no key fits their crypto period)\n",
			st.Clear, st.Reserved, st.NoPayload, st.NoKey, st.Unselected, st.LeftScrambled)
		if st.Unplaced > 0 {
			fmt.Fprintf(w, "  left as they came for want of evidence: %d scrambled packets of %d crypto periods that began where the key may have changed unseen (a silence, packets lost) and that no unit start placed\n",
				st.Unplaced, st.PeriodsUnplaced)
		}
		fmt.Fprintf(w, "  crypto periods (per PID): %d, %d of them left scrambled", st.Periods, st.PeriodsLeft)
		if st.ParityGlitches > 0 {
			fmt.Fprintf(w, "; %d single packets of the other parity inside a period left as they came", st.ParityGlitches)
		}
		fmt.Fprintln(w)
	}
	if st.CCErrors > 0 {
		var pids []string
		for _, ps := range st.PIDs {
			if ps.CCErrors > 0 {
				pids = append(pids, fmt.Sprintf("%#04x: %d", ps.PID, ps.CCErrors))
			}
		}
		if len(pids) > 8 {
			pids = append(pids[:8], fmt.Sprintf("%d more PIDs", len(pids)-8))
		}
		fmt.Fprintf(w, "  continuity errors (packets lost or out of place before the input): %d (%s)\n", st.CCErrors, strings.Join(pids, ", "))
	}
	if st.KeySyncs > 0 {
		fmt.Fprintf(w, "  key list aligned or realigned %d times\n", st.KeySyncs)
	}
	if st.PESGood+st.PESBad > 0 {
		fmt.Fprintf(w, "  unit-start checks after descrambling (PES headers, section CRCs): %d good, %d bad\n", st.PESGood, st.PESBad)
	}
	if verbose {
		for _, ps := range st.PIDs {
			fmt.Fprintf(w, "  PID %#04x (%s): %d packets, %d clear, %d even, %d odd, %d descrambled, %d left scrambled; crypto periods %d (%d fit, %d unchecked, %d left scrambled); unit starts good %d/%d bad %d/%d (even/odd)\n",
				ps.PID, ps.Carriage, ps.Packets, ps.Clear, ps.Even, ps.Odd, ps.Descrambled, ps.LeftScrambled,
				ps.Periods, ps.PeriodsFit, ps.PeriodsUnchecked, ps.PeriodsLeft, ps.PESGood[0], ps.PESGood[1], ps.PESBad[0], ps.PESBad[1])
		}
	}
	if st.Skipped > 0 || st.Truncated > 0 || verbose {
		fmt.Fprintf(w, "  skipped %d bytes to regain sync; dropped a truncated last packet of %d bytes\n", st.Skipped, st.Truncated)
	}
}

// statsJSON is the document -stats writes: the run's statistics, the throughput, the live
// statistics, and once the run is over, the exit status it ended with and the files it read
// and wrote.
type statsJSON struct {
	*pipeline.Stats
	MBPerSecond float64           `json:"mb_per_second"`
	Live        *liveStats        `json:"live,omitempty"`
	ExitStatus  *int              `json:"exit_status,omitempty"`
	Files       *runfiles.Records `json:"files,omitempty"`
}

// runGoingOn is the status writeStats is given for a report of a run not yet over: the
// document then has no exit_status (batch.go reads it to skip finished jobs).
const runGoingOn = -1

// writeStats writes the statistics of a run as indented JSON. A regular file is replaced at
// once (written under another name beside it, then renamed), so that a monitor reading it
// while -stats-interval rewrites it never sees half of one, and a run stopped while writing it
// leaves none that a later run could take for complete.
func writeStats(path string, st *pipeline.Stats, ls *liveStats, status int, files *runfiles.Records) error {
	doc := statsJSON{st, st.MBPerSecond(), ls, nil, files}
	if status != runGoingOn {
		doc.ExitStatus = &status
	}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	if fi, err := os.Stat(path); err == nil && !fi.Mode().IsRegular() {
		return os.WriteFile(path, b, 0o644) // a device or a pipe: written in place
	}
	final := runfiles.FollowLinks(path)
	dir, base := filepath.Split(final)
	if dir == "" {
		dir = "."
	}
	f, err := runfiles.CreateTemp(dir, "."+base+".", ".tmp")
	if err != nil {
		if _, serr := os.Stat(final); serr == nil {
			// A writable file in a directory that takes no new file: written in place.
			return os.WriteFile(final, b, 0o644)
		}
		return err
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), final)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}

// statsEvery rewrites the -stats file with each report of a run still going, from a goroutine
// of its own so that a slow disk never holds the run up: a report that comes while the last is
// being written waits, and a newer one replaces it.
type statsEvery struct {
	path    string
	in      *input
	out     *output
	reports chan pipeline.Stats
	done    chan struct{}
}

func newStatsEvery(path string, in *input, out *output, stderr io.Writer) *statsEvery {
	s := &statsEvery{path: path, in: in, out: out, reports: make(chan pipeline.Stats, 1), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		// A rewrite that fails (a full disk, no file descriptor left) is said once per
		// streak, as an error in the chosen -log-format: a monitor reading a file that has
		// stopped changing must be able to find why, and a failure every few seconds must
		// not bury the run's other lines.
		failing := false
		for st := range s.reports {
			err := writeStats(s.path, &st, collectLive(s.in, s.out, &st, false), runGoingOn, nil)
			switch {
			case err != nil && !failing:
				logError(stderr, fmt.Sprintf("-stats-interval: cannot rewrite %s: %v; the run goes on (said once until a rewrite succeeds)", s.path, unwrapPath(err)))
			case err == nil && failing:
				fmt.Fprintln(stderr, "tsdescramble: -stats-interval: "+s.path+" is rewritten again")
			}
			failing = err != nil
		}
	}()
	return s
}

// report is the run's Options.Report.
func (s *statsEvery) report(st pipeline.Stats) {
	select {
	case <-s.reports: // not written yet: the newer one replaces it
	default:
	}
	s.reports <- st
}

// stop waits for the last report to be written, before the final statistics replace it.
func (s *statsEvery) stop() {
	close(s.reports)
	<-s.done
}

// version returns the module version and the engine this CPU runs, for -version.
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
