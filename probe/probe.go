// Package probe tells what is in an MPEG transport stream: its framing, size, duration and
// bitrate, its services with their streams and conditional-access systems, the tables each PID
// carries, and for every PID how many packets are clear and how many are scrambled with the
// even or the odd key.
//
// The packets are cut and counted by the project's own framer (ts.Framer), so 188, 192
// and 204-byte packets all work and garbage between packets is skipped. The tables are read in
// the same single pass by the psi package: a psi.SectionReader gathers the sections of every
// PID that carries them, and the PAT, PMTs, CAT and SDT are kept whatever order they come in,
// so that a PMT sent before the first PAT is bound to its service all the same. Probe works on
// a pipe as on a file: it reads its input once, and what it keeps is bounded whatever the
// input's length. (It does not use github.com/asticode/go-astits, which takes a PID for a
// PMT PID only once it has read a PAT naming it, and allocates for every packet.)
package probe

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/tsdescramble/tsdescramble/keys"
	"github.com/tsdescramble/tsdescramble/keys/period"
	"github.com/tsdescramble/tsdescramble/psi"
	"github.com/tsdescramble/tsdescramble/ts"
)

// ErrEmpty is returned by Probe for an input without a single byte.
var ErrEmpty = errors.New("the input is empty")

// Report is what Probe found in a stream. Its JSON form is the output of `tsdescramble probe -json`.
type Report struct {
	Framing        int   `json:"framing"`         // bytes per packet: 188, 192 (4-byte prefix) or 204 (16-byte trailer)
	Bytes          int64 `json:"bytes"`           // bytes read
	Packets        int64 `json:"packets"`         // packets found
	SkippedBytes   int64 `json:"skipped_bytes"`   // bytes dropped to regain sync (garbage, cut packets)
	TruncatedBytes int64 `json:"truncated_bytes"` // bytes of a truncated last packet
	// TransportErrors counts packets with the transport_error_indicator set.
	TransportErrors int64 `json:"transport_errors"`

	// Timing is measured on the PCRs of the PCR PID with the most PCRs; nil when there is no PCR.
	Timing *Timing `json:"timing,omitempty"`

	// TransportStreamID is the transport_stream_id of the PAT; nil without a PAT.
	TransportStreamID *uint16 `json:"transport_stream_id,omitempty"`
	// NITPID is the network PID the PAT gives as program 0; nil when it gives none.
	NITPID *uint16 `json:"nit_pid,omitempty"`
	// Services are the programs of the PAT (program 0, the NIT, left out), in PAT order.
	Services []Service `json:"services"`
	// EMM lists the CA descriptors of the CAT: the CA systems and the PIDs of their EMMs.
	EMM []EMM `json:"emm"`
	// PIDs lists every PID seen in the stream, in ascending order.
	PIDs []PID `json:"pids"`

	// PSIErrors counts PSI sections that could not be read (bad CRC, bad lengths).
	PSIErrors int `json:"psi_errors"`
	// PSIFailure says why PSI reading stopped early, if it did; the counts are still whole.
	// The section reader has no way to stop early, so it is empty; it stays for the scripts
	// that test it.
	PSIFailure string `json:"psi_failure,omitempty"`
}

// Timing is the duration and bitrate of a stream, measured on its program clock references.
type Timing struct {
	PCRPID uint16 `json:"pcr_pid"` // the PID whose PCRs were used
	PCRs   int64  `json:"pcrs"`    // PCRs seen on it
	// DurationSeconds is the time from its first to its last PCR. Wrap-arounds of the 33-bit
	// PCR base are followed; jumps (a discontinuity_indicator, a step back, or more than
	// 1 second forward: ts.MaxPCRStep) are left out of the sum, and counted in Discontinuities.
	DurationSeconds float64 `json:"duration_seconds"`
	// Bitrate is the transport stream rate in bits per second: 188-byte packets between
	// PCRs, over the time between them. Zero with fewer than two PCRs.
	Bitrate         int64 `json:"bitrate"`
	Discontinuities int   `json:"discontinuities"`
}

