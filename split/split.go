// Package split cuts a multiplex into single-program transport streams, one per service, as a
// player, a recorder or a multicast group of one service wants them: each output has a PAT of
// its one program, the service's PMT, the PIDs the PMT names (its elementary streams, its PCR
// PID, its ECM PIDs), the PIDs every receiver may need (CAT and its EMM PIDs, NIT, TDT/TOT),
// the SDT cut down to the service and the EIT sections of the service alone.
//
// The packets of the PIDs a service keeps go out as they came, continuity counters and all;
// the tables the splitter writes (PAT, SDT) carry continuity counters of their own and a
// version_number that changes when, and only when, what they say changes, so that a player
// reads them again then (ISO/IEC 13818-1 2.4.4.5; ETSI EN 300 468 5.1.3). An output begins with
// its first PAT: a service the stream did not describe yet (a capture that starts before its
// tables, a service added to the multiplex) starts at the first PAT after its PMT PID is known.
package split

import (
	"io"
	"slices"

	"github.com/tsdescramble/tsdescramble/psi"
	"github.com/tsdescramble/tsdescramble/ts"
)

// PIDs of the DVB tables the outputs share or get cut down (ETSI EN 300 468 5.1.3).
const (
	catPID = 0x0001
	nitPID = 0x0010
	sdtPID = 0x0011
	eitPID = 0x0012
	tdtPID = 0x0014 // TDT and TOT
)

// Stats counts what went to one output.
type Stats struct {
	Packets     int64 `json:"packets"`      // packets written, tables included
	PATs        int64 `json:"pat_sections"` // PAT sections written
	SDTs        int64 `json:"sdt_sections"` // SDT sections written
	EITs        int64 `json:"eit_sections"` // EIT sections written
	TableChange int64 `json:"table_versions"`
}

// output is one service's stream.
type output struct {
	service uint16
	w       io.Writer
	buf     []byte // packets of the current Write, written at its end
	started bool   // its first PAT has gone out
	err     error  // the first error of w; the output takes nothing after it

	pmtPID     uint16
	pat        []byte // the last PAT section written, to tell a change
	patVersion uint8
	sdt        []byte // the last SDT section written, to tell a change
	sdtVersion uint8
	cc         map[uint16]uint8 // continuity counters of the PIDs whose packets the splitter writes
	st         Stats
}

// Splitter writes each service's packets to the output of that service. It is an io.Writer
// of whole 188-byte packets (a cut packet is kept for the next Write); it is not safe for
// concurrent use.
type Splitter struct {
	outs    []*output
	tracker *psi.Tracker
	gen     uint64
	route   [psi.MaxPID + 1][]*output // the outputs each PID goes to, as the tables say
	shared  []*output                 // outputs that have started: they take the shared PIDs
	tables  *psi.SectionReader        // sections of PID 0, the SDT and the EIT
	emms    []uint16                  // EMM PIDs of the CAT
	pend    []byte
}

// New returns a Splitter that writes service n's stream to outs[n]. The writers get one Write
// per output per Write of the Splitter, of whole packets.
func New(outs map[uint16]io.Writer) *Splitter {
	s := &Splitter{tracker: psi.NewTracker(), tables: psi.NewSectionReader()}
	for _, n := range slices.Sorted(mapKeys(outs)) {
		s.outs = append(s.outs, &output{service: n, w: outs[n], cc: map[uint16]uint8{}})
	}
	return s
}

