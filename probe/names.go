package probe

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/tsdescramble/tsdescramble/psi"
)

// caRange names the CA_system_ID values from First to Last.
type caRange struct {
	First, Last uint16
	Name        string
}

// caSystems names CA_system_ID values. The ranges and the companies they belong to are those of
// the DVB CA_System_ID registry (dvbservices.com/identifiers/ca_system_id, ETSI TS 101 162), as
// mirrored in TSDuck's src/libtsduck/dtv/cas/tsCAS.names [CASystemId]. Where a range is known by
// its product rather than its company (Mediaguard, Videoguard, DRE-Crypt, BISS, Accessgate ...),
// the product comes first: those names follow OSCam's get_cardsystem_desc_by_caid and its
// caid_is_* tests (oscam-string.c, globals.h), which is how the keys and logs users hold name
// them. BISS-1 is 0x2600 and BISS-2 0x2602 (OSCam module-emulator-biss.c); the rest of
// 0x2600-0x26FF is the EBU's. 0x0005 is ARIB's B-CAS in ISDB streams (ARIB STD-B25), where it
// is met; the DVB registry gives it to OMA BCAST. Specific entries come before the ranges
// that contain them: the first match wins.
var caSystems = []caRange{
	{0x0001, 0x0001, "IPDC SPP Open Security Framework"},
	{0x0002, 0x0002, "18Crypt"},
	{0x0004, 0x0004, "OMA DRM"},
	{0x0005, 0x0005, "ARIB B-CAS (ISDB) / OMA BCAST"},
	{0x0006, 0x0006, "OMA BCAST"},
	{0x0007, 0x0007, "Open IPTV Forum"},
	{0x0008, 0x0008, "Open Mobile Alliance"},
	{0x2600, 0x2600, "BISS-1 (EBU)"},
	{0x2602, 0x2602, "BISS-2 (EBU)"},
	{0x2600, 0x26FF, "EBU (BISS)"},
	{0x0100, 0x01FF, "Seca/Mediaguard (Canal+)"},
	{0x0200, 0x02FF, "CCETT"},
	{0x0300, 0x03FF, "Kabel Deutschland"},
	{0x0400, 0x04FF, "Eurodec"},
	{0x0500, 0x05FF, "Viaccess"},
	{0x0600, 0x06FF, "Irdeto"},
	{0x0700, 0x07FF, "Jerrold/GI/Motorola"},
	{0x0800, 0x08FF, "Matra Communication"},
	{0x0900, 0x09FF, "NDS Videoguard"},
	{0x0A00, 0x0AFF, "Nokia"},
	{0x0B00, 0x0BFF, "Conax"},
	{0x0C00, 0x0CFF, "NTL"},
	{0x0D00, 0x0DFF, "Cryptoworks (Irdeto)"},
	{0x0E00, 0x0EFF, "PowerVu (Scientific Atlanta)"},
	{0x0F00, 0x0FFF, "Sony"},
	{0x1000, 0x10FF, "Tandberg Television"},
	{0x1100, 0x11FF, "Thomson"},
	{0x1200, 0x12FF, "TV/Com"},
	{0x1300, 0x13FF, "HPT (Croatian Post and Telecommunications)"},
	{0x1400, 0x14FF, "HRT (Croatian Radio and Television)"},
	{0x1500, 0x15FF, "IBM"},
	{0x1600, 0x16FF, "Nera"},
	{0x1700, 0x17FF, "BetaCrypt/Verimatrix"},
	{0x1800, 0x18FF, "Nagravision"},
	{0x1900, 0x19FF, "Titan Information Systems"},
	{0x1E00, 0x1E07, "Alticast"},
	{0x1EA0, 0x1EA0, "Protac"},
	{0x1EB0, 0x1EB0, "Telecast"},
	{0x1EC0, 0x1EC0, "Cryptoguard"},
	{0x1ED0, 0x1ED1, "MM Comunicaciones"},
	{0x2000, 0x20FF, "Telefonica Servicios Audiovisuales"},
	{0x2100, 0x21FF, "Stentor"},
	{0x2200, 0x22FF, "Harmonic"},
	{0x2300, 0x23FF, "Barco"},
	{0x2400, 0x24FF, "StarGuide Digital Networks"},
	{0x2500, 0x25FF, "Mentor Data System"},
	{0x2700, 0x270F, "PolyCipher"},
	{0x2710, 0x2711, "Extended Secure"},
	{0x2712, 0x2712, "Derincrypt"},
	{0x2713, 0x2714, "Wuhan Tianyu Information Industry"},
	{0x2715, 0x2715, "Network Broadcast"},
	{0x2716, 0x2716, "Bromteck"},
	{0x2717, 0x2718, "Logiways"},
	{0x2719, 0x2719, "S-Curious"},
	{0x27A0, 0x27A4, "ByDesign India"},
	{0x2800, 0x2809, "LCS"},
	{0x2810, 0x2810, "Multikom Deltasat"},
	{0x4347, 0x4347, "Crypton"},
	{0x4700, 0x47FF, "General Instrument (Motorola)"},
	{0x4825, 0x4825, "ChinaEPG"},
	{0x4800, 0x48FF, "Accessgate (Telemann)"},
	{0x4900, 0x49FF, "Cryptoworks China (Irdeto)"},
	{0x4A10, 0x4A1F, "Easycas"},
	{0x4A20, 0x4A2F, "AlphaCrypt"},
	{0x4A30, 0x4A3F, "DVN Holdings"},
	{0x4A40, 0x4A4F, "Shanghai Advanced Digital"},
	{0x4A50, 0x4A5F, "Shenzhen Kingsky"},
	{0x4A60, 0x4A6F, "@Sky/Neotion"},
	{0x4A70, 0x4A7F, "Dreamcrypt"},
	{0x4A80, 0x4A8F, "ThalesCrypt"},
	{0x4A90, 0x4A9F, "Runcom"},
	{0x4AA0, 0x4AAF, "SIDSA"},
	{0x4AB0, 0x4ABF, "Beijing Compunicate"},
	{0x4AC0, 0x4ACF, "Latens Systems"},
	{0x4AD0, 0x4AD1, "XCrypt"},
	{0x4AD2, 0x4AD3, "Beijing Digital Video"},
	{0x4AD4, 0x4AD5, "Widevine"},
	{0x4AD6, 0x4AD7, "SK Telecom"},
	{0x4AD8, 0x4AD9, "Enigma Systems"},
	{0x4ADA, 0x4ADA, "Wyplay"},
	{0x4ADB, 0x4ADB, "Jinan Taixin Electronics"},
	{0x4ADC, 0x4ADC, "SafeAccess (Logiways)"},
	{0x4ADD, 0x4ADD, "ATSC System Renewability Message"},
	{0x4ADE, 0x4ADE, "CerberCrypt"},
	{0x4ADF, 0x4ADF, "Caston"},
	{0x4AE0, 0x4AE1, "DRE-Crypt (Cifra)"},
	{0x4AE2, 0x4AE3, "Microsoft"},
	{0x4AE4, 0x4AE4, "Coretrust"},
	{0x4AE5, 0x4AE5, "IK Satprof"},
	{0x4AE6, 0x4AE6, "SypherMedia International"},
	{0x4AE7, 0x4AE7, "Guangzhou Ewider"},
	{0x4AE8, 0x4AE8, "FG Digital"},
	{0x4AE9, 0x4AE9, "Dreamer-i"},
	{0x4AEA, 0x4AEA, "Cryptoguard"},
	{0x4AEB, 0x4AEB, "Abel DRM Systems"},
	{0x4AEC, 0x4AEC, "FTS DVL"},
	{0x4AED, 0x4AED, "Unitend"},
	{0x4AEE, 0x4AEE, "Bulcrypt (Deltacom)"},
	{0x4AEF, 0x4AEF, "NetUP"},
	{0x4AF0, 0x4AF0, "ABV International"},
	{0x4AF1, 0x4AF2, "China DTV Media"},
	{0x4AF3, 0x4AF3, "Baustem Information"},
	{0x4AF4, 0x4AF4, "Marlin Developer Community"},
	{0x4AF5, 0x4AF5, "SecureMedia"},
	{0x4AF6, 0x4AF6, "Tongfang"},
	{0x4AF7, 0x4AF7, "MSA"},
	{0x4AF8, 0x4AF8, "Griffin"},
	{0x4AF9, 0x4AFA, "Beijing Topreal"},
	{0x4AFB, 0x4AFB, "NST"},
	{0x4AFC, 0x4AFC, "Panaccess"},
	{0x4AFD, 0x4AFD, "Comteza"},
	{0x4B00, 0x4B02, "Tongfang"},
	{0x4B03, 0x4B03, "DuoCrypt"},
	{0x4B04, 0x4B04, "Great Wall"},
	{0x4B05, 0x4B06, "Digicap"},
	{0x4B07, 0x4B07, "Wuhan Reikost"},
	{0x4B08, 0x4B08, "Philips"},
	{0x4B09, 0x4B09, "Ambernetas"},
	{0x4B0A, 0x4B0B, "Beijing Sumavision"},
	{0x4B0C, 0x4B0F, "Sichuan Changhong Electric"},
	{0x4B10, 0x4B10, "Exterity"},
	{0x4B11, 0x4B12, "Advanced Digital Platform"},
	{0x4B13, 0x4B14, "Microsoft"},
	{0x4B19, 0x4B19, "Ridsys"},
	{0x4B20, 0x4B22, "Multikom Deltasat"},
	{0x4B23, 0x4B23, "SkyNLand Video Networks"},
	{0x4B24, 0x4B24, "Prowill"},
	{0x4B25, 0x4B25, "Suresoft Systems"},
	{0x4B26, 0x4B26, "Unitend"},
	{0x4B30, 0x4B31, "Vietnam Multimedia Corporation"},
	{0x4B3A, 0x4B3A, "ipanel"},
	{0x4B3B, 0x4B3B, "Jinggangshan Electric"},
	{0x4B40, 0x4B41, "Excaf Telecom"},
	{0x4B42, 0x4B43, "CI Plus"},
	{0x4B4A, 0x4B4A, "Topwell International"},
	{0x4B4B, 0x4B4D, "ABV International"},
	{0x4B50, 0x4B53, "Safeview India"},
	{0x4B54, 0x4B54, "Telelynx"},
	{0x4B60, 0x4B60, "Kiwisat"},
	{0x5347, 0x5347, "GkWare"},
	{0x5448, 0x5448, "Gospell Digital"},
	{0x5601, 0x5604, "Verimatrix"},
	{0x5605, 0x5606, "Sichuan Jiuzhou Electronic"},
	{0x5607, 0x5608, "Viewscenes"},
	{0x5609, 0x5609, "Power On"},
	{0x56A0, 0x56A0, "Laxmi Remote India"},
	{0x7BE0, 0x7BE1, "DRE-Crypt (OOO)"},
	{0xAA00, 0xAA01, "Best CAS"},
}

