// Package simulcrypt is the wire codec of the DVB SimulCrypt ECMG⇔SCS protocol (ETSI TS 103
// 197, protocol versions 2 and 3): the messages, their parameters and the builders of what an SCS
// sends. The public simulcrypt package's Client speaks through it, and the test ECMGs answer
// through it, so that both ends read and write the same bytes; it is internal because a program
// that embeds the client needs the client, not the TLVs.
//
// Every message is a TLV: protocol_version (1 byte), message_type (2 bytes), message_length (2
// bytes), then message_length bytes of parameters, each parameter_type (2 bytes),
// parameter_length (2 bytes) and its value, all big-endian (TS 103 197, 4.4 and 5.3). Parse reads
// one message and checks its lengths; Message.Append writes one.
package simulcrypt

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// MessageType is a message_type of the ECMG⇔SCS interface (TS 103 197, table 2).
type MessageType uint16

// The ECMG⇔SCS message types.
const (
	ChannelSetup        MessageType = 0x0001
	ChannelTest         MessageType = 0x0002
	ChannelStatus       MessageType = 0x0003
	ChannelClose        MessageType = 0x0004
	ChannelError        MessageType = 0x0005
	StreamSetup         MessageType = 0x0101
	StreamTest          MessageType = 0x0102
	StreamStatus        MessageType = 0x0103
	StreamCloseRequest  MessageType = 0x0104
	StreamCloseResponse MessageType = 0x0105
	StreamError         MessageType = 0x0106
	CWProvision         MessageType = 0x0201
	ECMResponse         MessageType = 0x0202
)

var messageNames = map[MessageType]string{
	ChannelSetup: "channel_setup", ChannelTest: "channel_test", ChannelStatus: "channel_status",
	ChannelClose: "channel_close", ChannelError: "channel_error", StreamSetup: "stream_setup",
	StreamTest: "stream_test", StreamStatus: "stream_status", StreamCloseRequest: "stream_close_request",
	StreamCloseResponse: "stream_close_response", StreamError: "stream_error",
	CWProvision: "CW_provision", ECMResponse: "ECM_response",
}

func (t MessageType) String() string {
	if s, ok := messageNames[t]; ok {
		return s
	}
	return fmt.Sprintf("message type 0x%04X", uint16(t))
}

// ParamType is a parameter_type of the ECMG⇔SCS interface (TS 103 197, table 3).
type ParamType uint16

// The ECMG⇔SCS parameter types, with the size of their values (0: variable).
const (
	ParamSuperCASID           ParamType = 0x0001 // 4: CA_system_id (2) then CA_subsystem_id (2)
	ParamSectionTSPkt         ParamType = 0x0002 // 1: 0 ECMs as sections, 1 as TS packets
	ParamDelayStart           ParamType = 0x0003 // 2: signed, ms
	ParamDelayStop            ParamType = 0x0004 // 2: signed, ms
	ParamTransitionDelayStart ParamType = 0x0005 // 2: signed, ms
	ParamTransitionDelayStop  ParamType = 0x0006 // 2: signed, ms
	ParamECMRepPeriod         ParamType = 0x0007 // 2: ms
	ParamMaxStreams           ParamType = 0x0008 // 2
	ParamMinCPDuration        ParamType = 0x0009 // 2: units of 100 ms
	ParamLeadCW               ParamType = 0x000A // 1
	ParamCWPerMsg             ParamType = 0x000B // 1
	ParamMaxCompTime          ParamType = 0x000C // 2: ms
	ParamAccessCriteria       ParamType = 0x000D // variable
	ParamECMChannelID         ParamType = 0x000E // 2
	ParamECMStreamID          ParamType = 0x000F // 2
	ParamNominalCPDuration    ParamType = 0x0010 // 2: units of 100 ms
	ParamACTransferMode       ParamType = 0x0011 // 1: access_criteria_transfer_mode
	ParamCPNumber             ParamType = 0x0012 // 2
	ParamCPDuration           ParamType = 0x0013 // 2: units of 100 ms
	ParamCPCWCombination      ParamType = 0x0014 // 2 + CW: CP_number then the CW
	ParamECMDatagram          ParamType = 0x0015 // variable
	ParamACDelayStart         ParamType = 0x0016 // 2: signed, ms
	ParamACDelayStop          ParamType = 0x0017 // 2: signed, ms
	ParamCWEncryption         ParamType = 0x0018 // variable
	ParamECMID                ParamType = 0x0019 // 2
	ParamErrorStatus          ParamType = 0x7000 // 2
	ParamErrorInformation     ParamType = 0x7001 // variable
)

// HeaderSize is the size of a message's header: protocol_version, message_type, message_length.
const HeaderSize = 5

