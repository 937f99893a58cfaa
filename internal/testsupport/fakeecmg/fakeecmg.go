// Package fakeecmg is a scripted ECMG for tests, written in Go: the example ECMG's ECMs (see
// internal/testsupport/ecmgtest), with the misbehaviour a test wants: an error reply, a closed
// connection, a late, missing or misnumbered ECM, ECMs in TS packets with bad headers or sizes,
// channel parameters no receiver can follow.
package fakeecmg

import (
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"

	"github.com/tsdescramble/tsdescramble/internal/testsupport/ecmgtest"
	sc "github.com/tsdescramble/tsdescramble/internal/wire/simulcrypt"
)

// Config scripts a fake ECMG.
type Config struct {
	// ErrorAt is the crypto period whose CW_provision gets a stream_error (not enough control
	// words), CloseAt the one at which the connection closes; -1 for none.
	ErrorAt, CloseAt int
	// LateAt is the crypto period whose ECM comes Late after its CW_provision (and the ECMs
	// after it with it); -1 for none. The zero Config has every period on time only when
	// ErrorAt, CloseAt and LateAt are set to -1.
	LateAt int
	Late   time.Duration
	// DelayStart and RepPeriod are what its channel_status says (RepPeriod 0: 100 ms).
	DelayStart, RepPeriod time.Duration
	// Connections is how many connections it serves one after the other (0: one); the
	// script (ErrorAt, CloseAt, LateAt) applies to the first alone.
	Connections int
	// Outage is how long it is away after a connection ends before it answers the next one
	// (which may have come meanwhile).
	Outage time.Duration

	// The misbehaviours below are off in the zero Config, and apply to every connection.

	// Silent: no CW_provision gets an answer (channel_test still does).
	Silent bool
	// CPOffset is added to the CP_number of every ECM_response: ECMs for periods not asked for.
	CPOffset int
	// LeadCW and CWPerMsg are what its channel_status says (CWPerMsg 0: lead_CW 1, CW_per_msg 2).
	LeadCW, CWPerMsg int
	// Packets: section_TSpkt_flag 1, each ECM section sent in TS packets (PID 0x1FFF, stuffed
	// with 0xFF), as an ECMG that leaves the header for the SCS to set.
	Packets bool
	// Datagram, when set, gives the ECM_datagram of crypto period cp from the one the ECMG
	// built: a test's bad header bytes, bad sizes or oversized ECMs.
	Datagram func(cp int, d []byte) []byte
}

// Packetize puts a section in TS packets as an ECMG with section_TSpkt_flag 1 does: PID
// 0x1FFF, the first packet with payload_unit_start_indicator and pointer_field 0, the rest of
// the last packet stuffed with 0xFF.
func Packetize(sec []byte) []byte {
	var out []byte
	for first, cc := true, 0; first || len(sec) > 0; first, cc = false, cc+1 {
		p := make([]byte, 188)
		p[0], p[1], p[2], p[3] = 0x47, 0x1F, 0xFF, 0x10|byte(cc&0xF)
		w := 4
		if first {
			p[1] |= 0x40
			w = 5 // pointer_field 0
		}
		n := copy(p[w:], sec)
		sec = sec[n:]
		for i := w + n; i < 188; i++ {
			p[i] = 0xFF
		}
		out = append(out, p...)
	}
	return out
}

