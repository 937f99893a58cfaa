package pipeline

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/tsdescramble/tsdescramble/ts"

	"github.com/tsdescramble/tsdescramble/psi"
	"github.com/tsdescramble/tsdescramble/scrambling"
)

// sigSection builds a long-syntax section with a correct CRC_32.
func sigSection(tid byte, ext uint16, version byte, body []byte) []byte {
	n := 5 + len(body) + 4
	s := []byte{tid, 0xB0 | byte(n>>8), byte(n), byte(ext >> 8), byte(ext), 0xC1 | version<<1, 0, 0}
	s = append(s, body...)
	c := psi.CRC32(s)
	return append(s, byte(c>>24), byte(c>>16), byte(c>>8), byte(c))
}

func sigPAT(progs ...uint16) []byte {
	var body []byte
	for i := 0; i+1 < len(progs); i += 2 {
		body = append(body, byte(progs[i]>>8), byte(progs[i]), 0xE0|byte(progs[i+1]>>8), byte(progs[i+1]))
	}
	return sigSection(0x00, 1, 0, body)
}

// sigPMT builds a PMT of program with PCR on its first stream and streams of type 0x1B.
func sigPMT(program uint16, version byte, streams ...uint16) []byte {
	body := []byte{0xE0 | byte(streams[0]>>8), byte(streams[0]), 0xF0, 0}
	for _, pid := range streams {
		body = append(body, 0x1B, 0xE0|byte(pid>>8), byte(pid), 0xF0, 6, 0x0A, 4, 'e', 'n', 'g', 0)
	}
	return sigSection(0x02, program, version, body)
}

// sigPackets cuts a section into packets of pid, padded with 0xFF.
func sigPackets(pid uint16, cc *byte, s []byte) [][]byte {
	data := append([]byte{0}, s...)
	var pkts [][]byte
	for first := true; len(data) > 0; first = false {
		p := bytes.Repeat([]byte{0xFF}, ts.PacketSize)
		p[0], p[1], p[2], p[3] = ts.SyncByte, byte(pid>>8)&0x1F, byte(pid), 0x10|*cc&0x0F
		if first {
			p[1] |= 0x40
		}
		*cc++
		n := copy(p[4:], data)
		data = data[n:]
		pkts = append(pkts, p)
	}
	return pkts
}

// esPacket returns a clear packet of pid with a payload.
func esPacket(pid uint16, i int) []byte {
	p := make([]byte, ts.PacketSize)
	p[0], p[1], p[2], p[3] = ts.SyncByte, byte(pid>>8), byte(pid), 0x10|byte(i&0x0F)
	for j := 4; j < ts.PacketSize; j++ {
		p[j] = byte(i*7 + j)
	}
	return p
}

// sigStream is a clear stream for the signalling tests: service 1 (PMT PID 0x1000, streams
// 0x100 and 0x101) whose PMT comes once before the PAT, then repeated, then in a new version with
// a third stream; service 2 (PMT PID 0x1001, stream 0x200); service 3 (PMT PID 0x1002) whose PMT
// of 40 streams spans packets. The input packets and, for each, what service 1's and 2's PMTs
// become when signalled with mode (nil for the packets that must pass unchanged).
type sigStream struct {
	in      [][]byte
	pmtWant [][]byte // per packet: the signalled form, or nil
	pmtSvc  []uint16 // per packet: the service whose PMT it carries, or 0
}

func newSigStream(t *testing.T, mode psi.ScramblingMode) *sigStream {
	t.Helper()
	s := &sigStream{}
	ccs := map[uint16]*byte{}
	cc := func(pid uint16) *byte {
		if ccs[pid] == nil {
			ccs[pid] = new(byte)
		}
		return ccs[pid]
	}
	add := func(p []byte, svc uint16, signalled []byte) {
		s.in = append(s.in, p)
		s.pmtSvc = append(s.pmtSvc, svc)
		s.pmtWant = append(s.pmtWant, signalled)
	}
	signal := func(pid uint16, sec []byte, c byte) []byte {
		out, ok := psi.AppendScramblingMode(nil, sec, mode)
		if !ok {
			t.Fatal("test PMT not signalled")
		}
		return sigPackets(pid, &c, out)[0]
	}
	pmt1 := [2][]byte{sigPMT(1, 0, 0x100, 0x101), sigPMT(1, 1, 0x100, 0x101, 0x102)}
	pmt2 := sigPMT(2, 4, 0x200)
	var streams []uint16
	for i := range 40 {
		streams = append(streams, uint16(0x300+i))
	}
	pmt3 := sigPMT(3, 0, streams...)

	// The PMT before the PAT passes as it came.
	add(sigPackets(0x1000, cc(0x1000), pmt1[0])[0], 1, nil)
	for i := range 40 {
		if i%10 == 0 {
			add(sigPackets(0, cc(0), sigPAT(1, 0x1000, 2, 0x1001, 3, 0x1002))[0], 0, nil)
			v := 0
			if i >= 20 {
				v = 1
			}
			c := *cc(0x1000)
			add(sigPackets(0x1000, cc(0x1000), pmt1[v])[0], 1, signal(0x1000, pmt1[v], c))
			c = *cc(0x1001)
			add(sigPackets(0x1001, cc(0x1001), pmt2)[0], 2, signal(0x1001, pmt2, c))
			for _, p := range sigPackets(0x1002, cc(0x1002), pmt3) {
				add(p, 3, nil)
			}
		}
		for _, pid := range []uint16{0x100, 0x101, 0x200, 0x300} {
			add(esPacket(pid, i), 0, nil)
		}
		if i >= 20 {
			add(esPacket(0x102, i), 0, nil)
		}
		add(append([]byte{ts.SyncByte, 0x1F, 0xFF, 0x10}, bytes.Repeat([]byte{0xFF}, 184)...), 0, nil)
	}
	return s
}

