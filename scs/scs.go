// Package scs is the stream side of a DVB SimulCrypt scrambler (the SCS of ETSI TS 103 197): a
// Stage is a ts.Stage, which a ts.Source runs between its framer and its reader. It takes the
// packets of a clear transport stream and hands them on with crypto periods on the clock of its
// PCRs (on the wall clock for a live input, Config.Live), a control word for each, the ECMs an
// ECMG builds from them on an ECM PID, and a CA_descriptor naming that PID in the PMT of each
// scrambled service. The scrambling itself is the pipeline's: the Stage tells it where each
// period starts through OnPeriod (pipeline.PeriodFeed.Start).
//
// Timing follows the ECMG's channel_status: the ECM of crypto period n goes on air delay_start
// after period n begins (before it, when negative), and repeats every ECM_rep_period; with
// lead_CW 1 and CW_per_msg 2 each ECM carries the CW of its period and of the next, so that a
// receiver holds the next CW before the parity flips.
//
// No packet goes out scrambled with a CW that no ECM before it in the stream carries: a
// receiver holds one even and one odd CW, from the last ECM it read, and nothing else. So a
// period begins only once an ECM carrying its CW is in the stream (lasting at least
// CPDuration), and an ECM goes on air only while it carries no CW of the parity in use other
// than the current one. When the ECMG is late or lost, the period before goes on, its ECM
// repeating, and the stream never stops; before the first ECM the stream waits for it
// (Config.ECMWait), then stops or goes out clear (Config.SendClear).
package scs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"time"

	"github.com/tsdescramble/tsdescramble/internal/units"
	"github.com/tsdescramble/tsdescramble/psi"
	"github.com/tsdescramble/tsdescramble/simulcrypt"
	"github.com/tsdescramble/tsdescramble/ts"
)

// Config says how a Stage scrambles.
type Config struct {
	// CPDuration is the length of a crypto period, in stream time (from the PCRs). A period
	// never lasts less: after one was prolonged, the next lasts CPDuration from its own start.
	CPDuration time.Duration
	// NextCW returns the control word of each new crypto period in turn.
	NextCW func() ([]byte, error)
	// ECMG, when set, is the ECMG to ask for ECMs; without one, the Stage only cuts periods.
	ECMG *simulcrypt.Config
	// ECMPID is the PID of the ECMs.
	ECMPID uint16
	// AccessCriteria, when not empty, go with every CW_provision.
	AccessCriteria []byte
	// ECMTimeout bounds the wait for an ECM that is due (0: 2 s, or 50 ms with Live); after it
	// the current ECM goes on repeating and the ECM comes when it comes.
	ECMTimeout time.Duration
	// ECMWait bounds, in wall time, the wait for the first ECM, that is for an ECM carrying
	// the CW of a period before any packet of it goes out (0: 5 s; negative: no wait). The
	// input waits meanwhile, Packet not returning: a file is not read on, a live input queues
	// in its buffers.
	ECMWait time.Duration
	// SendClear says what happens when ECMWait runs out: the packets go out clear, with no
	// CW, no ECM and no CA_descriptor, until an ECM comes (counted in Stats.Clear); without
	// it, Packet fails with ErrNoECM.
	SendClear bool
	// Live says the input is a live feed. Its crypto periods follow the wall clock, from the
	// arrival of the first packet, instead of the PCRs: the time of a packet is known as it
	// comes, so that no packet waits for the next PCR (which can be 100 ms away, and for ever
	// on a feed without PCR), and Packet hands on each packet in the call that brings it. An
	// ECM that is due is waited for briefly, since the feed does not wait meanwhile.
	Live bool
	// Scrambled says whether a service is scrambled: its PMT gets the CA_descriptor.
	Scrambled func(svc psi.Service) bool
	// OnPeriod is called when a crypto period begins, at the packet-th packet the Stage hands
	// on (from 1), within the Packet or End call that appends it, so before the Source hands
	// it on to its reader. The first period is even, and the parity alternates at each call;
	// cw is nil for a period of no packet that only keeps the parity of the CP numbers, when
	// the first ECM is one of an odd period.
	OnPeriod func(packet int64, cw []byte)
	// CWLog, when set, receives each period's CW as an OSCam .cwl line.
	CWLog io.Writer
	// Log receives one-line notes (the first ECM after a clear start, the ECMG back).
	Log func(string)
	// Warn receives the notes of what went wrong (the ECMG's errors, its loss, an ECM refused
	// or missing, a PMT without room); Log when nil.
	Warn func(string)
}

// ErrECMPIDInUse is returned by Packet when the input carries packets on the ECM PID: ECMs
// mixed into another stream would break both.
var ErrECMPIDInUse = errors.New("the input already carries packets on the ECM PID: choose a PID it does not use")

// ErrNoECM is wrapped by the error of Packet when no ECM came within Config.ECMWait and the
// stream may not go out clear: rather than scramble with a CW no receiver can learn, the
// stream stops.
var ErrNoECM = errors.New("no ECM came")

