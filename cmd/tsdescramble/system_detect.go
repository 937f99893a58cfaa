package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/tsdescramble/tsdescramble/live"
	"github.com/tsdescramble/tsdescramble/pipeline"
	"github.com/tsdescramble/tsdescramble/psi"
	"github.com/tsdescramble/tsdescramble/scrambling"
	"github.com/tsdescramble/tsdescramble/ts"
)

// The scrambling_descriptor (EN 300 468, 6.2.32) carries the scrambling system in the PMT:
// `scramble` writes it for every system but csa2, and a descrambling run without -cipher reads
// it from the start of its input.

// signalMode returns the scrambling_mode that `scramble` writes into the PMTs for sys. For csa2
// the pipeline adds no descriptor and only corrects one already there (one left by an earlier
// scrambling with another system): a PMT without the descriptor means DVB-CSA1 (EN 300 468,
// 6.2.32), the cipher csa2 implements (see systemOfMode); TSDuck's scrambler writes none for
// DVB-CSA2 either; and so a csa2 stream stays byte for byte what libdvbcsa makes.
func signalMode(sys scrambling.System) psi.ScramblingMode {
	switch sys.Name() {
	case "csa2":
		return psi.ScramblingCSA2
	case "dvb-cissa":
		return psi.ScramblingCISSA1
	case "atis-idsa":
		return psi.ScramblingATISIDSA
	case "dfc":
		return psi.ScramblingDFC
	case "serpent":
		return psi.ScramblingSerpent
	}
	return 0 // a system added without a mode: the PMTs stay as they are
}

// systemOfMode returns the name of the system that descrambles a scrambling_mode, or "" when
// tsdescramble has none (DVB-CSA3, other users' values). DVB-CSA1 and DVB-CSA2 name one cipher
// as far as any implementation goes: libdvbcsa, FFdecsa and TSDuck each have a single DVB-CSA
// (TSDuck's TSScrambling::setScramblingType sends both modes to it), and csa2 is that cipher,
// with the control word used as given (-reduce-entropy still applies when asked for).
func systemOfMode(m psi.ScramblingMode) string {
	switch m {
	case psi.ScramblingCSA1, psi.ScramblingCSA2:
		return "csa2"
	case psi.ScramblingCISSA1:
		return "dvb-cissa"
	case psi.ScramblingATISIDSA:
		return "atis-idsa"
	case psi.ScramblingDFC:
		return "dfc"
	case psi.ScramblingSerpent:
		return "serpent"
	}
	return ""
}

// peekLimit bounds the bytes a descrambling run reads ahead to find the PMTs: several seconds
// of a broadcast stream, in which DVB repeats every PMT many times over. (A variable so that
// tests can lower it.)
var peekLimit = 8 << 20

// peekIdle is how long the look-ahead waits on a pipe that sends nothing before the run starts
// with what it has: a live feed that stalls must not hold back the packets already read, and a
// signal sent meanwhile finds the run started and its handlers in place. (A variable so that
// tests can lengthen it.)
var peekIdle = 200 * time.Millisecond

// lookahead holds the input that chooseSystem opened to read its PMTs, until the run takes it.
type lookahead struct{ in *input }

// open returns the input the look-ahead opened, which replays the bytes it read, or opens it
// now when there was none.
func (l *lookahead) open(path string, env Env) (*input, error) {
	if l != nil && l.in != nil {
		in := l.in
		l.in = nil
		return in, nil
	}
	return openInput(path, env)
}

// close closes the input if the run never took it (a usage error came first).
func (l *lookahead) close() {
	if l != nil && l.in != nil {
		l.in.Close()
		l.in = nil
	}
}

