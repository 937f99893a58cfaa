package pipeline

import (
	"fmt"

	"github.com/tsdescramble/tsdescramble/csa"
	"github.com/tsdescramble/tsdescramble/keys"
	"github.com/tsdescramble/tsdescramble/psi"
)

// minScrambled is the smallest payload DVB-CSA2 scrambles: shorter payloads are left clear
// (ETSI ETR 289; libdvbcsa, FFdecsa and TSDuck all agree).
const minScrambled = 8

// minPESCheck is the shortest payload whose PES header is checked: the fixed part of the header.
const minPESCheck = 9

// classifier looks at each packet once, in stream order: it counts it, decides whether its
// payload goes through the cipher and with which key, and clears the TSC bits of the packets
// it hands to the cipher.
type classifier struct {
	keys *keys.Schedule
	st   *Stats
	pids *[8192]*PIDStats

	// Key synchronisation (see syncKey).
	cwKeys      []*csa.Key
	log         func(string)
	periods     int  // schedule's parity changes when the current period was entered
	verified    bool // the current period's key fitted a PES start, or there is nothing to try
	attempts    int  // PES starts of the current period that no key fitted
	synced      bool // a PES start has been checked at all
	chunk       *chunk
	periodStart int // index in chunk.jobs of the current period's first job
	trial       [PacketSize]byte
	candidates  []int

	// Selection: when selected is set, only its PIDs are descrambled. For a service, the PAT
	// and PMTs are followed on the side and the set is recomputed when they change.
	selected   *[8192]bool
	service    int
	tracker    *psi.Tracker
	generation uint64
}

// selectPIDs sets up the selection of an explicit PID list or of a service.
func (cl *classifier) selectPIDs(pids []uint16, service int) {
	if len(pids) == 0 && service <= 0 {
		return
	}
	cl.selected = new([8192]bool)
	for _, pid := range pids {
		cl.selected[pid&0x1FFF] = true
	}
	cl.service = service
	if service > 0 {
		cl.tracker = psi.NewTracker()
	}
}

// track feeds PSI packets to the tracker and recomputes the service's PIDs when the tables change.
func (cl *classifier) track(p []byte, pid uint16) {
	if !cl.tracker.Wants(pid) {
		return
	}
	cl.tracker.Feed(p)
	if g := cl.tracker.Generation(); g != cl.generation {
		cl.generation = g
		clear(cl.selected[:])
		if pids, ok := cl.tracker.ServicePIDs(uint16(cl.service)); ok {
			for _, pid := range pids {
				cl.selected[pid] = true
			}
		}
	}
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

// classify handles the packet unit that starts at c.buf[at] in framing fr.
func (cl *classifier) classify(c *chunk, at int, fr Framing) {
	p := c.buf[at+fr.Prefix : at+fr.Prefix+PacketSize]
	st := cl.st
	pid := PID(p)
	ps := cl.pid(pid)
	ps.Packets++
	if cl.tracker != nil {
		cl.track(p, pid)
	}
	tsc := TSC(p)
	switch tsc {
	case Clear:
		st.Clear++
		ps.Clear++
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
	if c != cl.chunk {
		cl.chunk, cl.periodStart = c, 0
	}
	if ch := cl.keys.Changes(); ch != cl.periods {
		cl.periods, cl.verified, cl.attempts, cl.periodStart = ch, false, 0, len(c.jobs)
	}
	if !cl.verified && PUSI(p) && PacketSize-off >= minPESCheck {
		k = cl.syncKey(c, k, p[off:])
	}
	if k == keys.NoKey {
		st.NoKey++
		ps.NoKey++
		return
	}
	SetTSC(p, Clear)
	if PacketSize-off < minScrambled {
		st.Short++
		ps.Short++
		return
	}
	st.Descrambled++
	ps.Descrambled++
	base := at + fr.Prefix
	j := job{off: int32(base + off), end: int32(base + PacketSize), key: int32(k), pid: pid}
	if tsc == Odd {
		j.flags |= jobOdd
	}
	// A PES start long enough to show its header is checked after descrambling: it tells a
	// right key from a wrong one.
	if PUSI(p) && PacketSize-off >= minPESCheck {
		j.flags |= jobCheck
	}
	c.jobs = append(c.jobs, j)
}

// maxSyncAttempts bounds the PES starts of one crypto period on which keys are tried: a period
// whose PES starts fit no key is damaged or needs a key the schedule does not have, and trying
// every key on every PES start would cost more than the descrambling.
const maxSyncAttempts = 4

// syncKey checks the first PES start of a crypto period with the schedule's key k. When k does
// not fit and the key of another period of the schedule does, it aligns the schedule to that
// period, moves the jobs of the current period in this chunk to the new key, and says so. It
// returns the key for this packet. Trials use the scalar cipher on a copy: this happens once
// per crypto period, and the workers' batches stay whole.
func (cl *classifier) syncKey(c *chunk, k int, payload []byte) int {
	fits := func(k int) bool {
		if k == keys.NoKey {
			return false
		}
		t := cl.trial[:len(payload)]
		copy(t, payload)
		cl.cwKeys[k].Decrypt(t)
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
