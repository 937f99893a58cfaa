package simulcrypt

import (
	"fmt"
	"time"
)

// The messages an SCS sends, built from the parameter lists of TS 103 197, 5.5 and 5.6, in
// the order the specification lists them.

// NewChannelSetup builds a channel_setup: ECM_channel_id, Super_CAS_id.
func NewChannelSetup(version uint8, channel uint16, superCASID uint32) Message {
	m := Message{Version: version, Type: ChannelSetup}
	m.Add(ParamECMChannelID, u16(channel)).Add(ParamSuperCASID, u32(superCASID))
	return m
}

// NewChannelTest builds a channel_test: ECM_channel_id.
func NewChannelTest(version uint8, channel uint16) Message {
	m := Message{Version: version, Type: ChannelTest}
	m.Add(ParamECMChannelID, u16(channel))
	return m
}

// NewChannelClose builds a channel_close: ECM_channel_id.
func NewChannelClose(version uint8, channel uint16) Message {
	m := Message{Version: version, Type: ChannelClose}
	m.Add(ParamECMChannelID, u16(channel))
	return m
}

// NewChannelError builds a channel_error: ECM_channel_id, error_status.
func NewChannelError(version uint8, channel uint16, status Status) Message {
	m := Message{Version: version, Type: ChannelError}
	m.Add(ParamECMChannelID, u16(channel)).Add(ParamErrorStatus, u16(uint16(status)))
	return m
}

// NewStreamSetup builds a stream_setup: ECM_channel_id, ECM_stream_id, ECM_id (versions 2 and
// 3), nominal_CP_duration (in units of 100 ms).
func NewStreamSetup(version uint8, channel, stream, ecmID uint16, nominalCP uint16) Message {
	m := Message{Version: version, Type: StreamSetup}
	m.Add(ParamECMChannelID, u16(channel)).Add(ParamECMStreamID, u16(stream)).
		Add(ParamECMID, u16(ecmID)).Add(ParamNominalCPDuration, u16(nominalCP))
	return m
}

// NewStreamTest builds a stream_test: ECM_channel_id, ECM_stream_id.
func NewStreamTest(version uint8, channel, stream uint16) Message {
	m := Message{Version: version, Type: StreamTest}
	m.Add(ParamECMChannelID, u16(channel)).Add(ParamECMStreamID, u16(stream))
	return m
}

// NewStreamCloseRequest builds a stream_close_request: ECM_channel_id, ECM_stream_id.
func NewStreamCloseRequest(version uint8, channel, stream uint16) Message {
	m := Message{Version: version, Type: StreamCloseRequest}
	m.Add(ParamECMChannelID, u16(channel)).Add(ParamECMStreamID, u16(stream))
	return m
}

// NewStreamError builds a stream_error: ECM_channel_id, ECM_stream_id, error_status.
func NewStreamError(version uint8, channel, stream uint16, status Status) Message {
	m := Message{Version: version, Type: StreamError}
	m.Add(ParamECMChannelID, u16(channel)).Add(ParamECMStreamID, u16(stream)).Add(ParamErrorStatus, u16(uint16(status)))
	return m
}

// CPCW is one CP_CW_combination: a crypto period's number and its control word.
type CPCW struct {
	CP uint16
	CW []byte
}

// NewCWProvision builds a CW_provision: ECM_channel_id, ECM_stream_id, CP_number, the
// CP_CW_combinations in the order given, CP_duration when cpDuration is not 0 (units of 100 ms),
// and access_criteria when it is not empty.
func NewCWProvision(version uint8, channel, stream, cp uint16, cws []CPCW, cpDuration uint16, accessCriteria []byte) Message {
	m := Message{Version: version, Type: CWProvision}
	m.Add(ParamECMChannelID, u16(channel)).Add(ParamECMStreamID, u16(stream)).Add(ParamCPNumber, u16(cp))
	for _, c := range cws {
		m.Add(ParamCPCWCombination, append(u16(c.CP), c.CW...))
	}
	if cpDuration != 0 {
		m.Add(ParamCPDuration, u16(cpDuration))
	}
	if len(accessCriteria) > 0 {
		m.Add(ParamAccessCriteria, accessCriteria)
	}
	return m
}

