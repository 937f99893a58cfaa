package camdouble

import (
	"bufio"
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"

	"github.com/tsdescramble/tsdescramble/internal/wire/cs378x"
	"github.com/tsdescramble/tsdescramble/internal/wire/dvbapi"
)

// DVBAPI is the server side of the DVBAPI network protocol (version 3) for tests, as a CAM
// daemon behaves: on a CA PMT it sets a section filter on each ECM PID of its CA descriptors
// (table 0x80/0x81, as OSCam does), and on each ECM of the test CA system it sends CA_SET_PID
// for the service's streams (once), CA_SET_DESCR_MODE (once, with Algo), and CA_SET_DESCR for
// each parity whose key changed; an ECM that changes no key gets no answer at all. What the
// keys of an ECM are is SetAnswer's (by default the test CA system's card, TestCAAnswer), and an
// ECM it gives no CWs for gets nothing (OSCam's DVBAPI module tells its client nothing of an
// ECM it found no key for);
// SetOSCam makes it send what OSCam's DVBAPI module sends, message for message; SetModes makes
// it write each key in a descrambler mode, as OSCam's extended CW API does.
type DVBAPI struct {
	tcpServer

	answers
	modes    func(ecm []byte) Mode // SetModes
	algo     uint32
	received [][]byte // the raw messages received after CLIENT_INFO, in order
	sent     []uint32 // the opcodes of the messages sent after SERVER_INFO, in order
	greeting []byte
	ecms     [][]byte
	stopOn   func(ecm []byte) bool // SetStopOn
	skip     func(ecm []byte) bool // SetSkip
	oscam    bool                  // SetOSCam
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
	s := &DVBAPI{answers: answers{answer: TestCAAnswer}}
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

// Mode is a descrambler mode in which a server writes the keys of an ECM's answer.
type Mode struct {
	Algo, Cipher uint32 // CA_SET_DESCR_MODE's algorithm and cipher mode (dvbapi.AlgoCSA, ...)
	// IV, when set, is written before each key in CA_SET_DESCR_DATA (OSCam writes one for
	// AES-128, DVB-CISSA's for BISS2; another algorithm's IV is this double's own).
	IV []byte
	// Key gives the key written for an 8-byte CW of the answer (nil: the CW itself): the
	// test CA system's ECMs carry 8-byte CWs, and AES-128 takes 16-byte keys.
	Key func(cw []byte) []byte
}

// SetModes makes the server write the keys of each ECM's answer in the mode f gives for that
// ECM, as OSCam's DVBAPI module does with extended_cw_api 1 (dvbapi_write_cw): for each half
// of the pair it writes, CA_SET_DESCR_MODE (index 0, algorithm, cipher mode), then for AES-128
// CA_SET_DESCR_DATA with the IV and CA_SET_DESCR_DATA with the 16-byte key, for any other
// algorithm CA_SET_DESCR with the 8-byte key. The IV's message carries parity 0, as OSCam's
// does: dvbapi_write_cw sets ca_descr_data.parity for the key only, so its IV has the parity
// of the key written before it in the answer, 0 for the first, and 0 too on a connection's
// one descrambler index. It applies with SetOSCam as without, in place of SetAlgo's mode.
func (s *DVBAPI) SetModes(f func(ecm []byte) Mode) {
	s.mu.Lock()
	s.modes = f
	s.mu.Unlock()
}

// writeKey returns the messages that write CW cw of parity n in mode m: CA_SET_DESCR_MODE,
// then the IV and the key in CA_SET_DESCR_DATA for AES-128, else the key in CA_SET_DESCR.
func writeKey(id uint32, n int, cw []byte, m Mode) [][]byte {
	key := cw
	if m.Key != nil {
		key = m.Key(cw)
	}
	mode := binary.BigEndian.AppendUint32([]byte{0, 0, 0, 0}, m.Algo)
	out := [][]byte{msg(id, dvbapi.OpCASetDescrMode, binary.BigEndian.AppendUint32(mode, m.Cipher)...)}
	data := func(parity, typ uint32, b []byte) []byte {
		d := []byte{0, 0, 0, 0}
		d = binary.BigEndian.AppendUint32(d, parity)
		d = binary.BigEndian.AppendUint32(d, typ)
		d = binary.BigEndian.AppendUint32(d, uint32(len(b)))
		return msg(id, dvbapi.OpCASetDescrData, append(d, b...)...)
	}
	if m.IV != nil {
		out = append(out, data(0, dvbapi.DataIV, m.IV))
	}
	if m.Algo == dvbapi.AlgoAES128 {
		return append(out, data(uint32(n), dvbapi.DataKey, key))
	}
	d := []byte{0, 0, 0, 0, 0, 0, 0, byte(n)}
	return append(out, msg(id, dvbapi.OpCASetDescr, append(d, key...)...))
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

// SetOSCam makes the server send what OSCam's DVBAPI module (module-dvbapi.c, network mode:
// boxtype pc, listen_port, extended_cw_api 0) sent on loopback, for the connections that begin
// after, instead of the simpler answers described at DVBAPI:
//
//   - The first ECM filter takes tables 0x80 and 0x81 (value 0x80, mask 0xF0). An ECM whose
//     table_id is that of the last ECM it asked a key for is not asked for: the filter is set
//     again to the other table, and nothing else is sent (dvbapi_process_input: "wait for odd /
//     even ecm change"). For any other ECM the filter is set to the other table at once
//     (request_cw and dvbapi_set_section_filter: value 0x81 after an even ECM, 0x80 after an
//     odd one, mask 0xFF), before the key is looked up.
//   - An answer whose pair is the pair last written, or that pair swapped, is a duplicate: no
//     message at all, not even ECM_INFO (dvbapi_send_dcw, "duplicate controlword", which
//     skips the write and the ECM_INFO). A constant-CW reader therefore gets its client one
//     CA_SET_DESCR per parity for the whole run: on loopback, 6 ECMs answered with the same
//     pair gave 2 CA_SET_DESCR and 1 ECM_INFO. (An answer to an ECM older than the last one
//     asked for on its filter skips that check, dvbapi_check_ecm_delayed_delivery: it gets
//     ECM_INFO, and CA_SET_DESCR only for a changed half. A file read faster than OSCam answers
//     saw that: 2 CA_SET_DESCR and 4 ECM_INFO for 32 ECMs. This server answers each ECM before
//     it reads the next, so its answers are never older.)
//   - Otherwise, before the first key, CA_SET_PID for each stream of the service, index -1
//     then index 0 (dvbapi_ca_set_pid, dvbapi_set_pid); CA_SET_DESCR (index 0) for each half
//     of the pair that differs from the one last written for its parity, both halves the first
//     time, never an all-zero half (dvbapi_write_cw); no CA_SET_DESCR_MODE (written only with
//     extended_cw_api); then ECM_INFO (dvbapi_net_send DVBAPI_ECM_INFO, to clients of
//     protocol version 2 and up).
//
// A slot keeps its CW until CA_SET_DESCR replaces it, as a hardware descrambler's does: a client
// that waits for a CW to be sent again waits for ever.
func (s *DVBAPI) SetOSCam(on bool) {
	s.mu.Lock()
	s.oscam = on
	s.mu.Unlock()
}

// SentOps returns the opcodes of the messages the server sent after SERVER_INFO, in order, over
// all connections.
func (s *DVBAPI) SentOps() []uint32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]uint32(nil), s.sent...)
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
	s.mu.Lock()
	oscam := s.oscam
	s.mu.Unlock()
	var (
		capmt    caPMT
		pidsSent bool
		modeSent bool
		lastCW   [2][]byte
		ost      oscamState
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
			var ok bool
			if capmt, ok = parseCAPMT(b); !ok {
				return
			}
			for i, pid := range capmt.ecmPIDs {
				f := ecmFilter(capmt.demux, byte(i), pid, 0x80, 0xF0) // table_id 0x80 or 0x81
				if oscam {
					f = append(f, 0, 0, 0x0B, 0xB8, 0, 0, 0, 4) // timeout 3000 ms, DMX_IMMEDIATE_START
				} else {
					f = append(f, 0, 0, 0, 0, 0, 0, 0, 1)
				}
				if err := s.send(c, msg(id, dvbapi.OpDMXSetFilter, f...)); err != nil {
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
			delay, algo, stopOn, skip, answer, modes := s.delay, s.algo, s.stopOn, s.skip, s.answer, s.modes
			s.mu.Unlock()
			if stopOn != nil && stopOn(section) {
				go s.Stop() // Stop waits for this goroutine
				return
			}
			if oscam {
				// Only an ECM of the other table than the last one asked for is asked for; the
				// filter is set to the next table either way.
				ask := section[0] != ost.table
				if ask {
					ost.table = section[0]
				}
				f := ecmFilter(b[0], b[1], capmtECMPID(capmt, b[1]), 0x81^(section[0]&1), 0xFF)
				if err := s.send(c, msg(id, dvbapi.OpDMXSetFilter, append(f, 0, 0, 0, 0, 0, 0, 0, 4)...)); err != nil {
					return
				}
				if !ask {
					continue
				}
			}
			if skip != nil && skip(section) {
				continue
			}
			cmd, cw, drop := answer(section)
			if drop || cmd != cs378x.CmdCW {
				continue
			}
			if delay > 0 {
				select {
				case <-time.After(delay):
				case <-s.done:
					return
				}
			}
			var mode *Mode
			if modes != nil {
				m := modes(section)
				mode = &m
			}
			if oscam {
				if err := s.send(c, ost.answer(id, cw, &capmt, b[1], mode)...); err != nil {
					return
				}
				continue
			}
			var out []byte
			if !pidsSent {
				for _, pid := range capmt.streams {
					out = append(out, msg(id, dvbapi.OpCASetPID, 0, 0, byte(pid>>8), byte(pid), 0, 0, 0, 0)...)
				}
				pidsSent = true
			}
			if !modeSent && mode == nil {
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
				if mode != nil {
					for _, m := range writeKey(id, parity, key, *mode) {
						out = append(out, m...)
					}
					continue
				}
				d := []byte{0, 0, 0, 0, 0, 0, 0, byte(parity)}
				out = append(out, msg(id, dvbapi.OpCASetDescr, append(d, key...)...)...)
			}
			if len(out) > 0 {
				if err := s.send(c, out); err != nil {
					return
				}
			}
		default:
			return // not a message this server knows: a real server would drop the client too
		}
	}
}