// CASystemName returns the name of a CA system from its CA_system_ID (0x0B00: "Conax"), or
// "unknown" for an identifier outside the ranges this package knows.
func CASystemName(id uint16) string {
	for _, r := range caSystems {
		if id >= r.First && id <= r.Last {
			return r.Name
		}
	}
	return "unknown"
}

// streamTypes names the stream_type values of ISO/IEC 13818-1 Table 2-34 and the user-private
// ones that ATSC and SCTE assign (A/52 for AC-3 and E-AC-3, SCTE 35 for splice information),
// which apply when no registration descriptor says otherwise.
var streamTypes = map[uint8]string{
	0x01: "MPEG-1 video",
	0x02: "MPEG-2 video",
	0x03: "MPEG-1 audio",
	0x04: "MPEG-2 audio",
	0x05: "private sections",
	0x06: "private data",
	0x07: "MHEG",
	0x08: "DSM-CC",
	0x09: "H.222.1 type E",
	0x0A: "DSM-CC multiprotocol encapsulation",
	0x0B: "DSM-CC U-N messages",
	0x0C: "DSM-CC stream descriptors",
	0x0D: "DSM-CC sections",
	0x0E: "MPEG-2 auxiliary",
	0x0F: "AAC audio",
	0x10: "MPEG-4 video",
	0x11: "AAC audio (LATM)",
	0x12: "MPEG-4 SL/FlexMux in PES",
	0x13: "MPEG-4 SL/FlexMux in sections",
	0x14: "DSM-CC synchronized download",
	0x15: "metadata",
	0x16: "metadata sections",
	0x17: "metadata in a data carousel",
	0x18: "metadata in an object carousel",
	0x19: "metadata in synchronized download",
	0x1A: "IPMP",
	0x1B: "H.264 video",
	0x1C: "MPEG-4 audio",
	0x1D: "MPEG-4 timed text",
	0x1E: "auxiliary video",
	0x1F: "H.264 SVC video",
	0x20: "H.264 MVC video",
	0x21: "JPEG 2000 video",
	0x22: "MPEG-2 3D view video",
	0x23: "H.264 3D view video",
	0x24: "HEVC video",
	0x25: "HEVC temporal subset video",
	0x26: "H.264 MVCD video",
	0x27: "timeline and external media information",
	0x28: "HEVC enhancement video",
	0x29: "HEVC temporal enhancement video",
	0x2A: "HEVC enhancement video",
	0x2B: "HEVC temporal enhancement video",
	0x2C: "green access units",
	0x2D: "MPEG-H 3D audio",
	0x2E: "MPEG-H 3D audio (auxiliary)",
	0x2F: "quality access units",
	0x30: "media orchestration access units",
	0x31: "HEVC tile set video",
	0x32: "JPEG XS video",
	0x33: "VVC video",
	0x34: "VVC temporal subset video",
	0x35: "EVC video",
	0x36: "LCEVC video",
	0x42: "AVS video",
	0x7F: "IPMP",
	0x80: "DigiCipher II video",
	0x81: "AC-3 audio",
	0x83: "Dolby TrueHD audio",
	0x84: "E-AC-3 audio",
	0x86: "SCTE 35 splice information",
	0x87: "E-AC-3 audio",
	0x91: "A/52b AC-3 audio",
	0xA0: "MSCODEC video",
	0xD1: "Dirac video",
	0xEA: "VC-1 video",
}

