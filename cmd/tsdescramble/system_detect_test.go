package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tsdescramble/tsdescramble/psi"
)

// A 128-bit control word for the block-cipher systems.
const cw128 = "000102030405060708090a0b0c0d0e0f"

// detSection builds a long-syntax section with a correct CRC_32.
func detSection(tid byte, ext uint16, body []byte) []byte {
	n := 5 + len(body) + 4
	s := append([]byte{tid, 0xB0 | byte(n>>8), byte(n), byte(ext >> 8), byte(ext), 0xC1, 0, 0}, body...)
	c := psi.CRC32(s)
	return append(s, byte(c>>24), byte(c>>16), byte(c>>8), byte(c))
}

// detPMT builds the PMT of program: PCR on its first stream, the streams (video, then audio),
// and progDesc in the program_info loop.
func detPMT(program uint16, progDesc []byte, pids ...uint16) []byte {
	body := []byte{0xE0 | byte(pids[0]>>8), byte(pids[0]), 0xF0, byte(len(progDesc))}
	body = append(body, progDesc...)
	for i, pid := range pids {
		typ := byte(0x1B)
		if i > 0 {
			typ = 0x0F
		}
		body = append(body, typ, 0xE0|byte(pid>>8), byte(pid), 0xF0, 0)
	}
	return detSection(0x02, program, body)
}

// psiPacket returns the packet of pid that carries section s whole, after a pointer_field of 0.
func psiPacket(pid uint16, cc int, s []byte) []byte {
	p := bytes.Repeat([]byte{0xFF}, 188)
	p[0], p[1], p[2], p[3] = 0x47, 0x40|byte(pid>>8), byte(pid), 0x10|byte(cc&0x0F)
	p[4] = 0
	copy(p[5:], s)
	return p
}

// detService is a service of a test stream: its PMT PID, streams and program_info descriptors.
type detService struct {
	number   uint16
	pmtPID   uint16
	pids     []uint16
	progDesc []byte
}

// detStream returns a clear stream of the services: PAT and PMTs every 30 packets (the first
// PMT before the first PAT when pmtFirst is set; only after skip packets when skip > 0), the
// elementary streams in turn with PES starts and adaptation fields, and null packets.
func detStream(n int, pmtFirst bool, skip int, svcs ...detService) [][]byte {
	var progs []byte
	for _, s := range svcs {
		progs = append(progs, byte(s.number>>8), byte(s.number), 0xE0|byte(s.pmtPID>>8), byte(s.pmtPID))
	}
	pat := detSection(0x00, 1, progs)
	var pkts [][]byte
	cc := map[uint16]int{}
	psiOut := func(pid uint16, s []byte) {
		pkts = append(pkts, psiPacket(pid, cc[pid], s))
		cc[pid]++
	}
	if pmtFirst {
		psiOut(svcs[0].pmtPID, detPMT(svcs[0].number, svcs[0].progDesc, svcs[0].pids...))
	}
	for i := range n {
		if i%30 == 0 && i >= skip {
			psiOut(0, pat)
			for _, s := range svcs {
				psiOut(s.pmtPID, detPMT(s.number, s.progDesc, s.pids...))
			}
		}
		var all []uint16
		for _, s := range svcs {
			all = append(all, s.pids...)
		}
		pid := all[i%len(all)]
		af := -1
		if i%11 == 3 {
			af = i % 40
		}
		pkts = append(pkts, clearPacket(pid, i, af, true))
		if i%13 == 7 {
			pkts = append(pkts, nullPacket())
		}
	}
	return pkts
}

// packetsOf cuts the output of a run into its 188-byte packets, dropping any framing.
func packetsOf(t *testing.T, b []byte, size int) [][]byte {
	t.Helper()
	if len(b)%size != 0 {
		t.Fatalf("%d bytes of output: not whole %d-byte packets", len(b), size)
	}
	var pkts [][]byte
	for ; len(b) > 0; b = b[size:] {
		if size == 192 {
			pkts = append(pkts, b[4:192])
		} else {
			pkts = append(pkts, b[:188])
		}
	}
	return pkts
}

func pidOf(p []byte) uint16 { return uint16(p[1]&0x1F)<<8 | uint16(p[2]) }

