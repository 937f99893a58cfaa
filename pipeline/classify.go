package pipeline

import "github.com/tsdescramble/tsdescramble/keys"

// minScrambled is the smallest payload DVB-CSA2 scrambles: shorter payloads are left clear
// (ETSI ETR 289; libdvbcsa, FFdecsa and TSDuck all agree).
const minScrambled = 8

// classifier looks at each packet once, in stream order: it counts it, decides whether its
// payload goes through the cipher and with which key, and clears the TSC bits of the packets
// it hands to the cipher.
type classifier struct {
	keys *keys.Schedule
	st   *Stats
}

// classify handles the packet unit that starts at c.buf[at] in framing fr.
func (cl *classifier) classify(c *chunk, at int, fr Framing) {
	p := c.buf[at+fr.Prefix : at+fr.Prefix+PacketSize]
	st := cl.st
	tsc := TSC(p)
	switch tsc {
	case Clear:
		st.Clear++
		return
	case Reserved:
		st.Reserved++
		return
	case Even:
		st.Even++
	case Odd:
		st.Odd++
	}
	off, ok := PayloadOffset(p)
	if !ok || off == PacketSize {
		st.NoPayload++
		return
	}
	k := cl.keys.KeyFor(tsc == Odd)
	if k == keys.NoKey {
		st.NoKey++
		return
	}
	SetTSC(p, Clear)
	if PacketSize-off < minScrambled {
		st.Short++
		return
	}
	st.Descrambled++
	base := at + fr.Prefix
	c.jobs = append(c.jobs, job{off: int32(base + off), end: int32(base + PacketSize), key: int32(k)})
}
