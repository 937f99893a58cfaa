package probe

import (
	"bytes"
	"encoding/binary"

	"github.com/tsdescramble/tsdescramble/psi"
	"github.com/tsdescramble/tsdescramble/ts"
)

// Builders of small transport streams for the tests: PSI sections with their CRC, split into
// packets, and PES packets with chosen scrambling bits and PCRs.

// section returns a long-form PSI section (version 0, current, section 0 of 0) with its CRC_32.
func section(tableID byte, ext uint16, body []byte) []byte {
	n := 5 + len(body) + 4 // from after section_length to the end of the CRC
	s := []byte{tableID, 0xB0 | byte(n>>8), byte(n), byte(ext >> 8), byte(ext), 0xC1, 0x00, 0x00}
	s = append(s, body...)
	return binary.BigEndian.AppendUint32(s, psi.CRC32(s))
}

// caDesc returns a CA_descriptor.
func caDesc(system, pid uint16) []byte {
	return []byte{0x09, 4, byte(system >> 8), byte(system), 0xE0 | byte(pid>>8), byte(pid)}
}

func patSection(tsid uint16, progs ...uint16) []byte { // progs: number, PID, number, PID ...
	var b []byte
	for i := 0; i+1 < len(progs); i += 2 {
		b = append(b, byte(progs[i]>>8), byte(progs[i]), 0xE0|byte(progs[i+1]>>8), byte(progs[i+1]))
	}
	return section(0x00, tsid, b)
}

type esInfo struct {
	typ   byte
	pid   uint16
	descs []byte
}

func pmtSection(program, pcrPID uint16, progDescs []byte, es ...esInfo) []byte {
	b := []byte{0xE0 | byte(pcrPID>>8), byte(pcrPID), 0xF0 | byte(len(progDescs)>>8), byte(len(progDescs))}
	b = append(b, progDescs...)
	for _, e := range es {
		b = append(b, e.typ, 0xE0|byte(e.pid>>8), byte(e.pid), 0xF0|byte(len(e.descs)>>8), byte(len(e.descs)))
		b = append(b, e.descs...)
	}
	return section(0x02, program, b)
}

func catSection(descs []byte) []byte { return section(0x01, 0xFFFF, descs) }

type sdtEntry struct {
	id             uint16
	provider, name []byte
}

func sdtSection(tsid, onid uint16, svcs ...sdtEntry) []byte {
	b := []byte{byte(onid >> 8), byte(onid), 0xFF}
	for _, s := range svcs {
		d := []byte{0x48, byte(3 + len(s.provider) + len(s.name)), 0x01, byte(len(s.provider))}
		d = append(d, s.provider...)
		d = append(d, byte(len(s.name)))
		d = append(d, s.name...)
		b = append(b, byte(s.id>>8), byte(s.id), 0xFC, 0x80|byte(len(d)>>8), byte(len(d)))
		b = append(b, d...)
	}
	return section(0x42, tsid, b)
}

// streamBuilder appends 188-byte packets and keeps the continuity counter of each PID.
type streamBuilder struct {
	buf []byte
	cc  map[uint16]byte
}

func newStreamBuilder() *streamBuilder { return &streamBuilder{cc: map[uint16]byte{}} }

func (sb *streamBuilder) count() int { return len(sb.buf) / 188 }

func (sb *streamBuilder) next(pid uint16) byte {
	c := sb.cc[pid]
	sb.cc[pid] = (c + 1) & 0x0F
	return c
}

// psi appends a section as packets of pid: a pointer_field of 0, then the section, then 0xFF.
func (sb *streamBuilder) psi(pid uint16, sec []byte) {
	data := append([]byte{0}, sec...)
	for first := true; len(data) > 0; first = false {
		p := bytes.Repeat([]byte{0xFF}, 188)
		p[0], p[1], p[2], p[3] = 0x47, byte(pid>>8)&0x1F, byte(pid), 0x10|sb.next(pid)
		if first {
			p[1] |= 0x40
		}
		data = data[copy(p[4:], data):]
		sb.buf = append(sb.buf, p...)
	}
}