// Stats says what a Stage did.
type Stats struct {
	Periods       int64 // crypto periods begun
	Held          int64 // period starts put off for want of an ECM carrying the period's CW
	ECMs          int64 // ECM_responses received
	ECMRefused    int64 // of which refused: bad size, bad TS packets, a period not asked for
	Skipped       int64 // crypto periods the ECMG refused before the first ECM: the next opened
	Clear         int64 // packets sent clear for want of a first ECM (Config.SendClear)
	ECMPackets    int64 // ECM packets put in the stream
	Replaced      int64 // of which in the place of null packets
	Inserted      int64 // and inserted between the input's packets
	PMTSignalled  int64 // PMT sections that went out with the CA_descriptor
	PMTLeft       int64 // PMT sections of scrambled services left without it (no room)
	ECMGErrors    int64 // channel_error and stream_error replies
	Lost          int64 // times the ECMG was lost
	Reconnected   int64 // times it came back
	PCRs          int64
	PCRJumps      int64
	Packets       int64         // input packets
	StreamTime    time.Duration // on the PCR clock; with Config.Live, on the wall clock
	ChannelParams simulcrypt.ChannelParams
}

// Running is what a Stage did so far, as another goroutine may read it while the stage runs
// (a metrics endpoint): Stage.Running.
type Running struct {
	Connected  bool  // the ECMG channel is up
	ECMPackets int64 // ECM packets put in the stream
	Replaced   int64 // of which in the place of null packets
	Inserted   int64 // and inserted between the input's packets
	ECMRefused int64 // ECMs refused
}

// Stage is the ts.Stage that puts ECMs and signalled PMTs into the stream, for the pipeline to
// scramble.
type Stage struct {
	cfg    Config
	client *simulcrypt.Client
	params simulcrypt.ChannelParams
	st     Stats

	// What Running reads: copies of counts of st, kept by the stage's goroutine as it counts.
	// Each changes once per ECM or ECM packet, never per input packet.
	connected                                   atomic.Bool
	ecmPackets, replaced, inserted, ecmsRefused atomic.Int64

	look []byte // copies of the packet units waiting for the next PCR: Packet's unit is valid only during the call
	held []heldUnit

	in        int64       // input packets
	outN      int64       // packet units handed on
	clk       ts.PCRClock // bridges PCR jumps, so that crypto periods keep their length across a splice
	wall      wallClock
	now       time.Duration
	fr0       ts.Framing
	tmpl      []byte        // the current unit, as template for inserted units
	ecmUnit   []byte        // where emit builds an ECM unit before it is appended
	period    int64         // current crypto period (CP number), -1 before the first
	begun     time.Duration // when it began, on the stream clock
	nextStart time.Duration // when the next may begin: CPDuration after
	heldP     int64         // the last period whose end was put off, -1 when none
	cws       map[int64][]byte

	// Before the first period: the CP whose ECM is awaited (its and the next one's CW were
	// provided), since when (wall time), whether the wait ran out, the periods refused.
	cand      int64
	waitFrom  time.Time
	gaveUp    bool
	parityGap bool // the first period is odd: OnPeriod gets a period of no packet first

	// ECMs: datagrams by CP, the one on air and when it repeats.
	ecms      map[int64][]byte
	provided  map[int64]bool
	waited    map[int64]bool // CPs whose ECM was awaited in vain once: not blocked on again
	onAir     int64
	nextRep   time.Duration
	pending   [][ts.PacketSize]byte
	pendAt    time.Duration
	fresh     bool // pending holds the first showing of the ECM on air
	cc        uint8
	lastNull  time.Duration
	hadNull   bool
	lostAt    time.Time // when the ECMG was last lost
	lastTry   time.Time
	redial    chan *simulcrypt.Client // a reconnection under way
	refused   bool                    // the ECMG refused an ECM that no awaited ECM has answered for yet
	notes     int                     // refused ECMs logged
	leftNoted bool                    // a reconnection refused for its lead_CW and CW_per_msg was logged

	tracker    *psi.Tracker
	generation uint64
	wanted     map[uint16]bool
	pmtLogged  bool
	pmt        psi.PMTSignaller // set up at the first PMT to signal
}

var _ ts.Stage = (*Stage)(nil)

