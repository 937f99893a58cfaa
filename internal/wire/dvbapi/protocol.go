// Package dvbapi is the wire codec of the DVBAPI network protocol, version 3, by which a CAM
// daemon (OSCam's dvbapi module with a listening port, as tvheadend, Enigma2 and minisatip use
// it) descrambles a service for its client. The client in keyserver/dvbapi and the test server
// in internal/testsupport/camdouble both speak through it; it is internal because a program that
// embeds the client needs the client, not the messages.
//
// # The protocol
//
// All integers are big endian. The client opens with CLIENT_INFO (opcode, version, name); the
// server answers SERVER_INFO. From then on every message either way starts with 0xA5 and a
// 4-byte message id, then a 4-byte opcode:
//
//	client → server
//	  CA PMT        9F 80 32, an ASN.1 length, the EN 50221 ca_pmt (list management, program
//	                number, version, program info: ca_pmt_cmd_id, private descriptors 0x83
//	                adapter, 0x84 PMT PID, 0x86 demux, 0x87 CA device, the CA descriptors; then
//	                each elementary stream with its own)
//	  FILTER_DATA   FFFF0000, demux, filter number, a whole section
//	  CA STOP       9F 80 3F 04 83 02 00 demux
//	server → client (after the opcode, an adapter index byte except in SERVER_INFO)
//	  SERVER_INFO        FFFF0002, version (2), name length (1), name
//	  DMX_SET_FILTER     403C6F2B, demux, filter, PID (2), filter (16), mask (16), mode (16),
//	                     timeout (4), flags (4)
//	  DMX_STOP           00006F2A, demux, filter, PID (2)
//	  CA_SET_PID         40086F87, PID (4), descrambler index (4; -1 removes the PID)
//	  CA_SET_DESCR       40106F86, index (4), parity (4: 0 even, 1 odd), CW (8)
//	  CA_SET_DESCR_MODE  400C6F88, index (4), algorithm (4: 0 CSA, 1 DES, 2 AES-128; OSCam
//	                     also sends 3, its CW_ALGO_CSA_ALT), cipher mode (4: 0 ECB, 1 CBC)
//	  CA_SET_DESCR_DATA  40186F89, index, parity, data type (0 IV, 1 key), length (4 each),
//	                     data
//	  ECM_INFO           FFFF0003, service (2), CAID (2), PID (2), provider (4), ECM time
//	                     (4, ms), four strings (length byte, bytes), hops (1)
//
// The layouts follow OSCam's README.dvbapi_protocol and module-dvbapi.h (dvbapi_net_send; the
// README does not describe CA_SET_DESCR_MODE and CA_SET_DESCR_DATA); the 0xA5 framing of
// version 3 is not in the README's tables. OSCam sends the last two, before each key it
// writes, only with its extended CW API (dvbapi_write_cw): the mode, then for AES-128 the IV
// and the 16-byte key in CA_SET_DESCR_DATA, else the 8-byte key in CA_SET_DESCR. The parity of
// its IV message is not the key's: it sets ca_descr_data.parity for the key only, so the IV
// carries the parity of the key written before it (0 for the first). Filters are those of the Linux demux: byte 0 of a
// filter matches the section's table_id, bytes 1-15 its bytes 3-17; mode bits ask for a
// mismatch.
package dvbapi

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Opcodes.
const (
	OpFilterData      = 0xFFFF0000
	OpClientInfo      = 0xFFFF0001
	OpServerInfo      = 0xFFFF0002
	OpECMInfo         = 0xFFFF0003
	OpCASetDescr      = 0x40106F86
	OpCASetPID        = 0x40086F87
	OpCASetDescrMode  = 0x400C6F88
	OpCASetDescrData  = 0x40186F89
	OpDMXStop         = 0x00006F2A
	OpDMXSetFilter    = 0x403C6F2B
	opCAPMT           = 0x9F8032
	ProtocolVersion   = 3
	messageStart      = 0xA5
	maxDescrData      = 64 // the largest CA_SET_DESCR_DATA accepted (keys and IVs are 8 to 16 bytes)
	maxECMInfoStrings = 4
)

