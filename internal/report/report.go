// Package report says how a run went: the summary on stderr, the -stats document, the verdict
// of the keys on the stream's crypto periods, and the checks that the input was a transport
// stream and the selection was in it.
package report

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/tsdescramble/tsdescramble/internal/runfiles"
	"github.com/tsdescramble/tsdescramble/internal/units"
	"github.com/tsdescramble/tsdescramble/keys"
	"github.com/tsdescramble/tsdescramble/live"
	"github.com/tsdescramble/tsdescramble/pipeline"
	"github.com/tsdescramble/tsdescramble/relay"
	"github.com/tsdescramble/tsdescramble/srt"
	"github.com/tsdescramble/tsdescramble/web"
)

// Summary writes the short summary of a run to w.
func Summary(w io.Writer, st *pipeline.Stats, mode pipeline.Mode, verbose bool, v Verdict) {
	fmt.Fprintf(w, "tsdescramble: %s in, %d out (%s-byte framing), %s in %.2f s (%.1f MB/s)\n",
		Plural(int(st.Packets), "packet"), st.PacketsOut, st.Framing, units.Bytes(st.BytesIn, 1), st.Elapsed.Seconds(), st.MBPerSecond())
	if mode == pipeline.Passthrough {
		fmt.Fprintf(w, "  passed through as they came (-passthrough): %d clear, %d even, %d odd, %d TSC 01\n",
			st.Clear, st.Even, st.Odd, st.Reserved)
		return
	}
	if mode != pipeline.Scramble {
		// What the keys did comes first: it is what a person must read.
		if v.Line != "" {
			fmt.Fprintf(w, "  %s\n", v.Line)
		}
		for _, f := range v.Foreign {
			fmt.Fprintf(w, "  %s\n", f)
		}
	}
	switch mode {
	case pipeline.Scramble:
		fmt.Fprintf(w, "  scrambled %s (%d of them with payloads too short for the cipher, marked and left clear); %d already scrambled, left as they were\n",
			Plural(int(st.Scrambled), "packet"), st.Short, st.Even+st.Odd)
	default:
		fmt.Fprintf(w, "  scrambled on input: %d even, %d odd; descrambled %d, and %s too short for the cipher (clear by definition) unmarked; %s\n",
			st.Even, st.Odd, st.Descrambled, Plural(int(st.Short), "payload"), Plural(st.KeyChanges, "crypto-period change"))
		if mode == pipeline.Rescramble {
			fmt.Fprintf(w, "  rescrambled %s\n", Plural(int(st.Scrambled), "packet"))
		}
	}
	if mode == pipeline.Scramble {
		fmt.Fprintf(w, "  passed through clear: %d (PSI, null packets, PIDs not selected, packets without payload)\n", st.Clear-st.Scrambled)
	} else {
		fmt.Fprintf(w, "  passed through untouched: %d clear, %d TSC 01, %d scrambled without payload, %d scrambled without a key, %d scrambled outside -pid/-service, %d scrambled left as they came (no key fits their crypto period)\n",
			st.Clear, st.Reserved, st.NoPayload, st.NoKey, st.Unselected, st.LeftScrambled)
		if st.Unplaced > 0 {
			fmt.Fprintf(w, "  left as they came for want of evidence: %s of %s that began where the key may have changed unseen (a silence, packets lost) and that no unit start placed\n",
				Plural(int(st.Unplaced), "scrambled packet"), Plural(int(st.PeriodsUnplaced), "crypto period"))
		}
		fmt.Fprintf(w, "  crypto periods, summed over the scrambled PIDs: %d, %d of them left scrambled", st.Periods, st.PeriodsLeft)
		if st.ParityGlitches > 0 {
			fmt.Fprintf(w, "; %s of the other parity inside a period left as they came", Plural(int(st.ParityGlitches), "single packet"))
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
		fmt.Fprintf(w, "  key list aligned or realigned %s\n", Plural(int(st.KeySyncs), "time"))
	}
	if st.UnseenKeyChanges > 0 {
		fmt.Fprintf(w, "  changes of key the stream did not show (a unit start failed its period's key, another fitted): %d\n", st.UnseenKeyChanges)
	}
	if st.PESGood+st.PESBad > 0 {
		fmt.Fprintf(w, "  unit-start checks after descrambling (PES headers, section CRCs): %d good, %d bad\n", st.PESGood, st.PESBad)
	}
	if verbose {
		for _, ps := range st.PIDs {
			fmt.Fprintf(w, "  PID %#04x (%s): %s, %d clear, %d even, %d odd, %d descrambled, %d left scrambled; crypto periods %d (%d fit, %d unchecked, %d left scrambled); unit starts good %d/%d bad %d/%d (even/odd)\n",
				ps.PID, ps.Carriage, Plural(int(ps.Packets), "packet"), ps.Clear, ps.Even, ps.Odd, ps.Descrambled, ps.LeftScrambled,
				ps.Periods, ps.PeriodsFit, ps.PeriodsUnchecked, ps.PeriodsLeft, ps.PESGood[0], ps.PESGood[1], ps.PESBad[0], ps.PESBad[1])
		}
	}
	if st.Skipped > 0 || st.Truncated > 0 || verbose {
		fmt.Fprintf(w, "  skipped %s to regain sync; dropped a truncated last packet of %s\n", Plural(int(st.Skipped), "byte"), Plural(int(st.Truncated), "byte"))
	}
}

// document is what -stats writes: the run's statistics, the throughput, the live
// statistics, and once the run is over, the exit status it ended with and the files it read
// and wrote.
type document struct {
	*pipeline.Stats
	MBPerSecond float64           `json:"mb_per_second"`
	Live        *Live             `json:"live,omitempty"`
	ExitStatus  *int              `json:"exit_status,omitempty"`
	Error       string            `json:"error,omitempty"` // why a job ended before its run (WriteOutcome)
	Files       *runfiles.Records `json:"files,omitempty"`
	Services    []Service         `json:"services,omitempty"` // a run over a whole multiplex: each service's own
	Reloads     *Reloads          `json:"reloads,omitempty"`  // a run over a whole multiplex given by a config file
}

// Reloads counts the rereadings of a multiplex run's config file (SIGHUP): applied, or
// refused (a file that did not read or check, or one the input ended before).
type Reloads struct {
	Applied int64 `json:"applied"`
	Refused int64 `json:"refused"`
}

// Service is what became of one service of a run over a whole multiplex (-keys, -config).
type Service struct {
	Number  uint16 `json:"service"`
	Output  string `json:"output"`         // as given, a URL without its password
	Keys    string `json:"keys,omitempty"` // the key source's kind, a file's name or a server's address: never a key
	Packets int64  `json:"packets"`        // packets written to its output
	// ExitStatus is the service's own: 0, 1 (its run or output failed) or 3 (its keys do not
	// fit); the run's is the worst of them.
	ExitStatus int    `json:"exit_status"`
	Error      string `json:"error,omitempty"`
	// Ended says why the service's output, or its run, ended before the whole run: "removed"
	// from the config, or "changed" (other keys or another output) by a reload. Its figures
	// are those until then, and its exit status is not the run's: the config in force at the
	// end decides that.
	Ended string `json:"ended,omitempty"`
	// Descrambling is the statistics of the run that descrambled the service, nil for a
	// service without keys, which went out as it came.
	Descrambling *pipeline.Stats `json:"descrambling,omitempty"`
}

// GoingOn is the status WriteStats is given for a report of a run not yet over: the
// document then has no exit_status (a batch reads it to skip finished jobs).
const GoingOn = -1

// WriteStats writes the statistics of a run as indented JSON. A regular file is replaced at
// once (written under another name beside it, then renamed), so that a monitor reading it
// while -stats-interval rewrites it never sees half of one, and a run stopped while writing it
// leaves none that a later run could take for complete.
func WriteStats(path string, st *pipeline.Stats, ls *Live, status int, files *runfiles.Records) error {
	return WriteServiceStats(path, st, ls, status, files, nil, nil)
}

// WriteServiceStats is WriteStats with each service's own figures, for a run over a whole
// multiplex.
func WriteServiceStats(path string, st *pipeline.Stats, ls *Live, status int, files *runfiles.Records, services []Service, reloads *Reloads) error {
	doc := document{Stats: st, MBPerSecond: st.MBPerSecond(), Live: ls, Files: files, Services: services, Reloads: reloads}
	if status != GoingOn {
		doc.ExitStatus = &status
	}
	return writeDocument(path, &doc)
}

// WriteOutcome writes the statistics of a run that ended before its first packet (a job of a
// batch whose key file or input is not there): the same document as WriteStats, its figures
// zero, with the exit status and the message the run ended with, so that a scheduler's
// failed index has its reason beside the statistics of the others.
func WriteOutcome(path string, status int, msg string, files *runfiles.Records) error {
	doc := document{Stats: &pipeline.Stats{}, ExitStatus: &status, Error: msg, Files: files}
	return writeDocument(path, &doc)
}

// writeDocument writes doc to path, replacing a regular file at once (WriteStats).
func writeDocument(path string, doc *document) error {
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

// Live are the figures of a network input and output, for the summary and -stats: what the
// input's reader and the output's writer count, as they count it.
type Live struct {
	In  *live.Stats       `json:"input,omitempty"`
	Out *live.WriterStats `json:"output,omitempty"`
	// Web is the HTTP or HLS input's (-in http://…): reconnections, resumes, stalls, segments.
	Web *web.Stats `json:"http_input,omitempty"`
	// Relay is the HTTP output's (-out http://…): clients served, dropped, refused.
	Relay *relay.Stats `json:"http_output,omitempty"`
	// SRTIn is the SRT input's (-in srt://…): connections, and the SRT library's own loss,
	// retransmission and drop counts.
	SRTIn *srt.Stats `json:"srt_input,omitempty"`
	// SRTOut is the SRT output's (-out srt://…): connections, what was dropped while no
	// peer was connected, and the library's counts.
	SRTOut *srt.WriterStats `json:"srt_output,omitempty"`
	// InputBitrate is the input's TS bitrate in bits per second, from its first bytes on.
	InputBitrate float64 `json:"input_bitrate,omitempty"`
	// PaceResets counts the restarts of the PCR pacing's schedule: each after the output fell
	// more than live.DefaultMaxLate behind it (a source slower than the stream plays).
	PaceResets int64 `json:"pace_resets,omitempty"`
}

// PrintLive writes the live figures of the summary.
func PrintLive(w io.Writer, ls *Live) {
	if ls == nil {
		return
	}
	if s := ls.In; s != nil {
		fmt.Fprintf(w, "  input: %s, %.2f Mbit/s", Plural(int(s.Datagrams), "datagram"), ls.InputBitrate/1e6)
		if s.RTP > 0 {
			fmt.Fprintf(w, "; RTP: %d lost, %d reordered, %d late, %s, %s", s.Lost, s.Reordered, s.Late, Plural(int(s.Duplicates), "duplicate"), Plural(int(s.Jumps), "sequence jump"))
			if s.OtherPT > 0 {
				fmt.Fprintf(w, ", %d with payload types %v (not 33, MP2T)", s.OtherPT, s.OtherPTs)
			}
			if s.OtherSSRC > 0 {
				fmt.Fprintf(w, ", %d from another sender (SSRC) dropped", s.OtherSSRC)
			}
			if s.NewSSRC > 0 {
				fmt.Fprintf(w, ", %s followed after the one before went silent", Plural(int(s.NewSSRC), "new sender"))
			}
		}
		if s.Dropped > 0 {
			atLeast := ""
			if s.Coalesced {
				atLeast = "at least " // the system counts a coalesced buffer of datagrams once
			}
			fmt.Fprintf(w, "; %s%d dropped by the system, its receive buffer full (%s: raise it with ?buffer=)", atLeast, s.Dropped, Plural(s.SocketBuffer, "byte"))
		}
		if s.Unaligned+s.Truncated+s.NotRTP > 0 {
			fmt.Fprintf(w, "; %d dropped as not whole packets, %d cut, %d without an RTP header", s.Unaligned, s.Truncated, s.NotRTP)
		}
		fmt.Fprintln(w)
	}
	if s := ls.Out; s != nil {
		fmt.Fprintf(w, "  output: %s, %d of them short (sent early to bound the latency)", Plural(int(s.Datagrams), "datagram"), s.Partial)
		if ls.PaceResets > 0 {
			fmt.Fprintf(w, "; the PCR pacing fell behind and restarted %s", Plural(int(ls.PaceResets), "time"))
		}
		fmt.Fprintln(w)
	}
	if s := ls.Web; s != nil {
		fmt.Fprintf(w, "  HTTP input: %.2f Mbit/s; %s, %s of a file cut short, %s dropped, %v without data",
			ls.InputBitrate/1e6, Plural(int(s.Reconnects), "reconnection"), Plural(int(s.Resumes), "resume"), Plural(int(s.Stalls), "stalled connection"), s.GapTime.Round(time.Millisecond))
		if s.Segments > 0 || s.SegmentsMissed > 0 {
			fmt.Fprintf(w, "; HLS: %s read, %d missed (gone from the playlist or failed), %s", Plural(int(s.Segments), "segment"), s.SegmentsMissed, Plural(int(s.PlaylistReloads), "playlist reload"))
		}
		fmt.Fprintln(w)
	}
	if s := ls.Relay; s != nil {
		fmt.Fprintf(w, "  HTTP output: %s served, %d dropped as too slow to keep up, %d refused, %.1f MB sent", Plural(int(s.Served), "client"), s.Dropped, s.Refused, float64(s.BytesOut)/1e6)
		if ls.PaceResets > 0 {
			fmt.Fprintf(w, "; the PCR pacing fell behind and restarted %s", Plural(int(ls.PaceResets), "time"))
		}
		fmt.Fprintln(w)
	}
	if s := ls.SRTIn; s != nil {
		fmt.Fprintf(w, "  SRT input (%s): %s, %.2f Mbit/s; %s, %s (%v without a connection)",
			s.Mode, Plural(int(s.Messages), "message"), ls.InputBitrate/1e6, Plural(int(s.Connections), "connection"), Plural(int(s.Reconnects), "reconnection"), s.GapTime.Round(time.Millisecond))
		if s.Refused > 0 {
			fmt.Fprintf(w, ", %s turned away", Plural(int(s.Refused), "caller"))
		}
		fmt.Fprintf(w, "; SRT: %d lost, %d retransmitted, %d dropped too late to play", s.Lost, s.Retransmitted, s.Dropped)
		if s.Undecrypted > 0 {
			fmt.Fprintf(w, ", %d that did not decrypt", s.Undecrypted)
		}
		fmt.Fprintln(w)
	}
	if s := ls.SRTOut; s != nil {
		fmt.Fprintf(w, "  SRT output (%s): %s, %d of them short (sent early to bound the latency); %s, %s",
			s.Mode, Plural(int(s.Messages), "message"), s.Short, Plural(int(s.Connections), "connection"), Plural(int(s.Reconnects), "reconnection"))
		if s.Refused > 0 {
			fmt.Fprintf(w, ", %s turned away", Plural(int(s.Refused), "caller"))
		}
		fmt.Fprintf(w, "; packets dropped: %d with no peer connected, %d with the send buffer full; SRT: %d lost, %d retransmitted, %d dropped too late to send",
			s.Unconnected, s.Full, s.Lost, s.Retransmitted, s.Dropped)
		if ls.PaceResets > 0 {
			fmt.Fprintf(w, "; the PCR pacing restarted %s", Plural(int(ls.PaceResets), "time"))
		}
		fmt.Fprintln(w)
	}
}

// KeyServerSummary prints what the key server did, with verbose the CWs applied per PID
// and parity; never a key or a password.
func KeyServerSummary(w io.Writer, st *pipeline.Stats, verbose bool) {
	lk := st.LiveKeys
	if lk == nil {
		return
	}
	if c := lk.ECMCache; c != nil {
		printCacheLine(w, c, lk.Server)
	}
	if s := lk.Server; s != nil {
		if s.Protocol != "ecm-cache" {
			printServerLine(w, s)
		}
		if verbose && len(s.Applied) > 0 {
			var parts []string
			for _, a := range s.Applied {
				parts = append(parts, fmt.Sprintf("PID %#04x %s %s", a.PID, map[bool]string{false: "even", true: "odd"}[a.Odd], Plural(int(a.Periods), "period")))
			}
			fmt.Fprintf(w, "tsdescramble: key server CWs applied: %s\n", strings.Join(parts, ", "))
		}
	}
	line := fmt.Sprintf("tsdescramble: %s for their key (%s held, the longest %s); %d got none in time (%s passed scrambled, %d dropped)",
		Plural(int(lk.Waited), "crypto period")+" waited", Plural(int(lk.Held), "packet"), ms(lk.HeldMax), lk.GaveUp, Plural(int(lk.PassedNoKey), "packet"), lk.Dropped)
	if lk.NotFitting > 0 {
		// A CW that failed the trial decryption says the server answered with a wrong or
		// stale key: a user who sees periods wait or go without a key needs to know that.
		line += fmt.Sprintf("; CWs rejected, each not fitting its crypto period's first unit start: %d", lk.NotFitting)
	}
	fmt.Fprintln(w, line)
}

// printServerLine prints the key server's counts.
func printServerLine(w io.Writer, s *pipeline.KeyServer) {
	line := fmt.Sprintf("tsdescramble: key server (%s): %s sent", s.Protocol, Plural(int(s.Sent), "ECM"))
	if s.Protocol == "ecm-xor" {
		line = fmt.Sprintf("tsdescramble: ECMs (-ecm-xor): %d distinct read", s.Sent)
	}
	if s.Protocol == "cs378x" || s.Protocol == "newcamd" {
		// An answer to each ECM sent: what became of them adds up to the ECMs sent.
		line += fmt.Sprintf(", %d answered with keys, %d not found, %d no card, %d timed out, %d failed", s.Answers, s.NotFound, s.NoCard, s.Timeouts, s.Errors)
	}
	if s.NotSent > 0 {
		line += fmt.Sprintf("; %d not sent (the server could not be connected to)", s.NotSent)
	}
	line += "; " + Plural(int(s.CWs), "CW")
	if s.RTTMax > 0 {
		line += fmt.Sprintf("; ECM round trip median %s, max %s", ms(s.RTTMedian), ms(s.RTTMax))
	}
	if s.Refused > 0 {
		line += fmt.Sprintf("; %d refused", s.Refused)
	}
	fmt.Fprintln(w, line)
}

// printCacheLine prints what an ECM cache did: the answers it gave (s, the counts of the
// source that asked it) or those it recorded.
func printCacheLine(w io.Writer, c *keys.ECMCacheStats, s *pipeline.KeyServer) {
	var line string
	if c.Mode == "read" {
		line = fmt.Sprintf("tsdescramble: ECM cache %s (%s): %s of the stream, %d found in it, %d not",
			c.File, Plural(c.Entries, "answer"), Plural(int(c.Hits+c.Misses), "distinct ECM"), c.Hits, c.Misses)
		if s != nil {
			line += "; " + Plural(int(s.CWs), "CW")
		}
	} else {
		line = fmt.Sprintf("tsdescramble: ECM cache %s: %s appended, %d held already, %d could not be written (it held %s before)",
			c.File, Plural(int(c.Appended), "answer"), c.Hits, c.WriteErrors, Plural(c.Entries, "answer"))
	}
	if c.SkippedLines > 0 {
		line += fmt.Sprintf("; %s of it not read (torn or wrong)", Plural(c.SkippedLines, "line"))
	}
	fmt.Fprintln(w, line)
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond)) }

