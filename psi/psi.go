// Package psi reads the program-specific and service information of an MPEG transport
// stream, the PAT, PMT, CAT and SDT sections, CRC-checked, and follows the program association
// table (PAT, PID 0) and the program map tables (PMT) it points to, to tell which PIDs make up
// each service and which conditional-access systems protect them (ISO/IEC 13818-1, 2.4.4;
// ETSI EN 300 468).
//
// A Tracker is fed the stream's 188-byte packets by the caller, who does the framing (192- and
// 204-byte packets are cut down to their 188-byte TS packet first) and may hand it every packet
// or only those for which Wants is true. It reads the PSI sections itself rather than through
// github.com/asticode/go-astits: the PAT and PMT syntax is short; astits allocates for every
// packet (a Packet and a copy of its payload) where the Tracker allocates only when a table
// changes; astits pulls packets from an io.Reader and, when the reader runs dry, flushes the
// sections it is still gathering, so feeding it packet by packet would take a blocking pipe
// and a goroutine beside the hot path, where a Tracker is a plain call; and its 192/204-byte
// handling is wrong, so framing stays with the caller anyway.
//
// Every section is checked before use: its CRC_32 (Annex A: polynomial 0x04C11DB7), its lengths
// (section_length at most 1021 for PAT and PMT, every loop inside the section), and the
// continuity of the packets it spans. A damaged section is counted in Stats and ignored, leaving
// the tables read before it in force; damaged input never makes the Tracker panic.
//
// Beside the Tracker: a SectionReader gathers the sections of every PID that carries them,
// whatever the PAT says and whatever order the tables come in, for readers of whole streams
// (probe); ParsePAT, ParsePMT, ParseCAT and ParseSDT read single sections; Carriage tells from
// a stream_type and its descriptors whether a PID carries PES packets or sections; and
// SectionStartOK checks the section that starts in a packet, to tell a descrambled PSI payload
// from a wrongly descrambled one.
package psi

import (
	"slices"

	"github.com/tsdescramble/tsdescramble/ts"
)

// PacketSize is the size of the TS packets a Tracker is fed.
const PacketSize = ts.PacketSize

// Well-known PIDs and table identifiers (ISO/IEC 13818-1 Tables 2-3 and 2-31).
const (
	PATPID  = 0x0000     // program_association_section
	NullPID = ts.NullPID // null packets; also the PCR_PID of a service without PCR

	tableIDPAT = 0x00
	tableIDPMT = 0x02
	tableIDEnd = 0xFF // stuffing after the last section of a packet

	tagCA = 0x09 // CA_descriptor (2.6.16)

	// maxSection is the largest PAT or PMT section: 3 header bytes and a section_length of at
	// most 1021 (2.4.4.3, 2.4.4.8).
	maxSection = 3 + 1021
)

// CA is a CA_descriptor (2.6.16): a conditional-access system and the PID of its ECMs.
type CA struct {
	SystemID uint16 // CA_system_ID (0x0B00 Conax, 0x0500 Viaccess, 0x2600 BISS, ...)
	PID      uint16 // CA_PID: in a PMT, the PID of the ECMs
	Private  []byte // private_data_bytes, nil when there are none
}

// Stream is an elementary stream of a service, from the PMT's ES loop.
type Stream struct {
	PID  uint16 // elementary_PID
	Type uint8  // stream_type (Table 2-34): 0x02 MPEG-2 video, 0x1B AVC, 0x03/0x04 MPEG audio, 0x06 PES private data, ...
	CA   []CA   // CA descriptors of this stream alone

	// Descriptors is the stream's ES_info descriptor loop as the PMT carries it (tag, length,
	// body, ...), nil when empty: the registration, language and DVB descriptors that say
	// what a stream_type leaves open. It is a copy, valid after the Tracker moves on.
	Descriptors []byte
}