// Algorithms of CA_SET_DESCR_MODE: OSCam's enum ca_descr_algo (module-dvbapi.h), and
// AlgoCSAAlt, its CW_ALGO_CSA_ALT (globals.h), which dvbapi_send_dcw sends in that field for
// some Videoguard ECMs (select_csa_alt): the CSA of a patched libdvbcsa's ECM key schedule,
// minisatip's "ICAM".
const (
	AlgoCSA    = 0
	AlgoDES    = 1
	AlgoAES128 = 2
	AlgoCSAAlt = 3
)

// Cipher modes of CA_SET_DESCR_MODE (enum ca_descr_cipher_mode).
const (
	ModeECB = 0
	ModeCBC = 1
)

// Data types of CA_SET_DESCR_DATA (enum ca_descr_data_type).
const (
	DataIV  = 0
	DataKey = 1
)

// Message is a message from the server.
type Message struct {
	MsgID   uint32 // 0 when the server sent no 0xA5 framing
	Opcode  uint32
	Adapter uint8

	// SERVER_INFO
	Version uint16
	Name    string

	// DMX_SET_FILTER, DMX_STOP
	Demux, Filter uint8
	PID           uint16
	Filt          Filter
	Timeout       uint32
	Flags         uint32

	// CA_SET_PID (PID and Index), CA_SET_DESCR (Index, Parity, CW), CA_SET_DESCR_MODE
	// (Index, Algo, CipherMode), CA_SET_DESCR_DATA (Index, Parity, DataType, Data)
	Index      int32
	Parity     uint32
	CW         [8]byte
	Algo       uint32
	CipherMode uint32
	DataType   uint32
	Data       []byte

	// ECM_INFO
	ServiceID, CAID, ECMPID uint16
	ProviderID, ECMTime     uint32
}

// Filter is a section filter of DMX_SET_FILTER.
type Filter struct {
	Value, Mask, Mode [16]byte
}

// Match reports whether a section passes the filter, as the Linux demux decides: byte 0 of the
// filter against the section's table_id, bytes 1 to 15 against section bytes 3 to 17. Bits of
// the mask with mode 0 must match; if any bit of the mask has mode 1, one of those must differ.
func (f *Filter) Match(section []byte) bool {
	neq, wantNeq := false, false
	for i := range 16 {
		j := i
		if i > 0 {
			j = i + 2
		}
		var b byte
		if j < len(section) {
			b = section[j]
		} else if f.Mask[i] != 0 {
			return false
		}
		x := (b ^ f.Value[i]) & f.Mask[i]
		pos, neg := f.Mask[i]&^f.Mode[i], f.Mask[i]&f.Mode[i]
		if x&pos != 0 {
			return false
		}
		if neg != 0 {
			wantNeq = true
			neq = neq || x&neg != 0
		}
	}
	return !wantNeq || neq
}

// ErrFraming is returned for a message that does not start as the protocol says.
var ErrFraming = errors.New("dvbapi: a message from the server does not start with an opcode of the protocol")

// Reader reads server messages from a stream, one after the other, through one buffer.
type Reader struct {
	r   io.Reader
	buf [512]byte
}

// NewReader returns a Reader of the server's messages on r.
func NewReader(r io.Reader) *Reader { return &Reader{r: r} }