// New connects to the ECMG, if any, and returns a Stage, to be handed the packets of the input.
func New(ctx context.Context, cfg Config) (*Stage, error) {
	if cfg.CPDuration <= 0 {
		return nil, fmt.Errorf("scs: crypto period %v", cfg.CPDuration)
	}
	switch {
	case cfg.ECMTimeout > 0:
	case cfg.Live:
		cfg.ECMTimeout = 50 * time.Millisecond
	default:
		cfg.ECMTimeout = 2 * time.Second
	}
	switch {
	case cfg.ECMWait == 0:
		cfg.ECMWait = 5 * time.Second
	case cfg.ECMWait < 0:
		cfg.ECMWait = 0
	}
	if cfg.Log == nil {
		cfg.Log = func(string) {}
	}
	s := &Stage{cfg: cfg, period: -1, heldP: -1, cws: map[int64][]byte{},
		ecms: map[int64][]byte{}, provided: map[int64]bool{}, waited: map[int64]bool{}, onAir: -1,
		tracker: psi.NewTracker(), wanted: map[uint16]bool{}}
	if cfg.ECMG != nil {
		c, err := simulcrypt.Dial(ctx, *cfg.ECMG)
		if err != nil {
			return nil, err
		}
		s.client, s.params = c, c.Params()
		s.st.ChannelParams = s.params
		s.connected.Store(true)
		if s.params.MinCPDuration > cfg.CPDuration {
			c.Close()
			return nil, fmt.Errorf("the ECMG wants crypto periods of %v or more (min_CP_duration)", s.params.MinCPDuration)
		}
		if err := CheckCWs(s.params); err != nil {
			c.Close()
			return nil, err
		}
	}
	return s, nil
}

// warn writes a note of what went wrong: to Config.Warn, or Log without it.
func (s *Stage) warn(msg string) {
	switch {
	case s.cfg.Warn != nil:
		s.cfg.Warn(msg)
	case s.cfg.Log != nil:
		s.cfg.Log(msg)
	}
}

// CheckCWs refuses the lead_CW and CW_per_msg of a channel_status that no receiver could
// follow. The ECM of crypto period n carries the CWs of periods n+lead_CW-CW_per_msg+1 to
// n+lead_CW, and a receiver keeps one even and one odd CW, from the last ECM it read: the ECM
// of a period must carry that period's CW (lead_CW < CW_per_msg), and no two CWs of one parity
// (CW_per_msg at most 2). What is left: lead_CW 0 with CW_per_msg 1 or 2, lead_CW 1 with
// CW_per_msg 2.
func CheckCWs(p simulcrypt.ChannelParams) error {
	switch {
	case p.LeadCW >= p.CWPerMsg:
		return fmt.Errorf("the ECMG's lead_CW %d and CW_per_msg %d: the ECM of a crypto period would not carry the CW of that period, and no receiver could descramble it", p.LeadCW, p.CWPerMsg)
	case p.CWPerMsg > 2:
		return fmt.Errorf("the ECMG's lead_CW %d and CW_per_msg %d: an ECM would carry two CWs of one parity, of which a receiver, holding one even and one odd CW, can keep one", p.LeadCW, p.CWPerMsg)
	}
	return nil
}

// Running returns what the Stage did so far, from any goroutine while it runs; Stats, from the
// stage's goroutine or once it is done, says more.
func (s *Stage) Running() Running {
	return Running{Connected: s.connected.Load(), ECMPackets: s.ecmPackets.Load(),
		Replaced: s.replaced.Load(), Inserted: s.inserted.Load(), ECMRefused: s.ecmsRefused.Load()}
}

// Stats returns what the Stage did so far.
func (s *Stage) Stats() Stats {
	st := s.st
	st.PCRs, st.PCRJumps, st.Packets, st.StreamTime = s.clk.PCRs(), s.clk.Jumps(), s.in, s.now
	return st
}

// Close ends the ECMG channel, if any.
func (s *Stage) Close() error {
	if s.redial != nil {
		if c := <-s.redial; c != nil {
			c.Close()
		}
		s.redial = nil
	}
	if s.client == nil {
		return nil
	}
	s.connected.Store(false)
	return s.client.Close()
}

// Packet takes the next unit of the input. Units wait for the next PCR, which places them in
// time, up to maxHeld of them; on a live input the time is now, and each unit is handled in
// the call that brings it. The units handled, with the ECM units put among them, go on in
// out. An error ends the stream: the units held after the one that failed are dropped.
func (s *Stage) Packet(unit []byte, fr ts.Framing, out *ts.Units) error {
	s.in++
	p := unit[fr.Prefix : fr.Prefix+ts.PacketSize]
	dated := s.clk.Observe(p, s.in) != ts.NoPCR || s.cfg.Live
	if dated && len(s.held) == 0 {
		// Nothing waits before it: it is handled where it is, without a copy (every unit of
		// a live input).
		return s.packet(unit, fr, s.in, out)
	}
	s.held = append(s.held, heldUnit{len(s.look), fr})
	s.look = append(s.look, unit...)
	if dated || len(s.held) >= maxHeld {
		return s.flush(out)
	}
	return nil
}

// End handles the units still held at the end of the input, which no PCR follows: they are
// placed at the rate of the last PCRs. What goes on is appended to out.
func (s *Stage) End(out *ts.Units) error {
	return s.flush(out)
}

// cw returns the CW of period n, drawing the CWs up to it.
func (s *Stage) cw(n int64) ([]byte, error) {
	if cw, ok := s.cws[n]; ok {
		return cw, nil
	}
	cw, err := s.cfg.NextCW()
	if err != nil {
		return nil, err
	}
	s.cws[n] = cw
	delete(s.cws, n-8)
	return cw, nil
}