// Service is a program of the PAT, with its PMT and its SDT entry when they were seen.
type Service struct {
	Number   uint16   `json:"number"`             // program_number (the DVB service_id)
	Name     string   `json:"name,omitempty"`     // service_name from the SDT
	Provider string   `json:"provider,omitempty"` // service_provider_name from the SDT
	PMTPID   uint16   `json:"pmt_pid"`
	PMTSeen  bool     `json:"pmt_seen"`          // false: the PAT names it, but no PMT was read
	PCRPID   *uint16  `json:"pcr_pid,omitempty"` // nil without PMT; 0x1FFF for a service without PCR
	CA       []CA     `json:"ca"`                // program-level CA descriptors (they cover every stream)
	Streams  []Stream `json:"streams"`
	// Scrambling is the scrambling_descriptor of the PMT (ETSI EN 300 468 6.2.32), the system
	// a descrambler without -cipher takes; nil when the PMT has none (DVB-CSA by default).
	Scrambling *Scrambling `json:"scrambling,omitempty"`
}

// Scrambling is a scrambling_descriptor: its scrambling_mode and what that names.
type Scrambling struct {
	Mode uint8  `json:"mode"`
	Name string `json:"name"`
}

// Stream is an elementary stream of a service.
type Stream struct {
	PID        uint16 `json:"pid"`
	StreamType uint8  `json:"stream_type"`
	TypeName   string `json:"type_name"` // the stream type in words, refined by the descriptors
	CA         []CA   `json:"ca"`        // CA descriptors of this stream alone
}

// CA is a CA_descriptor of a PMT: a CA system and the PID of its ECMs.
type CA struct {
	SystemID   uint16 `json:"system_id"`
	SystemName string `json:"system_name"`
	ECMPID     uint16 `json:"ecm_pid"`
}

// EMM is a CA_descriptor of the CAT: a CA system and the PID of its EMMs.
type EMM struct {
	SystemID   uint16 `json:"system_id"`
	SystemName string `json:"system_name"`
	EMMPID     uint16 `json:"emm_pid"`
}

// PID counts the packets of one PID by scrambling state.
type PID struct {
	PID         uint16   `json:"pid"`
	Description string   `json:"description"` // PAT, PMT of service 1, H.264 video, ECM (Conax), SIT, ...
	Services    []uint16 `json:"services,omitempty"`
	// Tables names the tables whose sections were read on the PID, by table_id, in order of
	// table_id: "SDT", "BAT"; "NIT", "SIT"; "ECM"; "SCTE 35" ...
	Tables   []string `json:"tables,omitempty"`
	Packets  int64    `json:"packets"`
	Clear    int64    `json:"clear"`    // TSC 00
	Even     int64    `json:"even"`     // TSC 10
	Odd      int64    `json:"odd"`      // TSC 11
	Reserved int64    `json:"reserved"` // TSC 01
	// CryptoPeriods is the number of crypto periods of the PID as the descrambler counts
	// them (keys/period): the runs of one parity among its even and odd packets, 0 when none
	// is scrambled, less the single packets of the other parity inside a run (glitches).
	// Clear and reserved packets between two packets of the same parity do not end a run.
	CryptoPeriods int64 `json:"crypto_periods"`
	PCRs          int64 `json:"pcrs,omitempty"` // PCRs carried in its adaptation fields
}

// pidCount is the running count of one PID.
type pidCount struct {
	packets int64
	byTSC   [4]int64    // by transport_scrambling_control value
	periods int64       // crypto periods, as the period tracker decided them
	pcr     ts.PCRClock // on the PCRs of this PID alone
}