// send writes messages to c, one write, and records their opcodes.
func (s *DVBAPI) send(c net.Conn, msgs ...[]byte) error {
	var out []byte
	s.mu.Lock()
	for _, m := range msgs {
		for b := m; len(b) >= 9; {
			op := binary.BigEndian.Uint32(b[5:])
			s.sent = append(s.sent, op)
			n := msgLen(op, b)
			if n <= 0 || n > len(b) {
				break
			}
			b = b[n:]
		}
		out = append(out, m...)
	}
	s.mu.Unlock()
	if len(out) == 0 {
		return nil
	}
	_, err := c.Write(out)
	return err
}

// msgLen returns the length of the server message at the start of b (opcode op), or 0 for one
// this server does not send.
func msgLen(op uint32, b []byte) int {
	const head = 9 + 1 // 0xA5, message id, opcode, adapter
	switch op {
	case dvbapi.OpDMXSetFilter:
		return head + 2 + 2 + 48 + 8
	case dvbapi.OpCASetPID:
		return head + 8
	case dvbapi.OpCASetDescr:
		return head + 16
	case dvbapi.OpCASetDescrMode:
		return head + 12
	case dvbapi.OpCASetDescrData:
		if len(b) < head+16 {
			return 0
		}
		return head + 16 + int(binary.BigEndian.Uint32(b[head+12:]))
	case dvbapi.OpECMInfo:
		n := head + 14
		for range 4 {
			if n >= len(b) {
				return 0
			}
			n += 1 + int(b[n])
		}
		return n + 1
	}
	return 0
}

