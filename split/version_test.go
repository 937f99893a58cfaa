package split_test

import (
	"bytes"
	"io"
	"testing"

	"github.com/tsdescramble/tsdescramble/psi"
	"github.com/tsdescramble/tsdescramble/split"
	"github.com/tsdescramble/tsdescramble/ts"
)

// section returns a long-syntax section of table tid with the given table_id_extension, version
// and body, its length and CRC_32 filled in.
func section(tid byte, ext uint16, version byte, body []byte) []byte {
	s := []byte{tid, 0xB0, 0, byte(ext >> 8), byte(ext), 0xC1 | version<<1, 0, 0}
	s = append(s, body...)
	n := len(s) - 3 + 4
	s[1], s[2] = 0xB0|byte(n>>8), byte(n)
	crc := psi.CRC32(s)
	return append(s, byte(crc>>24), byte(crc>>16), byte(crc>>8), byte(crc))
}

// packet puts a section in one packet of pid.
func packet(pid uint16, cc byte, sec []byte) []byte {
	p := make([]byte, ts.PacketSize)
	p[0], p[1], p[2], p[3] = ts.SyncByte, 0x40|byte(pid>>8), byte(pid), 0x10|cc&0x0F
	p[4] = 0
	n := copy(p[5:], sec)
	for i := 5 + n; i < len(p); i++ {
		p[i] = 0xFF
	}
	return p
}

func pat(version byte, progs ...uint16) []byte {
	var body []byte
	for i := 0; i < len(progs); i += 2 {
		body = append(body, byte(progs[i]>>8), byte(progs[i]), 0xE0|byte(progs[i+1]>>8), byte(progs[i+1]))
	}
	return section(0x00, 7, version, body)
}

func pmt(program, pcr uint16, es uint16) []byte {
	return section(0x02, program, 0, []byte{0xE0 | byte(pcr>>8), byte(pcr), 0xF0, 0, 0x02, 0xE0 | byte(es>>8), byte(es), 0xF0, 0})
}

// sdt has one entry per service id, with a descriptor that carries name.
func sdt(version byte, name string, ids ...uint16) []byte {
	body := []byte{0x00, 0x20, 0xFF}
	for _, id := range ids {
		d := append([]byte{0x48, byte(3 + len(name)), 1, 0, byte(len(name))}, name...)
		body = append(body, byte(id>>8), byte(id), 0xFC, 0x80|byte(len(d)>>8), byte(len(d)))
		body = append(body, d...)
	}
	return section(0x42, 7, version, body)
}

// tablesOf reads the PAT and SDT sections of an output: their version_number and bytes.
func tablesOf(t *testing.T, out []byte) (pats, sdts [][]byte) {
	t.Helper()
	r := psi.NewSectionReader()
	for i := 0; i+ts.PacketSize <= len(out); i += ts.PacketSize {
		r.Feed(out[i:i+ts.PacketSize], func(pid uint16, s []byte) {
			switch pid {
			case psi.PATPID:
				pats = append(pats, bytes.Clone(s))
			case 0x11:
				sdts = append(sdts, bytes.Clone(s))
			}
		})
	}
	return pats, sdts
}

func version(s []byte) byte { return s[5] >> 1 & 0x1F }

// The tables an output gets keep their version while they say the same, whatever the input's
// version does for the other services, and move on when theirs changes: the service's PMT PID
// in the PAT, its entry in the SDT.
func TestTableVersions(t *testing.T) {
	var out bytes.Buffer
	s := split.New(map[uint16]io.Writer{2: &out})
	var stream []byte
	add := func(p []byte) { stream = append(stream, p...) }
	add(packet(0, 0, pat(0, 1, 0x100, 2, 0x200)))
	add(packet(0x200, 0, pmt(2, 0x201, 0x201)))
	add(packet(0x11, 0, sdt(0, "a", 1, 2)))
	add(packet(0, 1, pat(1, 1, 0x110, 2, 0x200))) // another service's PMT PID: not this output's change
	add(packet(0x11, 1, sdt(1, "a", 1, 2)))       // the input's version moves, this entry does not
	add(packet(0, 2, pat(2, 1, 0x110, 2, 0x210))) // this service's PMT PID changes
	add(packet(0x210, 0, pmt(2, 0x201, 0x201)))
	add(packet(0x11, 2, sdt(2, "b", 1, 2))) // and its SDT entry
	add(packet(0x12, 0, section(0x4E, 1, 0, []byte{0, 7, 0, 0x20, 0, 0x4E})))
	add(packet(0x12, 1, section(0x4E, 2, 0, []byte{0, 7, 0, 0x20, 0, 0x4E})))
	add(packet(0x12, 2, section(0x4F, 2, 0, []byte{0, 7, 0, 0x20, 0, 0x4F}))) // another stream's
	if _, err := s.Write(stream); err != nil {
		t.Fatal(err)
	}
	pats, sdts := tablesOf(t, out.Bytes())
	if len(pats) != 3 || len(sdts) != 3 {
		t.Fatalf("%d PATs and %d SDTs, want 3 of each", len(pats), len(sdts))
	}
	if v := []byte{version(pats[0]), version(pats[1]), version(pats[2])}; !bytes.Equal(v, []byte{0, 0, 1}) {
		t.Errorf("PAT versions %v, want 0 0 1", v)
	}
	if v := []byte{version(sdts[0]), version(sdts[1]), version(sdts[2])}; !bytes.Equal(v, []byte{0, 0, 1}) {
		t.Errorf("SDT versions %v, want 0 0 1", v)
	}
	var eits []uint16
	r := psi.NewSectionReader()
	lastCC := map[uint16]int{}
	for i := 0; i+ts.PacketSize <= out.Len(); i += ts.PacketSize {
		p := out.Bytes()[i : i+ts.PacketSize]
		pid, cc := ts.PID(p), int(p[3]&0x0F)
		if last, ok := lastCC[pid]; ok && pid < 0x20 && cc != (last+1)%16 {
			t.Errorf("PID %#x: continuity counter %d after %d", pid, cc, last)
		}
		lastCC[pid] = cc
		r.Feed(p, func(pid uint16, s []byte) {
			if pid == 0x12 {
				eits = append(eits, uint16(s[3])<<8|uint16(s[4]))
			}
		})
	}
	if len(eits) != 1 || eits[0] != 2 {
		t.Errorf("EIT sections of services %v, want one of service 2", eits)
	}
	for _, p := range pats {
		tsid, progs, ok := psi.ParsePAT(p)
		if !ok || tsid != 7 || len(progs) != 1 || progs[0].Number != 2 {
			t.Errorf("PAT %x: want transport stream 7 with program 2 alone", p)
		}
	}
	for _, x := range sdts {
		d, ok := psi.ParseSDT(x)
		if !ok || len(d.Services) != 1 || d.Services[0].ID != 2 {
			t.Errorf("SDT %x: want service 2 alone", x)
		}
	}
}
