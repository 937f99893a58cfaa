package simulcrypt

import (
	"fmt"

	wire "github.com/tsdescramble/tsdescramble/internal/wire/simulcrypt"
)

// Status is an error_status of a channel_error or stream_error message (TS 103 197, table 4).
type Status uint16

var statusWords = map[Status]string{
	0x0001: "invalid message",
	0x0002: "unsupported protocol version",
	0x0003: "unknown message_type value",
	0x0004: "message too long",
	0x0005: "unknown Super_CAS_id value",
	0x0006: "unknown ECM_channel_id value",
	0x0007: "unknown ECM_stream_id value",
	0x0008: "too many channels on this ECMG",
	0x0009: "too many ECM streams on this channel",
	0x000A: "too many ECM streams on this ECMG",
	0x000B: "not enough control words to compute ECM",
	0x000C: "ECMG out of storage capacity",
	0x000D: "ECMG out of computational resources",
	0x000E: "unknown parameter_type value",
	0x000F: "inconsistent length for DVB parameter",
	0x0010: "missing mandatory DVB parameter",
	0x0011: "invalid value for DVB parameter",
	0x0012: "unknown ECM_id value",
	0x0013: "ECM_channel_id value already in use",
	0x0014: "ECM_stream_id value already in use",
	0x0015: "ECM_id value already in use",
	0x7000: "unknown error",
	0x7001: "unrecoverable error",
}

// String gives the status in the specification's words, with its code.
func (s Status) String() string {
	if w, ok := statusWords[s]; ok {
		return fmt.Sprintf("%s (0x%04X)", w, uint16(s))
	}
	if s >= 0x8000 {
		return fmt.Sprintf("ECMG-specific error 0x%04X", uint16(s))
	}
	return fmt.Sprintf("error status 0x%04X", uint16(s))
}

// ErrorReply is a channel_error or stream_error the ECMG sent.
type ErrorReply struct {
	// StreamError is set for a stream_error, which concerns the ECM stream Stream; a
	// channel_error concerns the whole channel.
	StreamError bool
	Channel     uint16
	Stream      uint16 // for a stream_error
	Statuses    []Status
	Info        [][]byte // error_information parameters, as sent
}

func (e *ErrorReply) Error() string {
	kind, what := wire.ChannelError, fmt.Sprintf("channel %d", e.Channel)
	if e.StreamError {
		kind, what = wire.StreamError, what+fmt.Sprintf(" stream %d", e.Stream)
	}
	s := fmt.Sprintf("ECMG %s on %s:", kind, what)
	for i, st := range e.Statuses {
		if i > 0 {
			s += ","
		}
		s += " " + st.String()
	}
	if len(e.Statuses) == 0 {
		s += " no error_status"
	}
	return s
}

// parseErrorReply reads a channel_error or stream_error.
func parseErrorReply(m *wire.Message) *ErrorReply {
	e := &ErrorReply{StreamError: m.Type == wire.StreamError}
	if v, err := m.Uint(wire.ParamECMChannelID, 2); err == nil {
		e.Channel = uint16(v)
	}
	if v, err := m.Uint(wire.ParamECMStreamID, 2); err == nil {
		e.Stream = uint16(v)
	}
	for _, v := range m.All(wire.ParamErrorStatus) {
		if len(v) == 2 {
			e.Statuses = append(e.Statuses, Status(uint16(v[0])<<8|uint16(v[1])))
		}
	}
	e.Info = m.All(wire.ParamErrorInformation)
	return e
}
