package ts

// PESStartOK reports whether payload, the descrambled payload of a packet that starts a PES packet
// (payload_unit_start_indicator set), begins with a valid PES header (ISO/IEC 13818-1, 2.4.3.6):
// the start code prefix 00 00 01, a stream_id of a PES stream (0xBC and above), and, for the
// streams that carry the optional header, its '10' marker bits, a PES_header_data_length that fits
// the packet, and the fixed bits and marker bits of the PTS and DTS present. A wrong key turns the
// header into noise, which passes these checks about once in 2^30 tries when a PTS is present.
//
// Payloads too short to hold the checked fields fail: CSA2 leaves payloads under 8 bytes clear,
// so they say nothing about the key.
func PESStartOK(payload []byte) bool { return PESHeaderOK(payload, len(payload)) }

// PESHeaderBytes is the most PESHeaderOK reads of a payload: the fixed header, a PTS and a DTS.
const PESHeaderBytes = 19

// PESHeaderOK is PESStartOK for a payload of payloadLen bytes of which head holds the first
// ones (at least min(payloadLen, PESHeaderBytes) of them to check all it can): a key check can
// then descramble only the start of a payload.
func PESHeaderOK(head []byte, payloadLen int) bool {
	payload := head
	if len(payload) < 9 || payload[0] != 0 || payload[1] != 0 || payload[2] != 1 {
		return false
	}
	id := payload[3]
	if id < 0xBC {
		return false // system headers and pack headers never follow a PUSI in a transport stream
	}
	switch id {
	case 0xBC, 0xBE, 0xBF, 0xF0, 0xF1, 0xF2, 0xF8, 0xFF:
		// program_stream_map, padding, private_stream_2, ECM, EMM, DSMCC, H.222.1 type E and the
		// directory have no optional header: the start code and stream_id are all there is.
		return true
	}
	if payload[6]&0xC0 != 0x80 {
		return false
	}
	hdrLen := int(payload[8])
	if 9+hdrLen > payloadLen && payloadLen == 184 {
		return false // the header claims more than a whole packet's payload
	}
	switch payload[7] >> 6 {
	case 1:
		return false // PTS_DTS_flags '01' is forbidden
	case 2:
		return hdrLen >= 5 && timestampOK(payload[9:], 0x2)
	case 3:
		return hdrLen >= 10 && timestampOK(payload[9:], 0x3) && timestampOK(payload[14:], 0x1)
	}
	return true
}

// timestampOK checks a 5-byte PTS or DTS field when the payload holds it: the 4-bit prefix and the
// three marker bits.
func timestampOK(b []byte, prefix byte) bool {
	if len(b) < 5 {
		return true // cut off by the end of a short payload: nothing more to check
	}
	return b[0]>>4 == prefix && b[0]&1 == 1 && b[2]&1 == 1 && b[4]&1 == 1
}