// Service is a program of the PAT with, once its PMT has been read, its streams.
type Service struct {
	Number  uint16   // program_number, the service ID of DVB
	PMTPID  uint16   // the PID of its PMT, from the PAT
	PMTSeen bool     // whether the PMT has been read; the fields below are empty until then
	Version uint8    // version_number of the PMT
	PCRPID  uint16   // PCR_PID; NullPID for a service without PCR
	CA      []CA     // CA descriptors of the program (they apply to all its streams)
	Streams []Stream // in PMT order

	// Descriptors is the PMT's program_info descriptor loop (CA descriptors included), nil when
	// empty; a copy, like Stream.Descriptors.
	Descriptors []byte
}

// Stats counts what a Tracker (PAT and PMT sections only) or a SectionReader has read.
type Stats struct {
	Sections        int // sections read whole, with a good CRC_32 where they carry one
	CRCErrors       int // sections dropped for a bad CRC_32
	Malformed       int // sections or packets dropped because their lengths do not add up
	Discontinuities int // sections lost to a gap in the continuity counter or a transport error
}

// Tracker reads the PAT and PMTs from the packets it is fed. It is not safe for concurrent use:
// one goroutine feeds it and asks it questions, or the caller adds a lock.
type Tracker struct {
	pmtPIDs [(NullPID + 1) / 64]uint64 // bit set of the PMT PIDs of the PAT in force
	asm     map[uint16]*assembler      // section assembly of PID 0 and each PMT PID

	// The PAT being gathered: one entry per section_number, nil until that section is seen.
	patVersion int // -1 before the first PAT section
	patSecs    []*patSection

	tsid     uint16
	havePAT  bool
	netPID   uint16 // the network PID of the PAT's program 0; valid when hasNet
	hasNet   bool
	services map[uint16]*service // by program_number, from the PAT in force

	generation uint64
	stats      Stats

	// early holds, before the first PAT, the latest PMT section seen on each PID (at most
	// maxEarlyPMTs): a capture that starts between a PMT and the PAT has its PMTs read when
	// the PAT comes, not a repetition later. Gone once a PAT is in force.
	early map[uint16][]byte

	carriage [MaxPID + 1]Carriage // by PID, from the tables in force; see indexCarriage
}

type patSection struct {
	crc   uint32
	progs []program
}

type program struct{ number, pmtPID uint16 }

type service struct {
	Service
	crc    uint32 // CRC_32 of the PMT section in force, to skip its repetitions cheaply
	bad    bool   // badCRC is that of a PMT section found malformed
	badCRC uint32 // so that its repetitions are not parsed again either
}

// NewTracker returns a Tracker that has seen no table yet.
func NewTracker() *Tracker {
	return &Tracker{asm: make(map[uint16]*assembler), patVersion: -1, services: make(map[uint16]*service)}
}

// IsPMTPID reports whether pid carries the PMT of a program of the PAT in force.
func (t *Tracker) IsPMTPID(pid uint16) bool {
	return pid < NullPID && t.pmtPIDs[pid>>6]&(1<<(pid&63)) != 0
}

// Wants reports whether pid carries the tables the Tracker reads: the PAT and the PMTs of the
// PAT in force.
func (t *Tracker) Wants(pid uint16) bool { return pid == PATPID || t.IsPMTPID(pid) }

// Reads reports whether Feed reads packets of pid: those Wants names and, before the first PAT,
// those of every PID that may carry a PMT, which are kept until the PAT says which are PMTs.
// A caller that feeds the Tracker only what it reads calls Reads; Wants tells the PSI PIDs
// from the others.
func (t *Tracker) Reads(pid uint16) bool {
	return t.Wants(pid) || !t.havePAT && pid >= minPMTPID && pid < NullPID
}

// minPMTPID is the lowest PID that may carry a PMT: those below are reserved for the tables
// of ISO/IEC 13818-1 Table 2-3 and ETSI EN 300 468 (CAT, NIT, SDT, ...), and the PAT names no
// PMT on them in practice.
const minPMTPID = 0x0020

// maxEarlyPMTs bounds the PIDs whose PMT sections are kept before the first PAT.
const maxEarlyPMTs = 64