// chooseSystem returns the system the input is scrambled with: the one -cipher names, or when
// a descrambling run has no -cipher, the one the scrambling_descriptor of the input's PMT names
// (of the -service given, else of the first service that has one), csa2 when there is none or
// its mode is not one tsdescramble implements. A descrambling run opens its input here and
// looks at its start (see peekServices), except a live run with -cipher; the lookahead returned
// hands it to the run, which reads every byte as if nothing had looked. The notes it appends to notes are for stderr once
// the run starts: which system the PMT chose, a mode that tsdescramble cannot descramble, or a
// -cipher that disagrees with it.
func chooseSystem(c *config, env Env, notes *[]string) (scrambling.System, *lookahead, error) {
	lanes := c.lanes
	sys, err := lookupSystem("cipher", c.cipher, lanes)
	if err != nil || c.mode != pipeline.Descramble {
		return sys, nil, err
	}
	in, err := openInput(c.in, env)
	if err != nil {
		return sys, nil, nil // the run opens it again and says what is wrong, in its place
	}
	la := &lookahead{in: in}
	if f, ok := env.Stdin.(*os.File); ok && in.file == nil && env.IsTerminal != nil && env.IsTerminal(f) {
		// Input typed at a terminal is no transport stream, and waiting for it here would hold
		// back the usage errors that come after (a missing key, say).
		return sys, la, nil
	}
	if c.isSet("cipher") && in.live != nil {
		// -cipher names the system, so the look-ahead could only add a note: on a live input
		// it is not worth holding the first packets back for (the latency bound holds from the
		// first packet on).
		return sys, la, nil
	}
	var found []signalled
	for _, s := range peekServices(in) {
		if c.isSet("service") && int(s.Number) != c.service {
			continue
		}
		if m, ok := s.ScramblingMode(); ok {
			found = append(found, signalled{s.Number, m})
		}
	}
	if len(found) == 0 {
		return sys, la, nil
	}
	note := func(format string, a ...any) {
		*notes = append(*notes, fmt.Sprintf(format, a...))
	}
	f := found[0]
	signalledName := systemOfMode(f.mode)
	switch {
	case c.isSet("cipher"):
		if signalledName != "" && signalledName != sys.Name() {
			note("-cipher %s overrides the scrambling_descriptor in the PMT of service %d, which says %s", sys.Name(), f.number, signalledName)
		}
		return sys, la, nil
	case signalledName == "":
		note("scrambling_descriptor in the PMT of service %d: mode 0x%02X (%v), which tsdescramble does not implement: descrambling as csa2 (-cipher chooses another system)",
			f.number, uint8(f.mode), f.mode)
		return sys, la, nil
	}
	if sys, err = lookupSystem("cipher", signalledName, lanes); err != nil {
		la.close()
		return nil, nil, err
	}
	what := signalledName
	if f.mode == psi.ScramblingCSA1 {
		what += " (DVB-CSA1, the same cipher)"
	}
	var others []string
	for _, g := range found[1:] {
		if systemOfMode(g.mode) != signalledName {
			others = append(others, fmt.Sprintf("service %d %s", g.number, g.describe()))
		}
	}
	if len(others) > 0 {
		what += "; other services signal other systems (" + strings.Join(others, ", ") + "): -service or -cipher chooses"
	}
	note("scrambling_descriptor in the PMT of service %d: %s", f.number, what)
	return sys, la, nil
}

// signalled is the scrambling_mode a service's PMT carries.
type signalled struct {
	number uint16
	mode   psi.ScramblingMode
}

// describe names the system of the mode, or the mode itself when tsdescramble has no system for it.
func (s signalled) describe() string {
	if name := systemOfMode(s.mode); name != "" {
		return name
	}
	return fmt.Sprintf("mode 0x%02X (%v)", uint8(s.mode), s.mode)
}

