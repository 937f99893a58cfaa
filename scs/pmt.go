package scs

import (
	"errors"
	"fmt"

	"github.com/tsdescramble/tsdescramble/psi"
	"github.com/tsdescramble/tsdescramble/simulcrypt"
)

func asErrorReply(err error, er **simulcrypt.ErrorReply) bool { return errors.As(err, er) }

// signalPMT follows the PAT and PMTs and, once a crypto period has begun, writes the
// CA_descriptor of the ECM PID into the PMT sections of the scrambled services in packet p, in
// place, with psi's PMT rewriter: a section grows only into the stuffing of its packet; one
// that spans packets or has no room is left as it came, counted, and the first one logged.
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
	if pid == psi.PATPID || !s.tracker.IsPMTPID(pid) {
		return
	}
	if s.period < 0 {
		return // no ECM yet: the stream goes out clear, and no PMT claims otherwise
	}
	if s.pmt.CA == nil {
		// The CA_system_ID is the upper half of the SuperCAS_id (ETSI TS 103 197, 4.2.2).
		caID := uint16(0)
		if s.cfg.ECMG != nil {
			caID = uint16(s.cfg.ECMG.SuperCASID >> 16)
		}
		s.pmt.CA = &psi.CA{SystemID: caID, PID: s.cfg.ECMPID}
		s.pmt.Want = func(program uint16) bool { return s.wanted[program] }
	}
	r := s.pmt.Packet(p)
	s.st.PMTSignalled += int64(r.Signalled)
	if r.Left == 0 {
		return
	}
	s.st.PMTLeft += int64(r.Left)
	if !s.pmtLogged {
		s.pmtLogged = true
		s.warn(fmt.Sprintf("a PMT on PID %#04x has no room for the CA_descriptor in its packet (or spans packets): it goes out without one, so receivers must be told the ECM PID %#04x (this is the only such note)", pid, s.cfg.ECMPID))
	}
}
