//go:build dvbcsa

package main

import (
	"bytes"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tsdescramble/tsdescramble/internal/testsupport/camdouble"
	"github.com/tsdescramble/tsdescramble/internal/testsupport/dvbcsa"
	"github.com/tsdescramble/tsdescramble/internal/testsupport/testmedia"
	"github.com/tsdescramble/tsdescramble/keys"
	"github.com/tsdescramble/tsdescramble/probe"
	"github.com/tsdescramble/tsdescramble/psi"
	"github.com/tsdescramble/tsdescramble/split"
	"github.com/tsdescramble/tsdescramble/ts"
)

// muxSchedule is how one service of the multiplex is scrambled: its CWs, used in turn, one per
// crypto period of period packets of the stream (0: one even period), the first period starting
// phase packets into it; ecmPID, when set, is the PID of the ECMs that carry them.
type muxSchedule struct {
	cws    [][]byte
	period int
	phase  int
	ecmPID uint16
}

// at returns the crypto period of the packet at position j of the stream before the ECMs went
// in, and its CW and parity.
func (s *muxSchedule) at(j int) (k int, cw []byte, odd bool) {
	if s.period == 0 {
		return 0, s.cws[0], false
	}
	k = (j + s.phase) / s.period
	return k, s.cws[k%len(s.cws)], k%2 == 1
}

// withECMs returns stream with a CA_descriptor of the test CA system in the PMT of each service
// scheds gives an ECM PID, and that service's ECMs in packets of their own: ECM k (the current
// key and the one before, as ECMStream makes them) a quarter period before period k starts, and
// the last one again every 300 packets. orig maps each packet of the result to its position in
// stream, -1 for an ECM packet.
func withECMs(t *testing.T, stream []byte, pmtPIDs map[uint16]uint16, scheds map[uint16]*muxSchedule) (out []byte, orig []int) {
	t.Helper()
	var cc [8192]byte
	ecmPacket := func(s *muxSchedule, k int) []byte {
		tid := byte(0x80 + k%2)
		cur, prev := s.cws[k%len(s.cws)], make([]byte, 8)
		if k > 0 {
			prev = s.cws[(k-1)%len(s.cws)]
		}
		even, odd := cur, prev
		if k%2 == 1 {
			even, odd = prev, cur
		}
		sec := camdouble.ECM(tid, even, odd, uint32(k))
		p := bytes.Repeat([]byte{0xFF}, ts.PacketSize)
		p[0], p[1], p[2], p[3] = ts.SyncByte, 0x40|byte(s.ecmPID>>8), byte(s.ecmPID), 0x10|cc[s.ecmPID]&0x0F
		cc[s.ecmPID]++
		p[4] = 0
		copy(p[5:], sec)
		return p
	}
	last := map[uint16]int{}
	for j := 0; j*ts.PacketSize < len(stream); j++ {
		p := append([]byte(nil), stream[j*ts.PacketSize:(j+1)*ts.PacketSize]...)
		for svc, s := range scheds {
			if s.ecmPID == 0 {
				continue
			}
			k, _, _ := s.at(j + s.period/4)
			if j == 0 || k != last[svc] || j%300 == 0 {
				if j == 0 {
					k, _, _ = s.at(0)
				}
				last[svc] = k
				out = append(out, ecmPacket(s, k)...)
				orig = append(orig, -1)
			}
			if ts.PID(p) == pmtPIDs[svc] && ts.PUSI(p) {
				addCADescriptor(t, p, camdouble.CADescriptor(camdouble.TestCAID, s.ecmPID))
			}
		}
		out = append(out, p...)
		orig = append(orig, j)
	}
	return out, orig
}

// addCADescriptor puts desc in the program_info loop of the PMT section that starts in packet p
// (pointer field 0, one packet, as ffmpeg writes them) and renews its CRC.
func addCADescriptor(t *testing.T, p, desc []byte) {
	t.Helper()
	off, _ := ts.PayloadOffset(p)
	if p[off] != 0 {
		t.Fatal("a PMT packet with a pointer field: the test writes PMTs of one packet")
	}
	sec := p[off+1:]
	n := 3 + (int(sec[1]&0x0F)<<8 | int(sec[2]))
	if sec[0] != 0x02 || off+1+n+len(desc) > ts.PacketSize {
		t.Fatalf("not a PMT of one packet with room for a descriptor")
	}
	info := int(sec[10]&0x0F)<<8 | int(sec[11])
	body := append(append(append([]byte(nil), sec[:12]...), desc...), sec[12:n-4]...)
	slen := len(body) + 4 - 3
	body[1], body[2] = 0xB0|byte(slen>>8), byte(slen)
	info += len(desc)
	body[10], body[11] = 0xF0|byte(info>>8), byte(info)
	crc := psi.CRC32(body)
	body = append(body, byte(crc>>24), byte(crc>>16), byte(crc>>8), byte(crc))
	copy(sec, body)
	for i := len(body); i < len(sec); i++ {
		sec[i] = 0xFF
	}
}

