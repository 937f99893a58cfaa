package pipeline

import (
	"context"
	"encoding/binary"
	"errors"
	"time"

	"github.com/tsdescramble/tsdescramble/keys/period"

	"github.com/tsdescramble/tsdescramble/keys"
	"github.com/tsdescramble/tsdescramble/psi"
	"github.com/tsdescramble/tsdescramble/scrambling"
	"github.com/tsdescramble/tsdescramble/ts"
)

// minPESCheck is the shortest payload whose unit start is checked: the fixed part of a PES header.
const minPESCheck = 9

// classifier looks at each packet once, in stream order: it counts it, assigns it to its PID's
// crypto period (see periods.go) and notes the payloads that go through the ciphers. Once the
// periods of a unit of work are decided, resolve sets each job's keys and the packets' TSC bits.
type classifier struct {
	ctx  context.Context
	mode Mode
	cs   *ciphers
	keys *keys.Schedule
	st   *Stats
	pids *[8192]*PIDStats
	seen []uint16 // the PIDs pids has, in the order first seen

	// tr decides which key applies to each scrambled packet (package keys/period).
	tr *period.Tracker

	// Output crypto periods: packets scrambled so far.
	scrambled int64
	// packet counts the packets classified, from 1 for the first.
	packet int64
	// cc is each PID's last continuity counter, with ccSeen set once one was seen and ccDup
	// when the last packet repeated the one before (see continuity).
	cc [8192]uint8
	// tail is the last eight bytes of each PID's last packet: a packet sent twice is the same
	// packet, and the same counter on another one is packets lost, not a repeat.
	tail [8192]uint64
	// ccErrors weighs each PID's recent continuity errors (see continuity): under
	// ccUnnumbered its counters are taken for a numbering of its packets.
	ccErrors [8192]uint8
	// lastOdd is the parity of the last scrambled packet processed, for Stats.KeyChanges.
	lastOdd int8

	// The PAT and PMTs, followed on the side: they say what each PID carries and, when
	// selected is set, which PIDs are processed (for a service, or for every service when
	// scrambling); the set is recomputed when they change.
	tracker    *psi.Tracker
	selected   *[8192]bool
	service    int
	allES      bool
	generation uint64
	signal     *signaller  // writes the scrambling_descriptor into PMTs when scrambling (signal.go)
	fed        *fedPeriods // the output periods of a PeriodFeed (feed.go), nil without one

	sections  *sectionFeed // the sections a key server wants (livekeys.go), or nil
	liveDrops bool         // LiveKeys.Drop: the packets of periods whose key did not come go
	dropped   int64        // packets so dropped
}

func newClassifier(ctx context.Context, o *Options, cs *ciphers, st *Stats, pids *[8192]*PIDStats) *classifier {
	cl := &classifier{ctx: ctx, mode: o.Mode, cs: cs, keys: o.Keys, st: st, pids: pids,
		tracker: psi.NewTracker(), lastOdd: -1}
	if len(o.PIDs) > 0 || o.Service > 0 || o.Mode == Scramble {
		cl.selected = new([8192]bool)
		for _, pid := range o.PIDs {
			cl.selected[pid&0x1FFF] = true
		}
		cl.service = o.Service
		cl.allES = o.Mode == Scramble && len(o.PIDs) == 0 && o.Service <= 0
	}
	cl.signal = newSignaller(o, cl.tracker)
	if o.Mode == Descramble || o.Mode == Rescramble {
		tc := period.Config{Ctx: ctx, Keys: o.Keys, System: cs.in, Tables: cl.tracker,
			Counted: cl.counted, Log: o.Log, KeyLog: o.KeyLog}
		if o.LiveKeys != nil {
			tc.Keys, tc.Live = nil, liveConfig(o.LiveKeys)
			cl.sections, cl.liveDrops = newSectionFeed(o.LiveKeys), o.LiveKeys.Drop
		}
		cl.tr = period.New(tc)
	}
	if o.Mode == Scramble && o.Out != nil && o.Out.Feed != nil {
		cl.fed = &fedPeriods{feed: o.Out.Feed}
	}
	return cl
}

// release hands the tracker's tables to the runs that follow. The classifier must not
// classify after it.
func (cl *classifier) release() {
	if cl.tr != nil {
		cl.tr.Release()
	}
}

// counted counts a crypto period the tracker decided.
func (cl *classifier) counted(pid uint16, s period.State) {
	ps := cl.pid(pid)
	ps.Periods++
	switch s {
	case period.Fit:
		ps.PeriodsFit++
	case period.Unchecked:
		ps.PeriodsUnchecked++
	case period.NoFit:
		ps.PeriodsLeft++
	case period.Unplaced:
		ps.PeriodsUnplaced++
	}
}