// maxHeld bounds the packets held for want of a PCR; past it they are placed at the rate of
// the last PCRs.
const maxHeld = 4096

type heldUnit struct {
	at int
	fr ts.Framing
}

// flush handles the packets held, now that their time is known, and appends what goes on to out.
func (s *Stage) flush(out *ts.Units) error {
	first := s.in - int64(len(s.held)) + 1
	var err error
	for i, h := range s.held {
		if err == nil {
			err = s.packet(s.look[h.at:h.at+h.fr.Size], h.fr, first+int64(i), out)
		}
	}
	s.held, s.look = s.held[:0], s.look[:0]
	return err
}

// packet handles input unit idx, appending it to out with the ECM units that go before it, or
// an ECM unit in its place when it is a null packet.
func (s *Stage) packet(unit []byte, fr ts.Framing, idx int64, out *ts.Units) error {
	s.fr0 = fr
	s.tmpl = unit
	p := unit[fr.Prefix : fr.Prefix+ts.PacketSize]
	pid := ts.PID(p)
	if s.cfg.Live {
		s.now = s.wall.now()
	} else {
		s.now = time.Duration(s.clk.Time(idx) * 1000 / 27) // 27 MHz ticks to ns
	}
	if pid == s.cfg.ECMPID && s.cfg.ECMG != nil {
		return fmt.Errorf("%w: PID %#04x", ErrECMPIDInUse, pid)
	}

	flip := false
	switch {
	case s.period < 0 && s.cfg.ECMG == nil:
		s.flipTo(0)
		flip = true
	case s.period < 0:
		ok, err := s.open(out)
		if err != nil {
			return err
		}
		if ok {
			s.flipTo(s.period)
			flip = true
		}
	default:
		if err := s.ecmSchedule(); err != nil {
			return err
		}
		if s.now >= s.nextStart {
			if s.ecmFor(s.period+1, out) {
				s.flipTo(s.period + 1)
				flip = true
			} else if s.heldP != s.period {
				s.heldP = s.period
				s.st.Held++
				s.warn(fmt.Sprintf("crypto period %d goes on past its end: no ECM carrying the next CW is on air yet", s.period))
			}
		}
	}
	if flip {
		if err := s.provideAhead(); err != nil {
			return err
		}
	}
	if pid == ts.NullPID {
		s.lastNull, s.hadNull = s.now, true
		if len(s.pending) > 0 {
			s.emit(out, s.pending[0][:], true)
			s.pending = s.pending[1:]
			s.fresh = s.fresh && len(s.pending) > 0
			s.outN++
			if flip {
				return s.begin()
			}
			return nil
		}
	}
	if len(s.pending) > 0 && (!s.hadNull || s.now-s.lastNull > 2*s.repPeriod() || s.now-s.pendAt > s.slack()) {
		s.emitPending(out)
	}
	if s.cfg.ECMG != nil && s.tracker.Wants(pid) {
		s.signalPMT(p, pid)
	}
	if s.period < 0 {
		s.st.Clear++
	}
	out.Append(unit)
	s.outN++
	if flip {
		return s.begin()
	}
	return nil
}

// flipTo makes n the current period from the packet at hand: the next may begin CPDuration
// later on the stream clock, however late this one began, so that periods held back for want
// of an ECM are not made up for by short ones.
func (s *Stage) flipTo(n int64) {
	s.period, s.begun, s.nextStart = n, s.now, s.now+s.cfg.CPDuration
}

// begin starts period s.period at the packet just handed on.
func (s *Stage) begin() error {
	cw, err := s.cw(s.period)
	if err != nil {
		return err
	}
	s.st.Periods++
	if s.cfg.OnPeriod != nil {
		if s.parityGap {
			s.cfg.OnPeriod(s.outN, nil)
			s.parityGap = false
		}
		s.cfg.OnPeriod(s.outN, cw)
	}
	if s.cfg.CWLog != nil {
		var b strings.Builder
		fmt.Fprintf(&b, "%d", s.period&1)
		for _, c := range cw {
			fmt.Fprintf(&b, " %02X", c)
		}
		t := s.now.Truncate(time.Millisecond)
		fmt.Fprintf(&b, " # CP %d at %02d:%02d:%02d.%03d of the stream\n", s.period, int(t.Hours()), int(t.Minutes())%60, int(t.Seconds())%60, t.Milliseconds()%1000)
		if _, err := io.WriteString(s.cfg.CWLog, b.String()); err != nil {
			return fmt.Errorf("cannot write the CW log: %w", err)
		}
	}
	return nil
}

func (s *Stage) repPeriod() time.Duration {
	if s.params.RepPeriod > 0 {
		return s.params.RepPeriod
	}
	return time.Second
}

// slack is how long a due ECM may wait for a null packet to take its place: a tenth of the
// repetition period, which the repetition makes up for by running that much faster.
func (s *Stage) slack() time.Duration { return s.repPeriod() / 10 }