// runScramble scrambles the stream with DFC and returns the output packets and the log.
func runScramble(t *testing.T, in []byte, fr ts.Framing, o Options) ([][]byte, []string) {
	t.Helper()
	sys, err := scrambling.Lookup("dfc")
	if err != nil {
		t.Fatal(err)
	}
	o.Mode = Scramble
	o.Out = &Output{System: sys, CWs: [][]byte{bytes.Repeat([]byte{0x5A}, 16)}}
	var log []string
	o.Log = func(m string) { log = append(log, m) }
	var out bytes.Buffer
	if _, err := Run(context.Background(), ts.NewSource(bytes.NewReader(in)), &out, o); err != nil {
		t.Fatal(err)
	}
	if out.Len() != len(in) {
		t.Fatalf("%d bytes out, %d in", out.Len(), len(in))
	}
	var pkts [][]byte
	for b := out.Bytes(); len(b) > 0; b = b[fr.Size:] {
		pkts = append(pkts, b[fr.Prefix:fr.Prefix+ts.PacketSize])
	}
	return pkts, log
}

// frameAs lays packets out in framing fr, with prefix and trailer bytes that are not 0x47.
func frameAs(pkts [][]byte, fr ts.Framing) []byte {
	var b []byte
	for i, p := range pkts {
		if fr.Prefix > 0 {
			b = append(b, 0, byte(i), 1, 2)
		}
		b = append(b, p...)
		for j := fr.Prefix + ts.PacketSize; j < fr.Size; j++ {
			b = append(b, byte(i+j))
		}
	}
	return b
}

// checkSignalled checks the PMT packets of out against the stream: those of the services in
// want carry the descriptor, every other PMT packet is as it came.
func checkSignalled(t *testing.T, s *sigStream, out [][]byte, want map[uint16]bool) {
	t.Helper()
	n := 0
	for i, p := range out {
		if s.pmtSvc[i] == 0 {
			continue
		}
		exp := s.in[i]
		if want[s.pmtSvc[i]] && s.pmtWant[i] != nil {
			exp = s.pmtWant[i]
			n++
		}
		if !bytes.Equal(p, exp) {
			t.Fatalf("packet %d (PMT of service %d):\n got % x\nwant % x", i, s.pmtSvc[i], p, exp)
		}
	}
	if len(want) > 0 && n == 0 {
		t.Fatal("no PMT packet was expected to be signalled")
	}
}

func TestSignalAllServices(t *testing.T) {
	s := newSigStream(t, psi.ScramblingDFC)
	for _, fr := range framings {
		for _, batch := range []int{1, 7, 1024} {
			out, log := runScramble(t, frameAs(s.in, fr), fr, Options{ScramblingMode: psi.ScramblingDFC, Batch: batch, Workers: 2})
			checkSignalled(t, s, out, map[uint16]bool{1: true, 2: true})
			// The PMT of service 3 spans packets: one note, however often it comes.
			if len(log) != 1 || !strings.Contains(log[0], "service 3") || !strings.Contains(log[0], "spans several packets") ||
				!strings.Contains(log[0], "-cipher dfc") {
				t.Errorf("framing %v, batch %d: log %q", fr, batch, log)
			}
			// Elementary streams are scrambled as before.
			for i, p := range out {
				if s.pmtSvc[i] == 0 && ts.PID(p) >= 0x100 && ts.PID(p) < 0x400 && ts.TSC(p) == ts.Clear {
					t.Fatalf("packet %d of PID %#x left clear", i, ts.PID(p))
				}
			}
		}
	}
}