// syncCounts copies the tracker's counts into the run's.
func (cl *classifier) syncCounts() {
	if cl.tr == nil {
		return
	}
	n := cl.tr.Counts()
	cl.st.KeySyncs, cl.st.KeyFailures, cl.st.ParityGlitches = n.KeySyncs, n.KeyFailures, n.ParityGlitches
	cl.st.UnseenKeyChanges = n.UnseenChanges
}

// pid returns the counters of a PID, creating them the first time it is seen.
func (cl *classifier) pid(pid uint16) *PIDStats {
	ps := cl.pids[pid]
	if ps == nil {
		ps = &PIDStats{PID: pid}
		cl.pids[pid] = ps
		cl.seen = append(cl.seen, pid)
	}
	return ps
}

// track feeds PSI packets to the tracker and recomputes the selected PIDs when the tables change.
func (cl *classifier) track(p []byte, pid uint16) {
	if !cl.tracker.Reads(pid) {
		return
	}
	cl.tracker.Feed(p)
	g := cl.tracker.Generation()
	if g == cl.generation {
		return
	}
	cl.generation = g
	if cl.tr != nil {
		cl.tr.TablesChanged()
	}
	if cl.selected == nil || cl.service <= 0 && !cl.allES {
		return
	}
	clear(cl.selected[:])
	if cl.service > 0 {
		if pids, ok := cl.tracker.ServicePIDs(uint16(cl.service)); ok {
			for _, pid := range pids {
				cl.selected[pid] = true
			}
		}
	} else {
		for _, svc := range cl.tracker.Services() {
			for _, es := range svc.Streams {
				cl.selected[es.PID] = true
			}
		}
	}
	if cl.mode != Descramble {
		// Never scramble PSI: PAT, CAT, PMTs, and the DVB tables below PID 0x20.
		for pid := range uint16(0x20) {
			cl.selected[pid] = false
		}
		for pid := range uint16(8192) {
			if cl.selected[pid] && cl.tracker.IsPMTPID(pid) {
				cl.selected[pid] = false
			}
		}
		cl.selected[ts.NullPID] = false
	}
}

// classify handles the packet unit that starts at c.buf[at] in framing fr.
func (cl *classifier) classify(c *chunk, at int, fr ts.Framing) {
	pkt := at + fr.Prefix
	p := c.buf[pkt : pkt+ts.PacketSize]
	cl.packet++
	st := cl.st
	pid := ts.PID(p)
	ps := cl.pid(pid)
	ps.Packets++
	ccBreak := cl.continuity(p, pid, ps)
	cl.track(p, pid)
	if cl.sections != nil {
		cl.feedSections(p, pid)
	}
	tsc := ts.TSC(p)
	switch tsc {
	case ts.Clear:
		st.Clear++
		ps.Clear++
		if cl.mode == Scramble {
			cl.signal.packet(p, pid)
			cl.scramble(c, at, fr, p, pid, ps)
		} else if cl.mode == Descramble {
			cl.signal.packet(p, pid) // the scrambling_descriptor of a service that goes out clear
		}
		return
	case ts.Reserved:
		st.Reserved++
		ps.Reserved++
		return
	case ts.Even:
		st.Even++
		ps.Even++
	case ts.Odd:
		st.Odd++
		ps.Odd++
	}
	if cl.mode == Scramble || cl.mode == Passthrough {
		return // already scrambled, or a run that changes nothing: left as it is
	}
	if cl.selected != nil && !cl.selected[pid] {
		st.Unselected++
		ps.Unselected++
		return
	}
	off, ok := ts.PayloadOffset(p)
	if !ok {
		st.NoPayload++
		ps.NoPayload++
		return
	}
	idx := cl.tr.Packet(cl.packet, pid, tsc == ts.Odd, ccBreak)
	if odd := int8(tsc & 1); odd != cl.lastOdd {
		if cl.lastOdd >= 0 {
			st.KeyChanges++
		}
		cl.lastOdd = odd
	}
	j := job{pkt: int32(pkt), off: int32(pkt + off), end: int32(pkt + ts.PacketSize), key: -1, okey: -1, pid: pid}
	if tsc == ts.Odd {
		j.flags |= jobOdd
	}
	switch n := ts.PacketSize - off; {
	case n < cl.cs.minIn:
		// Clear by definition: the input system leaves such payloads as they are. A key
		// source's key may be for a system of its own, whose shortest payload resolve applies.
		if cl.cs.systems == nil {
			j.flags |= jobShort
		}
	case ts.PUSI(p) && n >= minPESCheck:
		// A unit start long enough to show its header tells a right key from a wrong one.
		if carriage := cl.tracker.Carriage(pid); carriage != psi.CarriageOther {
			j.flags |= jobCheck
			j.carriage = carriage
			idx = cl.tr.UnitStart(idx, c.buf[j.off:j.end], carriage)
			if len(cl.st.Samples) < maxSamples {
				cl.st.Samples = append(cl.st.Samples, Sample{PID: pid, Odd: tsc == ts.Odd,
					Carriage: carriage, Payload: append([]byte(nil), p[off:]...)})
			}
		}
	}
	j.period = idx
	c.jobs = append(c.jobs, j)
	cl.tr.Expire()
}