func (rd *Reader) read(n int) ([]byte, error) {
	if _, err := io.ReadFull(rd.r, rd.buf[:n]); err != nil {
		if err == io.EOF && n > 0 {
			return nil, io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return rd.buf[:n], nil
}

// ReadMessage reads one message from the server. Every length is bounded: a message never
// makes it read more than 5+4+1+16+maxDescrData bytes, or four strings of 255.
func ReadMessage(r io.Reader) (Message, error) {
	return NewReader(r).Next()
}

// Next reads the next message, as ReadMessage does.
func (rd *Reader) Next() (Message, error) {
	var m Message
	b, err := rd.read(1)
	if err != nil {
		return m, err
	}
	if b[0] == messageStart {
		if b, err = rd.read(4); err != nil {
			return m, unexpected(err)
		}
		m.MsgID = binary.BigEndian.Uint32(b)
		if b, err = rd.read(4); err != nil {
			return m, unexpected(err)
		}
	} else {
		// A server of an older version: no framing. The opcode's first byte is read.
		first := b[0]
		if b, err = rd.read(3); err != nil {
			return m, unexpected(err)
		}
		b = append([]byte{first}, b...)
	}
	m.Opcode = binary.BigEndian.Uint32(b)
	if m.Opcode == OpServerInfo {
		if b, err = rd.read(3); err != nil {
			return m, unexpected(err)
		}
		m.Version = binary.BigEndian.Uint16(b)
		n := int(b[2])
		if b, err = rd.read(n); err != nil {
			return m, unexpected(err)
		}
		m.Name = string(b)
		return m, nil
	}
	size := 0
	switch m.Opcode {
	case OpDMXSetFilter:
		size = 1 + 1 + 1 + 2 + 48 + 4 + 4
	case OpDMXStop:
		size = 1 + 1 + 1 + 2
	case OpCASetPID:
		size = 1 + 8
	case OpCASetDescr:
		size = 1 + 16
	case OpCASetDescrMode:
		size = 1 + 12
	case OpCASetDescrData:
		size = 1 + 16
	case OpECMInfo:
		size = 1 + 2 + 2 + 2 + 4 + 4
	default:
		return m, fmt.Errorf("%w (opcode %#08x)", ErrFraming, m.Opcode)
	}
	if b, err = rd.read(size); err != nil {
		return m, unexpected(err)
	}
	m.Adapter = b[0]
	b = b[1:]
	switch m.Opcode {
	case OpDMXSetFilter:
		m.Demux, m.Filter, m.PID = b[0], b[1], binary.BigEndian.Uint16(b[2:])&0x1FFF
		copy(m.Filt.Value[:], b[4:20])
		copy(m.Filt.Mask[:], b[20:36])
		copy(m.Filt.Mode[:], b[36:52])
		m.Timeout, m.Flags = binary.BigEndian.Uint32(b[52:]), binary.BigEndian.Uint32(b[56:])
	case OpDMXStop:
		m.Demux, m.Filter, m.PID = b[0], b[1], binary.BigEndian.Uint16(b[2:])&0x1FFF
	case OpCASetPID:
		m.PID, m.Index = uint16(binary.BigEndian.Uint32(b)&0x1FFF), int32(binary.BigEndian.Uint32(b[4:]))
	case OpCASetDescr:
		m.Index, m.Parity = int32(binary.BigEndian.Uint32(b)), binary.BigEndian.Uint32(b[4:])
		copy(m.CW[:], b[8:16])
	case OpCASetDescrMode:
		m.Index, m.Algo, m.CipherMode = int32(binary.BigEndian.Uint32(b)), binary.BigEndian.Uint32(b[4:]), binary.BigEndian.Uint32(b[8:])
	case OpCASetDescrData:
		m.Index, m.Parity, m.DataType = int32(binary.BigEndian.Uint32(b)), binary.BigEndian.Uint32(b[4:]), binary.BigEndian.Uint32(b[8:])
		n := binary.BigEndian.Uint32(b[12:])
		if n > maxDescrData {
			return m, fmt.Errorf("dvbapi: CA_SET_DESCR_DATA of %d bytes, at most %d are accepted", n, maxDescrData)
		}
		if b, err = rd.read(int(n)); err != nil {
			return m, unexpected(err)
		}
		m.Data = append([]byte(nil), b...)
	case OpECMInfo:
		m.ServiceID, m.CAID, m.ECMPID = binary.BigEndian.Uint16(b), binary.BigEndian.Uint16(b[2:]), binary.BigEndian.Uint16(b[4:])
		m.ProviderID, m.ECMTime = binary.BigEndian.Uint32(b[6:]), binary.BigEndian.Uint32(b[10:])
		for range maxECMInfoStrings {
			if b, err = rd.read(1); err != nil {
				return m, unexpected(err)
			}
			if _, err = rd.read(int(b[0])); err != nil {
				return m, unexpected(err)
			}
		}
		if _, err = rd.read(1); err != nil { // hops
			return m, unexpected(err)
		}
	}
	return m, nil
}

func unexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// AppendClientInfo appends the CLIENT_INFO greeting (never framed).
func AppendClientInfo(dst []byte, name string) []byte {
	if len(name) > 255 {
		name = name[:255]
	}
	dst = binary.BigEndian.AppendUint32(dst, OpClientInfo)
	dst = binary.BigEndian.AppendUint16(dst, ProtocolVersion)
	dst = append(dst, byte(len(name)))
	return append(dst, name...)
}

// appendStart appends the version 3 framing.
func appendStart(dst []byte, msgID uint32) []byte {
	dst = append(dst, messageStart)
	return binary.BigEndian.AppendUint32(dst, msgID)
}

// AppendFilterData appends a FILTER_DATA message carrying section.
func AppendFilterData(dst []byte, msgID uint32, demux, filter uint8, section []byte) []byte {
	dst = appendStart(dst, msgID)
	dst = binary.BigEndian.AppendUint32(dst, OpFilterData)
	dst = append(dst, demux, filter)
	return append(dst, section...)
}

// AppendStop appends the message that stops the descrambling of a demux (0xFF: all of the
// connection's).
func AppendStop(dst []byte, msgID uint32, demux uint8) []byte {
	dst = appendStart(dst, msgID)
	return append(dst, 0x9F, 0x80, 0x3F, 0x04, 0x83, 0x02, 0x00, demux)
}

// CAPMTService is what a CA PMT says of a service.
type CAPMTService struct {
	ProgramNumber uint16
	Version       uint8
	PMTPID        uint16
	Demux         uint8  // the demux index the server names in its filters
	CA            []byte // the program's CA descriptors, tag and length included
	Streams       []CAPMTStream
}

// CAPMTStream is an elementary stream of a CA PMT.
type CAPMTStream struct {
	Type uint8
	PID  uint16
	CA   []byte // the stream's CA descriptors, tag and length included
}

// List management values of a CA PMT.
const (
	ListMore   = 0x00
	ListFirst  = 0x01
	ListLast   = 0x02
	ListOnly   = 0x03
	ListAdd    = 0x04
	ListUpdate = 0x05
)

// AppendCAPMT appends a CA PMT message for s. It fails when a descriptor loop would not fit
// its 12-bit length.
func AppendCAPMT(dst []byte, msgID uint32, listManagement uint8, s *CAPMTService) ([]byte, error) {
	var body []byte
	body = append(body, listManagement, byte(s.ProgramNumber>>8), byte(s.ProgramNumber), 0xC1|(s.Version&0x1F)<<1)
	info := []byte{0x01}                                                 // ca_pmt_cmd_id: ok_descrambling
	info = append(info, 0x83, 1, 0)                                      // adapter 0
	info = append(info, 0x84, 2, byte(s.PMTPID>>8)&0x1F, byte(s.PMTPID)) // PMT PID
	info = append(info, 0x86, 1, s.Demux)                                // demux
	info = append(info, 0x87, 1, 0)                                      // CA device 0
	info = append(info, s.CA...)
	if len(info) > 0xFFF {
		return dst, fmt.Errorf("dvbapi: a CA PMT program info of %d bytes", len(info))
	}
	body = append(body, 0xF0|byte(len(info)>>8), byte(len(info)))
	body = append(body, info...)
	for _, es := range s.Streams {
		body = append(body, es.Type, 0xE0|byte(es.PID>>8)&0x1F, byte(es.PID))
		if len(es.CA) == 0 {
			body = append(body, 0xF0, 0)
			continue
		}
		n := 1 + len(es.CA)
		if n > 0xFFF {
			return dst, fmt.Errorf("dvbapi: a CA PMT ES info of %d bytes", n)
		}
		body = append(body, 0xF0|byte(n>>8), byte(n), 0x01)
		body = append(body, es.CA...)
	}
	dst = appendStart(dst, msgID)
	dst = append(dst, 0x9F, 0x80, 0x32)
	dst = appendASN1Length(dst, len(body))
	return append(dst, body...), nil
}

// appendASN1Length appends an ASN.1 BER length: one byte under 128, else 0x80 | the number of
// bytes, then the bytes.
func appendASN1Length(dst []byte, n int) []byte {
	switch {
	case n < 0x80:
		return append(dst, byte(n))
	case n < 0x100:
		return append(dst, 0x81, byte(n))
	default:
		return append(dst, 0x82, byte(n>>8), byte(n))
	}
}