// signalledPMT returns the PMT packet p as the scrambler rewrites it: the section with the
// descriptor added, the header and pointer as they were, 0xFF after.
func signalledPMT(t *testing.T, p []byte, mode psi.ScramblingMode) []byte {
	t.Helper()
	n := 3 + (int(p[6]&0x0F)<<8 | int(p[7]))
	sec, ok := psi.AppendScramblingMode(nil, p[5:5+n], mode)
	if !ok {
		t.Fatalf("test PMT packet % x not signalled", p)
	}
	w := bytes.Repeat([]byte{0xFF}, 188)
	copy(w, p[:5])
	copy(w[5:], sec)
	return w
}

var detService1 = detService{number: 1, pmtPID: 0x1000, pids: []uint16{0x100, 0x101}}

// TestScrambleSignalsSystem scrambles with each block-cipher system, checks that the PMT now
// names it, then descrambles without -cipher: the PMT chooses the system, and the clear stream
// comes back byte for byte but for the PMT packets, which keep the descriptor.
func TestScrambleSignalsSystem(t *testing.T) {
	t.Parallel()
	clear := detStream(300, true, 0, detService1)
	for _, tc := range []struct {
		cipher string
		mode   psi.ScramblingMode
		size   int
	}{
		{"dvb-cissa", 0x10, 188},
		{"atis-idsa", 0x70, 188},
		{"dfc", 0xD0, 188},
		{"serpent", 0xD1, 188},
		{"serpent", 0xD1, 192},
		{"dfc", 0xD0, 204},
	} {
		t.Run(tc.cipher+"/"+map[int]string{188: "188", 192: "192", 204: "204"}[tc.size], func(t *testing.T) {
			in := frame(clear, tc.size)
			r := run(t, in, "scramble", "-q", "-cipher", tc.cipher, "-cw", cw128, "-cp-packets", "50")
			if r.code != 0 || r.stderr != "" {
				t.Fatalf("scramble: %s", describe(r))
			}
			// The expected stream: every packet as it came, but the PMTs after the PAT signalled.
			want := make([][]byte, len(clear))
			patSeen, signalled := false, 0
			for i, p := range clear {
				want[i] = p
				switch pid := pidOf(p); {
				case pid == 0:
					patSeen = true
				case pid == 0x1000 && patSeen:
					want[i] = signalledPMT(t, p, tc.mode)
					signalled++
				}
			}
			if signalled < 5 {
				t.Fatalf("only %d PMT packets to signal", signalled)
			}
			out := packetsOf(t, []byte(r.stdout), tc.size)
			for i, p := range out {
				switch pid := pidOf(p); pid {
				case 0x1000:
					if !bytes.Equal(p, want[i]) {
						t.Fatalf("packet %d, PMT:\n got % x\nwant % x", i, p, want[i])
					}
					n := 3 + (int(p[6]&0x0F)<<8 | int(p[7]))
					m, ok := psi.PMTScramblingMode(p[5 : 5+n])
					if signalled := !bytes.Equal(p, clear[i]); signalled != ok || ok && m != tc.mode {
						t.Fatalf("packet %d: PMT mode %v %v, want %v", i, m, ok, tc.mode)
					}
				case 0x100, 0x101:
					if p[3]>>6 == tscClear {
						t.Fatalf("packet %d of PID %#x left clear", i, pid)
					}
				default:
					if !bytes.Equal(p, want[i]) {
						t.Fatalf("packet %d of PID %#x changed", i, pid)
					}
				}
			}

			// Descramble without -cipher, from a file this time.
			path := writeFile(t, t.TempDir(), "s.ts", []byte(r.stdout))
			d := run(t, nil, "-in", path, "-cw", cw128)
			if d.code != 0 {
				t.Fatalf("descramble: %s", describe(d))
			}
			if note := "tsdescramble: scrambling_descriptor in the PMT of service 1: " + tc.cipher + "\n"; !strings.HasPrefix(d.stderr, note) {
				t.Errorf("stderr does not start with %q:\n%s", note, d.stderr)
			}
			// The descrambler takes the descriptor out again: its output is the clear stream.
			sameBytes(t, "descrambled", []byte(d.stdout), frame(clear, tc.size), tc.size)
		})
	}
}