// hdmvTypes names the stream types of Blu-ray (BDAV MPEG-2 transport streams), valid after an
// "HDMV" registration descriptor in the program or the stream's loop, whatever the ATSC and
// SCTE meanings of the same values.
var hdmvTypes = map[uint8]string{
	0x80: "LPCM audio",
	0x81: "AC-3 audio",
	0x82: "DTS audio",
	0x83: "Dolby TrueHD audio",
	0x84: "E-AC-3 audio",
	0x85: "DTS-HD High Resolution audio",
	0x86: "DTS-HD Master Audio",
	0x87: "E-AC-3 audio",
	0x8A: "DTS audio",
	0x90: "PGS subtitles",
	0x91: "interactive graphics",
	0x92: "text subtitles",
	0x94: "SDDS audio",
	0xA1: "E-AC-3 secondary audio",
	0xA2: "DTS-HD secondary audio",
	0xEA: "VC-1 video",
}

// StreamTypeName returns a stream_type in words ("H.264 video", "MPEG-1 audio"), as it reads
// without descriptors.
func StreamTypeName(t uint8) string {
	if s, ok := streamTypes[t]; ok {
		return s
	}
	if t >= 0x80 {
		return fmt.Sprintf("user private (0x%02X)", t)
	}
	return fmt.Sprintf("stream type 0x%02X", t)
}

