package probe

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/asticode/go-astits"
)

// caRange names the CA_system_ID values from First to Last.
type caRange struct {
	First, Last uint16
	Name        string
}

// caSystems names the CA_system_ID values seen most often. The ranges and the companies they
// belong to are those of the DVB CA_System_ID registry (dvbservices.com/identifiers/ca_system_id,
// ETSI TS 101 162), as mirrored in TSDuck's src/libtsduck/dtv/cas/tsCAS.names [CASystemId].
// Where a range is known by its product rather than its company (Mediaguard, Videoguard, DRE-Crypt,
// BISS ...), the product comes first: those names follow OSCam's get_cardsystem_desc_by_caid and
// its caid_is_* tests (oscam-string.c, globals.h), which is how the keys and logs users hold name
// them. BISS-1 is 0x2600 and BISS-2 0x2602 (OSCam module-emulator-biss.c); the rest of
// 0x2600-0x26FF is the EBU's. Specific entries come before the ranges that contain them: the first
// match wins.
var caSystems = []caRange{
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
	{0x1500, 0x15FF, "IBM"},
	{0x1600, 0x16FF, "Nera"},
	{0x1700, 0x17FF, "BetaCrypt/Verimatrix"},
	{0x1800, 0x18FF, "Nagravision"},
	{0x1900, 0x19FF, "Titan Information Systems"},
	{0x2000, 0x20FF, "Telefonica Servicios Audiovisuales"},
	{0x2100, 0x21FF, "Stentor"},
	{0x2200, 0x22FF, "Harmonic"},
	{0x2300, 0x23FF, "Barco"},
	{0x2400, 0x24FF, "StarGuide Digital Networks"},
	{0x2500, 0x25FF, "Mentor Data System"},
	{0x2700, 0x270F, "PolyCipher"},
	{0x4700, 0x47FF, "General Instrument (Motorola)"},
	{0x4800, 0x48FF, "Telemann"},
	{0x4900, 0x49FF, "Cryptoworks China (Irdeto)"},
	{0x4A10, 0x4A1F, "Easycas"},
	{0x4A20, 0x4A2F, "AlphaCrypt"},
	{0x4A30, 0x4A3F, "DVN Holdings"},
	{0x4A60, 0x4A6F, "@Sky/Neotion"},
	{0x4A70, 0x4A7F, "Dreamcrypt"},
	{0x4A80, 0x4A8F, "ThalesCrypt"},
	{0x4A90, 0x4A9F, "Runcom"},
	{0x4AA0, 0x4AAF, "SIDSA"},
	{0x4AC0, 0x4ACF, "Latens Systems"},
	{0x4AD4, 0x4AD5, "Widevine"},
	{0x4ADC, 0x4ADC, "SafeAccess (Logiways)"},
	{0x4AE0, 0x4AE1, "DRE-Crypt (Cifra)"},
	{0x4AE2, 0x4AE3, "Microsoft"},
	{0x4AEA, 0x4AEA, "Cryptoguard"},
	{0x4AEE, 0x4AEE, "Bulcrypt (Deltacom)"},
	{0x4AF0, 0x4AF0, "ABV International"},
	{0x4AF8, 0x4AF8, "Griffin"},
	{0x4AFC, 0x4AFC, "Panaccess"},
	{0x4B00, 0x4B02, "Tongfang"},
	{0x4B13, 0x4B14, "Microsoft"},
	{0x5601, 0x5604, "Verimatrix"},
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
// ones that ATSC assigns (A/52 for AC-3 and E-AC-3, SCTE 35 for splice information).
var streamTypes = map[uint8]string{
	0x01: "MPEG-1 video",
	0x02: "MPEG-2 video",
	0x03: "MPEG-1 audio",
	0x04: "MPEG-2 audio",
	0x05: "private sections",
	0x06: "private data",
	0x07: "MHEG",
	0x08: "DSM-CC",
	0x0A: "DSM-CC multiprotocol encapsulation",
	0x0B: "DSM-CC U-N messages",
	0x0C: "DSM-CC stream descriptors",
	0x0D: "DSM-CC sections",
	0x0F: "AAC audio",
	0x10: "MPEG-4 video",
	0x11: "AAC audio (LATM)",
	0x15: "metadata",
	0x1B: "H.264 video",
	0x1C: "MPEG-4 audio",
	0x20: "H.264 MVC video",
	0x24: "HEVC video",
	0x2D: "MPEG-H 3D audio",
	0x33: "VVC video",
	0x42: "AVS video",
	0x81: "AC-3 audio",
	0x86: "SCTE 35 splice information",
	0x87: "E-AC-3 audio",
	0xD1: "Dirac video",
	0xEA: "VC-1 video",
}

// StreamTypeName returns a stream_type in words ("H.264 video", "MPEG-1 audio").
func StreamTypeName(t uint8) string {
	if s, ok := streamTypes[t]; ok {
		return s
	}
	if t >= 0x80 {
		return fmt.Sprintf("user private (0x%02X)", t)
	}
	return fmt.Sprintf("stream type 0x%02X", t)
}

// Descriptor tags that tell what a stream of type 0x06 (PES private data) carries, from
// ETSI EN 300 468 Table 12 and Annex D.
const (
	tagRegistration = 0x05 // ISO/IEC 13818-1 registration_descriptor
	tagCA           = 0x09 // ISO/IEC 13818-1 CA_descriptor
	tagVBIData      = 0x45
	tagTeletext     = 0x56
	tagSubtitling   = 0x59
	tagAC3          = 0x6A
	tagEAC3         = 0x7A
	tagDTS          = 0x7B
	tagAAC          = 0x7C
)

// registrations names the format_identifier values of registration descriptors (registered with
// the SMPTE Registration Authority) that mark common private streams.
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
	"KLVA": "KLV metadata",
	"ID3 ": "ID3 metadata",
}

// typeName names a stream from its type and, for types that leave the coding open (0x06 PES
// private data and user-private types), from the descriptors of its ES loop.
func typeName(t astits.StreamType, ds []*astits.Descriptor) string {
	if t == 0x06 || t >= 0x80 {
		for _, d := range ds {
			if d == nil {
				continue
			}
			switch d.Tag {
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
			case tagVBIData:
				return "VBI data"
			case tagRegistration:
				if d.Registration != nil {
					id := d.Registration.FormatIdentifier
					if s, ok := registrations[string([]byte{byte(id >> 24), byte(id >> 16), byte(id >> 8), byte(id)})]; ok {
						return s
					}
				}
			}
		}
	}
	return StreamTypeName(uint8(t))
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
