package camdouble

import (
	"github.com/tsdescramble/tsdescramble/csa"
	"github.com/tsdescramble/tsdescramble/internal/synth"
	"github.com/tsdescramble/tsdescramble/ts"
)

// Stream layout of ECMStream.
const (
	ServiceID = 1
	PMTPID    = 0x1000
	ESPID     = 0x100
	ECMPID    = 0x500
)

// StreamSpec describes a stream with ECMs.
type StreamSpec struct {
	Packets       int      // packets of the elementary stream (the stream has more: PSI, ECMs)
	PeriodPackets int      // elementary stream packets per crypto period
	CWs           [][]byte // the CW of each crypto period, used in turn; period k is even for k even
	// LeadPackets is how many elementary stream packets before its period an ECM is sent
	// (default half a period): a key server answers before the parity changes.
	LeadPackets int
	// LagPackets, when more than 0, sends the ECM of each period after the first LagPackets
	// elementary stream packets after the period began instead, as a broadcaster whose ECMs
	// carry the current and the next key changes its ECM once the parity has flipped (the key
	// of the period that just began came with the previous ECM, as the next one).
	LagPackets int
	// RepeatPackets is how often, in elementary stream packets, the last ECM is sent again,
	// as broadcasters repeat them for receivers that tune in (default 100).
	RepeatPackets int
	// Encrypt scrambles a payload in place with a CW (default: this project's csa package);
	// tests give libdvbcsa's to make the stream with an independent implementation.
	Encrypt func(cw, payload []byte)
	// Stuffing, when set, gives the adaptation_field_length of elementary stream packet i, 0
	// to 182 (a payload of 183 down to 1 byte; below 0, no adaptation field), so that a
	// system's short payloads and residues come. A packet that starts a PES packet (every
	// eighth, from the first) has its PES header at the start of its payload all the same.
	Stuffing func(i int) int
}

// ECMStream returns a clear stream of one service (PAT, PMT with a CA_descriptor of TestCAID
// naming ECMPID, an MPEG-2 video PID ESPID of PES packets), with the test CA system's ECM of
// each crypto period on ECMPID, LeadPackets before the period starts (or LagPackets after; the
// first at the start),
// and the same stream with the elementary stream scrambled in DVB-CSA2 with the CW of each
// period, the last ECM repeated every RepeatPackets. ECM k has table_id 0x80 for an even period, 0x81 for an odd one, and carries period
// k's CW for its parity and period k-1's for the other (all zero for the first), as a card
// answers: the current key and the next. It also returns the ECMs in stream order.
func ECMStream(spec StreamSpec) (clear, scrambled []byte, ecms [][]byte) {
	lead := spec.LeadPackets
	if lead <= 0 {
		lead = spec.PeriodPackets / 2
	}
	repeat := spec.RepeatPackets
	if repeat <= 0 {
		repeat = 100
	}
	var cc [8192]byte
	var out, scr []byte
	var later synth.Scrambler // the payloads of scr, scrambled once it is whole
	add := func(pid uint16, pusi bool, af int, payload []byte, key *csa.Key, cw []byte, odd bool) {
		p := make([]byte, ts.PacketSize)
		p[0], p[1], p[2], p[3] = ts.SyncByte, byte(pid>>8)&0x1F, byte(pid), 0x10|cc[pid]&0x0F
		if pusi {
			p[1] |= 0x40
		}
		cc[pid]++
		off := 4
		if af >= 0 {
			p[3] |= 0x20
			p[4] = byte(af)
			if af > 0 {
				p[5] = 0 // no flags: stuffing bytes follow
				for i := 6; i < 5+af; i++ {
					p[i] = 0xFF
				}
			}
			off = 5 + af
		}
		n := copy(p[off:], payload)
		for i := off + n; i < ts.PacketSize; i++ {
			p[i] = 0xFF
		}
		out = append(out, p...)
		if key != nil {
			if spec.Encrypt != nil {
				spec.Encrypt(cw, p[off:])
			} else {
				later.Add(key, len(scr)+off, len(scr)+ts.PacketSize)
			}
			if odd {
				ts.SetTSC(p, ts.Odd)
			} else {
				ts.SetTSC(p, ts.Even)
			}
		}
		scr = append(scr, p...)
	}
	section := func(pid uint16, s []byte) {
		add(pid, true, -1, append([]byte{0}, s...), nil, nil, false)
	}
	pat := Section(0x00, 1, []byte{0, ServiceID, 0xE0 | PMTPID>>8, PMTPID & 0xFF})
	ca := CADescriptor(TestCAID, ECMPID)
	pmtBody := []byte{0xE0 | ESPID>>8, ESPID & 0xFF, 0xF0, byte(len(ca))}
	pmtBody = append(pmtBody, ca...)
	pmtBody = append(pmtBody, 0x02, 0xE0|ESPID>>8, ESPID&0xFF, 0xF0, 0)
	pmt := Section(0x02, ServiceID, pmtBody)

	keys := make([]*csa.Key, len(spec.CWs))
	for i, cw := range spec.CWs {
		k, err := csa.NewKey(cw)
		if err != nil {
			panic(err)
		}
		keys[i] = k
	}
	cwOf := func(k int) []byte { return spec.CWs[k%len(spec.CWs)] }
	ecm := func(k int) []byte {
		zero := make([]byte, 8)
		cur, prev := cwOf(k), zero
		if k > 0 {
			prev = cwOf(k - 1)
		}
		if k%2 == 0 {
			return ECM(0x80, cur, prev, uint32(k))
		}
		return ECM(0x81, prev, cur, uint32(k))
	}
	x := uint32(0x9E3779B9)
	payload := make([]byte, 184)
	section(0, pat)
	section(PMTPID, pmt)
	e := ecm(0)
	ecms = append(ecms, e)
	section(ECMPID, e)
	for i := range spec.Packets {
		if i%200 == 199 {
			section(0, pat)
			section(PMTPID, pmt)
		}
		ecmOf := 0 // the period whose ECM goes before packet i, if any
		if spec.LagPackets > 0 {
			if j := i - spec.LagPackets; j > 0 && j%spec.PeriodPackets == 0 {
				ecmOf = j / spec.PeriodPackets
			}
		} else if next := i + lead; next%spec.PeriodPackets == 0 && next > 0 && next < spec.Packets {
			ecmOf = next / spec.PeriodPackets
		}
		if ecmOf > 0 {
			e := ecm(ecmOf)
			ecms = append(ecms, e)
			section(ECMPID, e)
		} else if i%repeat == repeat-1 {
			section(ECMPID, ecms[len(ecms)-1])
		}
		for j := range payload {
			x ^= x << 13
			x ^= x >> 17
			x ^= x << 5
			payload[j] = byte(x)
		}
		pusi := i%8 == 0
		if pusi {
			copy(payload, []byte{0, 0, 1, 0xE0, 0, 0, 0x80, 0x80, 5, 0x21, byte(i >> 8), byte(i) | 1, 0, 1})
		}
		k := i / spec.PeriodPackets
		af := -1
		if spec.Stuffing != nil {
			af = min(spec.Stuffing(i), 182)
		}
		add(ESPID, pusi, af, payload, keys[k%len(keys)], cwOf(k), k%2 == 1)
	}
	later.EncryptIn(scr)
	return out, scr, ecms
}
