package simulcrypt

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

// NewChannelError builds a channel_error: ECM_channel_id, error_status (a code of TS 103 197,
// table 4).
func NewChannelError(version uint8, channel, status uint16) Message {
	m := Message{Version: version, Type: ChannelError}
	m.Add(ParamECMChannelID, u16(channel)).Add(ParamErrorStatus, u16(status))
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

// NewStreamError builds a stream_error: ECM_channel_id, ECM_stream_id, error_status (a code of
// TS 103 197, table 4).
func NewStreamError(version uint8, channel, stream, status uint16) Message {
	m := Message{Version: version, Type: StreamError}
	m.Add(ParamECMChannelID, u16(channel)).Add(ParamECMStreamID, u16(stream)).Add(ParamErrorStatus, u16(status))
	return m
}

// CPCW is one CP_CW_combination: a crypto period's number and its control word. Its fields are
// those of the public simulcrypt.CPCW, which the client converts to it: keep them the same.
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