// pes appends a packet of pid with a payload, the scrambling bits tsc and, if pcr >= 0, an
// adaptation field carrying that PCR (in 27 MHz ticks, taken modulo the PCR period).
func (sb *streamBuilder) pes(pid uint16, tsc byte, pcr int64, discontinuity bool) {
	p := make([]byte, 188)
	p[0], p[1], p[2], p[3] = 0x47, byte(pid>>8)&0x1F, byte(pid), tsc<<6|0x10|sb.next(pid)
	off := 4
	if pcr >= 0 {
		pcr %= ts.PCRWrap
		base, ext := pcr/300, pcr%300
		p[3] |= 0x20
		p[4] = 7
		p[5] = 0x10
		if discontinuity {
			p[5] |= 0x80
		}
		p[6], p[7], p[8], p[9] = byte(base>>25), byte(base>>17), byte(base>>9), byte(base>>1)
		p[10] = byte(base&1)<<7 | 0x7E | byte(ext>>8)
		p[11] = byte(ext)
		off = 12
	}
	for i := off; i < 188; i++ {
		p[i] = byte(i*31 + int(pid))
		if p[i] == 0x47 {
			p[i] = 0x49
		}
	}
	sb.buf = append(sb.buf, p...)
}

// null appends a null packet.
func (sb *streamBuilder) null() {
	p := bytes.Repeat([]byte{0xFF}, 188)
	p[0], p[1], p[2], p[3] = 0x47, 0x1F, 0xFF, 0x10
	sb.buf = append(sb.buf, p...)
}

// reframe returns the 188-byte packets of ts as 192-byte packets (a 4-byte prefix before each)
// or 204-byte packets (16 bytes after each).
func reframe(ts []byte, size int) []byte {
	var out []byte
	for i := 0; i+188 <= len(ts); i += 188 {
		k := i / 188
		switch size {
		case 192:
			// A 30-bit time code, as M2TS carries: any value will do, 0x47 included.
			out = binary.BigEndian.AppendUint32(out, uint32(k*1500)&0x3FFFFFFF)
			out = append(out, ts[i:i+188]...)
		case 204:
			out = append(out, ts[i:i+188]...)
			out = append(out, bytes.Repeat([]byte{byte(k) | 0x80}, 16)...)
		default:
			out = append(out, ts[i:i+188]...)
		}
	}
	return out
}

// expected counts the packets of one PID the way the report must, worked out while the
// stream is built rather than read back from it.
type expected struct {
	packets, clear, even, odd, reserved, periods int64
	last                                         byte
}

func (e *expected) add(tsc byte) {
	e.packets++
	switch tsc {
	case 0:
		e.clear++
	case 1:
		e.reserved++
	case 2:
		e.even++
	case 3:
		e.odd++
	}
	if tsc >= 2 && tsc != e.last {
		e.periods++
		e.last = tsc
	}
}

// synthetic is a stream with two services, CA descriptors in a PMT at both levels, a CAT with
// EMM PIDs, an SDT, PCRs that wrap around the 33-bit base, and chosen scrambling patterns.
type synthetic struct {
	ts         []byte
	want       map[uint16]*expected
	pcrs       int64   // PCRs on PID 0x101
	duration   float64 // seconds from the first PCR to the last
	pcrPackets int64   // packets from the first PCR to the last
}

const (
	synTSID   = 0x0042
	synPMT1   = 0x0100
	synPMT2   = 0x0110
	synVideo1 = 0x0101 // H.264, PCR PID of service 1, even/odd/clear pattern
	synAudio1 = 0x0102 // private data with an AC-3 descriptor and its own CA descriptor: all odd
	synVideo2 = 0x0111 // MPEG-2 video of service 2, clear, PCR PID of service 2 without PCRs
	synAudio2 = 0x0112 // AAC of service 2: some reserved, a few even
	synECM1   = 0x0200
	synECM2   = 0x0201
	synEMM1   = 0x0300
	synEMM2   = 0x0301
	synStray  = 0x0777 // in no table
)