// ChannelParams is what a channel_status says of the ECMG (TS 103 197, 5.5.3 and 5.3).
type ChannelParams struct {
	Channel uint16
	// Packets is set when the ECMG sends its ECMs as TS packets (section_TSpkt_flag 1), clear
	// when it sends sections.
	Packets bool
	// DelayStart is how long after the start of a crypto period its ECM goes on air (before it,
	// when negative); DelayStop how long after the end of the period it stays on air.
	DelayStart, DelayStop time.Duration
	// TransitionDelayStart and TransitionDelayStop, when the ECMG sends them, replace DelayStart
	// and DelayStop at a change of access criteria; ACDelayStart and ACDelayStop likewise.
	TransitionDelayStart, TransitionDelayStop *time.Duration
	ACDelayStart, ACDelayStop                 *time.Duration
	RepPeriod                                 time.Duration // ECM_rep_period
	MaxStreams                                uint16        // 0: no limit said
	MinCPDuration                             time.Duration
	LeadCW                                    int // CWs of periods after the current one per CW_provision
	CWPerMsg                                  int // CWs per CW_provision
	MaxCompTime                               time.Duration
}

// parseChannelStatus reads the mandatory parameters of a channel_status.
func parseChannelStatus(m *Message) (ChannelParams, error) {
	var p ChannelParams
	var err error
	get := func(t ParamType, size int) uint32 {
		v, e := m.Uint(t, size)
		if e != nil && err == nil {
			err = e
		}
		return v
	}
	ms := func(v uint32) time.Duration { return time.Duration(int16(uint16(v))) * time.Millisecond }
	opt := func(t ParamType) *time.Duration {
		if _, ok := m.Find(t); !ok {
			return nil
		}
		d := ms(get(t, 2))
		return &d
	}
	p.Channel = uint16(get(ParamECMChannelID, 2))
	p.Packets = get(ParamSectionTSPkt, 1) != 0
	p.DelayStart = ms(get(ParamDelayStart, 2))
	p.DelayStop = ms(get(ParamDelayStop, 2))
	p.TransitionDelayStart, p.TransitionDelayStop = opt(ParamTransitionDelayStart), opt(ParamTransitionDelayStop)
	p.ACDelayStart, p.ACDelayStop = opt(ParamACDelayStart), opt(ParamACDelayStop)
	p.RepPeriod = time.Duration(get(ParamECMRepPeriod, 2)) * time.Millisecond
	if _, ok := m.Find(ParamMaxStreams); ok {
		p.MaxStreams = uint16(get(ParamMaxStreams, 2))
	}
	p.MinCPDuration = time.Duration(get(ParamMinCPDuration, 2)) * 100 * time.Millisecond
	p.LeadCW = int(get(ParamLeadCW, 1))
	p.CWPerMsg = int(get(ParamCWPerMsg, 1))
	p.MaxCompTime = time.Duration(get(ParamMaxCompTime, 2)) * time.Millisecond
	if err != nil {
		return p, err
	}
	if p.RepPeriod <= 0 {
		return p, fmt.Errorf("channel_status: ECM_rep_period 0")
	}
	if p.CWPerMsg < 1 {
		return p, fmt.Errorf("channel_status: CW_per_msg 0")
	}
	return p, nil
}

// ECM is an ECM_response: the datagram the ECMG built for a crypto period.
type ECM struct {
	Stream uint16
	CP     uint16
	// Datagram holds sections, or TS packets when the channel's Packets is set.
	Datagram []byte
}

func parseECMResponse(m *Message) (ECM, error) {
	var e ECM
	s, err := m.Uint(ParamECMStreamID, 2)
	if err != nil {
		return e, err
	}
	cp, err := m.Uint(ParamCPNumber, 2)
	if err != nil {
		return e, err
	}
	d, ok := m.Find(ParamECMDatagram)
	if !ok || len(d) == 0 {
		return e, fmt.Errorf("ECM_response without ECM_datagram")
	}
	return ECM{Stream: uint16(s), CP: uint16(cp), Datagram: append([]byte(nil), d...)}, nil
}
