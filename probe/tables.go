package probe

import (
	"encoding/binary"
	"slices"
	"strings"

	"github.com/tsdescramble/tsdescramble/psi"
)

// Bounds on what tables keeps, so that a probe's memory does not grow with the input.
const (
	maxPMTs     = 4096 // (PID, program_number) pairs whose PMT is kept
	maxSeenCRCs = 8192 // sections remembered so that their repetitions are not parsed again
)

// tables gathers the tables of a stream from its sections, as a psi.SectionReader hands them
// over, in whatever order they come. The PMTs are kept by the PID they came on and their
// program_number, PAT or no PAT: a recording that starts between a PMT and the next PAT, or a
// multiplexer that sends the PMTs first, still has its services bound to their PMTs once a PAT
// names the PIDs. Nothing here depends on having seen a table before another.
type tables struct {
	reader *psi.SectionReader

	// The programs of every PAT section seen, in order of first appearance: a PAT may span
	// several sections, and a recording may hold several versions; a probe reports all the
	// programs it met, each with its latest PID.
	havePAT  bool
	tsid     uint16
	programs []psi.Program
	pmts     map[pmtKey]psi.Service
	sdt      map[uint16]map[uint16]sdtService // SDT actual, by transport_stream_id, then service_id
	cat      []EMM                            // CA descriptors of the CAT, without repeats
	tids     map[uint16]*[4]uint64            // the table_ids seen on each PID, a bit each
	seen     map[sectionKey]uint32            // CRC_32 of the last section parsed, by section
	invalid  int                              // sections whole and CRC-checked, but malformed inside
}

type pmtKey struct{ pid, program uint16 }

// sectionKey identifies a section of a table among its repetitions.
type sectionKey struct {
	pid    uint16
	tid    uint8
	ext    uint16 // table_id_extension
	number uint8  // section_number
}

// sdtService is a service's entry in an SDT.
type sdtService struct{ name, provider string }

func newTables() *tables {
	return &tables{
		reader: psi.NewSectionReader(),
		pmts:   map[pmtKey]psi.Service{},
		sdt:    map[uint16]map[uint16]sdtService{},
		tids:   map[uint16]*[4]uint64{},
		seen:   map[sectionKey]uint32{},
	}
}

// section reads one whole section of pid; long-syntax sections come with a good CRC_32.
func (t *tables) section(pid uint16, s []byte) {
	tid := s[0]
	set := t.tids[pid]
	if set == nil {
		set = new([4]uint64)
		t.tids[pid] = set
	}
	set[tid>>6] |= 1 << (tid & 63)

	parsed := tid == 0x00 && pid == pidPAT || tid == 0x01 && pid == pidCAT || tid == 0x02 || tid == 0x42
	if !parsed || s[1]&0x80 == 0 {
		return // a table probe names but does not read, or one without the long syntax
	}
	// Tables repeat several times a second: a section seen before, unchanged, is skipped.
	key := sectionKey{pid, tid, uint16(s[3])<<8 | uint16(s[4]), s[6]}
	crc := binary.BigEndian.Uint32(s[len(s)-4:]) // the section's own CRC_32, checked already
	if last, ok := t.seen[key]; ok && last == crc {
		return
	}
	if len(t.seen) < maxSeenCRCs {
		t.seen[key] = crc
	}
	var ok bool
	switch tid {
	case 0x00:
		ok = t.pat(s)
	case 0x01:
		ok = t.catSection(s)
	case 0x02:
		ok = t.pmt(pid, s)
	case 0x42:
		ok = t.sdtSection(s)
	}
	if !ok {
		t.invalid++
	}
}

func (t *tables) pat(s []byte) bool {
	tsid, progs, ok := psi.ParsePAT(s)
	if !ok {
		return false
	}
	t.havePAT, t.tsid = true, tsid
next:
	for _, p := range progs {
		for i := range t.programs {
			if t.programs[i].Number == p.Number {
				t.programs[i].PID = p.PID
				continue next
			}
		}
		t.programs = append(t.programs, p)
	}
	return true
}

func (t *tables) pmt(pid uint16, s []byte) bool {
	svc, ok := psi.ParsePMT(pid, s)
	if !ok {
		return false
	}
	key := pmtKey{pid, svc.Number}
	if _, known := t.pmts[key]; known || len(t.pmts) < maxPMTs {
		t.pmts[key] = svc
	}
	return true
}

func (t *tables) catSection(s []byte) bool {
	cas, ok := psi.ParseCAT(s)
	if !ok {
		return false
	}
	for _, ca := range cas {
		e := EMM{SystemID: ca.SystemID, SystemName: CASystemName(ca.SystemID), EMMPID: ca.PID}
		if !slices.Contains(t.cat, e) {
			t.cat = append(t.cat, e)
		}
	}
	return true
}