// cwRange returns the periods whose CWs the ECM of period k carries: k+lead_CW-CW_per_msg+1
// to k+lead_CW.
func (s *Stage) cwRange(k int64) (lo, hi int64) {
	lead, per := int64(s.params.LeadCW), int64(s.params.CWPerMsg)
	return k + lead - per + 1, k + lead
}

// carries reports whether the ECM of period k carries the CW of period n.
func (s *Stage) carries(k, n int64) bool {
	lo, hi := s.cwRange(k)
	return lo <= n && n <= hi
}

// fits reports whether the ECM of period k may be on air during period n: it carries no CW of
// n's parity but n's, which a receiver would take for the CW of the packets on air. With
// lead_CW 1, the ECM of the next period does not (it carries the CW after it): it goes on air
// when its period begins, whatever a negative delay_start says.
func (s *Stage) fits(k, n int64) bool {
	lo, hi := s.cwRange(k)
	for m := lo; m <= hi; m++ {
		if m != n && (m-n)&1 == 0 {
			return false
		}
	}
	return true
}

// ecmFor reports whether period n may begin at the packet at hand: an ECM carrying its CW is in
// the stream before it. The ECM on air may carry it; else a received ECM that carries it and
// fits period n goes on air now, ahead of the packet, in out.
func (s *Stage) ecmFor(n int64, out *ts.Units) bool {
	if s.cfg.ECMG == nil {
		return true
	}
	if s.onAir >= 0 && s.carries(s.onAir, n) {
		if s.fresh {
			s.emitPending(out) // the ECM still waits for a null packet: it goes first
		}
		return true
	}
	s.poll()
	for k := n; k > s.onAir; k-- {
		d, ok := s.ecms[k]
		if !ok || !s.carries(k, n) || !s.fits(k, n) {
			continue
		}
		if k > s.onAir+1 && s.onAir >= 0 {
			s.warn(fmt.Sprintf("the ECM of crypto period %d never came: the ECM of period %d follows the one of period %d", s.onAir+1, k, s.onAir))
		}
		s.air(k, d)
		s.emitPending(out)
		return true
	}
	return false
}

// open tries to begin the first crypto period at the packet at hand: its packets go out only
// after an ECM carrying its CW. It waits for one, the input waiting meanwhile, up to ECMWait of
// wall time from the first packet; then, with SendClear, the packets go out clear, each looking
// for the ECM without waiting, and else the stream stops with ErrNoECM. A period the ECMG
// refuses is given up for the next, whose CW was provided with it. The ECM that opens the
// stream goes into out.
func (s *Stage) open(out *ts.Units) (bool, error) {
	if s.waitFrom.IsZero() {
		s.waitFrom = time.Now()
		s.cand = 0
		s.nextStart = s.now + s.cfg.CPDuration
		if err := s.provideAhead(); err != nil {
			return false, err
		}
	}
	for {
		s.poll()
		if s.refused {
			s.refused = false
			s.skip()
		}
		// The ECM of the period awaited opens the stream, else the next one's (its CW was
		// provided with it), else one that came late for a period given up.
		for _, k := range [...]int64{s.cand, s.cand + 1, s.cand - 1, s.cand - 2, s.cand - 3, s.cand - 4} {
			if d, ok := s.ecms[k]; ok && s.carries(k, k) {
				if s.gaveUp {
					s.cfg.Log(fmt.Sprintf("the first ECM came (crypto period %d), after %d packets went out clear: scrambling begins", k, s.st.Clear))
				}
				s.period, s.parityGap = k, k&1 == 1
				s.air(k, d)
				s.emitPending(out) // before the period's first packet
				return true, nil
			}
		}
		if s.gaveUp {
			// Each crypto period of the clear stream is offered to the ECMG in turn, so that
			// one that comes back, or stops refusing, ends it.
			if s.now >= s.nextStart {
				s.cand++
				s.nextStart = s.now + s.cfg.CPDuration
				if err := s.provideAhead(); err != nil {
					return false, err
				}
			}
			return false, nil
		}
		left := s.cfg.ECMWait - time.Since(s.waitFrom)
		if left <= 0 {
			why := s.whyNoECM()
			if !s.cfg.SendClear {
				return false, fmt.Errorf("%w for crypto period %d within %v (%s)", ErrNoECM, s.cand, s.cfg.ECMWait, why)
			}
			s.gaveUp = true
			s.warn(fmt.Sprintf("no ECM for crypto period %d within %v (%s): the stream goes out clear until one comes", s.cand, s.cfg.ECMWait, why))
			continue
		}
		s.block(min(left, 100*time.Millisecond))
	}
}

// skip gives up the period awaited first, which the ECMG refused, for the next one; a few
// times only, so that an ECMG that refuses everything is not asked again and again.
func (s *Stage) skip() {
	const most = 8
	if s.st.Skipped >= most {
		return
	}
	s.st.Skipped++
	s.warn(fmt.Sprintf("no ECM for crypto period %d: the stream waits for the ECM of crypto period %d", s.cand, s.cand+1))
	s.cand++
	s.provideAhead()
}

