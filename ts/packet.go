package ts

// Accessors over the bytes of one 188-byte transport stream packet (ISO/IEC 13818-1, 2.4.3.2).
// A packet is a plain byte slice that starts at the sync byte; nothing is parsed that is not read
// and nothing is allocated, so the classifier can call these for every packet of the stream.

// PacketSize is the size of an MPEG transport stream packet without framing.
const PacketSize = 188

// SyncByte starts every transport stream packet.
const SyncByte = 0x47

// HeaderSize is the size of the fixed packet header.
const HeaderSize = 4

// NullPID carries stuffing packets.
const NullPID = 0x1FFF

// Scrambling is the value of a packet's transport_scrambling_control field.
type Scrambling uint8

// The transport_scrambling_control values as DVB (ETSI ETR 289, TS 100 289) uses them.
const (
	Clear    Scrambling = 0 // 00: not scrambled
	Reserved Scrambling = 1 // 01: reserved; passed through untouched
	Even     Scrambling = 2 // 10: scrambled with the even control word
	Odd      Scrambling = 3 // 11: scrambled with the odd control word
)

// String names the scrambling state as the summary prints it.
func (s Scrambling) String() string {
	switch s {
	case Clear:
		return "clear"
	case Reserved:
		return "reserved"
	case Even:
		return "even"
	default:
		return "odd"
	}
}

// PID returns the packet identifier of p.
func PID(p []byte) uint16 { return uint16(p[1]&0x1F)<<8 | uint16(p[2]) }

// PUSI reports whether p carries the payload_unit_start_indicator (a PES or section starts in it).
func PUSI(p []byte) bool { return p[1]&0x40 != 0 }

// TEI reports whether the transport_error_indicator is set.
func TEI(p []byte) bool { return p[1]&0x80 != 0 }

// TSC returns the transport_scrambling_control field of p.
func TSC(p []byte) Scrambling { return Scrambling(p[3] >> 6) }

// SetTSC overwrites the transport_scrambling_control field of p.
func SetTSC(p []byte, s Scrambling) { p[3] = p[3]&0x3F | byte(s)<<6 }

// HasAdaptationField reports whether the adaptation_field_control says an adaptation field follows the header.
func HasAdaptationField(p []byte) bool { return p[3]&0x20 != 0 }

// HasPayload reports whether the adaptation_field_control says the packet carries a payload.
func HasPayload(p []byte) bool { return p[3]&0x10 != 0 }

// ContinuityCounter returns the 4-bit continuity_counter of p.
func ContinuityCounter(p []byte) uint8 { return p[3] & 0x0F }

// PayloadOffset returns the offset of the payload in the 188-byte packet p and whether the packet
// has a usable payload. It is false when the adaptation_field_control announces no payload, and when
// the adaptation_field_length runs past the end of the packet (a damaged header: such a packet is
// passed through untouched rather than guessed at).
func PayloadOffset(p []byte) (int, bool) {
	if !HasPayload(p) {
		return 0, false
	}
	if !HasAdaptationField(p) {
		return HeaderSize, true
	}
	// adaptation_field_length counts the bytes after itself; with a payload present it may
	// be at most 182 (ISO/IEC 13818-1, 2.4.3.5), leaving at least one payload byte. Larger
	// values are corrupt.
	off := HeaderSize + 1 + int(p[4])
	if off >= PacketSize {
		return 0, false
	}
	return off, true
}

// Payload returns the payload of the 188-byte packet p, or nil when it has none (see PayloadOffset).
func Payload(p []byte) []byte {
	off, ok := PayloadOffset(p)
	if !ok {
		return nil
	}
	return p[off:PacketSize]
}
