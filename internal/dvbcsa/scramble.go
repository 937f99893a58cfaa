//go:build dvbcsa

package dvbcsa

import (
	"fmt"

	"github.com/tsdescramble/tsdescramble/pipeline"
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
func ScrambleStream(ts []byte, fr pipeline.Framing, opt ScrambleOptions) (int, error) {
	if len(ts)%fr.Size != 0 {
		return 0, fmt.Errorf("stream of %d bytes is not whole %d-byte packets", len(ts), fr.Size)
	}
	ks, free, err := newKeys(opt.CWs)
	if err != nil {
		return 0, err
	}
	defer free()
	period, inPeriod := 0, 0
	for at := 0; at < len(ts); at += fr.Size {
		p := ts[at+fr.Prefix : at+fr.Prefix+pipeline.PacketSize]
		if p[0] != pipeline.SyncByte {
			return 0, fmt.Errorf("packet at byte %d has no sync byte", at)
		}
		if !opt.PIDs[pipeline.PID(p)] || pipeline.TSC(p) != pipeline.Clear {
			continue
		}
		off, ok := pipeline.PayloadOffset(p)
		if !ok || off == pipeline.PacketSize {
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
			pipeline.SetTSC(p, pipeline.Odd)
		} else {
			pipeline.SetTSC(p, pipeline.Even)
		}
	}
	return period + 1, nil
}

// DescrambleStream descrambles, in place, a whole stream in the given framing with libdvbcsa:
// the CWs are used in turn, the next at each change of parity of the scrambled packets (the
// convention of a CW list), and every descrambled packet's TSC is cleared. It returns the
// number of crypto periods seen.
func DescrambleStream(ts []byte, fr pipeline.Framing, cws [][]byte) (int, error) {
	if len(ts)%fr.Size != 0 {
		return 0, fmt.Errorf("stream of %d bytes is not whole %d-byte packets", len(ts), fr.Size)
	}
	ks, free, err := newKeys(cws)
	if err != nil {
		return 0, err
	}
	defer free()
	periods, last := 0, pipeline.Clear
	for at := 0; at < len(ts); at += fr.Size {
		p := ts[at+fr.Prefix : at+fr.Prefix+pipeline.PacketSize]
		tsc := pipeline.TSC(p)
		if tsc != pipeline.Even && tsc != pipeline.Odd {
			continue
		}
		off, ok := pipeline.PayloadOffset(p)
		if !ok {
			continue
		}
		if tsc != last {
			periods++
			last = tsc
		}
		ks[(periods-1)%len(ks)].Decrypt(p[off:])
		pipeline.SetTSC(p, pipeline.Clear)
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