func TestSignalSelection(t *testing.T) {
	s := newSigStream(t, psi.ScramblingSerpent)
	for _, tc := range []struct {
		name string
		o    Options
		want map[uint16]bool
		log  bool
	}{
		{"service 2", Options{Service: 2}, map[uint16]bool{2: true}, false},
		{"service 3", Options{Service: 3}, nil, true},
		{"PID of service 1's second version", Options{PIDs: []uint16{0x102}}, nil, false},
		{"PIDs of services 1 and 2", Options{PIDs: []uint16{0x101, 0x200}}, map[uint16]bool{1: true, 2: true}, false},
		{"PID of service 3", Options{PIDs: []uint16{0x310}}, nil, true},
		{"service wins over PIDs", Options{Service: 2, PIDs: []uint16{0x100}}, map[uint16]bool{2: true}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.o.ScramblingMode = psi.ScramblingSerpent
			out, log := runScramble(t, frameAs(s.in, ts.Framing188), ts.Framing188, tc.o)
			if tc.name == "PID of service 1's second version" {
				// 0x102 is in the second version only: the PMTs of that version are signalled.
				for i, p := range out {
					if s.pmtSvc[i] != 1 {
						continue
					}
					want := s.in[i]
					if s.in[i][10]>>1&0x1F == 1 {
						want = s.pmtWant[i]
					}
					if !bytes.Equal(p, want) {
						t.Fatalf("packet %d: PMT of version %d\n got % x\nwant % x", i, s.in[i][10]>>1&0x1F, p, want)
					}
				}
			} else {
				checkSignalled(t, s, out, tc.want)
			}
			if got := len(log) == 1; got != tc.log {
				t.Errorf("log %q", log)
			}
		})
	}
}

// Without a mode, and when not scrambling, no PMT changes.
func TestSignalOff(t *testing.T) {
	s := newSigStream(t, psi.ScramblingDFC)
	out, log := runScramble(t, frameAs(s.in, ts.Framing188), ts.Framing188, Options{})
	checkSignalled(t, s, out, nil)
	if len(log) != 0 {
		t.Errorf("log %q", log)
	}
	if newSignaller(&Options{Mode: Rescramble, ScramblingMode: psi.ScramblingDFC}, psi.NewTracker()) != nil {
		t.Error("a signaller in a Rescramble run")
	}
	if s := newSignaller(&Options{Mode: Descramble}, psi.NewTracker()); s == nil || !s.rw.Remove || s.rw.Mode != 0 {
		t.Error("a Descramble run's signaller does not take the descriptor out")
	}
}

// For csa2, PMTs without the descriptor stay as they are, and one left by an earlier scrambling
// is set to DVB-CSA2.
func TestSignalCSA2ReplacesOnly(t *testing.T) {
	s := newSigStream(t, psi.ScramblingCSA2)
	sys, err := scrambling.NewCSA2(0)
	if err != nil {
		t.Fatal(err)
	}
	run := func(in [][]byte) [][]byte {
		var out bytes.Buffer
		var log []string
		o := Options{Mode: Scramble, ScramblingMode: psi.ScramblingCSA2, Log: func(m string) { log = append(log, m) },
			Out: &Output{System: sys, CWs: [][]byte{{1, 2, 3, 6, 4, 5, 6, 15}}}}
		if _, err := Run(context.Background(), ts.NewSource(bytes.NewReader(bytes.Join(in, nil))), &out, o); err != nil {
			t.Fatal(err)
		}
		if len(log) != 0 {
			t.Errorf("log %q", log)
		}
		var pkts [][]byte
		for b := out.Bytes(); len(b) > 0; b = b[ts.PacketSize:] {
			pkts = append(pkts, b[:ts.PacketSize])
		}
		return pkts
	}
	checkSignalled(t, s, run(s.in), nil)

	// The same stream once signalled for DFC: back to DVB-CSA2, in place.
	dfc := newSigStream(t, psi.ScramblingDFC)
	in := make([][]byte, len(dfc.in))
	for i, p := range dfc.in {
		in[i] = p
		if dfc.pmtWant[i] != nil {
			in[i] = dfc.pmtWant[i]
		}
	}
	for i, p := range run(in) {
		if s.pmtSvc[i] == 0 {
			continue
		}
		want := in[i]
		if s.pmtWant[i] != nil {
			want = s.pmtWant[i] // the DFC descriptor now says DVB-CSA2
		}
		if !bytes.Equal(p, want) {
			t.Fatalf("packet %d:\n got % x\nwant % x", i, p, want)
		}
	}
}

func TestSignallerDoesNotAllocate(t *testing.T) {
	s := newSigStream(t, psi.ScramblingDFC)
	// The run's tables, fed each packet before the signaller sees it, as the classifier does.
	tables := psi.NewTracker()
	sg := newSignaller(&Options{Mode: Scramble, ScramblingMode: psi.ScramblingDFC, Log: func(string) {}}, tables)
	feed := func() {
		for _, in := range s.in[:60] {
			p := bytes.Clone(in)
			tables.Feed(p)
			sg.packet(p, ts.PID(p))
		}
	}
	feed() // the tables are read once
	// Then their repetitions again and again: PAT and PMT packets, one-packet and spanning.
	var pkts [][]byte
	for _, in := range s.in[1:60] {
		if pid := ts.PID(in); pid == 0 || pid >= 0x1000 && pid <= 0x1002 {
			pkts = append(pkts, in)
		}
	}
	buf := make([]byte, ts.PacketSize)
	if n := testing.AllocsPerRun(50, func() {
		for _, p := range pkts {
			copy(buf, p)
			tables.Feed(buf)
			sg.packet(buf, ts.PID(buf))
		}
	}); n != 0 {
		t.Errorf("%v allocations per pass over the PSI packets", n)
	}
	if sg.signalled == 0 || sg.left == 0 {
		t.Errorf("signalled %d, left %d", sg.signalled, sg.left)
	}
}