// TestScrambleCSA2NotSignalled: a PMT without the descriptor means the DVB-CSA cipher; scrambling
// with csa2 leaves such a PMT as it is, and descrambling reads no system from it. A descriptor
// left by an earlier scrambling is set to DVB-CSA2.
func TestScrambleCSA2NotSignalled(t *testing.T) {
	t.Parallel()
	clear := detStream(100, false, 0, detService1)
	r := run(t, frame(clear, 188), "scramble", "-q", "-cw", cwA)
	if r.code != 0 {
		t.Fatal(describe(r))
	}
	for i, p := range packetsOf(t, []byte(r.stdout), 188) {
		if pidOf(p) == 0x1000 && !bytes.Equal(p, clear[i]) {
			t.Fatalf("packet %d: PMT changed", i)
		}
	}
	d := run(t, []byte(r.stdout), "-cw", cwA)
	if d.code != 0 || strings.Contains(d.stderr, "scrambling_descriptor") {
		t.Fatalf("%s", describe(d))
	}
	sameBytes(t, "descrambled", []byte(d.stdout), frame(clear, 188), 188)

	// A stream scrambled with DFC and descrambled has its descriptor taken out, so that the
	// clear output is not taken for DFC: scrambled again with csa2, it carries none, and
	// descrambling it takes csa2 without a note.
	r = run(t, frame(clear, 188), "scramble", "-q", "-cipher", "dfc", "-cw", cw128)
	d = run(t, []byte(r.stdout), "-q", "-cw", cw128)
	sameBytes(t, "descrambled DFC", []byte(d.stdout), frame(clear, 188), 188)
	r = run(t, []byte(d.stdout), "scramble", "-q", "-cw", cwA)
	for i, p := range packetsOf(t, []byte(r.stdout), 188) {
		if pidOf(p) != 0x1000 || i == 0 {
			continue
		}
		n := 3 + (int(p[6]&0x0F)<<8 | int(p[7]))
		if m, ok := psi.PMTScramblingMode(p[5 : 5+n]); ok {
			t.Fatalf("packet %d: PMT mode %v after descrambling and scrambling again with csa2", i, m)
		}
	}
	d = run(t, []byte(r.stdout), "-cw", cwA)
	if d.code != 0 || strings.Contains(d.stderr, "scrambling_descriptor") {
		t.Fatalf("%s", describe(d))
	}
	for i, p := range packetsOf(t, []byte(d.stdout), 188) {
		if pidOf(p) != 0x1000 && !bytes.Equal(p, clear[i]) {
			t.Fatalf("packet %d differs", i)
		}
	}
}

// TestCipherOverridesDescriptor: -cipher given and the PMT saying otherwise is one line on
// stderr, and -cipher is used.
func TestCipherOverridesDescriptor(t *testing.T) {
	t.Parallel()
	clear := detStream(100, false, 0, detService1)
	r := run(t, frame(clear, 188), "scramble", "-q", "-cipher", "dfc", "-cw", cw128)
	if r.code != 0 {
		t.Fatal(describe(r))
	}
	d := run(t, []byte(r.stdout), "-cipher", "serpent", "-cw", cw128)
	const warning = "tsdescramble: -cipher serpent overrides the scrambling_descriptor in the PMT of service 1, which says dfc\n"
	if !strings.HasPrefix(d.stderr, warning) || strings.Count(d.stderr, "scrambling_descriptor") != 1 {
		t.Errorf("stderr:\n%s\nwant it to start with %q", d.stderr, warning)
	}
	// Serpent on DFC-scrambled payloads: no PES start comes out right.
	if d.code != exitNoFit {
		t.Errorf("exit %d, want %d", d.code, exitNoFit)
	}
	// With -q, nothing but the error.
	d = run(t, []byte(r.stdout), "-q", "-cipher", "serpent", "-cw", cw128)
	oneLine(t, d.stderr)
	// -cipher agreeing with the PMT: nothing to say.
	d = run(t, []byte(r.stdout), "-cipher", "dfc", "-cw", cw128)
	if d.code != 0 || strings.Contains(d.stderr, "scrambling_descriptor") {
		t.Errorf("%s", describe(d))
	}
}