func mapKeys(m map[uint16]io.Writer) func(func(uint16) bool) {
	return func(yield func(uint16) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// Stats returns what went to each output, by service number.
func (s *Splitter) Stats() map[uint16]Stats {
	m := make(map[uint16]Stats, len(s.outs))
	for _, o := range s.outs {
		m[o.service] = o.st
	}
	return m
}

// Write splits whole packets of p; the bytes of a packet cut at its end wait for the next Write.
// It returns the first error of an output's writer, after every output has had its packets.
func (s *Splitter) Write(p []byte) (int, error) {
	n := len(p)
	if len(s.pend) > 0 {
		k := min(ts.PacketSize-len(s.pend), len(p))
		s.pend = append(s.pend, p[:k]...)
		p = p[k:]
		if len(s.pend) < ts.PacketSize {
			return n, nil
		}
		s.packet(s.pend)
		s.pend = s.pend[:0]
	}
	for ; len(p) >= ts.PacketSize; p = p[ts.PacketSize:] {
		s.packet(p[:ts.PacketSize])
	}
	s.pend = append(s.pend, p...)
	return n, s.flush()
}

// Flush flushes each output's writer that buffers (a network output's partial datagram), so
// that a run's latency bound holds through the splitter.
func (s *Splitter) Flush() error {
	var first error
	for _, o := range s.outs {
		if f, ok := o.w.(interface{ Flush() error }); ok && o.err == nil {
			if err := f.Flush(); err != nil {
				o.err = err
				if first == nil {
					first = err
				}
			}
		}
	}
	return first
}

// flush writes what each output gathered.
func (s *Splitter) flush() error {
	var first error
	for _, o := range s.outs {
		if len(o.buf) == 0 {
			continue
		}
		if o.err == nil {
			_, o.err = o.w.Write(o.buf)
		}
		o.buf = o.buf[:0]
		if o.err != nil && first == nil {
			first = o.err
		}
	}
	return first
}

// packet routes one packet.
func (s *Splitter) packet(p []byte) {
	if p[0] != ts.SyncByte {
		return
	}
	pid := ts.PID(p)
	s.tracker.Feed(p)
	if g := s.tracker.Generation(); g != s.gen {
		s.gen = g
		s.reroute()
	}
	switch pid {
	case psi.PATPID, sdtPID, eitPID, catPID:
		// Read for what the outputs get instead (PAT, SDT, EIT) or for the EMM PIDs (CAT).
		s.tables.Feed(p, s.section)
		if pid != catPID {
			return
		}
	}
	switch pid {
	case catPID, nitPID, tdtPID:
		for _, o := range s.shared {
			o.put(p)
		}
		return
	}
	for _, o := range s.route[pid] {
		if o.started {
			o.put(p)
		}
	}
}

// put appends a packet to the output.
func (o *output) put(p []byte) {
	o.buf = append(o.buf, p...)
	o.st.Packets++
}

// reroute builds the PID routes from the tables in force.
func (s *Splitter) reroute() {
	for pid := range s.route {
		s.route[pid] = s.route[pid][:0]
	}
	add := func(pid uint16, o *output) {
		if pid < 0x20 || pid >= ts.NullPID || slices.Contains(s.route[pid], o) {
			return // the reserved PIDs are the splitter's to write or share
		}
		s.route[pid] = append(s.route[pid], o)
	}
	services := s.tracker.Services()
	for _, o := range s.outs {
		i := slices.IndexFunc(services, func(v psi.Service) bool { return v.Number == o.service })
		if i < 0 {
			o.pmtPID = 0
			continue
		}
		v := services[i]
		o.pmtPID = v.PMTPID
		add(v.PMTPID, o)
		if v.PMTSeen && v.PCRPID != ts.NullPID {
			add(v.PCRPID, o)
		}
		for _, ca := range v.CA {
			add(ca.PID, o)
		}
		for _, es := range v.Streams {
			add(es.PID, o)
			for _, ca := range es.CA {
				add(ca.PID, o)
			}
		}
		for _, emm := range s.emms {
			add(emm, o)
		}
	}
}

// section handles a table the outputs get rewritten: the PAT of each, the SDT cut down to each
// service, the EIT of each service; and the CAT, for its EMM PIDs.
func (s *Splitter) section(pid uint16, sec []byte) {
	switch {
	case pid == psi.PATPID && sec[0] == 0x00:
		// Once per PAT: at its first section, whatever the number of sections.
		if sec[6] == 0 {
			s.writePATs(sec)
		}
	case pid == catPID && sec[0] == 0x01:
		cas, ok := psi.ParseCAT(sec)
		if !ok {
			return
		}
		var emms []uint16
		for _, ca := range cas {
			emms = append(emms, ca.PID)
		}
		if !slices.Equal(emms, s.emms) {
			s.emms = emms
			s.reroute()
		}
	case pid == sdtPID && sec[0] == 0x42:
		s.writeSDTs(sec)
	case pid == eitPID && (sec[0] == 0x4E || sec[0] >= 0x50 && sec[0] <= 0x5F):
		// This transport stream's present/following and schedule sections, by service_id.
		id := be16(sec[3:])
		for _, o := range s.outs {
			if o.started && o.service == id {
				o.writeSection(eitPID, sec)
				o.st.EITs++
			}
		}
	}
}

// writePATs writes each output's PAT, of its one program, when the input's PAT comes. An output
// whose service the PAT does not carry gets none; its stream pauses until it is back.
func (s *Splitter) writePATs(sec []byte) {
	tsid := be16(sec[3:])
	var pat [16]byte
	for _, o := range s.outs {
		if o.pmtPID == 0 {
			continue
		}
		if !o.started {
			o.started = true
			s.shared = append(s.shared, o)
		}
		// table_id, section_syntax_indicator 1 and section_length 13, tsid, version,
		// section 0 of 0, one program, CRC_32 (ISO/IEC 13818-1 2.4.4.3).
		b := append(pat[:0], 0x00, 0xB0, 13, byte(tsid>>8), byte(tsid), 0xC1, 0, 0,
			byte(o.service>>8), byte(o.service), 0xE0|byte(o.pmtPID>>8), byte(o.pmtPID))
		o.pat = o.writeTable(psi.PATPID, b, o.pat, &o.patVersion)
		o.st.PATs++
	}
}

func be16(b []byte) uint16 { return uint16(b[0])<<8 | uint16(b[1]) }

// writeSDTs writes each started output's SDT: the header and original_network_id of the input's
// section with the loop entry of the output's service alone. A section without that entry
// gives the output nothing: the entry is in another section of the table.
func (s *Splitter) writeSDTs(sec []byte) {
	if len(sec) < 11+4 {
		return
	}
	loop := sec[11 : len(sec)-4]
	for _, o := range s.outs {
		if !o.started {
			continue
		}
		for d := loop; len(d) >= 5; {
			n := 5 + int(be16(d[3:])&0x0FFF)
			if n > len(d) {
				break
			}
			if be16(d) == o.service {
				o.writeSDT(sec[:11], d[:n])
				break
			}
			d = d[n:]
		}
	}
}

// writeSDT writes the SDT of o: header (table_id to original_network_id and reserved byte)
// and one service entry.
func (o *output) writeSDT(header, entry []byte) {
	b := make([]byte, 0, len(header)+len(entry)+4)
	b = append(b, header...)
	b = append(b, entry...)
	length := len(b) - 3 + 4
	b[1], b[2] = b[1]&0xF0|byte(length>>8)&0x0F, byte(length)
	b[6], b[7] = 0, 0 // section 0 of 0
	o.sdt = o.writeTable(sdtPID, b, o.sdt, &o.sdtVersion)
	o.st.SDTs++
}

// writeTable writes the one section of a table the splitter makes, b without its CRC_32, with
// the output's own version_number: the one of the last section written (last), moved on when
// the section says something else. It returns the section written, to compare the next one
// with. The input's version cannot serve: it changes with every service's part of the table.
func (o *output) writeTable(pid uint16, b, last []byte, version *uint8) []byte {
	if last != nil {
		b[5] = last[5]
		if !slices.Equal(b, last[:len(last)-4]) {
			*version = (*version + 1) & 0x1F
			o.st.TableChange++
		}
	}
	b[5] = b[5]&0xC1 | *version<<1
	crc := psi.CRC32(b)
	b = append(b, byte(crc>>24), byte(crc>>16), byte(crc>>8), byte(crc))
	o.writeSection(pid, b)
	return append(last[:0], b...)
}

// writeSection packetizes a section on pid: pointer_field 0 in the first packet, the rest of the
// last packet stuffed with 0xFF (ISO/IEC 13818-1 2.4.4.1), continuity counters of o's own.
func (o *output) writeSection(pid uint16, sec []byte) {
	first := true
	for len(sec) > 0 || first {
		var p [ts.PacketSize]byte
		p[0], p[1], p[2] = ts.SyncByte, byte(pid>>8)&0x1F, byte(pid)
		cc := o.cc[pid]
		o.cc[pid] = (cc + 1) & 0x0F
		p[3] = 0x10 | cc // payload only
		payload := p[4:]
		if first {
			p[1] |= 0x40 // payload_unit_start_indicator
			payload[0] = 0
			payload = payload[1:]
			first = false
		}
		n := copy(payload, sec)
		for i := n; i < len(payload); i++ {
			payload[i] = 0xFF
		}
		sec = sec[n:]
		o.put(p[:])
	}
}

// Add starts writing service n's stream to w, from the input's next PAT after the service's
// PMT PID is known, as an output given to New does: a player of w gets the tables first. It is
// for a service added while the stream runs; it must not be called during a Write, and n must
// not have an output already.
func (s *Splitter) Add(n uint16, w io.Writer) {
	o := &output{service: n, w: w, cc: map[uint16]uint8{}}
	i, _ := slices.BinarySearchFunc(s.outs, n, func(o *output, n uint16) int { return int(o.service) - int(n) })
	s.outs = slices.Insert(s.outs, i, o)
	s.reroute()
}

// Remove stops writing service n's stream and returns what went to it. Between two Writes
// every packet routed to the output has been written to it, so its stream ends at a packet
// boundary; a packet cut at the end of the last Write is not the service's yet.
func (s *Splitter) Remove(n uint16) Stats {
	o := s.find(n)
	if o == nil {
		return Stats{}
	}
	s.outs = slices.DeleteFunc(s.outs, func(x *output) bool { return x == o })
	s.shared = slices.DeleteFunc(s.shared, func(x *output) bool { return x == o })
	s.reroute()
	return o.st
}

// Restart writes service n's stream to w from the input's next PAT on, as Add does, and
// returns what went to its former writer. The tables the splitter writes keep their continuity
// counters and versions: a service whose writer changes but whose destination does not (other
// keys, the same file) reads on as one stream to a player.
func (s *Splitter) Restart(n uint16, w io.Writer) Stats {
	o := s.find(n)
	if o == nil {
		s.Add(n, w)
		return Stats{}
	}
	st := o.st
	o.w, o.err, o.st, o.started = w, nil, Stats{}, false
	s.shared = slices.DeleteFunc(s.shared, func(x *output) bool { return x == o })
	return st
}

func (s *Splitter) find(n uint16) *output {
	for _, o := range s.outs {
		if o.service == n {
			return o
		}
	}
	return nil
}