// ecmFilter returns the start of a DMX_SET_FILTER body: demux, filter number, PID, and a filter
// on table_id (value, mask; mode 0), without timeout and flags.
func ecmFilter(demux, num byte, pid uint16, table, mask byte) []byte {
	f := binary.BigEndian.AppendUint16([]byte{demux, num}, pid)
	var flt [48]byte
	flt[0], flt[16] = table, mask
	return append(f, flt[:]...)
}

// capmtECMPID returns the ECM PID of filter number num (the CA descriptors' order), or 0.
func capmtECMPID(p caPMT, num byte) uint16 {
	if int(num) < len(p.ecmPIDs) {
		return p.ecmPIDs[num]
	}
	return 0
}

// oscamState is what SetOSCam's server keeps per connection.
type oscamState struct {
	table    byte      // table_id of the last ECM a key was asked for (0: none yet)
	pidsSent bool      // CA_SET_PID sent
	last     [2][]byte // the CW written for each parity (CA_SET_DESCR), or nil
}

// answer returns the messages OSCam sends for a key found for an ECM: nothing for the pair last
// written (dvbapi_send_dcw), else CA_SET_PID the first time, CA_SET_DESCR for each half that
// changed (dvbapi_write_cw), or with a mode (extended_cw_api 1) the messages writeKey gives,
// and ECM_INFO.
func (st *oscamState) answer(id uint32, cw [16]byte, p *caPMT, num byte, mode *Mode) [][]byte {
	var zero [8]byte
	last := func(n int) []byte {
		if st.last[n] == nil {
			return zero[:]
		}
		return st.last[n]
	}
	even, odd := cw[:8], cw[8:]
	if string(even) == string(last(0)) && string(odd) == string(last(1)) ||
		string(even) == string(last(1)) && string(odd) == string(last(0)) {
		return nil // a duplicate: nothing is written, no ECM_INFO
	}
	var out [][]byte
	if !st.pidsSent {
		for _, pid := range p.streams {
			out = append(out,
				msg(0, dvbapi.OpCASetPID, 0, 0, byte(pid>>8), byte(pid), 0xFF, 0xFF, 0xFF, 0xFF),
				msg(0, dvbapi.OpCASetPID, 0, 0, byte(pid>>8), byte(pid), 0, 0, 0, 0))
		}
		st.pidsSent = true
	}
	empty := st.last[0] == nil && st.last[1] == nil
	for n, half := range [][]byte{even, odd} {
		if string(half) == string(zero[:]) || !empty && string(half) == string(last(n)) {
			continue
		}
		st.last[n] = append([]byte(nil), half...)
		if mode != nil {
			out = append(out, writeKey(id, n, half, *mode)...)
			continue
		}
		d := []byte{0, 0, 0, 0, 0, 0, 0, byte(n)}
		out = append(out, msg(id, dvbapi.OpCASetDescr, append(d, half...)...))
	}
	info := binary.BigEndian.AppendUint16(nil, p.program)
	info = binary.BigEndian.AppendUint16(info, p.caid(num))
	info = binary.BigEndian.AppendUint16(info, capmtECMPID(*p, num))
	info = append(info, 0, 0, 0, 0, 0, 0, 0, 1) // provider 0, ECM time 1 ms
	for _, str := range []string{"camdouble", "camdouble", "local", "camdouble"} {
		info = append(append(info, byte(len(str))), str...)
	}
	out = append(out, msg(0, dvbapi.OpECMInfo, append(info, 0)...)) // hops 0
	return out
}