// Descriptor tags that tell what a stream of type 0x06 (PES private data) or a user-private
// type carries, from ETSI EN 300 468 Table 12 and Annex D.
const (
	tagRegistration = 0x05 // ISO/IEC 13818-1 registration_descriptor
	tagCA           = 0x09 // ISO/IEC 13818-1 CA_descriptor
	tagVBIData      = 0x45
	tagVBITeletext  = 0x46
	tagTeletext     = 0x56
	tagSubtitling   = 0x59
	tagAC3          = 0x6A
	tagEAC3         = 0x7A
	tagDTS          = 0x7B
	tagAAC          = 0x7C
	tagExtension    = 0x7F
)

// extensions names what DVB extension descriptors (tag 0x7F) say a stream carries, by
// descriptor_tag_extension (EN 300 468 Table 109).
var extensions = map[uint8]string{
	0x0E: "DTS-HD audio",
	0x11: "T2-MI",
	0x15: "AC-4 audio",
	0x20: "TTML subtitles",
	0x21: "DTS-UHD audio",
}

// registrations names the format_identifier values of registration descriptors (registered with
// the SMPTE Registration Authority, smpte-ra.org/registered-mpeg-ts-ids) that mark common
// private streams.
var registrations = map[string]string{
	"AC-3": "AC-3 audio",
	"EAC3": "E-AC-3 audio",
	"AC-4": "AC-4 audio",
	"DTS1": "DTS audio",
	"DTS2": "DTS audio",
	"DTS3": "DTS audio",
	"BSSD": "SMPTE 302M audio",
	"Opus": "Opus audio",
	"HEVC": "HEVC video",
	"VC-1": "VC-1 video",
	"drac": "Dirac video",
	"AV01": "AV1 video",
	"KLVA": "KLV metadata",
	"ID3 ": "ID3 metadata",
	"CUEI": "SCTE 35 splice information",
}