const (
	ccSeen = 0x80
	ccDup  = 0x40
)

// continuity checks the continuity counter of a packet (ISO/IEC 13818-1, 2.4.3.3): it goes up
// by one at each packet of the PID with a payload, stays the same in one without, and a packet
// may be sent twice in a row (the same bytes: a counter repeated on another packet is packets
// lost); a discontinuity_indicator allows any value. Null packets are not
// counted. An error is a packet lost, repeated or out of place upstream: the input is damaged,
// which a live input, with loss on its way, needs to show. It reports an error on a PID whose
// counters followed on until here: the crypto periods take it as a place where a key may stop
// applying (packets lost, or two recordings joined).
func (cl *classifier) continuity(p []byte, pid uint16, ps *PIDStats) (broken bool) {
	if pid == ts.NullPID {
		return false
	}
	cc := p[3] & 0x0F
	last := cl.cc[pid]
	cl.cc[pid] = ccSeen | cc
	tail := binary.LittleEndian.Uint64(p[ts.PacketSize-8:])
	lastTail := cl.tail[pid]
	cl.tail[pid] = tail
	if last&ccSeen == 0 {
		cl.ccErrors[pid] = ccUnnumbered + ccFirstRun - 1 // numbered once ccFirstRun packets follow on
		return false                                     // the PID's first packet
	}
	if p[3]&0x20 != 0 && p[4] > 0 && p[5]&0x80 != 0 {
		return false // a discontinuity the stream announces: not an error
	}
	prev := last & 0x0F
	switch {
	case p[3]&0x10 == 0:
		if cc == prev {
			return false
		}
	case cc == (prev+1)&0x0F:
		if cl.ccErrors[pid] > 0 {
			cl.ccErrors[pid]--
		}
		return false
	case cc == prev && last&ccDup == 0 && tail == lastTail:
		cl.cc[pid] |= ccDup // a duplicate: allowed once
		return false
	}
	cl.st.CCErrors++
	ps.CCErrors++
	// Only a PID whose counters number its packets says something by breaking them: some
	// muxers number them otherwise, or leave them at 0. A PID's are taken for a numbering
	// once its first few packets follow on, since a break missed lets a key be used where it
	// may not apply, while one seen where there is none only has the next unit start check
	// the key; errors that come faster than one in four packets say they are not, until
	// packets that follow on outweigh them again. A numbered PID's every break is packets
	// lost or a splice, however soon after the last one: a stream that loses packets loses
	// them in bursts close together, and a key may change in any of them.
	e := cl.ccErrors[pid]
	cl.ccErrors[pid] = min(e+ccErrorWeight, ccErrorsMax)
	return e < ccUnnumbered
}

// A PID's counters are believed once ccFirstRun packets in a row follow on. From then on a
// continuity error weighs ccErrorWeight and a packet that follows on takes one off: errors that
// weigh ccUnnumbered or more (three close together, or more than one in four packets for a
// while) say the counters are no numbering after all, and ccErrorsMax bounds how long they then
// take to be believed again.
const (
	ccErrorWeight = 4
	ccUnnumbered  = 12
	ccErrorsMax   = 32
	ccFirstRun    = 4
)

// decided reports whether every period the jobs of c belong to is decided; c.ready remembers
// how far that is known, so a held chunk is scanned once in all.
func (cl *classifier) decided(c *chunk) bool {
	if cl.tr != nil {
		cl.tr.Poll()
	}
	for ; c.ready < len(c.jobs); c.ready++ {
		if p := c.jobs[c.ready].period; p >= 0 && !cl.tr.Decided(p) {
			return false
		}
	}
	return true
}

