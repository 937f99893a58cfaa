package scs

import (
	"errors"
	"fmt"

	"github.com/tsdescramble/tsdescramble/psi"
	"github.com/tsdescramble/tsdescramble/simulcrypt"
	"github.com/tsdescramble/tsdescramble/ts"
)

func asErrorReply(err error, er **simulcrypt.ErrorReply) bool { return errors.As(err, er) }

// signalPMT follows the PAT and PMTs and writes the CA_descriptor into the PMT sections of the
// scrambled services that start and end in packet p, in place, once a crypto period has begun. A packet keeps its size, so a
// section grows only into the stuffing after it; a section that spans packets or has no room is
// left as it came, counted, and the first one logged.
func (s *Stage) signalPMT(p []byte, pid uint16) {
	s.tracker.Feed(p)
	if g := s.tracker.Generation(); g != s.generation {
		s.generation = g
		clear(s.wanted)
		for _, svc := range s.tracker.Services() {
			if s.cfg.Scrambled == nil || s.cfg.Scrambled(svc) {
				s.wanted[svc.Number] = true
			}
		}
	}
	if pid == psi.PATPID || !s.tracker.IsPMTPID(pid) || !ts.PUSI(p) || ts.TSC(p) != ts.Clear {
		return
	}
	if s.period < 0 {
		return // no ECM yet: the stream goes out clear, and no PMT claims otherwise
	}
	off, ok := ts.PayloadOffset(p)
	if !ok || off >= ts.PacketSize {
		return
	}
	q := off + 1 + int(p[off])
	if q > ts.PacketSize {
		return
	}
	caID := uint16(0)
	if s.cfg.ECMG != nil {
		caID = uint16(s.cfg.ECMG.SuperCASID >> 16)
	}
	w := copy(s.pkt[:], p[:q])
	signalled, left := 0, 0
	for q < ts.PacketSize && p[q] != 0xFF {
		if q+3 > ts.PacketSize || q+3+(int(p[q+1]&0x0F)<<8|int(p[q+2])) > ts.PacketSize {
			if p[q] == 0x02 {
				left++
			}
			w = -1
			break
		}
		total := 3 + (int(p[q+1]&0x0F)<<8 | int(p[q+2]))
		sec := p[q : q+total]
		q += total
		if sec[0] == 0x02 && total >= 5 && s.wanted[uint16(sec[3])<<8|uint16(sec[4])] {
			if out, ok := psi.AppendCADescriptor(s.sec[:0], sec, caID, s.cfg.ECMPID, nil); ok && w+len(out) <= ts.PacketSize {
				s.sec = out
				sec = out
				signalled++
			} else {
				left++
			}
		}
		if w+len(sec) > ts.PacketSize {
			w = -1
			break
		}
		w += copy(s.pkt[w:], sec)
	}
	if w < 0 || left > 0 {
		s.st.PMTLeft += int64(left + signalled)
		if !s.pmtLogged {
			s.pmtLogged = true
			s.cfg.Log(fmt.Sprintf("a PMT on PID %#04x has no room for the CA_descriptor in its packet (or spans packets): it goes out without one, so receivers must be told the ECM PID %#04x (this is the only such note)", pid, s.cfg.ECMPID))
		}
		return
	}
	// What grew must have taken only stuffing.
	for i := q; i < ts.PacketSize; i++ {
		if p[i] != 0xFF {
			return
		}
	}
	for i := w; i < ts.PacketSize; i++ {
		s.pkt[i] = 0xFF
	}
	s.st.PMTSignalled += int64(signalled)
	copy(p, s.pkt[:])
}