// peekServices reads the start of in, in whatever framing it has, and returns the services of
// its PAT with their PMTs as read. It stops once every service of the PAT has shown its PMT,
// after peekLimit bytes, at the end of the input, at a read error, or when a pipe has sent
// nothing for peekIdle. Afterwards in reads those bytes again, then the rest of the input (or
// the read error, in its place): the run sees the same bytes whether or not anything looked.
func peekServices(in *input) []psi.Service {
	rec := &recorder{r: in.Reader, limit: peekLimit}
	if in.poll != nil {
		rec.deadline = in.poll
	}
	if in.live != nil {
		// A live feed that never shows its PMTs must not hold its first packets back for long.
		rec.deadline = idleDeadline{in.live}
		rec.until = time.Now().Add(peekLive)
		// Nor may the framer's look-ahead hold them: it would wait for four more packets past
		// the last PMT (80 ms at a packet every 20 ms) before it handed the PMT over.
		rec.pending, rec.wait = true, true
	}
	fr := ts.NewFramer(rec)
	tr := psi.NewTracker()
	var gen uint64
	for complete := false; !complete; {
		unit, err := fr.Next()
		if err == ts.ErrPending {
			rec.wait = true // the framer gave every whole packet it had: wait for more
			continue
		}
		if err != nil {
			break
		}
		p := unit[fr.Framing().Prefix:][:psi.PacketSize]
		if pid := uint16(p[1]&0x1F)<<8 | uint16(p[2]); !tr.Wants(pid) {
			continue
		}
		tr.Feed(p)
		if g := tr.Generation(); g != gen {
			gen = g
			complete = allPMTsRead(tr)
		}
	}
	fr.Release() // the tracker copied what it kept of the packets
	if rec.deadline != nil {
		rec.deadline.SetReadDeadline(time.Time{})
	}
	// The bytes read, then the rest.
	rest := in.Reader
	if err := rec.err; err != nil && err != io.EOF && !errors.Is(err, os.ErrDeadlineExceeded) && !errors.Is(err, live.ErrIdle) {
		rest = errReader{err}
	}
	in.Reader = &replay{chunks: rec.chunks, reads: rec.reads, rest: rest}
	return tr.Services()
}

// replay reads the bytes a recorder kept, then the rest of the input. It says when the bytes of
// each read arrived (ts.ArrivalReporter): those of the look-ahead when the look-ahead read them,
// which on a live input is up to peekLive before the run reads them again, so that the run's
// latency bound counts from then and does not hold them another bound. It lets go of each chunk
// once it is read, so the look-ahead's memory goes back as the run catches up.
type replay struct {
	chunks [][]byte
	reads  []recordedRead // the reads of the look-ahead not yet replayed, in order
	rest   io.Reader
	at     time.Time // when the bytes of the last Read arrived; zero: with that Read
}

func (r *replay) Read(p []byte) (int, error) {
	for len(r.chunks) > 0 && len(r.chunks[0]) == 0 {
		r.chunks[0] = nil
		r.chunks = r.chunks[1:]
	}
	if len(r.chunks) == 0 || len(r.reads) == 0 {
		r.chunks, r.reads, r.at = nil, nil, time.Time{}
		return r.rest.Read(p)
	}
	// A Read returns the bytes of one read of the look-ahead at most: they arrived together.
	n := copy(p[:min(len(p), r.reads[0].n)], r.chunks[0])
	r.chunks[0] = r.chunks[0][n:]
	r.at = r.reads[0].at
	if r.reads[0].n -= n; r.reads[0].n == 0 {
		r.reads = r.reads[1:]
	}
	return n, nil
}

// ArrivedAt says when the bytes of the last Read arrived (see ts.ArrivalReporter).
func (r *replay) ArrivedAt() time.Time { return r.at }

// arrivedAt returns what r says of when the bytes of its last Read arrived, if it can say
// (ts.ArrivalReporter), else the zero time. The readers that wrap the input pass it on.
func arrivedAt(r io.Reader) time.Time {
	if a, ok := r.(ts.ArrivalReporter); ok {
		return a.ArrivedAt()
	}
	return time.Time{}
}