func (t *tables) sdtSection(s []byte) bool {
	sdt, ok := psi.ParseSDT(s)
	if !ok {
		return false
	}
	m := t.sdt[sdt.TransportStreamID]
	if m == nil {
		m = map[uint16]sdtService{}
		t.sdt[sdt.TransportStreamID] = m
	}
	for _, svc := range sdt.Services {
		if svc.Name != nil || svc.Provider != nil {
			m[svc.ID] = sdtService{dvbString(svc.Name), dvbString(svc.Provider)}
		}
	}
	return true
}

// tableNames returns the names of the tables seen on pid, in order of table_id, each once
// ("SDT", "BAT"), or nil when it carried none.
func (t *tables) tableNames(pid uint16) []string {
	set := t.tids[pid]
	if set == nil {
		return nil
	}
	var names []string
	for tid := range 256 {
		if set[tid>>6]&(1<<(tid&63)) != 0 {
			if n := tableName(uint8(tid), pid); !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
	}
	return names
}

// errors counts the damaged sections: those the section reader dropped (bad CRC_32, lengths
// that do not add up) on a PID that carries PSI, and those whole but malformed inside. A PID
// that never yielded a good section, and that no table names as PSI, is left out: its payloads
// only looked like sections now and then.
func (t *tables) errors(psiPIDs map[uint16]bool) int {
	n := t.invalid
	for pid := range psi.MaxPID + 1 {
		st := t.reader.PIDStats(uint16(pid))
		if st.CRCErrors+st.Malformed > 0 && (st.Sections > 0 || psiPIDs[uint16(pid)]) {
			n += st.CRCErrors + st.Malformed
		}
	}
	return n
}

// caList converts CA descriptors for the report, without repeats.
func caList(cas []psi.CA) []CA {
	out := []CA{}
	for _, c := range cas {
		ca := CA{SystemID: c.SystemID, SystemName: CASystemName(c.SystemID), ECMPID: c.PID}
		if !slices.Contains(out, ca) {
			out = append(out, ca)
		}
	}
	return out
}

// fill sets the services, EMMs and PSI error count of rep from the tables.
func (t *tables) fill(rep *Report) {
	rep.Services = []Service{}
	rep.EMM = []EMM{}
	if t.cat != nil {
		rep.EMM = t.cat
	}
	psiPIDs := map[uint16]bool{pidPAT: true, pidCAT: true}
	for pid := uint16(0x10); pid < 0x20; pid++ {
		psiPIDs[pid] = true
	}
	defer func() { rep.PSIErrors = t.errors(psiPIDs) }()
	if !t.havePAT {
		return
	}
	tsid := t.tsid
	rep.TransportStreamID = &tsid
	// The SDT of this transport stream (SDT actual) has its transport_stream_id. Muxers that
	// leave the PAT's and the SDT's ids unequal are common enough to fall back on the only
	// SDT actual there is.
	sdt := t.sdt[tsid]
	if sdt == nil && len(t.sdt) == 1 {
		for _, m := range t.sdt {
			sdt = m
		}
	}
	for _, prog := range t.programs {
		if prog.Number == 0 { // program 0 gives the network PID
			nit := prog.PID
			rep.NITPID = &nit
			psiPIDs[nit] = true
			continue
		}
		psiPIDs[prog.PID] = true
		s := Service{Number: prog.Number, PMTPID: prog.PID, CA: []CA{}, Streams: []Stream{}}
		if e, ok := sdt[s.Number]; ok {
			s.Name, s.Provider = e.name, e.provider
		}
		if pmt, ok := t.pmts[pmtKey{prog.PID, prog.Number}]; ok {
			s.PMTSeen = true
			pcr := pmt.PCRPID
			s.PCRPID = &pcr
			s.CA = caList(pmt.CA)
			if m, ok := pmt.ScramblingMode(); ok {
				s.Scrambling = &Scrambling{Mode: uint8(m), Name: m.String()}
			}
			for _, es := range pmt.Streams {
				s.Streams = append(s.Streams, Stream{
					PID:        es.PID,
					StreamType: es.Type,
					TypeName:   typeName(es.Type, es.Descriptors, pmt.Descriptors),
					CA:         caList(es.CA),
				})
			}
		}
		rep.Services = append(rep.Services, s)
	}
}

// unboundPMTs returns, by PID, the program numbers of the PMTs read on PIDs that no PAT entry
// gives for that program: PMTs of a stream without a PAT, or of programs it left.
func (t *tables) unboundPMTs() map[uint16][]uint16 {
	bound := map[pmtKey]bool{}
	for _, p := range t.programs {
		bound[pmtKey{p.PID, p.Number}] = true
	}
	out := map[uint16][]uint16{}
	for k := range t.pmts {
		if !bound[k] {
			out[k.pid] = append(out[k.pid], k.program)
		}
	}
	for _, ns := range out {
		slices.Sort(ns)
	}
	return out
}

// joinTables joins table names for a description: "SDT/BAT".
func joinTables(names []string) string { return strings.Join(names, "/") }