// TestDescriptorModes: a mode tsdescramble does not implement is a warning and csa2 is used;
// DVB-CSA1 is descrambled as csa2.
func TestDescriptorModes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		mode psi.ScramblingMode
		note string
	}{
		{psi.ScramblingCSA3, "tsdescramble: scrambling_descriptor in the PMT of service 1: mode 0x03 (DVB-CSA3 standard mode), which tsdescramble does not implement: descrambling as csa2 (-cipher chooses another system)\n"},
		{0xF0, "tsdescramble: scrambling_descriptor in the PMT of service 1: mode 0xF0 (user-defined 0xF0), which tsdescramble does not implement: descrambling as csa2 (-cipher chooses another system)\n"},
		{psi.ScramblingCSA1, "tsdescramble: scrambling_descriptor in the PMT of service 1: csa2 (DVB-CSA1, the same cipher)\n"},
		{psi.ScramblingCSA2, "tsdescramble: scrambling_descriptor in the PMT of service 1: csa2\n"},
	} {
		svc := detService1
		svc.progDesc = []byte{psi.TagScrambling, 1, byte(tc.mode)}
		clear := detStream(100, false, 0, svc)
		r := run(t, frame(clear, 188), "scramble", "-q", "-cw", cwA)
		if r.code != 0 {
			t.Fatal(describe(r))
		}
		// scramble sets the descriptor to DVB-CSA2: put the PMTs back as another scrambler
		// would have left them.
		scr := packetsOf(t, []byte(r.stdout), 188)
		for i, p := range clear {
			if pidOf(p) == 0x1000 {
				scr[i] = p
			}
		}
		d := run(t, frame(scr, 188), "-cw", cwA)
		if d.code != 0 || !strings.HasPrefix(d.stderr, tc.note) {
			t.Errorf("mode %#x: %s\nwant stderr to start with %q", uint8(tc.mode), describe(d), tc.note)
		}
		// The descrambled PMT goes out without the descriptor, whatever its mode said.
		want := make([][]byte, len(clear))
		for i, p := range clear {
			want[i] = p
			if pidOf(p) == 0x1000 {
				want[i] = bytes.Clone(p)
				(&psi.PMTSignaller{Remove: true}).Packet(want[i])
			}
		}
		sameBytes(t, "descrambled", []byte(d.stdout), frame(want, 188), 188)
	}
}

// TestDescriptorPerService: two services scrambled with different systems; -service chooses
// whose PMT counts, and without it the first service's does and the other is mentioned.
func TestDescriptorPerService(t *testing.T) {
	t.Parallel()
	svc2 := detService{number: 2, pmtPID: 0x1001, pids: []uint16{0x200}}
	clear := detStream(200, false, 0, detService1, svc2)
	r := run(t, frame(clear, 188), "scramble", "-q", "-service", "1", "-cipher", "dfc", "-cw", cw128)
	if r.code != 0 {
		t.Fatal(describe(r))
	}
	r = run(t, []byte(r.stdout), "scramble", "-q", "-service", "2", "-cipher", "serpent", "-cw", cw128)
	if r.code != 0 {
		t.Fatal(describe(r))
	}
	d := run(t, []byte(r.stdout), "-service", "2", "-cw", cw128)
	if d.code != 0 || !strings.HasPrefix(d.stderr, "tsdescramble: scrambling_descriptor in the PMT of service 2: serpent\n") {
		t.Fatalf("%s", describe(d))
	}
	for i, p := range packetsOf(t, []byte(d.stdout), 188) {
		if pidOf(p) == 0x200 && !bytes.Equal(p, clear[i]) {
			t.Fatalf("packet %d of service 2 not descrambled", i)
		}
	}
	d = run(t, []byte(r.stdout), "-service", "1", "-cw", cw128)
	if !strings.HasPrefix(d.stderr, "tsdescramble: scrambling_descriptor in the PMT of service 1: dfc\n") {
		t.Fatalf("%s", describe(d))
	}
	d = run(t, []byte(r.stdout), "-cw", cw128)
	want := "tsdescramble: scrambling_descriptor in the PMT of service 1: dfc; other services signal other systems (service 2 serpent): -service or -cipher chooses\n"
	if !strings.HasPrefix(d.stderr, want) {
		t.Fatalf("stderr:\n%s\nwant it to start with %q", d.stderr, want)
	}
}