// Generation returns a number that grows each time the PAT or a PMT changes, so the caller can
// tell cheaply whether the PID sets it derived are still current.
func (t *Tracker) Generation() uint64 { return t.generation }

// Stats returns the counts of sections read and dropped.
func (t *Tracker) Stats() Stats { return t.stats }

// TransportStreamID returns the transport_stream_id of the PAT in force, and whether a PAT has
// been read.
func (t *Tracker) TransportStreamID() (uint16, bool) { return t.tsid, t.havePAT }

// AllPMTsRead reports whether a PAT has been read and the PMT of each of its services: until
// then a PID's service may still be named.
func (t *Tracker) AllPMTsRead() bool {
	if !t.havePAT {
		return false
	}
	for _, s := range t.Services() {
		if !s.PMTSeen {
			return false
		}
	}
	return true
}

// NetworkPID returns the network PID that the PAT in force gives as program 0, the PID of the
// NIT (0x0010 in DVB), and whether it gives one.
func (t *Tracker) NetworkPID() (uint16, bool) { return t.netPID, t.hasNet }

// Feed reads one TS packet from the first PacketSize bytes of pkt, which it does not retain.
// Packets of PIDs other than the PAT's and the PMTs' are ignored, as are packets that are too
// short, out of sync, flagged with a transport error or scrambled. Feed allocates only when a
// table changes (and the first time it reads a PMT PID).
func (t *Tracker) Feed(pkt []byte) {
	if len(pkt) < PacketSize || pkt[0] != 0x47 {
		return
	}
	pkt = pkt[:PacketSize]
	pid := uint16(pkt[1]&0x1F)<<8 | uint16(pkt[2])
	if !t.Reads(pid) {
		return
	}
	a := t.asm[pid]
	if a == nil {
		if !t.Wants(pid) && (!startsPMT(pkt) || len(t.asm) > maxEarlyPMTs) {
			// Before the first PAT, a PID is read only from a packet that starts a
			// PMT section, and only so many: not every PES stream is assembled as
			// sections. The PAT and the PMTs it names are always read.
			return
		}
		a = newAssembler(maxSection)
		t.asm[pid] = a
	}
	a.packet(pkt, &t.stats, func(s []byte) { t.section(pid, s) })
}

// startsPMT reports whether a clear packet starts a section whose table_id is a PMT's.
func startsPMT(pkt []byte) bool {
	if pkt[1]&0x40 == 0 || pkt[3]&0xC0 != 0 {
		return false // no section starts here, or scrambled
	}
	p, ok := packetPayload(pkt)
	return ok && len(p) > 1 && int(p[0])+1 < len(p) && p[p[0]+1] == tableIDPMT
}

// section reads a complete section of pid.
func (t *Tracker) section(pid uint16, s []byte) {
	var isPAT bool
	switch {
	case pid == PATPID && s[0] == tableIDPAT:
		isPAT = true
	case pid != PATPID && s[0] == tableIDPMT:
	default:
		return // another table sharing the PID, or stuffing: none of ours
	}
	// section_syntax_indicator 1, and room for the header fields and the CRC_32.
	if s[1]&0x80 == 0 || len(s) < 12 {
		t.stats.Malformed++
		return
	}
	if CRC32(s) != 0 {
		t.stats.CRCErrors++
		return
	}
	t.stats.Sections++
	if s[5]&1 == 0 { // current_next_indicator 0: a table not yet in force
		return
	}
	switch {
	case isPAT:
		t.pat(s)
	case !t.havePAT:
		if t.early == nil {
			t.early = make(map[uint16][]byte)
		}
		t.early[pid] = append(t.early[pid][:0], s...)
	default:
		t.pmt(pid, s)
	}
}

func be16(b []byte) uint16 { return uint16(b[0])<<8 | uint16(b[1]) }

func be32(b []byte) uint32 {
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}

