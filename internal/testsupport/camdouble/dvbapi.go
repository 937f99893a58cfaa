package camdouble

import (
	"bufio"
	"encoding/binary"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/tsdescramble/tsdescramble/keyserver/dvbapi"
)

// DVBAPI is the server side of the DVBAPI network protocol (version 3) for tests, as a CAM
// daemon behaves: on a CA PMT it sets a section filter on each ECM PID of its CA descriptors
// (table 0x80/0x81, as OSCam does), and on each ECM of the test CA system it sends CA_SET_PID
// for the service's streams (once), CA_SET_DESCR_MODE (once, with Algo), and CA_SET_DESCR for
// each parity whose key changed; an ECM that changes no key gets no answer at all.
type DVBAPI struct {
	tcpServer

	mu       sync.Mutex
	algo     uint32
	delay    time.Duration
	received [][]byte // the raw messages received after CLIENT_INFO, in order
	greeting []byte
	ecms     [][]byte
	stopOn   func(ecm []byte) bool // SetStopOn
	skip     func(ecm []byte) bool // SetSkip
}

// NewDVBAPI starts a server on a loopback port; the test's cleanup stops it.
func NewDVBAPI(t testing.TB) *DVBAPI {
	return NewDVBAPIAt(t, "127.0.0.1:0")
}

// NewDVBAPIAt starts a server like NewDVBAPI on the given loopback address.
func NewDVBAPIAt(t testing.TB, addr string) *DVBAPI {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	s := &DVBAPI{}
	s.serve(ln, s.handle)
	t.Cleanup(s.Stop)
	return s
}

// SetAlgo makes the server ask for algo in its CA_SET_DESCR_MODE (dvbapi.AlgoCSA by default).
func (s *DVBAPI) SetAlgo(algo uint32) {
	s.mu.Lock()
	s.algo = algo
	s.mu.Unlock()
}

// SetDelay makes the server wait d before answering an ECM.
func (s *DVBAPI) SetDelay(d time.Duration) {
	s.mu.Lock()
	s.delay = d
	s.mu.Unlock()
}

// SetStopOn makes the server go away, as a CAM daemon that crashes, at the first ECM for which
// f is true: it answers that one with nothing and stops (Stop).
func (s *DVBAPI) SetStopOn(f func(ecm []byte) bool) {
	s.mu.Lock()
	s.stopOn = f
	s.mu.Unlock()
}

// SetSkip makes the server answer nothing to the ECMs for which f is true, as a card that
// cannot decode them (the next ECM's answer then brings the key of their period as the other
// parity's).
func (s *DVBAPI) SetSkip(f func(ecm []byte) bool) {
	s.mu.Lock()
	s.skip = f
	s.mu.Unlock()
}

// Greeting returns the CLIENT_INFO bytes the last client sent.
func (s *DVBAPI) Greeting() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]byte(nil), s.greeting...)
}

// Received returns the messages received after the greeting, 0xA5 framing included.
func (s *DVBAPI) Received() [][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([][]byte(nil), s.received...)
}

// ECMs returns the ECM sections received in FILTER_DATA, in order.
func (s *DVBAPI) ECMs() [][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([][]byte(nil), s.ecms...)
}

// msg frames a server message: 0xA5, message id, opcode, adapter 0 (not for SERVER_INFO), body.
func msg(id, opcode uint32, body ...byte) []byte {
	b := []byte{0xA5}
	b = binary.BigEndian.AppendUint32(b, id)
	b = binary.BigEndian.AppendUint32(b, opcode)
	if opcode != dvbapi.OpServerInfo {
		b = append(b, 0)
	}
	return append(b, body...)
}