// Verdict is what a descrambling run's statistics say of its keys: whether they call for the exit
// status of keys that do not fit, the one line a person reads first, and the lines that name the
// PIDs another CA system seems to protect.
type Verdict struct {
	NoFit   bool     // the keys do not fit (exit 3)
	Damaged bool     // with NoFit: the stream is at fault, not the keys, and advice about keys would mislead
	Line    string   // "" when there is nothing to say beyond the counts
	Foreign []string // one line per PID no control word fits, in PID order
}

// judgeKeys applies the rules of the exit status to the crypto periods of each PID:
//   - a PID that fits in some periods and not in others: the keys fit part of the stream
//     (exit 3): those periods were left as they came;
//   - a PID no key fits in any period is another CA system's, or one the keys do not cover:
//     reported, and a failure (exit 3) only when no PID fits at all;
//   - when no period of any PID could be checked (no scrambled PID carries PES, or sections
//     whose CRC can be read), the keys were used unchecked: said, and no failure.
func JudgeKeys(st *pipeline.Stats) Verdict {
	var v Verdict
	var fitting, partly []pipeline.PIDStats
	var periodsLeft, periodsPartly, checked int
	for _, ps := range st.PIDs {
		if ps.Periods == 0 {
			continue
		}
		checked += ps.PeriodsFit + ps.PeriodsLeft
		switch {
		case ps.PeriodsFit > 0 && ps.PeriodsLeft > 0:
			partly = append(partly, ps)
			fitting = append(fitting, ps)
			periodsLeft += ps.PeriodsLeft
			periodsPartly += ps.Periods
		case ps.PeriodsFit > 0:
			fitting = append(fitting, ps)
		case ps.PeriodsLeft > 0:
			v.Foreign = append(v.Foreign, fmt.Sprintf("PID %#04x: no control word fits; left scrambled (%s, %s)",
				ps.PID, Plural(int(ps.LeftScrambled), "packet"), Plural(ps.PeriodsLeft, "crypto period")))
		}
	}
	scrambled := st.Even + st.Odd
	share := func() string {
		if scrambled == 0 {
			return "0%"
		}
		return fmt.Sprintf("%.0f%%", 100*float64(st.Descrambled+st.Short)/float64(scrambled))
	}
	switch {
	case scrambled > 0 && st.Descrambled+st.Short == 0 && st.NoKey > 0 && len(fitting) == 0:
		// Keys of one parity only, for a stream scrambled in the other: nothing was
		// descrambled, though no key was found not to fit.
		v.NoFit = true
		v.Line = fmt.Sprintf("no control word for the parity the stream is scrambled in: %s no key of their parity; %s",
			Plural(int(st.NoKey), "scrambled packet")+map[bool]string{true: " has", false: " have"}[st.NoKey == 1], parityHint(st))
	case len(partly) > 0:
		var per []string
		for _, ps := range partly {
			per = append(per, fmt.Sprintf("PID %#04x: %d of %d", ps.PID, ps.PeriodsLeft, ps.Periods))
		}
		v.NoFit = true
		v.Line = fmt.Sprintf("the keys fit only part of the stream: crypto periods left scrambled: %d of %d (%s); %s of the scrambled packets descrambled",
			periodsLeft, periodsPartly, strings.Join(per, ", "), share())
	case len(v.Foreign) > 0 && len(fitting) == 0:
		v.NoFit = true
		v.Line = fmt.Sprintf("the keys do not fit this stream: no control word fits any crypto period of the %s checked; they were left scrambled",
			Plural(len(v.Foreign), "scrambled PID"))
	case st.UnseenKeyChanges > 0:
		// Packets went out descrambled with a key that had stopped applying, which only
		// the unit start after them showed: the output is wrong there.
		v.NoFit, v.Damaged = true, true
		v.Line = fmt.Sprintf("the key changed %s where the stream showed no change (packets lost that the continuity counters did not show, or two streams joined): the packets before the unit start that showed it, at most one PES packet each, went out descrambled with the key before and are wrong",
			Plural(st.UnseenKeyChanges, "time"))
	case checked == 0 && st.Descrambled > 0:
		v.Line = "key check not possible: no scrambled PID carries PES (or sections whose CRC could be read); descrambled with the keys as given"
	}
	return v
}

