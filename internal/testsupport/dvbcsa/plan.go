//go:build dvbcsa

package dvbcsa

import (
	"fmt"
	"github.com/tsdescramble/tsdescramble/ts"
)

// Plan says how ScramblePlan scrambles the packet at position index of a stream (counting every
// packet from 0) on PID pid: with control word cw and the odd parity or the even one, or not at
// all when cw is nil.
type Plan func(index int, pid uint16) (cw []byte, odd bool)

// ScramblePlan scrambles, in place, the packets of a whole stream in the given framing with
// libdvbcsa as plan says, packet by packet. Where ScrambleStream gives every selected PID the
// same crypto periods and keys, a plan can give each PID its own: a service of another CA
// system with a key nobody has, one constant parity, periods that change at other times than a
// neighbour's. As with ScrambleStream, packets already scrambled and packets without a payload
// are left as they are, and payloads under 8 bytes, which CSA2 leaves clear, are marked. It
// returns the number of packets marked scrambled.
func ScramblePlan(stream []byte, fr ts.Framing, plan Plan) (int, error) {
	if len(stream)%fr.Size != 0 {
		return 0, fmt.Errorf("stream of %d bytes is not whole %d-byte packets", len(stream), fr.Size)
	}
	ks := map[string]*Key{}
	defer func() {
		for _, k := range ks {
			k.Free()
		}
	}()
	n := 0
	for at := 0; at < len(stream); at += fr.Size {
		p := stream[at+fr.Prefix : at+fr.Prefix+ts.PacketSize]
		if p[0] != ts.SyncByte {
			return n, fmt.Errorf("packet at byte %d has no sync byte", at)
		}
		if ts.TSC(p) != ts.Clear {
			continue
		}
		off, ok := ts.PayloadOffset(p)
		if !ok || off == ts.PacketSize {
			continue
		}
		cw, odd := plan(at/fr.Size, ts.PID(p))
		if cw == nil {
			continue
		}
		k := ks[string(cw)]
		if k == nil {
			var err error
			if k, err = NewKey(cw); err != nil {
				return n, err
			}
			ks[string(cw)] = k
		}
		k.Encrypt(p[off:])
		if odd {
			ts.SetTSC(p, ts.Odd)
		} else {
			ts.SetTSC(p, ts.Even)
		}
		n++
	}
	return n, nil
}