// resolve applies the decisions of their crypto periods to the jobs of a chunk whose periods
// are all decided, in stream order: the input key (or none, for a period left as it came), the
// output key and parity when rescrambling, and the TSC bits.
func (cl *classifier) resolve(c *chunk) {
	st := cl.st
	for i := range c.jobs {
		j := &c.jobs[i]
		if j.period < 0 {
			continue // scrambling a clear packet: nothing to decide
		}
		state, key := cl.tr.Decision(j.period)
		ps := cl.pids[j.pid]
		if state == period.Unplaced {
			st.Unplaced++
			ps.Unplaced++
			j.flags &^= jobCheck
			continue
		}
		if state != period.Fit && state != period.Unchecked {
			st.LeftScrambled++
			ps.LeftScrambled++
			j.flags &^= jobCheck
			continue
		}
		if key == keys.NoKey {
			st.NoKey++
			ps.NoKey++
			j.flags &^= jobCheck
			continue
		}
		if cl.cs.systems != nil && int(j.end-j.off) < c.systems[c.slot(cl.cs, key)].MinPayload() {
			j.flags |= jobShort // clear by definition under its key's system
		}
		pkt := c.buf[j.pkt : j.pkt+ts.PacketSize]
		ts.SetTSC(pkt, ts.Clear)
		if cl.mode == Rescramble {
			var odd bool
			j.okey, odd = cl.cs.outputPeriod(cl.scrambled)
			cl.scrambled++
			st.Scrambled++
			ps.Scrambled++
			ts.SetTSC(pkt, parity(odd))
		}
		if j.flags&jobShort != 0 {
			st.Short++
			ps.Short++
			continue
		}
		j.key = c.slot(cl.cs, key)
		st.Descrambled++
		ps.Descrambled++
		if state == period.Fit {
			ps.Checked++
		} else {
			ps.Unchecked++
		}
	}
	if cl.liveDrops {
		cl.liveDrop(c)
	}
}

// scramble handles a clear packet when scrambling: a selected PID's packet with a payload is
// given to the output cipher and marked with the parity of its crypto period.
func (cl *classifier) scramble(c *chunk, at int, fr ts.Framing, p []byte, pid uint16, ps *PIDStats) {
	if !cl.selected[pid] {
		return
	}
	off, ok := ts.PayloadOffset(p)
	if !ok {
		return
	}
	var k int32
	var odd bool
	if cl.fed != nil {
		var key scrambling.Key
		if key, odd = cl.fed.at(cl.cs, cl.packet); key == nil {
			return // no period fed yet: the packet stays clear
		}
		k = cl.fed.slot(c)
	} else {
		k, odd = cl.cs.outputPeriod(cl.scrambled)
	}
	cl.scrambled++
	cl.st.Scrambled++
	ps.Scrambled++
	ts.SetTSC(p, parity(odd))
	if ts.PacketSize-off < cl.cs.minOut {
		// Marked scrambled but left clear, as the system defines (TSDuck does the same).
		cl.st.Short++
		ps.Short++
		return
	}
	c.jobs = append(c.jobs, job{off: int32(at + fr.Prefix + off), end: int32(at + fr.Prefix + ts.PacketSize), key: -1, okey: k, period: -1, pid: pid})
}

// finish decides every crypto period still open: the stream ended, or the run stops.
func (cl *classifier) finish() {
	if cl.tr != nil {
		cl.tr.Finish()
	}
}

// compact forgets the decided crypto periods; no chunk is held.
func (cl *classifier) compact() {
	if cl.tr != nil {
		cl.tr.Compact()
	}
}

// keysArrived returns the channel a key source signals when keys arrive, or nil.
func (cl *classifier) keysArrived() <-chan struct{} {
	if cl.tr == nil {
		return nil
	}
	return cl.tr.Arrived()
}

// rekey replaces the run's input key schedule (Options.Rekey: a key file edited while a live
// run goes on), between two units of work, when no unit is held and no crypto period is open.
// A schedule with a control word the input system cannot take is refused, and the old one
// kept.
func (cl *classifier) rekey(s *keys.Schedule) error {
	if s == nil || cl.mode == Scramble {
		return nil
	}
	if cl.sections != nil || cl.liveDrops || cl.tr.Waits() != nil {
		return errors.New("the keys come from Options.LiveKeys")
	}
	if err := cl.cs.rekey(s); err != nil {
		return err
	}
	cl.tr.Rekey(s)
	return nil
}

// expireDue decides, with what is known, the periods still open in the held chunks whose first
// packet is due by now (Options.Latency), as the tracker does for those open HoldPackets
// packets. Chunks are held in input order, so their due times are in order too.
func (cl *classifier) expireDue(held []*chunk, now time.Time) {
	for _, c := range held {
		if c.due.After(now) {
			return
		}
		for i := c.ready; i < len(c.jobs); i++ {
			if p := c.jobs[i].period; p >= 0 {
				cl.tr.DecideNow(p)
			}
		}
	}
}

func parity(odd bool) ts.Scrambling {
	if odd {
		return ts.Odd
	}
	return ts.Even
}