// typeName names a stream from its type and the descriptors of its ES_info loop es and of its
// PMT's program_info loop prog. The stream type alone decides for the types of ISO/IEC
// 13818-1, except those that leave the coding open (0x05 and 0x06 private sections and data,
// 0x15 metadata) and the user-private types (0x80 and above). For those, in order:
//   - an "HDMV" registration, in either loop, gives the Blu-ray meaning of 0x80-0xA2 and 0xEA
//     (0x86 is then DTS-HD Master Audio, not SCTE 35);
//   - the DVB descriptors of the ES loop (AC-3, E-AC-3, DTS, AAC, subtitling, teletext, VBI,
//     and the extension descriptors for T2-MI, AC-4, DTS-HD, TTML);
//   - a registration descriptor of the ES loop, then one of the program loop;
//   - the stream type's own name.
func typeName(t uint8, es, prog []byte) string {
	if t != 0x05 && t != 0x06 && t != 0x15 && t < 0x80 {
		return StreamTypeName(t)
	}
	esRegs, progRegs := psi.Registrations(es), psi.Registrations(prog)
	if name, ok := hdmvTypes[t]; ok && (hasID(esRegs, psi.RegHDMV) || hasID(progRegs, psi.RegHDMV)) {
		return name
	}
	for tag, b := range psi.EachDescriptor(es) {
		switch tag {
		case tagAC3:
			return "AC-3 audio"
		case tagEAC3:
			return "E-AC-3 audio"
		case tagDTS:
			return "DTS audio"
		case tagAAC:
			return "AAC audio"
		case tagSubtitling:
			return "DVB subtitles"
		case tagTeletext:
			return "teletext"
		case tagVBIData, tagVBITeletext:
			return "VBI data"
		case tagExtension:
			if len(b) > 0 {
				if name, ok := extensions[b[0]]; ok {
					return name
				}
			}
		}
	}
	for _, regs := range [][]uint32{esRegs, progRegs} {
		for _, id := range regs {
			if name, ok := registrations[fourCC(id)]; ok && (fourCC(id) != "CUEI" || t == 0x86) {
				return name
			}
		}
	}
	return StreamTypeName(t)
}

func hasID(ids []uint32, id uint32) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

// fourCC spells a format_identifier as its four characters.
func fourCC(id uint32) string {
	return string([]byte{byte(id >> 24), byte(id >> 16), byte(id >> 8), byte(id)})
}