// allPMTsRead reports whether the tracker has read a PAT and the PMT of each of its services.
func allPMTsRead(tr *psi.Tracker) bool {
	if _, ok := tr.TransportStreamID(); !ok {
		return false
	}
	for _, s := range tr.Services() {
		if !s.PMTSeen {
			return false
		}
	}
	return true
}

// recorder reads from r and keeps a copy of every byte it returns, up to limit bytes, after
// which it reports the end of its input (the input itself goes on). With a deadline, no read
// waits more than peekIdle. The copy is kept in chunks rather than one growing slice, so that
// it costs what it holds and no more, and can be let go of a chunk at a time.
type recorder struct {
	r        io.Reader
	deadline interface{ SetReadDeadline(time.Time) error }
	until    time.Time // when not zero, the end of the look-ahead
	// pending makes a read return ts.ErrPending rather than wait for the input, unless wait is
	// set: the framer then hands over the whole packets it holds at once rather than wait for
	// the bytes of its look-ahead (see ts.Framer.Next), and says ts.ErrPending itself when it
	// has none, which sets wait. A live input's look-ahead.
	pending, wait bool
	chunks        [][]byte
	reads         []recordedRead // how many bytes each read returned, and when
	n, limit      int
	err           error // the error that ended a read of r, io.EOF included
}

// recordedRead is a read of a recorder's input: how many bytes it returned, and when.
type recordedRead struct {
	n  int
	at time.Time
}

// sameArrival is how close reads of a recorder are taken to have arrived together: a pipe
// written a packet at a time returns a packet per read, and the times of the look-ahead's reads
// must cost little beside the bytes they date.
const sameArrival = time.Millisecond

// recordChunk is the largest size of the chunks of a recorder. The first is of peekRead bytes,
// each next one twice the size of the one before.
const recordChunk = 256 << 10

// peekRead bounds a read of the look-ahead. A PMT most often comes in the first few kilobytes:
// the look-ahead then copies and reads twice that much, not a whole read of the framer
// (256 KiB, most of a small recording in a batch).
const peekRead = 16 << 10

func (r *recorder) Read(p []byte) (int, error) {
	if r.err != nil {
		return 0, r.err
	}
	room := r.limit - r.n
	if room <= 0 || !r.until.IsZero() && time.Now().After(r.until) {
		return 0, io.EOF
	}
	if r.pending && !r.wait {
		return 0, ts.ErrPending
	}
	r.wait = false
	p = p[:min(len(p), room, peekRead)]
	if r.deadline != nil {
		r.deadline.SetReadDeadline(time.Now().Add(peekIdle))
	}
	n, err := r.r.Read(p)
	r.n += n
	if now := time.Now(); n > 0 {
		if last := len(r.reads) - 1; last >= 0 && now.Sub(r.reads[last].at) < sameArrival {
			r.reads[last].n += n // the earlier time: the bound of these bytes holds
		} else {
			r.reads = append(r.reads, recordedRead{n, now})
		}
	}
	for b := p[:n]; len(b) > 0; {
		if last := len(r.chunks) - 1; last < 0 || len(r.chunks[last]) == cap(r.chunks[last]) {
			size := peekRead
			if last >= 0 {
				size = 2 * cap(r.chunks[last])
			}
			r.chunks = append(r.chunks, make([]byte, 0, min(size, recordChunk, r.limit)))
		}
		c := &r.chunks[len(r.chunks)-1]
		k := min(len(b), cap(*c)-len(*c))
		*c = append(*c, b[:k]...)
		b = b[k:]
	}
	if err != nil {
		r.err = err
	}
	return n, err
}

// idleDeadline gives a live.Reader the read deadline a recorder sets, as an idle timeout.
type idleDeadline struct{ r *live.Reader }

func (d idleDeadline) SetReadDeadline(t time.Time) error {
	if t.IsZero() {
		d.r.SetIdleTimeout(0)
	} else {
		d.r.SetIdleTimeout(max(time.Until(t), time.Millisecond))
	}
	return nil
}

// errReader returns its error from every read.
type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }
