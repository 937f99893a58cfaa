package pipeline

import (
	"fmt"

	"github.com/tsdescramble/tsdescramble/psi"
)

// signaller writes Options.ScramblingMode into the PMT of every service a Scramble run scrambles,
// as a scrambling_descriptor (EN 300 468, 6.2.32), so that a descrambler can tell the system from
// the stream itself. It rewrites PMT packets in place as the classifier meets them, with a
// psi.PMTSignaller: a PMT section that fits its packet with 3 bytes of stuffing to spare takes the
// descriptor; others pass unchanged, are counted, and the first is logged.
//
// It reads the PAT and PMTs from the classifier's Tracker, the run's one view of the tables,
// which the classifier feeds each packet before the signaller sees it (so a PMT in that very
// packet counts). Packets of a PMT PID that arrive before the PAT naming it pass unchanged. It
// allocates only when the tables change.
type signaller struct {
	rw         psi.PMTSignaller
	tracker    *psi.Tracker
	generation uint64
	service    uint16       // Options.Service: only this program's PMT is signalled
	pids       *[8192]bool  // Options.PIDs, nil when none: programs with one of these PIDs
	wanted     [1024]uint64 // bit set of the program numbers whose PMT takes the descriptor
	system     string       // the output system's name, for the log
	remove     bool         // a descrambling run's: the descriptor is taken out, not written
	log        func(string)

	// signalled counts the PMT sections that left carrying the descriptor, left those that
	// could not take it; logged is set once the first of those has been logged.
	signalled, left int64
	logged          bool
}

// newSignaller returns the signaller of a run, or nil when it has nothing to signal: the run
// does not scramble, or Options.ScramblingMode is 0.
func newSignaller(o *Options, tables *psi.Tracker) *signaller {
	if o.Mode == Descramble {
		// The services a descrambling run selects go out clear: the scrambling_descriptor
		// would have the next reader take them for scrambled with the system it names.
		s := &signaller{tracker: tables, log: o.warnFunc(), remove: true}
		s.selection(o)
		s.rw.Remove = true
		return s
	}
	if o.Mode != Scramble || o.ScramblingMode == 0 {
		return nil
	}
	s := &signaller{tracker: tables, log: o.warnFunc(), system: "csa2"}
	if o.Out != nil && o.Out.System != nil {
		s.system = o.Out.System.Name()
	}
	s.selection(o)
	s.rw.Mode = o.ScramblingMode
	s.rw.Want = s.wants
	// A PMT without the descriptor means the DVB-CSA cipher already: for csa2 only a
	// descriptor left from an earlier scrambling is changed, and none added.
	s.rw.ReplaceOnly = o.ScramblingMode == psi.ScramblingCSA2
	return s
}

// selection takes the classifier's: a service when one is given (it wins over PIDs), else the
// PIDs, else every elementary stream.
func (s *signaller) selection(o *Options) {
	switch {
	case o.Service > 0:
		s.service = uint16(o.Service)
	case len(o.PIDs) > 0:
		s.pids = new([8192]bool)
		for _, pid := range o.PIDs {
			s.pids[pid&0x1FFF] = true
		}
	}
}

// wants reports whether the PMT of program carries the descriptor.
func (s *signaller) wants(program uint16) bool { return s.wanted[program>>6]&(1<<(program&63)) != 0 }

// packet handles a clear packet p of pid in a Scramble run before it is scrambled (a PMT PID
// given with -pid is scrambled after its PMT is signalled). A nil signaller does nothing.
func (s *signaller) packet(p []byte, pid uint16) {
	if s == nil || !s.tracker.Wants(pid) {
		return
	}
	if g := s.tracker.Generation(); g != s.generation {
		s.generation = g
		s.choose()
	}
	if pid == psi.PATPID || !s.tracker.IsPMTPID(pid) {
		return
	}
	r := s.rw.Packet(p)
	s.signalled += int64(r.Signalled)
	if r.Left == 0 {
		return
	}
	s.left += int64(r.Left)
	if !s.logged && s.log != nil {
		s.logged = true
		why := "has no 3 bytes of stuffing after it in its packet"
		if r.Spans {
			why = "spans several packets"
		}
		svc := fmt.Sprintf("service %d", r.Program)
		if r.Program == 0 {
			svc = "a service"
		}
		if s.remove {
			s.log(fmt.Sprintf("the PMT of %s (PID %#04x) is followed in its packet by a section that runs on: it keeps its scrambling_descriptor, though the service goes out clear (this is the only such note)", svc, pid))
			return
		}
		s.log(fmt.Sprintf("the PMT of %s (PID %#04x) %s: it goes out without a scrambling_descriptor, so descramblers must be told -cipher %s (this is the only such note)",
			svc, pid, why, s.system))
	}
}

// choose works out again which programs get the descriptor: the services whose elementary
// streams the run scrambles.
func (s *signaller) choose() {
	clear(s.wanted[:])
	for _, svc := range s.tracker.Services() {
		want := false
		switch {
		case s.service != 0:
			want = svc.Number == s.service
		case s.pids != nil:
			for _, st := range svc.Streams {
				want = want || s.pids[st.PID]
			}
		default:
			// Counted in until its PMT is read too, so that a PMT that spans packets is
			// reported the first time it goes by, before the tracker has read it whole.
			want = len(svc.Streams) > 0 || !svc.PMTSeen
		}
		if want {
			s.wanted[svc.Number>>6] |= 1 << (svc.Number & 63)
		}
	}
}