// Probe reads the transport stream r to its end, once, and reports what it holds. It returns
// ts.ErrNoSync when r holds bytes but no transport stream packet, ErrEmpty when it holds
// none, and the read error that stopped it otherwise.
func Probe(r io.Reader) (*Report, error) {
	fr := ts.NewFramer(r)
	counts := make([]pidCount, ts.NullPID+1)
	tabs := newTables()
	onSection := tabs.section // one func value for the whole run, not one per packet
	rep := &Report{}
	// The descrambler's own period rules count the crypto periods: without keys to try, a
	// period is told by its parity and its siblings', and a single packet of the other
	// parity is a glitch. The rules ask the PAT and PMTs as the descrambler reads them.
	psiView := psi.NewTracker()
	var psiGen uint64
	periods := period.New(period.Config{
		Keys:   keys.NewList(nil),
		Tables: psiView,
		Counted: func(pid uint16, _ period.State) {
			counts[pid].periods++
		},
	})
	defer periods.Release()

	var n, size int64
	for {
		unit, err := fr.Next()
		if err != nil {
			if err != io.EOF {
				return nil, err
			}
			break
		}
		framing := fr.Framing()
		p := unit[framing.Prefix : framing.Prefix+ts.PacketSize]
		rep.Framing = framing.Size
		size += int64(len(unit))
		pid := ts.PID(p)
		c := &counts[pid]
		c.packets++
		tsc := ts.TSC(p)
		c.byTSC[tsc]++
		if _, payload := ts.PayloadOffset(p); payload && (tsc == ts.Even || tsc == ts.Odd) {
			// As the descrambler's classifier: only packets with a payload have a period.
			periods.Packet(n+1, pid, tsc == ts.Odd, false)
			periods.Expire()
			periods.Compact() // nothing waits for a decision here
		}
		if ts.TEI(p) {
			rep.TransportErrors++
		} else {
			c.pcr.Observe(p, n)
			tabs.reader.Feed(p, onSection)
			if psiView.Reads(pid) {
				psiView.Feed(p)
				if g := psiView.Generation(); g != psiGen {
					psiGen = g
					periods.TablesChanged()
				}
			}
		}
		n++
	}
	periods.Finish()
	rep.Bytes = fr.Skipped() + fr.Truncated() + size
	if n == 0 && rep.Bytes == 0 {
		return nil, ErrEmpty
	}
	rep.Packets = n
	rep.SkippedBytes = fr.Skipped()
	rep.TruncatedBytes = fr.Truncated()
	if rep.Framing == 0 {
		rep.Framing = ts.PacketSize
	}

	rep.timing(counts)
	tabs.fill(rep)
	rep.pids(counts, tabs)
	return rep, nil
}

// timing fills Timing from the PCR PID with the most PCRs (the lowest PID on a tie).
func (rep *Report) timing(counts []pidCount) {
	best := -1
	for pid := range counts {
		if counts[pid].pcr.PCRs() > 0 && (best < 0 || counts[pid].pcr.PCRs() > counts[best].pcr.PCRs()) {
			best = pid
		}
	}
	if best < 0 {
		return
	}
	c := &counts[best].pcr
	elapsed, packets := c.Elapsed()
	t := &Timing{
		PCRPID:          uint16(best),
		PCRs:            c.PCRs(),
		DurationSeconds: float64(elapsed) / 27e6,
		Discontinuities: int(c.Jumps()),
	}
	if elapsed > 0 {
		t.Bitrate = int64(float64(packets*ts.PacketSize*8) * 27e6 / float64(elapsed))
	}
	rep.Timing = t
}

// Well-known PIDs (ISO/IEC 13818-1 Table 2-3, ETSI EN 300 468 Table 1, ATSC A/65).
const (
	pidPAT  = 0x0000
	pidCAT  = 0x0001
	pidTSDT = 0x0002
	pidNIT  = 0x0010
	pidSDT  = 0x0011
	pidEIT  = 0x0012
	pidRST  = 0x0013
	pidTDT  = 0x0014
	pidPSIP = 0x1FFB
)

// wellKnown names the PIDs that the standards reserve, for when no table was read on them.
var wellKnown = map[uint16]string{
	pidPAT:     "PAT",
	pidCAT:     "CAT",
	pidTSDT:    "TSDT",
	pidNIT:     "NIT",
	pidSDT:     "SDT/BAT",
	pidEIT:     "EIT",
	pidRST:     "RST",
	pidTDT:     "TDT/TOT",
	0x0015:     "network synchronisation",
	0x0016:     "RNT",
	0x001C:     "inband signalling",
	0x001D:     "measurement",
	0x001E:     "DIT",
	0x001F:     "SIT",
	pidPSIP:    "ATSC PSIP",
	ts.NullPID: "null packets",
}

