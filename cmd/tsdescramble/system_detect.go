package main

import (
	"fmt"
	"os"
	"strings"
	"time"

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
func (l *lookahead) open(c *config, env Env) (*input, error) {
	if l != nil && l.in != nil {
		in := l.in
		l.in = nil
		return in, nil
	}
	return openRunInput(c, env)
}

// close closes the input if the run never took it (a usage error came first).
func (l *lookahead) close() {
	if l != nil && l.in != nil {
		l.in.Close()
		l.in = nil
	}
}

// chooseSystem returns the system the input is scrambled with: the one -cipher names, or when a
// descrambling run has no -cipher, the one the scrambling_descriptor of the input's PMT names (of
// the -service given, else of the first service that has one), csa2 when there is none or its mode
// is not one tsdescramble implements. A descrambling run opens its input here and looks at its
// start (see peekServices), except a live run with -cipher; the lookahead returned hands it to the
// run, which reads every byte as if nothing had looked. The notes it appends to notes are for
// stderr once the run starts: which system the PMT chose, a mode that tsdescramble cannot
// descramble, or a -cipher that disagrees with it.
func chooseSystem(c *config, env Env, notes *[]string) (scrambling.System, *lookahead, error) {
	lanes := c.lanes
	sys, err := lookupSystem("cipher", c.cipher, lanes)
	if err != nil || c.mode != pipeline.Descramble {
		return sys, nil, err
	}
	in, err := openRunInput(c, env)
	if err != nil {
		return sys, nil, nil // the run opens it again and says what is wrong, in its place
	}
	la := &lookahead{in: in}
	if f, ok := env.Stdin.(*os.File); ok && in.file == nil && !in.network() && env.IsTerminal != nil && env.IsTerminal(f) {
		// Input typed at a terminal is no transport stream, and waiting for it here would hold
		// back the usage errors that come after (a missing key, say).
		return sys, la, nil
	}
	if c.isSet("cipher") && in.network() {
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
// after peekLimit bytes, at the end of the input, at a read error, or when a pipe or a network
// input has sent nothing for peekIdle (a network input: or after peekLive in all). The packets
// it read stay in the input's source (ts.Source.Peek), which hands them to the run first: the
// run sees the same packets whether or not anything looked.
func peekServices(in *input) []psi.Service {
	tr := psi.NewTracker()
	var gen uint64
	peekStart(in, func(p []byte) bool {
		if pid := uint16(p[1]&0x1F)<<8 | uint16(p[2]); !tr.Wants(pid) {
			return true
		}
		tr.Feed(p)
		if g := tr.Generation(); g != gen {
			gen = g
			return !tr.AllPMTsRead()
		}
		return true
	})
	return tr.Services()
}

// peekStart gives look each packet of the start of the input, until it returns false, after
// peekLimit bytes, at the end of the input, at a read error, or when a pipe or a network input
// has sent nothing for peekIdle (a network input: or after peekLive in all). The packets stay in
// the input's source (ts.Source.Peek), which hands them to the run first.
func peekStart(in *input, look func(p []byte) bool) {
	var idle time.Duration
	var until time.Time
	if in.poll != nil || in.network() {
		idle = peekIdle
	}
	if in.network() {
		// A live feed that never shows its PMTs must not hold its first packets back for long.
		until = time.Now().Add(peekLive)
	}
	in.source().Peek(peekLimit, idle, until, func(unit []byte, fr ts.Framing) bool {
		return look(unit[fr.Prefix:][:ts.PacketSize])
	})
}
