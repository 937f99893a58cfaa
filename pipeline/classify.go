package pipeline

import (
	"context"
	"sync"

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

	// Crypto periods per PID (periods.go): a table from sparePIDKeys, handed back by release.
	pk       *[8192]*pidKeys
	periods  []period
	open     []int32 // periods not yet decided, in order of their first packet
	deferred []int32 // open periods with unit starts deferred for want of a PMT (recheck)
	haveHint bool    // a period has fitted: hintPos and hintOdd are its ring position and parity
	hintPos  int
	hintOdd  bool
	log      func(string)
	keyLog   func(string)

	// Key trials.
	trialBuf [ts.PacketSize]byte

	// Output crypto periods: packets scrambled so far.
	scrambled int64
	// packet counts the packets classified, from 1 for the first.
	packet int64
	// cc is each PID's last continuity counter, with ccSeen set once one was seen and ccDup
	// when the last packet repeated the one before (see continuity).
	cc [8192]uint8
	// ccRun counts, per PID, the packets in a row whose counters followed on, up to ccTrusted.
	ccRun [8192]uint8
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

	live *liveState // keys that arrive while the stream runs (livekeys.go), or nil

	// svcOf is the period clock of the service each PID belongs to, from the PMTs (periods.go).
	svcOf  map[uint16]*svcClock
	clocks map[uint16]*svcClock // by service number
	// minPeriod is the shortest crypto period of a service seen whole, in packets: a PID
	// silent for longer may have missed two changes of key and come back in the same parity.
	minPeriod int64
	// flips counts the changes of parity seen, over all PIDs.
	flips int
}

// refreshServices gives each PID of a service with a PMT its service's period clock, after the
// tables changed. A service keeps its clock while it stays; a PID of two services takes the
// first's.
func (cl *classifier) refreshServices() {
	services := cl.tracker.Services()
	if cl.clocks == nil {
		cl.clocks, cl.svcOf = map[uint16]*svcClock{}, map[uint16]*svcClock{}
	}
	clear(cl.svcOf)
	for _, svc := range services {
		if !svc.PMTSeen {
			continue
		}
		c := cl.clocks[svc.Number]
		if c == nil {
			c = newSvcClock(cl.packet)
			cl.clocks[svc.Number] = c
		}
		for _, es := range svc.Streams {
			if cl.svcOf[es.PID] == nil {
				cl.svcOf[es.PID] = c
			}
		}
	}
	for pid, pk := range cl.pk {
		if pk != nil {
			pk.svc = cl.svcOf[uint16(pid)]
		}
	}
}

func newClassifier(ctx context.Context, o *Options, cs *ciphers, st *Stats, pids *[8192]*PIDStats) *classifier {
	cl := &classifier{ctx: ctx, mode: o.Mode, cs: cs, keys: o.Keys, st: st, pids: pids, log: o.Log, keyLog: o.KeyLog,
		tracker: psi.NewTracker(), lastOdd: -1, pk: newPIDKeysTable(), minPeriod: holdPackets}
	if len(o.PIDs) > 0 || o.Service > 0 || o.Mode == Scramble {
		cl.selected = new([8192]bool)
		for _, pid := range o.PIDs {
			cl.selected[pid&0x1FFF] = true
		}
		cl.service = o.Service
		cl.allES = o.Mode == Scramble && len(o.PIDs) == 0 && o.Service <= 0
	}
	cl.signal = newSignaller(o)
	if o.LiveKeys != nil && o.Mode != Scramble {
		cl.live = newLiveState(o, cs.in.KeySizes())
	}
	if o.Mode == Scramble && o.Out != nil && o.Out.Feed != nil {
		cl.fed = &fedPeriods{feed: o.Out.Feed}
	}
	return cl
}

// newPIDKeysTable returns an empty table of per-PID crypto-period states: one a run that ended
// left (release), or a new one.
func newPIDKeysTable() *[8192]*pidKeys {
	if t, _ := sparePIDKeys.Get().(*[8192]*pidKeys); t != nil {
		return t
	}
	return new([8192]*pidKeys)
}

// sparePIDKeys are the per-PID crypto-period tables of runs that ended, for the runs that
// follow: 64 KiB each, which a run over a small file would otherwise allocate and fault in anew
// (a batch of many recordings).
var sparePIDKeys sync.Pool

// release hands the classifier's per-PID crypto-period table to the runs that follow, emptied:
// the states it points to hold the run's period indices, not to be seen by another run. The
// classifier must not classify after it.
func (cl *classifier) release() {
	clear(cl.pk[:])
	sparePIDKeys.Put(cl.pk)
	cl.pk = nil
}

// pid returns the counters of a PID, creating them the first time it is seen.
func (cl *classifier) pid(pid uint16) *PIDStats {
	ps := cl.pids[pid]
	if ps == nil {
		ps = &PIDStats{PID: pid}
		cl.pids[pid] = ps
	}
	return ps
}

