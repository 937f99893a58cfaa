package pipeline

import (
	"fmt"

	"github.com/tsdescramble/tsdescramble/keys"
	"github.com/tsdescramble/tsdescramble/psi"
	"github.com/tsdescramble/tsdescramble/scrambling"
)

// minPESCheck is the shortest payload whose PES header is checked: the fixed part of the header.
const minPESCheck = 9

// classifier looks at each packet once, in stream order: it counts it, decides whether its
// payload goes through the ciphers and with which keys, and sets or clears the TSC bits of the
// packets it hands to them.
type classifier struct {
	mode Mode
	cs   *ciphers
	keys *keys.Schedule
	st   *Stats
	pids *[8192]*PIDStats

	// Key synchronisation (see syncKey).
	trialProc   scrambling.Processor
	log         func(string)
	periods     int  // schedule's parity changes when the current period was entered
	verified    bool // the current period's key fitted a PES start, or there is nothing to try
	attempts    int  // PES starts of the current period that no key fitted
	synced      bool // a PES start has been checked at all
	chunk       *chunk
	periodStart int // index in chunk.jobs of the current period's first job
	trial       [PacketSize]byte
	trialBatch  [1][]byte
	candidates  []int

	// Output crypto periods: packets scrambled so far.
	scrambled int64
	// packet counts the packets classified, for the key-change log.
	packet int64
	keyLog func(string)

	// Selection: when selected is set, only its PIDs are processed. For a service, or for
	// every service when scrambling, the PAT and PMTs are followed on the side and the set is
	// recomputed when they change.
	selected   *[8192]bool
	service    int
	allES      bool
	tracker    *psi.Tracker
	generation uint64
}

func newClassifier(o *Options, cs *ciphers, st *Stats, pids *[8192]*PIDStats) *classifier {
	cl := &classifier{mode: o.Mode, cs: cs, keys: o.Keys, st: st, pids: pids, log: o.Log, keyLog: o.KeyLog, periods: -1}
	if cs.in != nil {
		cl.trialProc = cs.in.NewProcessor()
	}
	if len(o.PIDs) > 0 || o.Service > 0 || o.Mode == Scramble {
		cl.selected = new([8192]bool)
		for _, pid := range o.PIDs {
			cl.selected[pid&0x1FFF] = true
		}
		cl.service = o.Service
		cl.allES = o.Mode == Scramble && len(o.PIDs) == 0 && o.Service <= 0
		if cl.service > 0 || cl.allES {
			cl.tracker = psi.NewTracker()
		}
	}
	return cl
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
		cl.selected[NullPID] = false
	}
}