// tableName names a table by its table_id (ISO/IEC 13818-1 Table 2-31, ETSI EN 300 468
// Table 2, ETSI TS 102 006, EN 301 192, TS 102 809, TS 102 323, ANSI/SCTE 35, ATSC A/65), the
// way probe lists the tables seen on a PID. The ATSC values lie in the range DVB leaves to
// users, so they are named on the ATSC base PID 0x1FFB only.
func tableName(tid uint8, pid uint16) string {
	switch {
	case tid == 0x00:
		return "PAT"
	case tid == 0x01:
		return "CAT"
	case tid == 0x02:
		return "PMT"
	case tid == 0x03:
		return "TSDT"
	case tid == 0x3A:
		return "DSM-CC MPE"
	case tid == 0x3B:
		return "DSM-CC U-N messages"
	case tid == 0x3C:
		return "DSM-CC download data"
	case tid == 0x3D:
		return "DSM-CC stream descriptors"
	case tid == 0x3E:
		return "DSM-CC private data"
	case tid == 0x40 || tid == 0x41:
		return "NIT"
	case tid == 0x42 || tid == 0x46:
		return "SDT"
	case tid == 0x4A:
		return "BAT"
	case tid == 0x4B:
		return "UNT"
	case tid == 0x4C:
		return "INT"
	case tid == 0x4D:
		return "SAT"
	case tid >= 0x4E && tid <= 0x6F:
		return "EIT"
	case tid == 0x70:
		return "TDT"
	case tid == 0x71:
		return "RST"
	case tid == 0x72:
		return "ST"
	case tid == 0x73:
		return "TOT"
	case tid == 0x74:
		return "AIT"
	case tid == 0x75:
		return "container"
	case tid == 0x76:
		return "RCT"
	case tid == 0x77:
		return "CIT"
	case tid == 0x78:
		return "MPE-FEC"
	case tid == 0x79:
		return "RNT"
	case tid == 0x7A:
		return "MPE-IFEC"
	case tid == 0x7E:
		return "DIT"
	case tid == 0x7F:
		return "SIT"
	case tid == 0x80 || tid == 0x81:
		return "ECM"
	case tid >= 0x82 && tid <= 0x8F:
		return "EMM"
	case tid == 0xFC:
		return "SCTE 35"
	case pid == 0x1FFB && tid >= 0xC7 && tid <= 0xCD:
		return [...]string{"MGT", "TVCT", "CVCT", "RRT", "EIT", "ETT", "STT"}[tid-0xC7]
	}
	return fmt.Sprintf("table 0x%02X", tid)
}

// dvbString decodes a DVB text field (ETSI EN 300 468 Annex A). The first byte may select a
// character table: 0x15 is UTF-8, 0x10 0x00 0x01 and no selector at all are taken as Latin-1
// (the default table, ISO/IEC 6937, matches it in the printable ASCII range, which is what
// service names mostly use). Other tables keep their ASCII characters and show the rest as
// U+FFFD. Control codes (0x00-0x1F, 0x80-0x9F: emphasis, line breaks) are dropped.
func dvbString(b []byte) string {
	latin1 := true
	if len(b) > 0 && b[0] < 0x20 {
		switch {
		case b[0] == 0x15:
			s := strings.ToValidUTF8(string(b[1:]), "\uFFFD")
			return strings.Map(func(r rune) rune {
				if r < 0x20 || r >= 0x80 && r < 0xA0 {
					return -1
				}
				return r
			}, s)
		case b[0] == 0x10 && len(b) >= 3:
			latin1 = b[1] == 0x00 && b[2] == 0x01
			b = b[3:]
		case b[0] == 0x1F && len(b) >= 2:
			latin1 = false
			b = b[2:]
		default:
			latin1 = false
			b = b[1:]
		}
	}
	var sb strings.Builder
	for _, c := range b {
		switch {
		case c < 0x20 || c >= 0x80 && c < 0xA0 || c == 0x7F:
		case c < 0x80:
			sb.WriteByte(c)
		case latin1:
			sb.WriteRune(rune(c))
		default:
			sb.WriteRune(utf8.RuneError)
		}
	}
	return sb.String()
}