// whyNoECM says what the ECMG did instead of sending the first ECM.
func (s *Stage) whyNoECM() string {
	switch {
	case s.client == nil && s.st.Lost > 0:
		return "the ECMG was lost"
	case s.st.ECMRefused > 0:
		return units.Count(s.st.ECMRefused, "ECM") + " refused"
	case s.st.ECMGErrors > 0:
		return units.Count(s.st.ECMGErrors, "error reply")
	case s.st.ECMs == 0:
		return "the ECMG answered no CW_provision"
	}
	return units.Count(s.st.ECMs, "ECM") + " for other periods"
}

// block waits up to d for a message of the ECMG, or for d when it is lost (poll then tries it
// again).
func (s *Stage) block(d time.Duration) {
	timer := time.NewTimer(d)
	defer timer.Stop()
	if s.client == nil {
		<-timer.C
		return
	}
	select {
	case e := <-s.client.ECMs():
		s.take(e)
	case err := <-s.client.Errors():
		s.report(err)
	case <-timer.C:
	}
}

// cpcws returns the CP_CW_combinations of the CW_provision of period n: the CWs of periods
// n+lead_CW-CW_per_msg+1 to n+lead_CW.
func (s *Stage) cpcws(n int64) ([]simulcrypt.CPCW, error) {
	lo, hi := s.cwRange(n)
	var out []simulcrypt.CPCW
	for k := lo; k <= hi; k++ {
		if k < 0 {
			continue
		}
		cw, err := s.cw(k)
		if err != nil {
			return nil, err
		}
		out = append(out, simulcrypt.CPCW{CP: uint16(k), CW: cw})
	}
	return out, nil
}

// ref is the period the ECMG is asked about: the current one, or the one awaited first.
func (s *Stage) ref() int64 {
	if s.period < 0 {
		return s.cand
	}
	return s.period
}

// provideAhead sends the CW_provisions of the current period and the next, those not sent yet.
func (s *Stage) provideAhead() error {
	if s.client == nil {
		return nil
	}
	for n := s.ref(); n <= s.ref()+1; n++ {
		if s.provided[n] {
			continue
		}
		cws, err := s.cpcws(n)
		if err != nil {
			return err
		}
		if err := s.client.Provide(uint16(n), cws, s.cfg.CPDuration, s.cfg.AccessCriteria); err != nil {
			s.lost(err)
			return nil
		}
		s.provided[n] = true
		delete(s.provided, n-8)
	}
	return nil
}

// ecmSchedule puts the next period's ECM on air when it is due and fits the current period,
// and the current one again when its repetition is.
func (s *Stage) ecmSchedule() error {
	if s.cfg.ECMG == nil {
		return nil
	}
	next := s.onAir + 1
	due, ok := time.Duration(0), true
	switch next {
	case s.period:
		due = s.begun + s.params.DelayStart
	case s.period + 1:
		due = s.nextStart + s.params.DelayStart
	default:
		ok = false
	}
	if ok && s.now >= due && s.fits(next, s.period) {
		if datagram, ok := s.await(next); ok {
			s.air(next, datagram)
			return nil
		}
	}
	if s.onAir >= 0 && s.now >= s.nextRep {
		s.poll()
		s.queue(s.ecms[s.onAir])
		s.nextRep += s.repPeriod() - s.slack()
		if s.nextRep <= s.now {
			s.nextRep = s.now + s.repPeriod() - s.slack()
		}
	}
	return nil
}

// air puts the ECM of period k on air: it goes out now and repeats.
func (s *Stage) air(k int64, datagram []byte) {
	s.onAir = k
	s.queue(datagram)
	s.fresh = len(s.pending) > 0
	s.nextRep = s.now + s.repPeriod() - s.slack()
}

// await returns the ECM of period n, waiting for it up to ECMTimeout the first time it is due.
func (s *Stage) await(n int64) ([]byte, bool) {
	s.poll()
	if d, ok := s.ecms[n]; ok {
		return d, true
	}
	if s.client == nil || s.waited[n] {
		return nil, false
	}
	s.waited[n] = true
	if s.refused {
		// A stream_error came in place of an ECM: the ECMG answers CW_provisions in turn.
		s.refused = false
		s.warn(fmt.Sprintf("no ECM for crypto period %d: %s", n, s.keepsRepeating()))
		return nil, false
	}
	timer := time.NewTimer(s.cfg.ECMTimeout)
	defer timer.Stop()
	for {
		select {
		case e := <-s.client.ECMs():
			s.take(e)
			if d, ok := s.ecms[n]; ok {
				return d, true
			}
		case err := <-s.client.Errors():
			if s.report(err); s.client == nil {
				return nil, false
			}
		case <-timer.C:
			s.warn(fmt.Sprintf("no ECM for crypto period %d within %v: %s", n, s.cfg.ECMTimeout, s.keepsRepeating()))
			return nil, false
		}
		if s.refused {
			// The ECMG answers CW_provisions in turn: this was its answer.
			s.refused = false
			s.warn(fmt.Sprintf("no ECM for crypto period %d: %s", n, s.keepsRepeating()))
			return nil, false
		}
	}
}

