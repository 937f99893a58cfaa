//go:build dvbcsa

package streamtest

import (
	"bytes"
	"fmt"
	"github.com/tsdescramble/tsdescramble/internal/testsupport/pmtcorpus"
	"github.com/tsdescramble/tsdescramble/ts"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// Multiplexes as broadcast captures have them: a service of another CA system beside ours,
// PIDs that carry sections or T2-MI rather than PES, PMTs before the PAT. What the keys fit
// comes out clear, everything else exactly as it came in.

// mixedFixture is the two-program MPEG-2 stream with service 2 scrambled by libdvbcsa with
// testCWs, in crypto periods of 2000 packets of the stream, and service 1 with keys the test
// never gives: one key and the even parity throughout, or, with flip, a key per period and
// periods of 1500 packets that change at other places than service 2's.
type mixedFixture struct {
	clear, scrambled []byte
	want             []byte           // service 2 clear, everything else as scrambled
	ours, foreign    []uint16         // the elementary PIDs of services 2 and 1
	periods          map[uint16]int64 // crypto periods of each scrambled PID
}

// newMixedFixture scrambles the stream and works out what must come out of it.
func newMixedFixture(t *testing.T, flip bool) mixedFixture {
	t.Helper()
	clear := clearStreams(t)["mpeg2-two-programs"]
	svc := serviceStreams(t, clear)
	f := mixedFixture{clear: clear, ours: svc[2], foreign: svc[1], periods: map[uint16]int64{}}
	if len(f.ours) != 2 || len(f.foreign) != 2 {
		t.Fatalf("fixture: services 1 and 2 have %v and %v, want two PIDs each", f.foreign, f.ours)
	}
	foreignKeys := randomCWs(60, 20)
	period := func(i int, pid uint16) (int, bool) { // period number, and whether pid is ours
		if slices.Contains(f.ours, pid) {
			return i / 2000, true
		}
		if slices.Contains(f.foreign, pid) {
			if flip {
				return (i + 700) / 1500, false
			}
			return 0, false
		}
		return -1, false
	}
	f.scrambled = scramblePlan(t, clear, func(i int, pid uint16) ([]byte, bool) {
		n, ours := period(i, pid)
		switch {
		case n < 0:
			return nil, false
		case ours:
			return testCWs[n%len(testCWs)], n%2 == 1
		}
		return foreignKeys[n%len(foreignKeys)], n%2 == 1
	})
	// Our PIDs need a PES start in every period, or a period would be descrambled unchecked.
	per := make([]int, len(clear)/188)
	seen := map[[2]int]bool{}
	for i := range per {
		pid := ts.PID(pkt(clear, i))
		n, ours := period(i, pid)
		if f.scrambled[i*188+3]>>6 < 2 {
			n = -1
		}
		if n >= 0 && !seen[[2]int{int(pid), n}] {
			seen[[2]int{int(pid), n}] = true
			f.periods[pid]++
		}
		if !ours {
			n = -1
		}
		per[i] = n
	}
	requireCheckablePeriods(t, clear, per)
	if f.periods[f.ours[0]] < 4 || (flip && f.periods[f.foreign[0]] < 4) {
		t.Fatalf("fixture: crypto periods %v, want several", f.periods)
	}
	f.want = make([]byte, 0, len(clear))
	for i := range per {
		if slices.Contains(f.ours, ts.PID(pkt(clear, i))) {
			f.want = append(f.want, pkt(clear, i)...)
		} else {
			f.want = append(f.want, pkt(f.scrambled, i)...)
		}
	}
	return f
}

// check runs the command with our list on in, which must come out as want, and checks what
// the summary and -stats say of each PID.
func (f mixedFixture) check(t *testing.T, in, want []byte) {
	t.Helper()
	out, stderr, code, st := runTunings(t, in, "-cw-file", writeCWFile(t, testCWs))
	if code != 0 {
		t.Fatalf("exit %d, want 0: a PID of another CA system is no failure\n%s", code, stderr)
	}
	requireSame(t, "service 2 clear, service 1 as it came", out, want)
	lines := strings.Split(stderr, "\n")
	says := func(pid uint16) bool {
		for _, l := range lines {
			if strings.Contains(l, fmt.Sprintf("PID 0x%04x", pid)) && strings.Contains(l, "no control word fits") {
				return true
			}
		}
		return false
	}
	marked := markedPerPID(out)
	var left int64
	for _, pid := range f.foreign {
		if !says(pid) {
			t.Errorf("stderr does not say PID 0x%04x: no control word fits:\n%s", pid, stderr)
		}
		ps := st.pid(t, pid)
		if ps.PeriodsFit != 0 || ps.Periods != f.periods[pid] || ps.PeriodsLeftScrambled != ps.Periods || ps.LeftScrambled != marked[pid] || marked[pid] == 0 || ps.Carriage != "PES" {
			t.Errorf("-stats, PID 0x%04x: %+v; want %d periods, none fit, all left scrambled, %d packets left scrambled, carriage PES", pid, ps, f.periods[pid], marked[pid])
		}
		left += marked[pid]
	}
	for _, pid := range f.ours {
		if says(pid) {
			t.Errorf("stderr says no control word fits PID 0x%04x, which our list scrambled:\n%s", pid, stderr)
		}
		ps := st.pid(t, pid)
		if ps.Periods != f.periods[pid] || ps.PeriodsFit != ps.Periods || ps.PeriodsLeftScrambled != 0 || ps.LeftScrambled != 0 || ps.Carriage != "PES" {
			t.Errorf("-stats, PID 0x%04x: %+v; want %d periods, all fit, none left scrambled, carriage PES", pid, ps, f.periods[pid])
		}
	}
	if st.LeftScrambled != left {
		t.Errorf("-stats: %d packets left scrambled, want %d", st.LeftScrambled, left)
	}
}

// A service scrambled by another CA system beside ours, with no -service or -pid: ours comes out
// clear, the other as it came, and the run succeeds.
func TestMixedCAS(t *testing.T) {
	for _, flip := range []bool{false, true} {
		name := "other CAS constant parity"
		if flip {
			name = "other CAS with its own crypto periods"
		}
		t.Run(name, func(t *testing.T) {
			f := newMixedFixture(t, flip)
			f.check(t, f.scrambled, f.want)
		})
	}
}

// movePAT returns ts without the PAT packets of its first third, the first of them put back at
// the end of that third: until then, the PMTs come without a PAT.
func movePAT(stream []byte) []byte {
	n := len(stream) / 188
	var first []byte
	out := make([]byte, 0, len(stream))
	for i := range n {
		p := pkt(stream, i)
		if i == n/3 {
			out = append(out, first...)
		}
		if i < n/3 && ts.PID(p) == 0 {
			if first == nil {
				first = p
			}
			continue
		}
		out = append(out, p...)
	}
	return out
}

// requirePMTBeforePAT fails the test unless ts has a PMT packet (pmtPID) and a scrambled packet
// before its first PAT packet.
func requirePMTBeforePAT(t *testing.T, stream []byte, pmtPID uint16) {
	t.Helper()
	pmt, scrambled := false, false
	for at := 0; at < len(stream); at += 188 {
		p := stream[at : at+188]
		switch {
		case ts.PID(p) == 0:
			if !pmt || !scrambled {
				t.Fatalf("fixture: the first PAT is packet %d, before any PMT (%v) or scrambled packet (%v)", at/188, pmt, scrambled)
			}
			return
		case ts.PID(p) == pmtPID:
			pmt = true
		case p[3]>>6 >= 2:
			scrambled = true
		}
	}
	t.Fatal("fixture: no PAT")
}

// The mixed multiplex with its PMTs before the first PAT: the same outcome.
func TestMixedPMTBeforePAT(t *testing.T) {
	for _, flip := range []bool{false, true} {
		t.Run(fmt.Sprintf("other CAS flips %v", flip), func(t *testing.T) {
			f := newMixedFixture(t, flip)
			in := movePAT(f.scrambled)
			requirePMTBeforePAT(t, in, 0x1000)
			f.check(t, in, movePAT(f.want))
		})
	}
}

// dataPID is the PID of the section and T2-MI fixtures.
const dataPID = 0x0200

// sectionUnits returns private sections (section_syntax_indicator 1, correct CRC_32) for a PID
// of the given stream_type: about half of them short enough to fit in one packet, the others
// spanning up to nine.
func sectionUnits(typ byte) [][]byte {
	rng := rand.New(rand.NewPCG(uint64(typ), 61))
	var units [][]byte
	for k := range 1200 {
		n := 10 + rng.IntN(150)
		if rng.IntN(2) == 0 {
			n = 300 + rng.IntN(1300)
		}
		body := make([]byte, n)
		for i := range body {
			body[i] = byte(rng.IntN(256))
		}
		tid := 0x90 + byte(k%8) // user private table_ids
		if typ == 0x0B {
			tid = 0x3B + byte(k%2) // DSM-CC download messages and data blocks (ISO/IEC 13818-6)
		}
		units = append(units, longSection(tid, uint16(k), body))
	}
	return units
}

func sectionLen(s []byte) int { return 3 + (int(s[1]&0x0F)<<8 | int(s[2])) }

// t2miUnits returns T2-MI packets as DVB-T2 modulators are fed them (ETSI TS 102 773): a
// 6-byte header, the payload and a CRC_32. One of type 0x00 whose packet_count is 1 starts with
// 00 00 01, like a PES packet, when it starts a TS payload: it must not be read as one.
func t2miUnits() [][]byte {
	rng := rand.New(rand.NewPCG(62, 63))
	var units [][]byte
	for k := range 1500 {
		typ := byte(0x00) // baseband frame
		switch k % 10 {
		case 8:
			typ = 0x10 // L1-current
		case 9:
			typ = 0x20 // timestamp
		}
		payload := make([]byte, 40+rng.IntN(1000))
		for i := range payload {
			payload[i] = byte(rng.IntN(256))
		}
		bits := 8 * len(payload)
		u := []byte{typ, byte(k), byte(k/50%16) << 4, 0, byte(bits >> 8), byte(bits)}
		units = append(units, appendCRC(append(u, payload...)))
	}
	return units
}

func t2miLen(u []byte) int { return 6 + (int(u[4])<<8|int(u[5]))/8 + 4 }

// t2miDescriptor is the DVB extension descriptor (tag 0x7F) holding a T2MI_descriptor
// (tag_extension 0x11) with no body, as a PMT lists it for a T2-MI stream of stream_type 0x06.
var t2miDescriptor = []byte{0x7F, 0x01, 0x11}

// dataFixture scrambles dataPID of clear with testCWs in crypto periods of 500 packets of the
// stream.
func dataFixture(t *testing.T, clear []byte) []byte {
	t.Helper()
	s := scramblePlan(t, clear, listPlan(map[uint16]bool{dataPID: true}, testCWs, 500))
	if _, n := periodsOf(s); n < 5 {
		t.Fatalf("fixture: %d crypto periods, want several", n)
	}
	return s
}

// A PID that carries sections, or T2-MI, is not checked for PES headers: scrambled with the
// right keys as the only scrambled PID, it comes out clear, and the run succeeds.
func TestNonPESCarriage(t *testing.T) {
	if pmtcorpus.CRC32([]byte("123456789")) != 0x0376E6E7 { // the check value of CRC-32/MPEG-2
		t.Fatal("fixture: pmtcorpus.CRC32 is wrong")
	}
	for _, c := range []struct {
		name        string
		typ         byte
		descriptors []byte
		units       [][]byte
		unitLen     func([]byte) int
		carriage    string
		say         string
	}{
		{"private sections (0x05)", 0x05, nil, sectionUnits(0x05), sectionLen, "sections", ""},
		{"DSM-CC sections (0x0B)", 0x0B, nil, sectionUnits(0x0B), sectionLen, "sections", ""},
		{"T2-MI", 0x06, t2miDescriptor, t2miUnits(), t2miLen, "other", "key check not possible"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var cc byte
			clear := dataMux(dataPID, c.typ, c.descriptors, unitPackets(dataPID, c.units, &cc, rand.New(rand.NewPCG(uint64(c.typ), 64))))
			if got := reassemble(clear, dataPID, c.unitLen); !slices.EqualFunc(got, c.units, bytes.Equal) {
				t.Fatalf("fixture: %d units read back from the stream, not the %d put in", len(got), len(c.units))
			}
			if c.carriage == "other" {
				looksPES := 0
				for at := 0; at < len(clear); at += 188 {
					if p := clear[at : at+188]; ts.PID(p) == dataPID && pesStart(p) {
						looksPES++
					}
				}
				if looksPES == 0 {
					t.Fatal("fixture: no T2-MI payload starts with 00 00 01: the trap for a PES check is missing")
				}
			}
			scrambled := dataFixture(t, clear)
			out, stderr, code, st := runTunings(t, scrambled, "-cw-file", writeCWFile(t, testCWs))
			if code != 0 {
				t.Fatalf("exit %d, want 0\n%s", code, stderr)
			}
			requireSame(t, c.name, out, clear)
			if c.say != "" && !strings.Contains(stderr, c.say) {
				t.Errorf("stderr does not say %q:\n%s", c.say, stderr)
			}
			if ps := st.pid(t, dataPID); ps.Carriage != c.carriage || ps.PeriodsLeftScrambled != 0 || ps.LeftScrambled != 0 || st.PESBad != 0 {
				t.Errorf("-stats: PID 0x%04x %+v, %d bad PES starts; want carriage %s, nothing left scrambled, no bad PES start", dataPID, ps, st.PESBad, c.carriage)
			}
		})
	}
}

// The section stream with its PMT before the first PAT: until the PAT comes, nothing says the
// PID carries sections, and its section starts must still not be taken for bad PES starts.
func TestSectionsPMTBeforePAT(t *testing.T) {
	var cc byte
	clear := dataMux(dataPID, 0x05, nil, unitPackets(dataPID, sectionUnits(0x05), &cc, rand.New(rand.NewPCG(5, 64))))
	scrambled := dataFixture(t, clear)
	in := movePAT(scrambled)
	requirePMTBeforePAT(t, in, 0x1000)
	out, stderr, code, _ := runTunings(t, in, "-cw-file", writeCWFile(t, testCWs))
	if code != 0 {
		t.Fatalf("exit %d, want 0\n%s", code, stderr)
	}
	requireSame(t, "sections, PMT before PAT", out, movePAT(clear))
}