// A multiplex of four services made by ffmpeg, scrambled by libdvbcsa under four schedules: a CW
// list in a file, a BISS word, and two lists served by key-server doubles (cs378x and DVBAPI)
// from the ECMs of their services. One run descrambles each service with its keys into a file
// of its own: each is the split of the clear multiplex (ECMs and all) byte for byte, and
// ffprobe reads every stream of each without an error.
func TestMultiplexFourSchedules(t *testing.T) {
	t.Parallel()
	ffprobe, err := exec.LookPath("ffprobe")
	if err != nil {
		t.Skip("ffprobe not installed (Debian package ffmpeg)")
	}
	base := testmedia.Programs(t, 4, 4)
	rep, err := probe.Probe(bytes.NewReader(base))
	if err != nil {
		t.Fatal(err)
	}
	esSvc, pmtPIDs := map[uint16]uint16{}, map[uint16]uint16{}
	for _, s := range rep.Services {
		pmtPIDs[s.Number] = s.PMTPID
		for _, st := range s.Streams {
			esSvc[st.PID] = s.Number
		}
	}
	if len(pmtPIDs) != 4 {
		t.Fatalf("ffmpeg made %d services, want 4", len(pmtPIDs))
	}
	n := len(base) / ts.PacketSize
	biss, err := keys.ParseBISS("a1a2a3b1b2b3")
	if err != nil {
		t.Fatal(err)
	}
	cw := func(s string) []byte { return mustCW(t, s) }
	scheds := map[uint16]*muxSchedule{
		1: {cws: [][]byte{cw("0102030604050610"), cw("1112133614151640"), cw("2122236624252670")}, period: n / 5},
		2: {cws: [][]byte{biss}},
		3: {cws: [][]byte{cw("31323396343536a1"), cw("414243c6444546d1"), cw("515253f6545556ff")}, period: n / 4, phase: n / 9, ecmPID: 0x600},
		4: {cws: [][]byte{cw("61626326646566af"), cw("7172735674757650")}, period: n / 3, phase: n / 5, ecmPID: 0x601},
	}
	clear, orig := withECMs(t, base, pmtPIDs, scheds)
	scrambled := append([]byte(nil), clear...)
	if _, err := dvbcsa.ScramblePlan(scrambled, ts.Framing{Size: ts.PacketSize}, func(i int, pid uint16) ([]byte, bool) {
		s := scheds[esSvc[pid]]
		if s == nil || orig[i] < 0 {
			return nil, false
		}
		_, cw, odd := s.at(orig[i])
		return cw, odd
	}); err != nil {
		t.Fatal(err)
	}

	want := map[uint16]*bytes.Buffer{1: {}, 2: {}, 3: {}, 4: {}}
	ws := map[uint16]io.Writer{}
	for n, b := range want {
		ws[n] = b
	}
	if _, err := split.New(ws).Write(clear); err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	in := writeFile(t, dir, "mux.ts", scrambled)
	var list strings.Builder
	for _, c := range scheds[1].cws {
		fmt.Fprintf(&list, "%x\n", c)
	}
	listFile := writeFile(t, dir, "one.txt", []byte(list.String()))
	cs := camdouble.NewCS378x(t, "alice", "pa55word")
	da := camdouble.NewDVBAPI(t)
	out := func(n uint16) string { return filepath.Join(dir, fmt.Sprintf("svc%d.ts", n)) }
	cfg := writeFile(t, dir, "mux.yaml", []byte(fmt.Sprintf(`input: %s
services:
  - service: 1
    keys: cw-file:%s
    output: %s
  - name: svc2
    keys: biss:a1a2a3b1b2b3
    output: %s
  - service: 3
    keys: cs378x://alice:pa55word@%s
    output: %s
  - service: 4
    keys: dvbapi://%s
    output: %s
`, in, listFile, out(1), out(2), cs.Addr, out(3), da.Addr, out(4))))
	r := run(t, nil, "-config", cfg)
	if r.code != 0 {
		t.Fatal(describe(r))
	}
	if strings.Contains(r.stderr, "pa55word") || strings.Contains(r.stderr, "a1a2a3") {
		t.Errorf("a secret is printed:\n%s", r.stderr)
	}
	for n := uint16(1); n <= 4; n++ {
		got := readFile(t, out(n))
		sameBytes(t, fmt.Sprintf("service %d", n), got, want[n].Bytes(), 188)
		if bytes.Equal(got, scrambled) || len(got) == 0 {
			t.Fatalf("service %d: the output is empty or the whole input", n)
		}
		cmd := exec.Command(ffprobe, "-v", "error", "-show_entries", "stream=codec_name", "-of", "csv=p=0", out(n))
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		codecs, err := cmd.Output()
		if err != nil || stderr.Len() > 0 || strings.Fields(string(codecs)) == nil || !strings.Contains(string(codecs), "mpeg2video") || !strings.Contains(string(codecs), "mp2") {
			t.Errorf("ffprobe of service %d: %v, streams %q, errors:\n%s", n, err, codecs, stderr.String())
		}
	}
	t.Log(r.stderr)
}
