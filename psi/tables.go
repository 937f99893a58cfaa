package psi

import (
	"iter"
	"slices"
)

// Parsers of single sections, for callers that gather sections themselves (a SectionReader)
// rather than follow the tables in force with a Tracker. Each checks the section whole: its
// table_id, the long syntax, section_length against the slice, the CRC_32, and every loop's
// lengths; each refuses a section that is not yet applicable (current_next_indicator 0). The
// results never share memory with the section.

// Program is an entry of a PAT: a program_number and its PID, the PMT's, or for program 0 the
// network PID.
type Program struct {
	Number uint16
	PID    uint16
}

// longSection checks the common header of a long-syntax section with table_id tid and returns
// its body (after last_section_number, before the CRC_32).
func longSection(s []byte, tid byte) (body []byte, ok bool) {
	if len(s) < 3+5+4 || s[0] != tid || s[1]&0x80 == 0 ||
		3+int(be16(s[1:])&0x0FFF) != len(s) || s[5]&1 == 0 || CRC32(s) != 0 {
		return nil, false
	}
	return s[8 : len(s)-4], true
}

// ParsePAT reads a program_association_section (ISO/IEC 13818-1 2.4.4.3): the
// transport_stream_id and the programs of this section, program 0 (the network PID) included.
func ParsePAT(s []byte) (tsid uint16, programs []Program, ok bool) {
	body, ok := longSection(s, tableIDPAT)
	if !ok || len(body)%4 != 0 || s[6] > s[7] {
		return 0, nil, false
	}
	programs = make([]Program, 0, len(body)/4)
	for i := 0; i < len(body); i += 4 {
		programs = append(programs, Program{Number: be16(body[i:]), PID: be16(body[i+2:]) & 0x1FFF})
	}
	return be16(s[3:]), programs, true
}

// ParsePMT reads a TS_program_map_section (2.4.4.8) that came on pid: a Service with
// PMTSeen set, its program_number, version, PCR PID, CA descriptors, descriptor loops and
// streams.
func ParsePMT(pid uint16, s []byte) (Service, bool) {
	if _, ok := longSection(s, tableIDPMT); !ok {
		return Service{}, false
	}
	svc := service{Service: Service{Number: be16(s[3:])}}
	if !svc.readPMT(pid, s) {
		return Service{}, false
	}
	return svc.Service, true
}

// ParseCAT reads a CA_section (2.4.4.6): its CA descriptors, whose PIDs are those of the
// EMMs.
func ParseCAT(s []byte) ([]CA, bool) {
	body, ok := longSection(s, 0x01)
	if !ok {
		return nil, false
	}
	return caDescriptors(body)
}

// SDT is a service_description_section (ETSI EN 300 468 5.2.3).
type SDT struct {
	Actual            bool // table_id 0x42, this transport stream's; false for 0x46, another's
	TransportStreamID uint16
	OriginalNetworkID uint16
	Services          []SDTService
}

// SDTService is a service of an SDT, with what its service_descriptor (tag 0x48) says.
type SDTService struct {
	ID          uint16 // service_id: the program_number of the PAT
	Type        uint8  // service_type (EN 300 468 Table 87), 0 without a service_descriptor
	Provider    []byte // service_provider_name, a DVB string (EN 300 468 Annex A) as sent
	Name        []byte // service_name, likewise
	Descriptors []byte // the service's descriptor loop
}

// ParseSDT reads an SDT section, actual (table_id 0x42) or other (0x46).
func ParseSDT(s []byte) (SDT, bool) {
	if len(s) == 0 || s[0] != 0x42 && s[0] != 0x46 {
		return SDT{}, false
	}
	body, ok := longSection(s, s[0])
	if !ok || len(body) < 3 {
		return SDT{}, false
	}
	sdt := SDT{Actual: s[0] == 0x42, TransportStreamID: be16(s[3:]), OriginalNetworkID: be16(body)}
	for d := body[3:]; len(d) > 0; {
		if len(d) < 5 {
			return SDT{}, false
		}
		n := int(be16(d[3:]) & 0x0FFF)
		if 5+n > len(d) {
			return SDT{}, false
		}
		if !loopOK(d[5 : 5+n]) {
			return SDT{}, false
		}
		svc := SDTService{ID: be16(d), Descriptors: slices.Clone(d[5 : 5+n])}
		for tag, b := range EachDescriptor(svc.Descriptors) {
			// service_type, service_provider_name_length and name, service_name_length and name.
			if tag != 0x48 || len(b) < 2 || 2+int(b[1]) >= len(b) {
				continue
			}
			pn := int(b[1])
			nn := int(b[2+pn])
			if 3+pn+nn > len(b) {
				continue
			}
			svc.Type, svc.Provider, svc.Name = b[0], b[2:2+pn:2+pn], b[3+pn:3+pn+nn:3+pn+nn]
			break
		}
		sdt.Services = append(sdt.Services, svc)
		d = d[5+n:]
	}
	return sdt, true
}

// loopOK reports whether the descriptors of a descriptor loop fill it exactly.
func loopOK(loop []byte) bool {
	for len(loop) > 0 {
		var ok bool
		if _, _, loop, ok = nextDescriptor(loop); !ok {
			return false
		}
	}
	return true
}

// EachDescriptor yields the tag and body of each descriptor of a descriptor loop, in order. It
// stops at the end of the loop or where the lengths stop adding up.
func EachDescriptor(loop []byte) iter.Seq2[uint8, []byte] {
	return func(yield func(uint8, []byte) bool) {
		for {
			tag, body, rest, ok := nextDescriptor(loop)
			if !ok || !yield(tag, body) {
				return
			}
			loop = rest
		}
	}
}

// Registrations returns the format_identifier of each registration_descriptor (tag 0x05,
// ISO/IEC 13818-1 2.6.8) of a descriptor loop, in order: 0x48444D56 for "HDMV", ...
func Registrations(loop []byte) []uint32 {
	var ids []uint32
	for tag, b := range EachDescriptor(loop) {
		if tag == tagRegistration && len(b) >= 4 {
			ids = append(ids, be32(b))
		}
	}
	return ids
}