// track feeds PSI packets to the tracker and recomputes the selected PIDs when the tables change.
func (cl *classifier) track(p []byte, pid uint16) {
	if !cl.tracker.Wants(pid) {
		return
	}
	cl.tracker.Feed(p)
	g := cl.tracker.Generation()
	if g == cl.generation {
		return
	}
	cl.generation = g
	if cl.mode != Scramble {
		cl.refreshServices()
		if len(cl.deferred) > 0 {
			cl.recheck()
		}
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
	if cl.live != nil {
		cl.livePacket(p, pid)
	}
	tsc := ts.TSC(p)
	switch tsc {
	case ts.Clear:
		st.Clear++
		ps.Clear++
		if cl.mode == Scramble {
			cl.signal.packet(p, pid)
			cl.scramble(c, at, fr, p, pid, ps)
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
	if cl.mode == Scramble {
		return // already scrambled: left as it is
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
	var idx int32
	if cl.live != nil {
		idx = cl.livePeriodOf(pid, tsc == ts.Odd)
	} else {
		idx = cl.periodOf(pid, tsc == ts.Odd, ccBreak)
	}
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
		// Clear by definition: the input system leaves such payloads as they are.
		j.flags |= jobShort
	case ts.PUSI(p) && n >= minPESCheck:
		// A unit start long enough to show its header tells a right key from a wrong one.
		if carriage := cl.tracker.Carriage(pid); carriage != psi.CarriageOther {
			j.flags |= jobCheck
			j.carriage = carriage
			u := unitStart{c: c, off: j.off, end: j.end, carriage: carriage}
			if cl.live == nil {
				idx = cl.offerUnitStart(idx, u)
			} else { // a key server's keys are not searched, only checked
				cl.liveUnitStart(idx, u)
			}
			if len(cl.st.Samples) < maxSamples {
				cl.st.Samples = append(cl.st.Samples, Sample{PID: pid, Odd: tsc == ts.Odd,
					Carriage: carriage, Payload: append([]byte(nil), p[off:]...)})
			}
		}
	}
	j.period = idx
	c.jobs = append(c.jobs, j)
	if len(cl.open) > 0 {
		cl.expire()
	}
}

const (
	ccSeen = 0x80
	ccDup  = 0x40
)

// continuity checks the continuity counter of a packet (ISO/IEC 13818-1, 2.4.3.3): it goes up
// by one at each packet of the PID with a payload, stays the same in one without, and a packet
// may be sent twice in a row; a discontinuity_indicator allows any value. Null packets are not
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
	if last&ccSeen == 0 {
		return false // the PID's first packet
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
		if cl.ccRun[pid] < ccTrusted {
			cl.ccRun[pid]++
		}
		return false
	case cc == prev && last&ccDup == 0:
		cl.cc[pid] |= ccDup // a duplicate: allowed once
		return false
	}
	cl.st.CCErrors++
	ps.CCErrors++
	// Only a PID whose counters followed on for a while says something by breaking them:
	// some muxers number packets otherwise, or leave the counters at 0.
	broken = cl.ccRun[pid] >= ccTrusted
	cl.ccRun[pid] = 0
	return broken
}

// ccTrusted is how many packets in a row whose continuity counters followed on make a PID's
// next error a place where its key may stop applying.
const ccTrusted = 16

// decided reports whether every period the jobs of c belong to is decided; c.ready remembers
// how far that is known, so a held chunk is scanned once in all.
func (cl *classifier) decided(c *chunk) bool {
	if cl.live != nil {
		cl.livePoll()
	}
	for ; c.ready < len(c.jobs); c.ready++ {
		if p := c.jobs[c.ready].period; p >= 0 && cl.periods[p].state == periodOpen {
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
		p := &cl.periods[j.period]
		ps := cl.pids[j.pid]
		if p.state == periodUnplaced {
			st.Unplaced++
			ps.Unplaced++
			j.flags &^= jobCheck
			continue
		}
		if p.state != periodFit && p.state != periodUnchecked {
			st.LeftScrambled++
			ps.LeftScrambled++
			j.flags &^= jobCheck
			continue
		}
		if p.key == keys.NoKey {
			st.NoKey++
			ps.NoKey++
			j.flags &^= jobCheck
			continue
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
		j.key = c.slot(cl.cs, p.key)
		st.Descrambled++
		ps.Descrambled++
		if p.state == periodFit {
			ps.Checked++
		} else {
			ps.Unchecked++
		}
	}
	if cl.live != nil && cl.live.cfg.Drop {
		cl.liveDrop(c)
	}
}

// trial descrambles the start of a payload with CW k and says whether it starts a unit as the
// PID's carriage expects. Only the bytes the check reads are descrambled: a key search may try
// millions of CWs.
func (cl *classifier) trial(k int, payload []byte, carriage psi.Carriage) trialOutcome {
	// The start code prefix first: three bytes, one block to decipher, reject nearly every
	// wrong key (all but one in 2^24).
	head := cl.decryptPrefix(k, payload, 3)
	pes := head[0] == 0 && head[1] == 0 && head[2] == 1
	if pes {
		head = cl.decryptPrefix(k, payload, min(len(payload), trialBytes))
	}
	switch carriage {
	case psi.CarriagePES:
		if !pes {
			return trialBad
		}
		return unitStartOutcome(head, len(payload), carriage)
	case psi.CarriageUnknown:
		if pes && ts.PESHeaderOK(head, len(payload)) {
			return trialGood
		}
	}
	// A section: read up to its header, then up to its end, so that its CRC can be checked.
	for range 2 {
		need := sectionEnd(head, len(payload))
		if need <= len(head) {
			break
		}
		head = cl.decryptPrefix(k, payload, need)
	}
	return unitStartOutcome(head, len(payload), carriage)
}

// decryptPrefix returns the first n bytes of payload descrambled with CW k, leaving payload as
// it is.
func (cl *classifier) decryptPrefix(k int, payload []byte, n int) []byte {
	dst := cl.trialBuf[:n]
	var cw []byte
	if cl.live != nil {
		cw = cl.live.cfg.Source.CW(k) // its size was checked by liveOffer
	} else {
		cw = cl.keys.CW(k)
	}
	if err := scrambling.DecryptPrefix(cl.cs.in, cw, payload, dst); err != nil {
		// The control words were all checked by newCiphers.
		panic("pipeline: " + err.Error())
	}
	return dst
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

func parity(odd bool) ts.Scrambling {
	if odd {
		return ts.Odd
	}
	return ts.Even
}
