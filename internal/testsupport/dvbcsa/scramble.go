//go:build dvbcsa

package dvbcsa

import (
	"fmt"
	"github.com/tsdescramble/tsdescramble/ts"
)

// ScrambleOptions say how ScrambleStream scrambles a stream.
type ScrambleOptions struct {
	// CWs are used in turn, one per crypto period, cyclically.
	CWs [][]byte
	// CPPackets is the length of a crypto period in scrambled packets (0: one period).
	CPPackets int
	// PIDs to scramble; packets of other PIDs stay clear.
	PIDs map[uint16]bool
	// OddFirst starts with the odd parity instead of the even one.
	OddFirst bool
}

// ScrambleStream scrambles, in place, the packets of the selected PIDs of a whole stream in the
// given framing with libdvbcsa: crypto period i uses CWs[i mod len] and the parity alternates at
// each period, starting even. Every packet of a selected PID that has a payload gets its TSC set,
// including payloads under 8 bytes, which CSA2 leaves clear. It returns the number of periods.
func ScrambleStream(stream []byte, fr ts.Framing, opt ScrambleOptions) (int, error) {
	if len(stream)%fr.Size != 0 {
		return 0, fmt.Errorf("stream of %d bytes is not whole %d-byte packets", len(stream), fr.Size)
	}
	ks, free, err := newKeys(opt.CWs)
	if err != nil {
		return 0, err
	}
	defer free()
	period, inPeriod := 0, 0
	for at := 0; at < len(stream); at += fr.Size {
		p := stream[at+fr.Prefix : at+fr.Prefix+ts.PacketSize]
		if p[0] != ts.SyncByte {
			return 0, fmt.Errorf("packet at byte %d has no sync byte", at)
		}
		if !opt.PIDs[ts.PID(p)] || ts.TSC(p) != ts.Clear {
			continue
		}
		off, ok := ts.PayloadOffset(p)
		if !ok || off == ts.PacketSize {
			continue
		}
		if opt.CPPackets > 0 && inPeriod == opt.CPPackets {
			period++
			inPeriod = 0
		}
		inPeriod++
		odd := period%2 == 1
		if opt.OddFirst {
			odd = !odd
		}
		ks[period%len(ks)].Encrypt(p[off:])
		if odd {
			ts.SetTSC(p, ts.Odd)
		} else {
			ts.SetTSC(p, ts.Even)
		}
	}
	return period + 1, nil
}

// DescrambleStream descrambles, in place, a whole stream in the given framing with libdvbcsa:
// the CWs are used in turn, the next at each change of parity of the scrambled packets (the
// convention of a CW list), and every descrambled packet's TSC is cleared. It returns the
// number of crypto periods seen.
func DescrambleStream(stream []byte, fr ts.Framing, cws [][]byte) (int, error) {
	if len(stream)%fr.Size != 0 {
		return 0, fmt.Errorf("stream of %d bytes is not whole %d-byte packets", len(stream), fr.Size)
	}
	ks, free, err := newKeys(cws)
	if err != nil {
		return 0, err
	}
	defer free()
	periods, last := 0, ts.Clear
	for at := 0; at < len(stream); at += fr.Size {
		p := stream[at+fr.Prefix : at+fr.Prefix+ts.PacketSize]
		tsc := ts.TSC(p)
		if tsc != ts.Even && tsc != ts.Odd {
			continue
		}
		off, ok := ts.PayloadOffset(p)
		if !ok {
			continue
		}
		if tsc != last {
			periods++
			last = tsc
		}
		ks[(periods-1)%len(ks)].Decrypt(p[off:])
		ts.SetTSC(p, ts.Clear)
	}
	return periods, nil
}

// newKeys returns a libdvbcsa key per control word and a function that frees them all.
func newKeys(cws [][]byte) ([]*Key, func(), error) {
	ks := make([]*Key, 0, len(cws))
	free := func() {
		for _, k := range ks {
			k.Free()
		}
	}
	for _, cw := range cws {
		k, err := NewKey(cw)
		if err != nil {
			free()
			return nil, nil, err
		}
		ks = append(ks, k)
	}
	return ks, free, nil
}