// pcrStart puts the first PCR one second before the 33-bit base wraps.
const pcrStart = ts.PCRWrap - 27_000_000

// pcrStep is 40 ms in 27 MHz ticks.
const pcrStep = 40 * 27_000

func buildSynthetic(rounds int) *synthetic {
	sb := newStreamBuilder()
	s := &synthetic{want: map[uint16]*expected{}}
	add := func(pid uint16, tsc byte) {
		if s.want[pid] == nil {
			s.want[pid] = &expected{}
		}
		s.want[pid].add(tsc)
	}
	psi := func(pid uint16, sec []byte) {
		before := sb.count()
		sb.psi(pid, sec)
		for range sb.count() - before {
			add(pid, 0)
		}
	}
	ac3 := []byte{0x6A, 1, 0x00}
	tables := func() {
		psi(0x0000, patSection(synTSID, 0, 0x0010, 1, synPMT1, 2, synPMT2))
		psi(0x0001, catSection(append(caDesc(0x0B00, synEMM1), caDesc(0x0500, synEMM2)...)))
		psi(synPMT1, pmtSection(1, synVideo1, caDesc(0x0B00, synECM1),
			esInfo{0x1B, synVideo1, nil},
			esInfo{0x06, synAudio1, append(append([]byte{}, ac3...), caDesc(0x0500, synECM2)...)}))
		psi(synPMT2, pmtSection(2, synVideo2, nil,
			esInfo{0x02, synVideo2, nil},
			esInfo{0x0F, synAudio2, nil}))
		psi(0x0011, sdtSection(synTSID, 0x1234,
			sdtEntry{1, []byte("Test Provider"), append([]byte{0x15}, "Unicode \u00dcber"...)},
			sdtEntry{2, []byte("Test Provider"), []byte("Two")}))
	}
	var k1, k3 int // packet index within PIDs 0x101 and 0x112
	firstPCR := int64(-1)
	for range rounds {
		tables()
		for i := range 40 {
			// Service 1 video: periods of 90 packets, even then odd, with a clear stretch
			// of 20 packets inside the third period that must not split it.
			tsc := byte(2 + (k1/90)%2)
			if k1%270 >= 200 && k1%270 < 220 {
				tsc = 0
			}
			pcr := int64(-1)
			if i%10 == 0 {
				pcr = pcrStart + s.pcrs*pcrStep
				if firstPCR < 0 {
					firstPCR = int64(sb.count())
				}
				s.pcrPackets = int64(sb.count()) - firstPCR
				s.pcrs++
			}
			sb.pes(synVideo1, tsc, pcr, false)
			add(synVideo1, tsc)
			k1++

			sb.pes(synAudio1, 3, -1, false)
			add(synAudio1, 3)

			if i%2 == 0 {
				sb.pes(synVideo2, 0, -1, false)
				add(synVideo2, 0)
			}
			if i%4 == 0 {
				tsc := byte(0)
				switch {
				case k3%5 == 1:
					tsc = 1
				case k3 >= 7 && k3 < 12:
					tsc = 2
				}
				sb.pes(synAudio2, tsc, -1, false)
				add(synAudio2, tsc)
				k3++
			}
			if i == 20 {
				for _, pid := range []uint16{synECM1, synECM2, synEMM1, synEMM2, synStray} {
					sb.pes(pid, 0, -1, false)
					add(pid, 0)
				}
			}
			if i%8 == 7 {
				sb.null()
				add(0x1FFF, 0)
			}
		}
	}
	s.ts = sb.buf
	s.duration = float64((s.pcrs-1)*pcrStep) / 27e6
	return s
}