// Plural says "1 thing" or "n things".
func Plural(n int, thing string) string { return units.Count(int64(n), thing) }

// parityHint names the flag that gives the stream's scrambled packets the key of their parity.
func parityHint(st *pipeline.Stats) string {
	switch {
	case st.Odd == 0:
		return "the stream is scrambled even (TSC 10) only: give its control word with -cw-even, or -cw for both parities"
	case st.Even == 0:
		return "the stream is scrambled odd (TSC 11) only: give its control word with -cw-odd, or -cw for both parities"
	}
	return "give a control word for each parity (-cw-even and -cw-odd, or -cw for both)"
}

// junkMinBytes is the size from which an input whose packets make under 1% of it is taken for
// something else than a transport stream. Random bytes hold three sync bytes a packet apart
// about once in 5 MB (three framings, 2^24 positions each), so they give a few "packets"; under
// 1% of 100 kB is five packets at most, and the share holds for larger inputs too.
const junkMinBytes = 100_000

// NotTransportStream returns why a run's input is not a transport stream although the framer
// found a few packets in it, or "".
func NotTransportStream(st *pipeline.Stats) string {
	packetBytes := st.BytesIn - st.Skipped - st.Truncated
	if st.BytesIn < junkMinBytes || st.Packets == 0 || packetBytes*100 >= st.BytesIn {
		return ""
	}
	return fmt.Sprintf("the input is not a transport stream: only %s (%s) found in %s, the rest skipped (188, 192 or 204-byte packets expected)",
		Plural(int(st.Packets), "packet"), units.Bytes(packetBytes, 1), units.Bytes(st.BytesIn, 1))
}