// classify handles the packet unit that starts at c.buf[at] in framing fr.
func (cl *classifier) classify(c *chunk, at int, fr Framing) {
	p := c.buf[at+fr.Prefix : at+fr.Prefix+PacketSize]
	cl.packet++
	st := cl.st
	pid := PID(p)
	ps := cl.pid(pid)
	ps.Packets++
	if cl.tracker != nil {
		cl.track(p, pid)
	}
	if c != cl.chunk {
		cl.chunk, cl.periodStart = c, 0
	}
	tsc := TSC(p)
	switch tsc {
	case Clear:
		st.Clear++
		ps.Clear++
		if cl.mode == Scramble {
			cl.scramble(c, at, fr, p, pid, ps)
		}
		return
	case Reserved:
		st.Reserved++
		ps.Reserved++
		return
	case Even:
		st.Even++
		ps.Even++
	case Odd:
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
	off, ok := PayloadOffset(p)
	if !ok {
		st.NoPayload++
		ps.NoPayload++
		return
	}
	k := cl.keys.KeyFor(tsc == Odd)
	if ch := cl.keys.Changes(); ch != cl.periods {
		cl.periods, cl.verified, cl.attempts, cl.periodStart = ch, false, 0, len(c.jobs)
		if cl.keyLog != nil {
			cw := "no key"
			if k != keys.NoKey {
				cw = fmt.Sprintf("CW %d of %d", k+1, len(cl.keys.CWs()))
			}
			cl.keyLog(fmt.Sprintf("crypto period %d: %v, %s, from packet %d (PID %#04x)", ch+1, tsc, cw, cl.packet, pid))
		}
	}
	if !cl.verified && PUSI(p) && PacketSize-off >= minPESCheck {
		k = cl.syncKey(c, k, p[off:])
	}
	if k == keys.NoKey {
		st.NoKey++
		ps.NoKey++
		return
	}
	j := job{off: int32(at + fr.Prefix + off), end: int32(at + fr.Prefix + PacketSize), key: int32(k), okey: -1, pid: pid}
	if tsc == Odd {
		j.flags |= jobOdd
	}
	SetTSC(p, Clear)
	if cl.mode == Rescramble {
		var odd bool
		j.okey, odd = cl.cs.outputPeriod(cl.scrambled)
		cl.scrambled++
		st.Scrambled++
		ps.Scrambled++
		SetTSC(p, parity(odd))
	}
	if PacketSize-off < cl.cs.minIn {
		// Clear by definition: the input system leaves such payloads as they are.
		st.Short++
		ps.Short++
		j.key = -1
		if j.okey < 0 {
			return
		}
	} else {
		st.Descrambled++
		ps.Descrambled++
		// A PES start long enough to show its header is checked after descrambling: it
		// tells a right key from a wrong one.
		if PUSI(p) && PacketSize-off >= minPESCheck {
			j.flags |= jobCheck
		}
	}
	c.jobs = append(c.jobs, j)
}

// scramble handles a clear packet when scrambling: a selected PID's packet with a payload is
// given to the output cipher and marked with the parity of its crypto period.
func (cl *classifier) scramble(c *chunk, at int, fr Framing, p []byte, pid uint16, ps *PIDStats) {
	if !cl.selected[pid] {
		return
	}
	off, ok := PayloadOffset(p)
	if !ok {
		return
	}
	k, odd := cl.cs.outputPeriod(cl.scrambled)
	cl.scrambled++
	cl.st.Scrambled++
	ps.Scrambled++
	SetTSC(p, parity(odd))
	if PacketSize-off < cl.cs.minOut {
		// Marked scrambled but left clear, as the system defines (TSDuck does the same).
		cl.st.Short++
		ps.Short++
		return
	}
	c.jobs = append(c.jobs, job{off: int32(at + fr.Prefix + off), end: int32(at + fr.Prefix + PacketSize), key: -1, okey: k, pid: pid})
}

func parity(odd bool) Scrambling {
	if odd {
		return Odd
	}
	return Even
}

// maxSyncAttempts bounds the PES starts of one crypto period on which keys are tried: a period
// whose PES starts fit no key is damaged or needs a key the schedule does not have, and trying
// every key on every PES start would cost more than the descrambling.
const maxSyncAttempts = 4

// syncKey checks the first PES start of a crypto period with the schedule's key k. When k does
// not fit and the key of another period of the schedule does, it aligns the schedule to that
// period, moves the jobs of the current period in this chunk to the new key, and says so. It
// returns the key for this packet. Trials run on a copy: this happens once per crypto period,
// and the workers' batches stay whole.
func (cl *classifier) syncKey(c *chunk, k int, payload []byte) int {
	fits := func(k int) bool {
		if k == keys.NoKey {
			return false
		}
		t := cl.trial[:len(payload)]
		copy(t, payload)
		cl.trialBatch[0] = t
		cl.trialProc.Decrypt(cl.cs.inKeys[k], cl.trialBatch[:])
		return keys.PESStartOK(t)
	}
	first := !cl.synced
	cl.synced = true
	if fits(k) {
		cl.verified = true
		if first && cl.keys.Periods() > 2 && cl.log != nil {
			cl.log(fmt.Sprintf("key sync: CW %d of %d fits the first scrambled PES start", k+1, len(cl.keys.CWs())))
		}
		return k
	}
	cl.candidates = cl.keys.Candidates(cl.candidates[:0])
	for _, pos := range cl.candidates {
		alt := cl.keys.KeyAt(pos)
		if alt == k || !fits(alt) {
			continue
		}
		cl.keys.Align(pos)
		for i := cl.periodStart; i < len(c.jobs); i++ {
			if c.jobs[i].key == int32(k) {
				c.jobs[i].key = int32(alt)
			}
		}
		cl.verified = true
		cl.st.KeySyncs++
		if cl.log != nil {
			what := "CW %d of %d fits the first scrambled PES start: the list is aligned to it"
			if !first {
				what = "CW %d of %d fits this crypto period's PES starts, the expected one did not: the list is realigned to it"
			}
			cl.log(fmt.Sprintf("key sync: "+what, alt+1, len(cl.keys.CWs())))
		}
		return alt
	}
	if cl.attempts++; cl.attempts >= maxSyncAttempts {
		cl.verified = true // give up on this period; the workers' checks still count it
	}
	return k
}
