package psi

import (
	"maps"
	"slices"
)

// Carriage says what a PID's packets carry: PES packets, PSI/SI-style sections, or another payload (T2-MI, ...).
//
// It tells a consumer how a payload unit starts: a PES packet with the start code prefix
// 00 00 01 (ISO/IEC 13818-1, 2.4.3.6), or a pointer_field and a section (2.4.4).
type Carriage uint8

const (
	CarriageUnknown  Carriage = iota // no PMT lists the PID, or its stream_type does not say
	CarriagePES                      // PES packets: video, audio, PES private data, ...
	CarriageSections                 // sections: PSI, DSM-CC, SCTE 35, ECMs, ...
	CarriageOther                    // neither: T2-MI packets (ETSI TS 102 773), ...
)

// String returns "unknown", "PES", "sections" or "other".
func (c Carriage) String() string {
	switch c {
	case CarriagePES:
		return "PES"
	case CarriageSections:
		return "sections"
	case CarriageOther:
		return "other"
	}
	return "unknown"
}

// Registration format_identifiers (ISO/IEC 13818-1 2.6.8, registered with the SMPTE
// Registration Authority) that change what a stream_type means.
const (
	RegHDMV = 0x48444D56 // "HDMV": Blu-ray (BDAV) streams, whose 0x80-0xA2 types are audio, subtitles, ...
	RegCUEI = 0x43554549 // "CUEI": SCTE 35 splice information (ANSI/SCTE 35 8.1)
)

// Descriptor tags read by Carriage (ISO/IEC 13818-1 Table 2-45, ETSI EN 300 468 Table 12).
const (
	tagRegistration = 0x05 // registration_descriptor (2.6.8)
	tagExtension    = 0x7F // DVB extension_descriptor (EN 300 468 6.2.16)
	extT2MI         = 0x11 // its descriptor_tag_extension for the T2MI_descriptor (EN 300 468 Table 109)
)

// Carriage returns what the stream carries, from its stream_type and its own ES_info
// descriptors (registration, DVB extension descriptors). A registration descriptor in the
// program_info loop, where Blu-ray streams put "HDMV", is not seen here: CarriageOf and
// Tracker.Carriage take that loop into account.
func (s Stream) Carriage() Carriage { return CarriageOf(s.Type, s.Descriptors, nil) }

// CarriageOf returns what an elementary stream carries, from its stream_type, its ES_info
// descriptor loop es and the program_info loop of its PMT (either may be nil). Registration
// descriptors in either loop apply (ISO/IEC 13818-1 2.6.8). It does not allocate.
//
// The stream_type values are those of ISO/IEC 13818-1 Table 2-34; 0x80 and above are user
// private and read by what broadcasters and Blu-ray put there: with an "HDMV" registration,
// 0x80-0x86, 0x87, 0x8A and 0xA1/0xA2 are audio, 0x90-0x92 subtitles and 0xEA VC-1 (all PES);
// without it, 0x86 is SCTE 35 splice information in sections (ANSI/SCTE 35), 0x81 and 0x87
// ATSC AC-3 and E-AC-3 (ATSC A/52), 0xEA VC-1 (SMPTE RP 227) and 0xD1 Dirac, all PES.
func CarriageOf(streamType uint8, es, program []byte) Carriage {
	switch streamType {
	case 0x05, // private_sections
		0x0A, 0x0B, 0x0C, 0x0D, // ISO/IEC 13818-6 types A-D: MPE, U-N messages, stream descriptors, DSM-CC sections
		0x13,       // ISO/IEC 14496-1 SL or FlexMux in ISO/IEC 14496_sections
		0x16,       // metadata in metadata_sections
		0x17, 0x18, // metadata in DSM-CC data and object carousels, which are sections
		0x2C, 0x2F, 0x30: // green, quality and media orchestration access units, in sections
		return CarriageSections
	case 0x06: // PES private data, unless a DVB T2-MI descriptor says it is T2-MI (TS 102 773)
		if hasExtension(es, extT2MI) {
			return CarriageOther
		}
		return CarriagePES
	case 0x01, 0x02, 0x03, 0x04, // MPEG-1/2 video and audio
		0x0F, 0x10, 0x11, 0x12, // AAC (ADTS), MPEG-4 visual, AAC (LATM), SL or FlexMux in PES
		0x15,                   // metadata in PES
		0x1B, 0x1C, 0x1D, 0x1E, // AVC, MPEG-4 audio without transport syntax, timed text, auxiliary video
		0x1F, 0x20, 0x21, 0x22, 0x23, 0x24, 0x25, 0x26, // SVC, MVC, JPEG 2000, 3D views, HEVC, MVCD
		0x27,                   // timeline and external media information (TEMI)
		0x28, 0x29, 0x2A, 0x2B, // HEVC enhancement sub-partitions
		0x2D, 0x2E, // MPEG-H 3D audio
		0x31, 0x32, 0x33, 0x34, 0x35, 0x36, // HEVC tile sets, JPEG XS, VVC, EVC, LCEVC
		0x42: // AVS video (GB/T 20090.2)
		return CarriagePES
	}
	if streamType < 0x80 {
		// 0x07-0x09, 0x0E, 0x14 and 0x19 (synchronized download: sections or PES, 13818-6),
		// 0x1A and 0x7F (IPMP), and the reserved values: nothing this package can rely on.
		return CarriageUnknown
	}
	if hasRegistration(es, RegHDMV) || hasRegistration(program, RegHDMV) {
		switch streamType {
		case 0x80, 0x81, 0x82, 0x83, 0x84, 0x85, 0x86, 0x87, 0x8A, // LPCM, AC-3, DTS, TrueHD, E-AC-3, DTS-HD
			0x90, 0x91, 0x92, // presentation and interactive graphics, text subtitles
			0xA1, 0xA2, // secondary audio
			0xEA: // VC-1
			return CarriagePES
		}
		return CarriageUnknown
	}
	switch streamType {
	case 0x86: // SCTE 35 splice_info_sections, registered "CUEI" or not
		return CarriageSections
	case 0x81, 0x87, // ATSC AC-3 and E-AC-3 (ATSC A/52 Annex G)
		0xD1, // Dirac video (SMPTE 2047-3)
		0xEA: // VC-1 (SMPTE RP 227)
		return CarriagePES
	}
	return CarriageUnknown
}

