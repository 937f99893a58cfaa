package pipeline

import "github.com/tsdescramble/tsdescramble/keys"

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
	off, ok := PayloadOffset(p)
	if !ok || off == PacketSize {
		st.NoPayload++
		return
	}
	k := cl.keys.KeyFor(tsc == Odd)
	if k == keys.NoKey {
		st.NoKey++
		ps.NoKey++
		return
	}
	SetTSC(p, Clear)
	ps.Descrambled++
	if PacketSize-off < minScrambled {
		st.Short++
		return
	}
	st.Descrambled++
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