// TestLookAheadLosesNothing: however the look-ahead ends (the PMT beyond its limit, no PSI at
// all, a stream shorter than one read), the run reads every byte, in every framing.
func TestLookAheadLosesNothing(t *testing.T) {
	defer func(n int) { peekLimit = n }(peekLimit)
	clear := detStream(400, false, 200, detService1) // no PAT nor PMT before packet 200
	for _, limit := range []int{1, 187, 188*50 + 3, 188 * 190, 1 << 20} {
		peekLimit = limit
		for _, size := range []int{188, 192, 204} {
			in := frame(clear, size)
			r := run(t, in, "scramble", "-q", "-cipher", "serpent", "-cw", cw128)
			if r.code != 0 {
				t.Fatal(describe(r))
			}
			d := run(t, []byte(r.stdout), "-q", "-cipher", "serpent", "-cw", cw128)
			if d.code != 0 {
				t.Fatalf("limit %d, %d-byte packets: %s", limit, size, describe(d))
			}
			// What went out is the clear stream: the scrambler's descriptor taken out again.
			got := packetsOf(t, []byte(d.stdout), size)
			if len(got) != len(clear) {
				t.Fatalf("limit %d, %d-byte packets: %d packets out, want %d", limit, size, len(got), len(clear))
			}
			for i, p := range got {
				if want := clear[i]; !bytes.Equal(p, want) {
					t.Fatalf("limit %d, %d-byte packets: packet %d differs", limit, size, i)
				}
			}
			sameBytes(t, "framing bytes", framingOnly([]byte(d.stdout), size), framingOnly(in, size), size)
		}
	}
	// Without -cipher, a PMT past the limit is not seen: csa2, and a failed key check.
	peekLimit = 188 * 100
	r := run(t, frame(clear, 188), "scramble", "-q", "-cipher", "dfc", "-cw", cw128)
	d := run(t, []byte(r.stdout), "-q", "-cw", cw128)
	if d.code != exitUsage || !strings.Contains(d.stderr, "16 hex digits") {
		t.Errorf("PMT past the look-ahead: %s", describe(d))
	}
}

// framingOnly returns the prefix and trailer bytes of the packets of b, zeroing the packets.
func framingOnly(b []byte, size int) []byte {
	b = bytes.Clone(b)
	for i := 0; i+size <= len(b); i += size {
		at := i
		if size == 192 {
			at += 4
		}
		clear(b[at : at+188])
	}
	return b
}

// TestDescriptorFromFileAndPipe: the same choice whether the input is a file or stdin, and the
// look-ahead's file is closed when the run stops on a usage error.
func TestDescriptorFromFileAndStdin(t *testing.T) {
	t.Parallel()
	clear := detStream(100, false, 0, detService1)
	r := run(t, frame(clear, 188), "scramble", "-q", "-cipher", "atis-idsa", "-cw", cw128)
	dir := t.TempDir()
	path := writeFile(t, dir, "s.ts", []byte(r.stdout))
	for _, args := range [][]string{{"-in", path}, nil} {
		d := run(t, []byte(r.stdout), append(args, "-cw", cw128, "-out", filepath.Join(dir, "o.ts"))...)
		if d.code != 0 || !strings.Contains(d.stderr, "service 1: atis-idsa") {
			t.Fatalf("%v: %s", args, describe(d))
		}
		// The descriptor the scrambler wrote is taken out again: the clear stream.
		sameBytes(t, "descrambled", readFile(t, filepath.Join(dir, "o.ts")), frame(clear, 188), 188)
	}
	// A 16-digit key for the system the PMT names is a usage error, after the look-ahead.
	d := run(t, nil, "-in", path, "-cw", cwA)
	if d.code != exitUsage || !strings.Contains(d.stderr, "32 hex digits") {
		t.Errorf("%s", describe(d))
	}
}
