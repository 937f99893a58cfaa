package simulcrypt

import (
	"fmt"
	"time"

	wire "github.com/tsdescramble/tsdescramble/internal/wire/simulcrypt"
)

// What the client reads from the ECMG's replies. The readers are here, not beside the codec,
// because what they build is the client's API.

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
func parseChannelStatus(m *wire.Message) (ChannelParams, error) {
	var p ChannelParams
	var err error
	get := func(t wire.ParamType, size int) uint32 {
		v, e := m.Uint(t, size)
		if e != nil && err == nil {
			err = e
		}
		return v
	}
	ms := func(v uint32) time.Duration { return time.Duration(int16(uint16(v))) * time.Millisecond }
	opt := func(t wire.ParamType) *time.Duration {
		if _, ok := m.Find(t); !ok {
			return nil
		}
		d := ms(get(t, 2))
		return &d
	}
	p.Channel = uint16(get(wire.ParamECMChannelID, 2))
	p.Packets = get(wire.ParamSectionTSPkt, 1) != 0
	p.DelayStart = ms(get(wire.ParamDelayStart, 2))
	p.DelayStop = ms(get(wire.ParamDelayStop, 2))
	p.TransitionDelayStart, p.TransitionDelayStop = opt(wire.ParamTransitionDelayStart), opt(wire.ParamTransitionDelayStop)
	p.ACDelayStart, p.ACDelayStop = opt(wire.ParamACDelayStart), opt(wire.ParamACDelayStop)
	p.RepPeriod = time.Duration(get(wire.ParamECMRepPeriod, 2)) * time.Millisecond
	if _, ok := m.Find(wire.ParamMaxStreams); ok {
		p.MaxStreams = uint16(get(wire.ParamMaxStreams, 2))
	}
	p.MinCPDuration = time.Duration(get(wire.ParamMinCPDuration, 2)) * 100 * time.Millisecond
	p.LeadCW = int(get(wire.ParamLeadCW, 1))
	p.CWPerMsg = int(get(wire.ParamCWPerMsg, 1))
	p.MaxCompTime = time.Duration(get(wire.ParamMaxCompTime, 2)) * time.Millisecond
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

func parseECMResponse(m *wire.Message) (ECM, error) {
	var e ECM
	s, err := m.Uint(wire.ParamECMStreamID, 2)
	if err != nil {
		return e, err
	}
	cp, err := m.Uint(wire.ParamCPNumber, 2)
	if err != nil {
		return e, err
	}
	d, ok := m.Find(wire.ParamECMDatagram)
	if !ok || len(d) == 0 {
		return e, fmt.Errorf("ECM_response without ECM_datagram")
	}
	return ECM{Stream: uint16(s), CP: uint16(cp), Datagram: append([]byte(nil), d...)}, nil
}