// MaxMessageSize bounds what Parse and ReadMessage accept: a message_length is 16 bits.
const MaxMessageSize = HeaderSize + 0xFFFF

// Param is one parameter of a message.
type Param struct {
	Type  ParamType
	Value []byte
}

// Message is one ECMG⇔SCS message.
type Message struct {
	Version uint8
	Type    MessageType
	Params  []Param
}

// ErrShort is returned by Parse when b does not yet hold the whole message.
var ErrShort = errors.New("simulcrypt: message cut short")

// Append appends the message's bytes to dst. It panics when the message cannot be encoded (a
// parameter over 65535 bytes, or more than 65535 bytes of parameters): the caller builds what
// it sends and must keep it within the protocol's lengths.
func (m *Message) Append(dst []byte) []byte {
	n := 0
	for _, p := range m.Params {
		if len(p.Value) > 0xFFFF {
			panic(fmt.Sprintf("simulcrypt: %s parameter 0x%04X of %d bytes", m.Type, uint16(p.Type), len(p.Value)))
		}
		n += 4 + len(p.Value)
	}
	if n > 0xFFFF {
		panic(fmt.Sprintf("simulcrypt: %s of %d bytes", m.Type, n))
	}
	dst = append(dst, m.Version)
	dst = binary.BigEndian.AppendUint16(dst, uint16(m.Type))
	dst = binary.BigEndian.AppendUint16(dst, uint16(n))
	for _, p := range m.Params {
		dst = binary.BigEndian.AppendUint16(dst, uint16(p.Type))
		dst = binary.BigEndian.AppendUint16(dst, uint16(len(p.Value)))
		dst = append(dst, p.Value...)
	}
	return dst
}

// Parse reads one message from the start of b and returns it with the number of bytes it took.
// The parameters' values point into b. It returns ErrShort while b holds less than the message,
// and an error when the parameters do not fill message_length exactly.
func Parse(b []byte) (Message, int, error) {
	if len(b) < HeaderSize {
		return Message{}, 0, ErrShort
	}
	m := Message{Version: b[0], Type: MessageType(binary.BigEndian.Uint16(b[1:]))}
	n := int(binary.BigEndian.Uint16(b[3:]))
	if len(b) < HeaderSize+n {
		return Message{}, 0, ErrShort
	}
	body := b[HeaderSize : HeaderSize+n]
	for len(body) > 0 {
		if len(body) < 4 {
			return Message{}, 0, fmt.Errorf("simulcrypt: %s: %d bytes after the last parameter, too few for another", m.Type, len(body))
		}
		t := ParamType(binary.BigEndian.Uint16(body))
		l := int(binary.BigEndian.Uint16(body[2:]))
		if 4+l > len(body) {
			return Message{}, 0, fmt.Errorf("simulcrypt: %s: parameter 0x%04X of %d bytes runs past the message's end", m.Type, uint16(t), l)
		}
		m.Params = append(m.Params, Param{Type: t, Value: body[4 : 4+l : 4+l]})
		body = body[4+l:]
	}
	return m, HeaderSize + n, nil
}

// Find returns the value of the first parameter of type t.
func (m *Message) Find(t ParamType) ([]byte, bool) {
	for _, p := range m.Params {
		if p.Type == t {
			return p.Value, true
		}
	}
	return nil, false
}

// All returns the values of every parameter of type t, in order.
func (m *Message) All(t ParamType) [][]byte {
	var vs [][]byte
	for _, p := range m.Params {
		if p.Type == t {
			vs = append(vs, p.Value)
		}
	}
	return vs
}

// Uint reads the first parameter of type t as an unsigned big-endian integer of size bytes (1,
// 2 or 4). It fails when the parameter is missing or has another size.
func (m *Message) Uint(t ParamType, size int) (uint32, error) {
	v, ok := m.Find(t)
	if !ok {
		return 0, fmt.Errorf("%s without parameter 0x%04X", m.Type, uint16(t))
	}
	if len(v) != size {
		return 0, fmt.Errorf("%s: parameter 0x%04X has %d bytes, want %d", m.Type, uint16(t), len(v), size)
	}
	var x uint32
	for _, c := range v {
		x = x<<8 | uint32(c)
	}
	return x, nil
}

// Add appends a parameter and returns the message, for building messages in one expression.
func (m *Message) Add(t ParamType, value []byte) *Message {
	m.Params = append(m.Params, Param{Type: t, Value: value})
	return m
}

func u8(v uint8) []byte   { return []byte{v} }
func u16(v uint16) []byte { return binary.BigEndian.AppendUint16(nil, v) }
func u32(v uint32) []byte { return binary.BigEndian.AppendUint32(nil, v) }
