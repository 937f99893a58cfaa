// Package testca reads the control words of a test CA system: the ECMs of VideoLAN's example
// ECMG (bitstream's examples/dvb_ecmg.c), sections of table_id 0x80 or 0x81 (the parity of the
// crypto period's number) whose first 16 bytes after the 3-byte header are the even and the odd
// CW, each XORed with a fixed 8-byte key. With lead_CW 1 and CW_per_msg 2, the ECM of period n
// carries the CW of n in the slot of n's parity and the CW of n+1 in the other.
//
// ReadCWs reads a whole stream and returns its crypto periods in order, for a keys.Schedule
// (keys.NewPeriods): each CW takes effect at the flip to its period's parity.
package testca

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/tsdescramble/tsdescramble/keys"
	"github.com/tsdescramble/tsdescramble/psi"
	"github.com/tsdescramble/tsdescramble/ts"
)

// KeySize is the size of the XOR key and of each CW.
const KeySize = 8

// Result is what ReadCWs found.
type Result struct {
	// Periods are the crypto periods in stream order, each with its CW: the period of every
	// ECM that changed, then the period after the last, whose CW only that ECM carried.
	Periods []keys.Period
	// ECMs counts the ECM sections read, Distinct those that differed from the one before.
	ECMs, Distinct int
	// PIDs are the ECM PIDs the PMTs named (CA_descriptors of the program or of its streams).
	PIDs []uint16
}

// ErrNoECM is returned when the stream holds no ECM of the test CA system.
var ErrNoECM = errors.New("no ECM of table_id 0x80/0x81 on the PIDs the CA_descriptors name")

// ReadCWs reads the stream r and decodes the ECMs on the ECM PIDs named by the CA_descriptors of
// the PMTs (of program service only, when it is not 0) with key.
func ReadCWs(r io.Reader, key []byte, service int) (Result, error) {
	var res Result
	if len(key) != KeySize {
		return res, fmt.Errorf("testca: key of %d bytes, want %d", len(key), KeySize)
	}
	fr := ts.NewFramer(r)
	tr := psi.NewTracker()
	var ecmPIDs [8192]bool
	var generation uint64
	var last []byte
	var lastOdd bool
	// ECM-like sections on PIDs no PMT has named yet: a scrambler may send the first ECM before
	// the first PMT, so they are kept (a few) until a PMT names their PID.
	type early struct {
		pid  uint16
		head [3 + 2*KeySize]byte
	}
	var before []early
	take := func(sec []byte) {
		res.ECMs++
		body := sec[3 : 3+2*KeySize]
		odd := sec[0]&1 == 1
		if last != nil && odd == lastOdd && bytes.Equal(body, last) {
			return
		}
		res.Distinct++
		last, lastOdd = append(last[:0], body...), odd
		even, oddCW := make([]byte, KeySize), make([]byte, KeySize)
		for i := range KeySize {
			even[i] = body[i] ^ key[i]
			oddCW[i] = body[KeySize+i] ^ key[i]
		}
		cur := even
		if odd {
			cur = oddCW
		}
		res.Periods = append(res.Periods, keys.Period{Odd: odd, CW: cur})
	}
	for {
		unit, err := fr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return res, err
		}
		f := fr.Framing()
		p := unit[f.Prefix : f.Prefix+ts.PacketSize]
		pid := ts.PID(p)
		if tr.Wants(pid) {
			tr.Feed(p)
			if g := tr.Generation(); g != generation {
				generation = g
				for _, svc := range tr.Services() {
					if service != 0 && int(svc.Number) != service {
						continue
					}
					cas := svc.CA
					for _, st := range svc.Streams {
						cas = append(cas, st.CA...)
					}
					for _, ca := range cas {
						if !ecmPIDs[ca.PID&0x1FFF] {
							ecmPIDs[ca.PID&0x1FFF] = true
							res.PIDs = append(res.PIDs, ca.PID&0x1FFF)
							for _, e := range before {
								if e.pid == ca.PID&0x1FFF {
									take(e.head[:])
								}
							}
						}
					}
				}
			}
			continue
		}
		if !ts.PUSI(p) || ts.TSC(p) != ts.Clear || !ecmPIDs[pid] && len(before) >= 64 {
			continue
		}
		off, ok := ts.PayloadOffset(p)
		if !ok {
			continue
		}
		q := off + 1 + int(p[off])
		if q+3+2*KeySize > ts.PacketSize || p[q]&0xFE != 0x80 || int(p[q+1]&0x0F)<<8|int(p[q+2]) < 2*KeySize {
			continue
		}
		if !ecmPIDs[pid] {
			e := early{pid: pid}
			copy(e.head[:], p[q:])
			before = append(before, e)
			continue
		}
		take(p[q : q+3+2*KeySize])
	}
	if res.Distinct == 0 {
		return res, ErrNoECM
	}
	// The period after the last ECM's: its CW is in that ECM's other slot.
	next := make([]byte, KeySize)
	slot := 0
	if !lastOdd {
		slot = KeySize
	}
	for i := range KeySize {
		next[i] = last[slot+i] ^ key[i]
	}
	res.Periods = append(res.Periods, keys.Period{Odd: !lastOdd, CW: next})
	return res, nil
}