// Carriage returns what the packets of pid carry according to the PAT and PMTs read so far:
// CarriageSections for the PAT, the network PID, the PMT PIDs and the ECM PIDs of the PMTs'
// CA descriptors;
// for the PID of an elementary stream, what CarriageOf says of it; CarriageUnknown for a PID
// no table read so far names (or whose stream_type does not say). When two services list the
// same PID with different answers, the first known one, in order of program_number, stands.
// It does not allocate: the answers are worked out when a table changes.
func (t *Tracker) Carriage(pid uint16) Carriage {
	if pid > MaxPID {
		return CarriageUnknown
	}
	return t.carriage[pid]
}

// PIDCarriage returns t.Carriage(pid).
func PIDCarriage(t *Tracker, pid uint16) Carriage { return t.Carriage(pid) }

// indexCarriage works out the Carriage of every PID named by the tables in force. It runs
// when a table changes, so that Carriage is an array lookup on the packet path.
func (t *Tracker) indexCarriage() {
	clear(t.carriage[:])
	set := func(pid uint16, c Carriage) {
		// NullPID as a CA_PID or elementary_PID stands for "none" in some muxers.
		if pid < NullPID && t.carriage[pid] == CarriageUnknown {
			t.carriage[pid] = c
		}
	}
	if t.havePAT {
		set(PATPID, CarriageSections)
	}
	if t.hasNet {
		set(t.netPID, CarriageSections)
	}
	// Services in program_number order, so that the outcome of a conflict does not depend on
	// the order of a map's iteration.
	for _, n := range slices.Sorted(maps.Keys(t.services)) {
		next := t.services[n]
		set(next.PMTPID, CarriageSections)
		for _, ca := range next.CA {
			set(ca.PID, CarriageSections)
		}
		for _, st := range next.Streams {
			for _, ca := range st.CA {
				set(ca.PID, CarriageSections)
			}
			set(st.PID, CarriageOf(st.Type, st.Descriptors, next.Descriptors))
		}
	}
}

// nextDescriptor splits the first descriptor off a descriptor loop. ok is false at the end of
// the loop or when its lengths do not add up.
func nextDescriptor(d []byte) (tag byte, body, rest []byte, ok bool) {
	if len(d) < 2 || 2+int(d[1]) > len(d) {
		return 0, nil, nil, false
	}
	return d[0], d[2 : 2+int(d[1])], d[2+int(d[1]):], true
}

// hasRegistration reports whether the descriptor loop d has a registration_descriptor whose
// format_identifier is id.
func hasRegistration(d []byte, id uint32) bool {
	for {
		tag, body, rest, ok := nextDescriptor(d)
		if !ok {
			return false
		}
		if tag == tagRegistration && len(body) >= 4 && be32(body) == id {
			return true
		}
		d = rest
	}
}

// hasExtension reports whether the descriptor loop d has a DVB extension_descriptor with the
// descriptor_tag_extension ext.
func hasExtension(d []byte, ext byte) bool {
	for {
		tag, body, rest, ok := nextDescriptor(d)
		if !ok {
			return false
		}
		if tag == tagExtension && len(body) >= 1 && body[0] == ext {
			return true
		}
		d = rest
	}
}
