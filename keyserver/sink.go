package keyserver

import (
	"slices"
	"sync"

	"github.com/tsdescramble/tsdescramble/psi"
)

// Choice says which ECMs of the stream go to the key server.
type Choice struct {
	ServiceID uint16 // only this service's (0: every service with a CA descriptor)
	CAID      uint16 // only ECMs of this CA system (0: the first CA descriptor of each service)
	ECMPID    uint16 // only this ECM PID (0: as the CA descriptors say)
	// Prefer, when set, picks among the CA descriptors the other fields allow: a service's
	// ECMs are those of the first it accepts, else of the first allowed (an ECM cache prefers
	// the ECM PIDs its answers were recorded from).
	Prefer func(caid, pid uint16) bool
}

// ECMSink takes a stream's tables and sections, as the descrambling pipeline hands them over
// (pipeline.SectionSink), and offers the ECM sections of the chosen services to a Feeder.
type ECMSink struct {
	f      *Feeder
	choice Choice

	mu   sync.Mutex
	pids map[uint16]ecmPID // ECM PID to where its ECMs come from
	gen  uint64
}

type ecmPID struct{ service, caid uint16 }

// NewECMSink returns a sink that offers the ECMs choice selects to f.
func NewECMSink(f *Feeder, choice Choice) *ECMSink {
	return &ECMSink{f: f, choice: choice, pids: map[uint16]ecmPID{}, gen: 1}
}

// Tables implements pipeline.SectionSink: each service's ECM PID is the first CA descriptor's
// of its program, else of its streams, that the choice allows (and prefers, with Prefer).
func (s *ECMSink) Tables(services []psi.Service) {
	pids := map[uint16]ecmPID{}
	for _, svc := range services {
		if s.choice.ServiceID != 0 && svc.Number != s.choice.ServiceID {
			continue
		}
		cas := slices.Clone(svc.CA)
		for _, es := range svc.Streams {
			cas = append(cas, es.CA...)
		}
		chosen := -1
		for i, ca := range cas {
			if s.choice.CAID != 0 && ca.SystemID != s.choice.CAID || s.choice.ECMPID != 0 && ca.PID != s.choice.ECMPID {
				continue
			}
			if chosen < 0 {
				chosen = i
			}
			if s.choice.Prefer == nil {
				break
			}
			if s.choice.Prefer(ca.SystemID, ca.PID) {
				chosen = i
				break
			}
		}
		if chosen >= 0 {
			ca := cas[chosen]
			if _, ok := pids[ca.PID]; !ok {
				pids[ca.PID] = ecmPID{service: svc.Number, caid: ca.SystemID}
			}
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !mapsEqual(pids, s.pids) {
		s.pids = pids
		s.gen++
	}
}

func mapsEqual(a, b map[uint16]ecmPID) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// ECMPIDs returns how many ECM PIDs the services' CA descriptors give the sink: none for a
// stream without a CA descriptor that the choice allows, which has no ECM to send.
func (s *ECMSink) ECMPIDs() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.pids)
}

// WantedPIDs implements pipeline.SectionSink.
func (s *ECMSink) WantedPIDs() ([]uint16, uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var pids []uint16
	for pid := range s.pids {
		pids = append(pids, pid)
	}
	slices.Sort(pids)
	return pids, s.gen
}

// Section implements pipeline.SectionSink: ECM sections (table_id 0x80 or 0x81) go to the
// Feeder, which sends each distinct one once.
func (s *ECMSink) Section(pid uint16, section []byte) {
	if len(section) < 3 || section[0]&0xFE != 0x80 {
		return
	}
	s.mu.Lock()
	src, ok := s.pids[pid]
	s.mu.Unlock()
	if !ok {
		return
	}
	s.f.Offer(ECM{Section: section, PID: pid, ServiceID: src.service, CAID: src.caid})
}

// Busy implements pipeline.SectionSink: ECMs wait for their answer.
func (s *ECMSink) Busy() bool { return s.f.Pending() > 0 }
