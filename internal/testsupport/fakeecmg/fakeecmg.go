// Package fakeecmg is a scripted ECMG for tests, written in Go: the example ECMG's ECMs (see
// internal/testsupport/ecmgtest), with an error reply or a closed connection where a test wants one.
package fakeecmg

import (
	"encoding/binary"
	"net"
	"testing"
	"time"

	"github.com/tsdescramble/tsdescramble/internal/testsupport/ecmgtest"
	sc "github.com/tsdescramble/tsdescramble/simulcrypt"
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
}

// Start serves SCS connections on 127.0.0.1 until t ends, as a scripted ECMG written in Go:
// its ECMs are the example ECMG's (the CWs XORed with ecmgtest.XORKey, table_id by the CP's parity),
// lead_CW 1 and CW_per_msg 2. It returns the address.
func Start(t testing.TB, fc Config) string {
	errAt, closeAt := fc.ErrorAt, fc.CloseAt
	if fc.RepPeriod == 0 {
		fc.RepPeriod = 100 * time.Millisecond
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
				reply.Add(sc.ParamECMChannelID, u16(1)).Add(sc.ParamSectionTSPkt, []byte{0}).
					Add(sc.ParamDelayStart, u16(uint16(int16(fc.DelayStart.Milliseconds())))).Add(sc.ParamDelayStop, u16(0)).
					Add(sc.ParamECMRepPeriod, u16(uint16(fc.RepPeriod.Milliseconds()))).Add(sc.ParamMaxStreams, u16(1)).
					Add(sc.ParamMinCPDuration, u16(1)).Add(sc.ParamLeadCW, []byte{1}).
					Add(sc.ParamCWPerMsg, []byte{2}).Add(sc.ParamMaxCompTime, u16(10))
			case sc.StreamSetup:
				reply.Type = sc.StreamStatus
				reply.Add(sc.ParamECMChannelID, u16(1)).Add(sc.ParamECMStreamID, u16(1)).
					Add(sc.ParamECMID, u16(1)).Add(sc.ParamACTransferMode, []byte{1})
			case sc.StreamCloseRequest:
				reply.Type = sc.StreamCloseResponse
				reply.Add(sc.ParamECMChannelID, u16(1)).Add(sc.ParamECMStreamID, u16(1))
			case sc.CWProvision:
				cp, _ := m.Uint(sc.ParamCPNumber, 2)
				if int(cp) == fc.LateAt {
					time.Sleep(fc.Late)
				}
				if int(cp) == closeAt {
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
				reply.Type = sc.ECMResponse
				reply.Add(sc.ParamECMChannelID, u16(1)).Add(sc.ParamECMStreamID, u16(1)).
					Add(sc.ParamCPNumber, u16(uint16(cp))).Add(sc.ParamECMDatagram, sec)
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
			serve(conn, i == 0)
		}
	}()
	return l.Addr().String()
}