func (s *DVBAPI) handle(c net.Conn) {
	r := bufio.NewReader(c)
	// CLIENT_INFO: opcode, version, name length, name; never framed.
	head := make([]byte, 7)
	if _, err := io.ReadFull(r, head); err != nil || binary.BigEndian.Uint32(head) != dvbapi.OpClientInfo {
		return
	}
	name := make([]byte, head[6])
	if _, err := io.ReadFull(r, name); err != nil {
		return
	}
	s.mu.Lock()
	s.greeting = append(head, name...)
	s.mu.Unlock()
	info := "camdouble; protocol test server"
	body := binary.BigEndian.AppendUint16(nil, dvbapi.ProtocolVersion)
	body = append(append(body, byte(len(info))), info...)
	if _, err := c.Write(msg(0, dvbapi.OpServerInfo, body...)); err != nil {
		return
	}
	var (
		streams  []uint16
		pidsSent bool
		modeSent bool
		lastCW   [2][]byte
	)
	for {
		hdr := make([]byte, 5+4)
		if _, err := io.ReadFull(r, hdr); err != nil || hdr[0] != 0xA5 {
			return
		}
		id := binary.BigEndian.Uint32(hdr[1:])
		raw := append([]byte(nil), hdr...)
		switch op := binary.BigEndian.Uint32(hdr[5:]); {
		case op>>8 == 0x9F8032:
			// CA PMT: ASN.1 length (its first byte is the opcode's last), then ca_pmt.
			n := int(op & 0xFF)
			if n&0x80 != 0 {
				k := n & 0x7F
				lb := make([]byte, k)
				if k > 2 || k == 0 {
					return
				}
				if _, err := io.ReadFull(r, lb); err != nil {
					return
				}
				raw = append(raw, lb...)
				n = 0
				for _, x := range lb {
					n = n<<8 | int(x)
				}
			}
			b := make([]byte, n)
			if _, err := io.ReadFull(r, b); err != nil {
				return
			}
			raw = append(raw, b...)
			s.record(raw)
			ecmPIDs, es, demux, ok := parseCAPMT(b)
			if !ok {
				return
			}
			streams = es
			for i, pid := range ecmPIDs {
				f := binary.BigEndian.AppendUint16([]byte{demux, byte(i)}, pid)
				var flt [48]byte
				flt[0], flt[16] = 0x80, 0xF0 // table_id 0x80 or 0x81
				f = append(f, flt[:]...)
				f = append(f, 0, 0, 0, 0, 0, 0, 0, 1)
				if _, err := c.Write(msg(id, dvbapi.OpDMXSetFilter, f...)); err != nil {
					return
				}
			}
		case op == 0x9F803F04:
			rest := make([]byte, 4)
			if _, err := io.ReadFull(r, rest); err != nil {
				return
			}
			s.record(append(raw, rest...))
		case op == dvbapi.OpFilterData:
			b := make([]byte, 2+3)
			if _, err := io.ReadFull(r, b); err != nil {
				return
			}
			n := int(b[3]&0x0F)<<8 | int(b[4])
			sec := make([]byte, n)
			if _, err := io.ReadFull(r, sec); err != nil {
				return
			}
			section := append(b[2:5:5], sec...)
			s.record(append(append(raw, b[:2]...), section...))
			s.mu.Lock()
			s.ecms = append(s.ecms, section)
			delay, algo, stopOn, skip := s.delay, s.algo, s.stopOn, s.skip
			s.mu.Unlock()
			if stopOn != nil && stopOn(section) {
				go s.Stop() // Stop waits for this goroutine
				return
			}
			if skip != nil && skip(section) {
				continue
			}
			cw, err := AnswerECM(section)
			if err != nil {
				continue
			}
			if delay > 0 {
				select {
				case <-time.After(delay):
				case <-s.done:
					return
				}
			}
			var out []byte
			if !pidsSent {
				for _, pid := range streams {
					out = append(out, msg(id, dvbapi.OpCASetPID, 0, 0, byte(pid>>8), byte(pid), 0, 0, 0, 0)...)
				}
				pidsSent = true
			}
			if !modeSent {
				m := binary.BigEndian.AppendUint32([]byte{0, 0, 0, 0}, algo)
				out = append(out, msg(id, dvbapi.OpCASetDescrMode, append(m, 0, 0, 0, 0)...)...)
				modeSent = true
			}
			for parity := range 2 {
				key := cw[8*parity : 8*parity+8]
				if [8]byte(key) == [8]byte{} || string(key) == string(lastCW[parity]) {
					continue // no key, or no change: a server stays silent
				}
				lastCW[parity] = append([]byte(nil), key...)
				d := []byte{0, 0, 0, 0, 0, 0, 0, byte(parity)}
				out = append(out, msg(id, dvbapi.OpCASetDescr, append(d, key...)...)...)
			}
			if len(out) > 0 {
				if _, err := c.Write(out); err != nil {
					return
				}
			}
		default:
			return // not a message this server knows: a real server would drop the client too
		}
	}
}

func (s *DVBAPI) record(b []byte) {
	s.mu.Lock()
	s.received = append(s.received, b)
	s.mu.Unlock()
}

// parseCAPMT reads the ECM PIDs of the CA descriptors, the elementary PIDs and the demux index
// (descriptor 0x86) of a ca_pmt.
func parseCAPMT(b []byte) (ecmPIDs, streams []uint16, demux uint8, ok bool) {
	if len(b) < 6 {
		return nil, nil, 0, false
	}
	infoLen := int(b[4]&0x0F)<<8 | int(b[5])
	if 6+infoLen > len(b) {
		return nil, nil, 0, false
	}
	descs := func(loop []byte) {
		for len(loop) >= 2 && 2+int(loop[1]) <= len(loop) {
			tag, body := loop[0], loop[2:2+int(loop[1])]
			switch {
			case tag == 0x09 && len(body) >= 4:
				ecmPIDs = append(ecmPIDs, uint16(body[2]&0x1F)<<8|uint16(body[3]))
			case tag == 0x86 && len(body) == 1:
				demux = body[0]
			}
			loop = loop[2+int(loop[1]):]
		}
	}
	if infoLen > 0 {
		descs(b[7 : 6+infoLen]) // after ca_pmt_cmd_id
	}
	for es := b[6+infoLen:]; len(es) >= 5; {
		pid := uint16(es[1]&0x1F)<<8 | uint16(es[2])
		n := int(es[3]&0x0F)<<8 | int(es[4])
		if 5+n > len(es) {
			return nil, nil, 0, false
		}
		streams = append(streams, pid)
		if n > 1 {
			descs(es[6 : 5+n])
		}
		es = es[5+n:]
	}
	return ecmPIDs, streams, demux, true
}