func (s *Stage) keepsRepeating() string {
	if s.onAir < 0 {
		return "the stream goes on without ECM"
	}
	return fmt.Sprintf("the ECM of crypto period %d keeps repeating", s.onAir)
}

// poll takes what the ECMG sent without waiting, and reconnects to a lost one now and then.
func (s *Stage) poll() {
	if s.client == nil {
		s.reconnect()
		return
	}
	for {
		select {
		case e := <-s.client.ECMs():
			s.take(e)
		case err := <-s.client.Errors():
			if s.report(err); s.client == nil {
				return
			}
		default:
			return
		}
	}
}

// take keeps an ECM for its period, unless it is refused: one for a period not asked for, or
// one that would not go into the stream as it is (see checkECM). A refused ECM counts as the
// ECMG's answer for the period awaited, as a stream_error does.
func (s *Stage) take(e simulcrypt.ECM) {
	s.st.ECMs++
	ref := s.ref()
	k := ref + int64(int16(e.CP-uint16(ref))) // the period nearest the one at hand with this CP_number
	why := ""
	switch {
	case k < ref-4:
		return // an answer too late to be of use
	case k > ref+4:
		why = "a crypto period not asked for"
	default:
		why = s.checkECM(e.Datagram)
	}
	if why != "" {
		s.st.ECMRefused++
		s.ecmsRefused.Add(1)
		s.refused = s.refused || k <= ref+4
		if s.notes++; s.notes <= 10 {
			s.warn(fmt.Sprintf("ECM for crypto period %d refused: %s", int64(e.CP), why))
		}
		return
	}
	s.ecms[k] = e.Datagram
	for n := range s.ecms {
		if n < ref-4 {
			delete(s.ecms, n)
		}
	}
}

// The largest ECM taken: a private section may hold 4096 bytes (ISO/IEC 13818-1, 2.4.4.10),
// which 23 TS packets carry. The ECM repeats every ECM_rep_period: an ECMG that sent more would
// crowd the stream out.
const (
	maxECMBytes   = 4096
	maxECMPackets = 23
)

// checkECM says why an ECM_datagram cannot go into the stream as it is, or "". Sections must
// follow one another whole (0xFF stuffing may end them); TS packets must be whole, with a sync
// byte, a section start in the first, and an adaptation_field_control that is not reserved.
// Their header is the SCS's anyway (emit sets the PID, TSC 00 and the continuity_counter).
func (s *Stage) checkECM(d []byte) string {
	if !s.params.Packets {
		if len(d) > maxECMBytes {
			return fmt.Sprintf("%d bytes, more than a section may hold (%d)", len(d), maxECMBytes)
		}
		for i := 0; i < len(d) && d[i] != 0xFF; {
			if i+3 > len(d) {
				return fmt.Sprintf("a section header cut short at byte %d of %d", i, len(d))
			}
			n := 3 + (int(d[i+1]&0x0F)<<8 | int(d[i+2]))
			if i+n > len(d) {
				return fmt.Sprintf("a section of %d bytes at byte %d of %d", n, i, len(d))
			}
			i += n
		}
		return ""
	}
	if len(d)%ts.PacketSize != 0 {
		return fmt.Sprintf("section_TSpkt_flag 1, and %d bytes are not whole TS packets", len(d))
	}
	if len(d) > maxECMPackets*ts.PacketSize {
		return fmt.Sprintf("%d TS packets, more than a section may fill (%d)", len(d)/ts.PacketSize, maxECMPackets)
	}
	for i := 0; i < len(d); i += ts.PacketSize {
		p := d[i : i+ts.PacketSize]
		switch {
		case p[0] != ts.SyncByte:
			return fmt.Sprintf("TS packet %d has sync byte %#02x", i/ts.PacketSize, p[0])
		case p[3]&0x30 == 0:
			return fmt.Sprintf("TS packet %d has the reserved adaptation_field_control 00", i/ts.PacketSize)
		case p[3]&0x20 != 0 && int(p[4]) > ts.PacketSize-5:
			return fmt.Sprintf("TS packet %d has an adaptation field of %d bytes", i/ts.PacketSize, p[4])
		case i == 0 && !ts.PUSI(p):
			return "the first TS packet starts no section"
		}
	}
	return ""
}

// report notes an error of the ECMG; the loss of the connection ends the client.
func (s *Stage) report(err error) {
	var er *simulcrypt.ErrorReply
	switch {
	case asErrorReply(err, &er):
		s.st.ECMGErrors++
		s.refused = s.refused || er.StreamError
		if s.st.ECMGErrors <= 10 {
			s.warn(err.Error())
		}
	default:
		s.lost(err)
	}
}