// pat reads a program_association_section (2.4.4.3).
func (t *Tracker) pat(s []byte) {
	version := int(s[5] >> 1 & 0x1F)
	sn, last := int(s[6]), int(s[7])
	crc := be32(s[len(s)-4:])
	body := s[8 : len(s)-4]
	if sn > last || len(body)%4 != 0 {
		t.stats.Malformed++
		return
	}
	if version == t.patVersion && len(t.patSecs) == last+1 && t.patSecs[sn] != nil && t.patSecs[sn].crc == crc {
		return // a repetition of a section already read
	}
	if version != t.patVersion || len(t.patSecs) != last+1 {
		t.patVersion = version
		t.patSecs = make([]*patSection, last+1)
	}
	sec := &patSection{crc: crc, progs: make([]program, 0, len(body)/4)}
	for i := 0; i < len(body); i += 4 {
		sec.progs = append(sec.progs, program{number: be16(body[i:]), pmtPID: be16(body[i+2:]) & 0x1FFF})
	}
	t.patSecs[sn] = sec
	for _, ps := range t.patSecs {
		if ps == nil {
			return // wait for the other sections of this version
		}
	}
	t.applyPAT(be16(s[3:]))
}

// applyPAT puts the gathered PAT in force: services that left it or moved their PMT are
// forgotten, new ones await their PMT.
func (t *Tracker) applyPAT(tsid uint16) {
	progs := make(map[uint16]uint16)
	t.hasNet = false
	for _, ps := range t.patSecs {
		for _, p := range ps.progs {
			if p.number == 0 && !t.hasNet {
				t.netPID, t.hasNet = p.pmtPID, true
			}
			// program_number 0 gives the network PID (NIT), not a PMT; PMT PIDs 0 and 0x1FFF
			// would clash with the PAT and null packets.
			if p.number != 0 && p.pmtPID != PATPID && p.pmtPID != NullPID {
				progs[p.number] = p.pmtPID
			}
		}
	}
	for n, s := range t.services {
		if pid, ok := progs[n]; !ok || pid != s.PMTPID {
			delete(t.services, n)
		}
	}
	clear(t.pmtPIDs[:])
	for n, pid := range progs {
		if t.services[n] == nil {
			t.services[n] = &service{Service: Service{Number: n, PMTPID: pid}}
		}
		t.pmtPIDs[pid>>6] |= 1 << (pid & 63)
	}
	t.tsid, t.havePAT = tsid, true
	for pid := range t.asm {
		if !t.Wants(pid) {
			delete(t.asm, pid)
		}
	}
	t.generation++
	t.indexCarriage()
	// The PMTs that came before the first PAT, on the PIDs it names.
	for pid, s := range t.early {
		if t.IsPMTPID(pid) {
			t.pmt(pid, s)
		}
	}
	t.early = nil
}

// pmt reads a TS_program_map_section (2.4.4.8) that arrived on pid.
func (t *Tracker) pmt(pid uint16, s []byte) {
	number := be16(s[3:])
	svc := t.services[number]
	if svc == nil || svc.PMTPID != pid {
		return // not a program the PAT puts on this PID
	}
	crc := be32(s[len(s)-4:])
	if svc.PMTSeen && svc.crc == crc {
		return
	}
	if svc.bad && svc.badCRC == crc {
		t.stats.Malformed++
		return
	}
	if !svc.readPMT(pid, s) {
		t.stats.Malformed++
		svc.bad, svc.badCRC = true, crc
		return
	}
	svc.crc, svc.bad = crc, false
	t.generation++
	t.indexCarriage()
}