// pids fills PIDs from the counts and describes each PID from the tables: a PID that a PMT,
// the CAT or the PAT gives a role is named by it ("H.264 video of service 1", "ECM (Conax
// 0x0B00) of service 1", "PMT of service 2"), with the tables read on it that the role does not
// name ("private sections (AIT) of service 1"); a reserved PID (below 0x20), the network PID and
// a PID that nothing names go by the tables read on it ("SDT/BAT", "SIT", "PMT of program 7 (not
// in the PAT)"), then by the name the standards reserve for them.
func (rep *Report) pids(counts []pidCount, tabs *tables) {
	type role struct {
		what     string
		services []uint16
	}
	roles := map[uint16]*role{}
	// The first role found for a PID names it (PMT before stream before ECM before PCR);
	// every service that refers to the PID is listed.
	addRole := func(pid uint16, what string, svc uint16, hasSvc bool) {
		r := roles[pid]
		if r == nil {
			r = &role{what: what}
			roles[pid] = r
		}
		if hasSvc && !slices.Contains(r.services, svc) {
			r.services = append(r.services, svc)
		}
	}
	for _, s := range rep.Services {
		addRole(s.PMTPID, "PMT", s.Number, true)
	}
	for _, s := range rep.Services {
		for _, st := range s.Streams {
			addRole(st.PID, st.TypeName, s.Number, true)
		}
	}
	for _, s := range rep.Services {
		for _, ca := range s.CA {
			addRole(ca.ECMPID, fmt.Sprintf("ECM (%s 0x%04X)", ca.SystemName, ca.SystemID), s.Number, true)
		}
		for _, st := range s.Streams {
			for _, ca := range st.CA {
				addRole(ca.ECMPID, fmt.Sprintf("ECM (%s 0x%04X)", ca.SystemName, ca.SystemID), s.Number, true)
			}
		}
	}
	for _, s := range rep.Services {
		if s.PCRPID != nil && *s.PCRPID != ts.NullPID {
			addRole(*s.PCRPID, "PCR", s.Number, true)
		}
	}
	for _, e := range rep.EMM {
		addRole(e.EMMPID, fmt.Sprintf("EMM (%s 0x%04X)", e.SystemName, e.SystemID), 0, false)
	}
	unbound := tabs.unboundPMTs()

	rep.PIDs = []PID{}
	for pid := range counts {
		c := &counts[pid]
		if c.packets == 0 {
			continue
		}
		p := PID{
			PID:           uint16(pid),
			Packets:       c.packets,
			Clear:         c.byTSC[ts.Clear],
			Even:          c.byTSC[ts.Even],
			Odd:           c.byTSC[ts.Odd],
			Reserved:      c.byTSC[ts.Reserved],
			CryptoPeriods: c.periods,
			PCRs:          c.pcr.PCRs(),
			Tables:        tabs.tableNames(uint16(pid)),
		}
		r, name := roles[uint16(pid)], wellKnown[uint16(pid)]
		network := rep.NITPID != nil && *rep.NITPID == uint16(pid)
		switch {
		case pid == ts.NullPID:
			p.Description = name
		case r != nil && pid >= 0x20:
			p.Description = r.what
			// The tables read on a stream of sections, when its type does not name them
			// already: "private sections (AIT) of service 1".
			var more []string
			for _, tn := range p.Tables {
				if !strings.Contains(r.what, tn) {
					more = append(more, tn)
				}
			}
			if len(more) > 0 {
				p.Description += " (" + joinTables(more) + ")"
			}
			p.Services = r.services
			if len(r.services) > 0 {
				p.Description += " of service" + plural(len(r.services)) + " " + joinNumbers(r.services)
			}
		case len(unbound[uint16(pid)]) > 0 && (pid >= 0x20 || len(p.Tables) == 1):
			ns := unbound[uint16(pid)]
			p.Description = "PMT of program" + plural(len(ns)) + " " + joinNumbers(ns) + " (not in the PAT)"
		case len(p.Tables) > 0:
			// The tables read on the PID, whatever the PAT or the PID's reservation say: the
			// network PID may carry a SIT rather than a NIT.
			p.Description = joinTables(p.Tables)
		case network:
			p.Description = "NIT"
		case name != "":
			p.Description = name
		case r != nil:
			p.Description = r.what
		default:
			p.Description = "not in the PSI"
		}
		rep.PIDs = append(rep.PIDs, p)
	}
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func joinNumbers(ns []uint16) string {
	s := ""
	for i, n := range ns {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprint(n)
	}
	return s
}