// lost drops a client whose connection is gone: the ECM on air keeps repeating.
func (s *Stage) lost(err error) {
	if s.client == nil {
		return
	}
	s.st.Lost++
	if s.period < 0 {
		s.warn(fmt.Sprintf("%v: no ECM yet, and the stream waits for the ECMG", err))
	} else {
		s.warn(fmt.Sprintf("%v: %s, and crypto period %d goes on until the ECMG is back", err, s.keepsRepeating(), s.period))
	}
	s.client.Close()
	s.client = nil
	s.connected.Store(false)
	s.lostAt = time.Now()
	s.provided = map[int64]bool{}
	s.waited = map[int64]bool{}
}

// reconnect tries the ECMG again in the background, at most once a second of wall time, so
// that the stream never waits on it; poll takes the new client when it is there. A channel
// whose lead_CW and CW_per_msg no receiver could follow is not taken.
func (s *Stage) reconnect() {
	if s.cfg.ECMG == nil {
		return
	}
	if s.redial != nil {
		select {
		case c := <-s.redial:
			s.redial = nil
			if c == nil {
				return
			}
			if err := CheckCWs(c.Params()); err != nil {
				if !s.leftNoted {
					s.leftNoted = true
					s.warn(fmt.Sprintf("the ECMG is back, but %v: it is left (this is the only such note)", err))
				}
				c.Close()
				return
			}
			s.client, s.params = c, c.Params()
			s.st.Reconnected++
			s.connected.Store(true)
			s.cfg.Log(fmt.Sprintf("the ECMG is back after %v", time.Since(s.lostAt).Round(time.Millisecond)))
			s.provideAhead()
		default:
		}
		return
	}
	if time.Since(s.lastTry) < time.Second {
		return
	}
	s.lastTry = time.Now()
	cfg := *s.cfg.ECMG
	if cfg.Timeout <= 0 || cfg.Timeout > time.Second {
		cfg.Timeout = time.Second
	}
	ch := make(chan *simulcrypt.Client, 1)
	s.redial = ch
	go func() {
		c, err := simulcrypt.Dial(context.Background(), cfg)
		if err != nil {
			c = nil
		}
		ch <- c
	}()
}

// queue cuts an ECM datagram into packets waiting for their place in the stream.
func (s *Stage) queue(d []byte) {
	if len(d) == 0 {
		return
	}
	if len(s.pending) == 0 {
		s.pendAt = s.now
	}
	if s.params.Packets {
		for i := 0; i+ts.PacketSize <= len(d); i += ts.PacketSize {
			var q [ts.PacketSize]byte
			copy(q[:], d[i:])
			s.pending = append(s.pending, q)
		}
		return
	}
	first := true
	for len(d) > 0 {
		var q [ts.PacketSize]byte
		q[0] = ts.SyncByte
		q[3] = 0x10
		w := 4
		if first {
			q[1] = 0x40
			q[4] = 0 // pointer_field
			w = 5
		}
		first = false
		n := copy(q[w:], d)
		d = d[n:]
		for i := w + n; i < ts.PacketSize; i++ {
			q[i] = 0xFF
		}
		s.pending = append(s.pending, q)
	}
}

// emitPending puts every ECM packet waiting into the stream now, before the packet at hand.
func (s *Stage) emitPending(out *ts.Units) {
	for _, q := range s.pending {
		s.emit(out, q[:], false)
		s.outN++
	}
	s.pending = s.pending[:0]
	s.fresh = false
}

// emit appends one ECM packet to out in the framing of the stream, in a unit made from the one
// at hand so that a prefix (a 192-byte unit's timestamp) is the one of its place in the stream.
// Its header is the SCS's, whatever the ECMG put there: the ECM PID, no
// transport_error_indicator or priority, TSC 00 (ECMs go clear), and the next
// continuity_counter; payload_unit_start_indicator and adaptation_field_control stay.
func (s *Stage) emit(out *ts.Units, q []byte, replacing bool) {
	fr := s.fr0
	s.ecmUnit = append(s.ecmUnit[:0], s.tmpl...)
	u := s.ecmUnit
	for i := fr.Prefix + ts.PacketSize; i < len(u); i++ {
		u[i] = 0 // a 204-byte unit's trailer: no parity for a packet made here
	}
	p := u[fr.Prefix : fr.Prefix+ts.PacketSize]
	copy(p, q)
	p[0] = ts.SyncByte
	p[1] = p[1]&0x40 | byte(s.cfg.ECMPID>>8)&0x1F
	p[2] = byte(s.cfg.ECMPID)
	p[3] = p[3]&0x30 | s.cc
	if p[3]&0x10 != 0 {
		s.cc = (s.cc + 1) & 0xF
	}
	if replacing {
		out.Append(u) // in the place of a null packet of the input: it stands for it
	} else {
		out.AppendAdded(u)
	}
	s.st.ECMPackets++
	s.ecmPackets.Add(1)
	if replacing {
		s.st.Replaced++
		s.replaced.Add(1)
	} else {
		s.st.Inserted++
		s.inserted.Add(1)
	}
}