// readPMT parses the PMT section s into svc.Service, which is left alone if the
// section's lengths do not add up (the result is then false).
func (svc *service) readPMT(pid uint16, s []byte) bool {
	number := svc.Number
	// section_number and last_section_number are 0 in a PMT; 4 more header bytes follow.
	if s[6] != 0 || s[7] != 0 || len(s) < 16 {
		return false
	}
	end := len(s) - 4
	next := Service{Number: number, PMTPID: pid, PMTSeen: true, Version: s[5] >> 1 & 0x1F, PCRPID: be16(s[8:]) & 0x1FFF}
	// One copy of the section serves every descriptor loop: a single allocation per PMT
	// change, and the loops stay valid after the assembler's buffer is reused. Each loop is
	// cut with its capacity so that appending to one cannot overwrite the next.
	raw := slices.Clone(s)
	loop := func(from, to int) []byte {
		if from == to {
			return nil
		}
		return raw[from:to:to]
	}
	p := 12
	info := int(be16(s[10:]) & 0x0FFF)
	var ok bool
	if p+info > end {
		return false
	}
	if next.CA, ok = caDescriptors(s[p : p+info]); !ok {
		return false
	}
	next.Descriptors = loop(p, p+info)
	p += info
	for p < end {
		if p+5 > end {
			return false
		}
		st := Stream{Type: s[p], PID: be16(s[p+1:]) & 0x1FFF}
		info := int(be16(s[p+3:]) & 0x0FFF)
		p += 5
		if p+info > end {
			return false
		}
		if st.CA, ok = caDescriptors(s[p : p+info]); !ok {
			return false
		}
		st.Descriptors = loop(p, p+info)
		p += info
		next.Streams = append(next.Streams, st)
	}
	svc.Service = next
	return true
}

// caDescriptors returns the CA descriptors of a descriptor loop, and false if the loop's
// lengths do not add up.
func caDescriptors(d []byte) ([]CA, bool) {
	var cas []CA
	for len(d) > 0 {
		if len(d) < 2 || 2+int(d[1]) > len(d) {
			return nil, false
		}
		tag, body := d[0], d[2:2+int(d[1])]
		d = d[2+int(d[1]):]
		if tag != tagCA || len(body) < 4 {
			continue
		}
		ca := CA{SystemID: be16(body), PID: be16(body[2:]) & 0x1FFF}
		if len(body) > 4 {
			ca.Private = slices.Clone(body[4:])
		}
		cas = append(cas, ca)
	}
	return cas, true
}

// Services returns the programs of the PAT in force, by program number, each with its PMT's
// content once read. The result is a copy the caller may keep and modify.
func (t *Tracker) Services() []Service {
	out := make([]Service, 0, len(t.services))
	for _, s := range t.services {
		out = append(out, s.clone())
	}
	slices.SortFunc(out, func(a, b Service) int { return int(a.Number) - int(b.Number) })
	return out
}

// clone copies a service deeply.
func (s *service) clone() Service {
	c := s.Service
	c.CA = cloneCA(s.CA)
	c.Descriptors = slices.Clone(s.Descriptors)
	if s.Streams != nil {
		c.Streams = make([]Stream, len(s.Streams))
		for i, st := range s.Streams {
			st.CA = cloneCA(st.CA)
			st.Descriptors = slices.Clone(st.Descriptors)
			c.Streams[i] = st
		}
	}
	return c
}

func cloneCA(cas []CA) []CA {
	if cas == nil {
		return nil
	}
	out := make([]CA, len(cas))
	for i, ca := range cas {
		ca.Private = slices.Clone(ca.Private)
		out[i] = ca
	}
	return out
}

// ServicePIDs returns the PIDs of a service, sorted: its PMT PID, its PCR PID (unless NullPID)
// and the PIDs of its elementary streams. The PIDs of its ECMs (CA.PID) are not among them:
// they are never scrambled with the control words. ok is false while the service is not in
// the PAT in force or its PMT has not been read.
func (t *Tracker) ServicePIDs(number uint16) (pids []uint16, ok bool) {
	s := t.services[number]
	if s == nil || !s.PMTSeen {
		return nil, false
	}
	pids = make([]uint16, 0, 2+len(s.Streams))
	pids = append(pids, s.PMTPID)
	if s.PCRPID != NullPID {
		pids = append(pids, s.PCRPID)
	}
	for _, st := range s.Streams {
		pids = append(pids, st.PID)
	}
	slices.Sort(pids)
	return slices.Compact(pids), true
}