func (s *DVBAPI) record(b []byte) {
	s.mu.Lock()
	s.received = append(s.received, b)
	s.mu.Unlock()
}

// caPMT is what the server reads of a ca_pmt.
type caPMT struct {
	program uint16
	ecmPIDs []uint16 // of the CA descriptors, in order
	caids   []uint16 // their CA system ids
	streams []uint16 // the elementary PIDs
	demux   uint8    // the demux index (descriptor 0x86)
}

// caid returns the CA system id of filter number num (the CA descriptors' order), or 0.
func (p *caPMT) caid(num byte) uint16 {
	if int(num) < len(p.caids) {
		return p.caids[num]
	}
	return 0
}

// parseCAPMT reads the program number, the ECM PIDs and CA system ids of the CA descriptors,
// the elementary PIDs and the demux index (descriptor 0x86) of a ca_pmt.
func parseCAPMT(b []byte) (p caPMT, ok bool) {
	if len(b) < 6 {
		return p, false
	}
	p.program = binary.BigEndian.Uint16(b[1:])
	infoLen := int(b[4]&0x0F)<<8 | int(b[5])
	if 6+infoLen > len(b) {
		return p, false
	}
	descs := func(loop []byte) {
		for len(loop) >= 2 && 2+int(loop[1]) <= len(loop) {
			tag, body := loop[0], loop[2:2+int(loop[1])]
			switch {
			case tag == 0x09 && len(body) >= 4:
				p.caids = append(p.caids, binary.BigEndian.Uint16(body))
				p.ecmPIDs = append(p.ecmPIDs, uint16(body[2]&0x1F)<<8|uint16(body[3]))
			case tag == 0x86 && len(body) == 1:
				p.demux = body[0]
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
			return p, false
		}
		p.streams = append(p.streams, pid)
		if n > 1 {
			descs(es[6 : 5+n])
		}
		es = es[5+n:]
	}
	return p, true
}