// Start serves SCS connections on 127.0.0.1 until t ends, as a scripted ECMG written in Go:
// its ECMs are the example ECMG's (the CWs XORed with ecmgtest.XORKey, table_id by the CP's parity),
// lead_CW 1 and CW_per_msg 2. It returns the address.
func Start(t testing.TB, fc Config) string {
	errAt, closeAt := fc.ErrorAt, fc.CloseAt
	if fc.RepPeriod == 0 {
		fc.RepPeriod = 100 * time.Millisecond
	}
	if fc.CWPerMsg == 0 {
		fc.LeadCW, fc.CWPerMsg = 1, 2
	}
	tspkt := byte(0)
	if fc.Packets {
		tspkt = 1
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { l.Close(); <-done })
	serve := func(conn net.Conn, first bool) {
		defer conn.Close()
		if !first {
			errAt, closeAt, fc.LateAt = -1, -1, -1
		}
		conn.SetDeadline(time.Now().Add(30 * time.Second))
		u16 := func(v uint16) []byte { return binary.BigEndian.AppendUint16(nil, v) }
		var buf []byte
		tmp := make([]byte, 4096)
		for {
			m, n, err := sc.Parse(buf)
			if err == sc.ErrShort {
				k, err := conn.Read(tmp)
				if err != nil {
					return
				}
				buf = append(buf, tmp[:k]...)
				continue
			}
			if err != nil {
				return
			}
			buf = buf[n:]
			reply := sc.Message{Version: m.Version}
			switch m.Type {
			case sc.ChannelSetup, sc.ChannelTest:
				reply.Type = sc.ChannelStatus
				reply.Add(sc.ParamECMChannelID, u16(1)).Add(sc.ParamSectionTSPkt, []byte{tspkt}).
					Add(sc.ParamDelayStart, u16(uint16(int16(fc.DelayStart.Milliseconds())))).Add(sc.ParamDelayStop, u16(0)).
					Add(sc.ParamECMRepPeriod, u16(uint16(fc.RepPeriod.Milliseconds()))).Add(sc.ParamMaxStreams, u16(1)).
					Add(sc.ParamMinCPDuration, u16(1)).Add(sc.ParamLeadCW, []byte{byte(fc.LeadCW)}).
					Add(sc.ParamCWPerMsg, []byte{byte(fc.CWPerMsg)}).Add(sc.ParamMaxCompTime, u16(10))
			case sc.StreamSetup:
				reply.Type = sc.StreamStatus
				reply.Add(sc.ParamECMChannelID, u16(1)).Add(sc.ParamECMStreamID, u16(1)).
					Add(sc.ParamECMID, u16(1)).Add(sc.ParamACTransferMode, []byte{1})
			case sc.StreamCloseRequest:
				reply.Type = sc.StreamCloseResponse
				reply.Add(sc.ParamECMChannelID, u16(1)).Add(sc.ParamECMStreamID, u16(1))
			case sc.CWProvision:
				cp, _ := m.Uint(sc.ParamCPNumber, 2)
				if fc.Silent {
					continue
				}
				if int(cp) == fc.LateAt {
					time.Sleep(fc.Late)
				}
				if int(cp) == closeAt {
					closeCleanly(conn)
					return
				}
				if int(cp) == errAt {
					reply.Type = sc.StreamError
					reply.Add(sc.ParamECMChannelID, u16(1)).Add(sc.ParamECMStreamID, u16(1)).
						Add(sc.ParamErrorStatus, u16(0x000B))
					break
				}
				sec := []byte{0x80 | byte(cp&1), 0x70, 16}
				sec = append(sec, make([]byte, 16)...)
				for _, c := range m.All(sc.ParamCPCWCombination) {
					slot := 3 + 8*int(c[1]&1)
					for j := range 8 {
						sec[slot+j] = c[2+j] ^ ecmgtest.XORKey[j]
					}
				}
				d := sec
				if fc.Packets {
					d = Packetize(sec)
				}
				if fc.Datagram != nil {
					d = fc.Datagram(int(cp), d)
				}
				reply.Type = sc.ECMResponse
				reply.Add(sc.ParamECMChannelID, u16(1)).Add(sc.ParamECMStreamID, u16(1)).
					Add(sc.ParamCPNumber, u16(uint16(int(cp)+fc.CPOffset))).Add(sc.ParamECMDatagram, d)
			default:
				continue
			}
			if _, err := conn.Write(reply.Append(nil)); err != nil {
				return
			}
		}
	}
	go func() {
		defer close(done)
		for i := range max(1, fc.Connections) {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			if i > 0 {
				time.Sleep(fc.Outage)
			}
			serve(conn, i == 0)
		}
	}()
	return l.Addr().String()
}

// closeCleanly closes the ECMG's side as an ECMG that ends the connection does: the SCS reads
// its end (FIN). A close with a message of the SCS still unread in the socket, which comes the
// more often the busier the machine, would reset the connection instead, and the SCS would
// report a reset, not a close. What the SCS sends until it closes its side, or for a second,
// is read and dropped.
func closeCleanly(conn net.Conn) {
	tc, ok := conn.(*net.TCPConn)
	if !ok {
		return
	}
	tc.CloseWrite()
	tc.SetReadDeadline(time.Now().Add(time.Second))
	io.Copy(io.Discard, tc)
}