// MostlyNotTransportStream returns a warning when more than half of the input was skipped to
// find packets, or "".
func MostlyNotTransportStream(st *pipeline.Stats) string {
	if st.Skipped*2 <= st.BytesIn {
		return ""
	}
	return fmt.Sprintf("the input is mostly not a transport stream: %.0f%% of it (%s) was skipped to find packets",
		100*float64(st.Skipped)/float64(st.BytesIn), units.Bytes(st.Skipped, 1))
}

// UnseenSelection returns why a run with -service or -pid processed nothing: the service or
// none of the PIDs appeared in the stream. It returns "" otherwise.
func UnseenSelection(opts *pipeline.Options, st *pipeline.Stats) string {
	if st.Descrambled+st.Short+st.Scrambled > 0 {
		return ""
	}
	did := "descrambled"
	if opts.Mode == pipeline.Scramble {
		did = "scrambled"
	}
	if n := opts.Service; n > 0 && !slices.Contains(st.Services, uint16(n)) {
		if len(st.Services) == 0 {
			return fmt.Sprintf("-service %d: the stream has no PAT naming services, so nothing was %s", n, did)
		}
		var names []string
		for _, s := range st.Services {
			names = append(names, fmt.Sprint(s))
		}
		return fmt.Sprintf("-service %d: no such service in the stream (its PAT names %s), so nothing was %s", n, strings.Join(names, ", "), did)
	}
	if len(opts.PIDs) > 0 {
		var seen []string
		for _, ps := range st.PIDs {
			if slices.Contains(opts.PIDs, ps.PID) {
				return ""
			}
			seen = append(seen, fmt.Sprintf("%#04x", ps.PID))
		}
		if len(seen) > 8 {
			seen = append(seen[:8], fmt.Sprintf("and %d more", len(seen)-8))
		}
		return fmt.Sprintf("-pid: none of these PIDs is in the stream (it holds %s), so nothing was %s", strings.Join(seen, ", "), did)
	}
	return ""
}

// LimitsNote says how -workers and -batch were cut down to keep the packets in flight within
// pipeline.MaxMemory, or returns "".
func LimitsNote(workers, batch int) string {
	w, b, _ := pipeline.Limits(workers, batch)
	if w == workers && b == batch {
		return ""
	}
	return fmt.Sprintf("-workers %d -batch %d would take more than %d MiB of memory: running with -workers %d -batch %d",
		workers, batch, pipeline.MaxMemory>>20, w, b)
}
