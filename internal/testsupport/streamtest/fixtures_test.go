//go:build dvbcsa

package streamtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/tsdescramble/tsdescramble/internal/testsupport/pmtcorpus"
	"github.com/tsdescramble/tsdescramble/ts"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tsdescramble/tsdescramble/internal/testsupport/dvbcsa"
	"github.com/tsdescramble/tsdescramble/psi"
)

// Helpers shared by the synchronisation and mixed-multiplex tests. Every stream here is in
// 188-byte framing: those tests are about keys and crypto periods, and the framings have
// tests of their own.

// tunings are the -workers/-batch pairs under which a run must give the same bytes: the key
// decision for a crypto period has to reach every packet of the period, whichever unit of work
// each packet fell into and whichever worker took it.
var tunings = func() (ps [][2]int) {
	for _, w := range []int{1, 3} {
		for _, b := range []int{1, 7, 64, 1024, 4096} {
			ps = append(ps, [2]int{w, b})
		}
	}
	return ps
}()

// runStats is the part of the -stats document that says what was decided: the counts of crypto
// periods and of packets left scrambled. Timing fields are left out so that runs can be compared.
type runStats struct {
	LeftScrambled        int64      `json:"left_scrambled"`
	ParityGlitches       int64      `json:"parity_glitches"`
	Periods              int64      `json:"periods"`
	PeriodsLeftScrambled int64      `json:"periods_left_scrambled"`
	PESGood              int64      `json:"pes_good"`
	PESBad               int64      `json:"pes_bad"`
	PIDs                 []pidStats `json:"pids"`
}

type pidStats struct {
	PID                  uint16 `json:"pid"`
	Packets              int64  `json:"packets"`
	Even                 int64  `json:"even"`
	Odd                  int64  `json:"odd"`
	Periods              int64  `json:"periods"`
	PeriodsFit           int64  `json:"periods_fit"`
	PeriodsLeftScrambled int64  `json:"periods_left_scrambled"`
	PeriodsUnchecked     int64  `json:"periods_unchecked"`
	LeftScrambled        int64  `json:"left_scrambled"`
	Carriage             string `json:"carriage"`
}

// pid returns the statistics of one PID; the test fails if the PID is missing.
func (s *runStats) pid(t *testing.T, pid uint16) pidStats {
	t.Helper()
	for _, p := range s.PIDs {
		if p.PID == pid {
			return p
		}
	}
	t.Fatalf("-stats has no entry for PID 0x%04x", pid)
	return pidStats{}
}

// parseStats reads a -stats document and requires every field runStats reads to be present:
// a missing field must not pass for a zero.
func parseStats(t *testing.T, b []byte) runStats {
	t.Helper()
	var raw struct {
		PIDs []map[string]json.RawMessage `json:"pids"`
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(b, &top); err != nil {
		t.Fatalf("-stats: %v\n%s", err, b)
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatalf("-stats: %v", err)
	}
	for _, k := range []string{"left_scrambled", "parity_glitches", "periods", "periods_left_scrambled", "pids"} {
		if _, ok := top[k]; !ok {
			t.Fatalf("-stats has no top-level %q", k)
		}
	}
	for _, p := range raw.PIDs {
		for _, k := range []string{"pid", "periods", "periods_fit", "periods_left_scrambled", "periods_unchecked", "left_scrambled", "carriage"} {
			if _, ok := p[k]; !ok {
				t.Fatalf("-stats: a PID entry has no %q: %s", k, mustJSON(p))
			}
		}
	}
	var s runStats
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatalf("-stats: %v", err)
	}
	return s
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// runTunings runs the command on in under every pair of tunings, with -stats, and requires
// the same output, exit status and decisions from all of them. It returns the first run's
// output, stderr, exit status and statistics.
func runTunings(t *testing.T, in []byte, args ...string) ([]byte, string, int, runStats) {
	t.Helper()
	var (
		out0    []byte
		stderr0 string
		code0   int
		st0     runStats
	)
	statsPath := filepath.Join(t.TempDir(), "stats.json")
	for i, p := range tunings {
		a := append([]string{"-workers", fmt.Sprint(p[0]), "-batch", fmt.Sprint(p[1]), "-stats", statsPath}, args...)
		out, stderr, code := runStatus(t, in, a...)
		b, err := os.ReadFile(statsPath)
		if err != nil {
			t.Fatalf("-workers %d -batch %d: exit %d, no statistics: %v\n%s", p[0], p[1], code, err, stderr)
		}
		st := parseStats(t, b)
		os.Remove(statsPath)
		if i == 0 {
			out0, stderr0, code0, st0 = out, stderr, code, st
			continue
		}
		if code != code0 {
			t.Fatalf("-workers %d -batch %d: exit %d; -workers %d -batch %d: exit %d\n%s", p[0], p[1], code, tunings[0][0], tunings[0][1], code0, stderr)
		}
		if !bytes.Equal(out, out0) {
			t.Fatalf("-workers %d -batch %d: output differs from -workers %d -batch %d's in %d packets (%d bytes against %d)%s",
				p[0], p[1], tunings[0][0], tunings[0][1], packetsDiffering(out, out0), len(out), len(out0), firstDifference(out, out0))
		}
		if !statsEqual(st, st0) {
			t.Fatalf("-workers %d -batch %d: statistics differ from -workers %d -batch %d's:\n%s\n%s", p[0], p[1], tunings[0][0], tunings[0][1], mustJSON(st), mustJSON(st0))
		}
	}
	return out0, stderr0, code0, st0
}

func statsEqual(a, b runStats) bool {
	return a.LeftScrambled == b.LeftScrambled && a.ParityGlitches == b.ParityGlitches && a.Periods == b.Periods &&
		a.PeriodsLeftScrambled == b.PeriodsLeftScrambled && a.PESGood == b.PESGood && a.PESBad == b.PESBad && slices.Equal(a.PIDs, b.PIDs)
}

// packetsDiffering counts the 188-byte packets in which a and b differ (every packet past the
// shorter one counts).
func packetsDiffering(a, b []byte) int {
	n := 0
	for at := 0; at < max(len(a), len(b)); at += 188 {
		if at+188 > len(a) || at+188 > len(b) || !bytes.Equal(a[at:at+188], b[at:at+188]) {
			n++
		}
	}
	return n
}

// requireSame fails the test when got is not want, naming the first packet that differs.
func requireSame(t *testing.T, what string, got, want []byte) {
	t.Helper()
	if bytes.Equal(got, want) {
		return
	}
	t.Fatalf("%s: output (%d bytes) differs from the expected stream (%d bytes) in %d packets%s",
		what, len(got), len(want), packetsDiffering(got, want), firstDifference(got, want))
}

// firstDifference describes the first packet in which got and want differ, for a failure
// message: its position, PID and TSC in each.
func firstDifference(got, want []byte) string {
	for at := 0; at+188 <= min(len(got), len(want)); at += 188 {
		if !bytes.Equal(got[at:at+188], want[at:at+188]) {
			return fmt.Sprintf("; the first is packet %d (PID 0x%04x, TSC %02b against %02b)", at/188, ts.PID(want[at:]), got[at+3]>>6, want[at+3]>>6)
		}
	}
	return ""
}

// pkt returns packet i of a 188-byte stream.
func pkt(stream []byte, i int) []byte { return stream[i*188 : (i+1)*188] }

// markedPerPID counts, per PID, the packets of a stream still marked scrambled.
func markedPerPID(stream []byte) map[uint16]int64 {
	m := map[uint16]int64{}
	for at := 0; at+188 <= len(stream); at += 188 {
		if stream[at+3]>>6 >= 2 {
			m[ts.PID(stream[at:])]++
		}
	}
	return m
}

// pesStart reports whether the clear packet p starts a PES packet whose header a key trial can
// read: payload_unit_start_indicator, the start code prefix, and the 9 fixed header bytes.
func pesStart(p []byte) bool {
	pl := ts.Payload(p)
	return ts.PUSI(p) && len(pl) >= 9 && pl[0] == 0 && pl[1] == 0 && pl[2] == 1
}

// serviceStreams returns the elementary PIDs of each service of a clear stream, by program number.
func serviceStreams(t *testing.T, stream []byte) map[uint16][]uint16 {
	t.Helper()
	tr := psi.NewTracker()
	for at := 0; at+188 <= len(stream); at += 188 {
		tr.Feed(stream[at : at+188])
	}
	m := map[uint16][]uint16{}
	for _, svc := range tr.Services() {
		for _, es := range svc.Streams {
			m[svc.Number] = append(m[svc.Number], es.PID)
		}
	}
	return m
}

// randomCWs returns n control words from a seeded generator.
func randomCWs(seed uint64, n int) [][]byte {
	rng := rand.New(rand.NewPCG(seed, 0xC0FFEE))
	cws := make([][]byte, n)
	for i := range cws {
		cws[i] = make([]byte, 8)
		for j := range cws[i] {
			cws[i][j] = byte(rng.IntN(256))
		}
	}
	return cws
}

// scramblePlan scrambles a copy of clear with libdvbcsa as plan says; the test fails if that
// scrambles nothing.
func scramblePlan(t *testing.T, clear []byte, plan dvbcsa.Plan) []byte {
	t.Helper()
	s := append([]byte{}, clear...)
	n, err := dvbcsa.ScramblePlan(s, ts.Framing188, plan)
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatal("the plan scrambled no packet")
	}
	return s
}

// periodsOf returns, for each packet of a stream scrambled by dvbcsa.ScrambleStream (whose
// crypto periods change for all PIDs at once), the number of its crypto period from 0, or -1
// for a packet not marked scrambled; and the number of periods.
func periodsOf(scrambled []byte) ([]int, int) {
	per := make([]int, len(scrambled)/188)
	n, last := 0, byte(0)
	for i := range per {
		tsc := scrambled[i*188+3] >> 6
		if tsc < 2 {
			per[i] = -1
			continue
		}
		if tsc != last {
			n++
			last = tsc
		}
		per[i] = n - 1
	}
	return per, n
}

// requireCheckablePeriods fails the test when some scrambled PID has a crypto period without a
// PES start a key trial can read: the tests that expect a decision for every period need one
// in each (a period without any is descrambled unchecked, with the schedule's key).
func requireCheckablePeriods(t *testing.T, clear []byte, per []int) {
	t.Helper()
	type pp struct {
		pid    uint16
		period int
	}
	seen, checkable := map[pp]bool{}, map[pp]bool{}
	for i, n := range per {
		if n < 0 {
			continue
		}
		p := pkt(clear, i)
		k := pp{ts.PID(p), n}
		seen[k] = true
		if pesStart(p) {
			checkable[k] = true
		}
	}
	for k := range seen {
		if !checkable[k] {
			t.Fatalf("fixture: PID 0x%04x has no PES start in crypto period %d; choose other period lengths", k.pid, k.period)
		}
	}
}

// listString returns a CW list, one per line.
func listString(cws [][]byte) string {
	var b strings.Builder
	for _, cw := range cws {
		fmt.Fprintf(&b, "%x\n", cw)
	}
	return b.String()
}

// nullPackets returns n null packets (PID 0x1FFF, payload of 0xFF).
func nullPackets(n int) []byte {
	out := make([]byte, 0, n*188)
	for range n {
		p := make([]byte, 188)
		p[0], p[1], p[2], p[3] = 0x47, 0x1F, 0xFF, 0x10
		for j := 4; j < 188; j++ {
			p[j] = 0xFF
		}
		out = append(out, p...)
	}
	return out
}

// longSection returns a section with section_syntax_indicator 1 (ISO/IEC 13818-1, 2.4.4.11):
// table_id, the 5 bytes after section_length (table_id_extension, version 0, current, section
// 0 of 0), body and the CRC_32.
func longSection(tableID byte, ext uint16, body []byte) []byte {
	n := 5 + len(body) + 4 // section_length: what follows it
	s := []byte{tableID, 0xB0 | byte(n>>8), byte(n), byte(ext >> 8), byte(ext), 0xC1, 0, 0}
	s = append(s, body...)
	return appendCRC(s)
}

func appendCRC(s []byte) []byte {
	c := pmtcorpus.CRC32(s)
	return append(s, byte(c>>24), byte(c>>16), byte(c>>8), byte(c))
}

// patSection returns a PAT with one program per (number, PMT PID) pair.
func patSection(progs ...[2]uint16) []byte {
	var body []byte
	for _, p := range progs {
		body = append(body, byte(p[0]>>8), byte(p[0]), 0xE0|byte(p[1]>>8), byte(p[1]))
	}
	return longSection(0x00, 1, body)
}

// esInfo is one elementary stream of a PMT.
type esInfo struct {
	typ         byte
	pid         uint16
	descriptors []byte
}

// pmtSection returns a PMT for program number prog without PCR and with the given streams.
func pmtSection(prog uint16, streams ...esInfo) []byte {
	body := []byte{0xFF, 0xFF, 0xF0, 0x00} // PCR_PID 0x1FFF, program_info_length 0
	for _, es := range streams {
		body = append(body, es.typ, 0xE0|byte(es.pid>>8), byte(es.pid), 0xF0|byte(len(es.descriptors)>>8), byte(len(es.descriptors)))
		body = append(body, es.descriptors...)
	}
	return longSection(0x02, prog, body)
}

// unitPackets cuts units (sections, or T2-MI packets, which TS carries the same way: ETSI TS
// 102 773, 5.1) into packets of pid the way a multiplexer does (ISO/IEC 13818-1, 2.4.4.2): a
// packet in which a unit starts has payload_unit_start_indicator set and a pointer_field to
// that start; units follow each other within a packet or, at random, the rest of the packet
// is stuffed with 0xFF and the next unit starts in the next packet. cc is the PID's continuity
// counter, carried from call to call.
func unitPackets(pid uint16, units [][]byte, cc *byte, rng *rand.Rand) [][]byte {
	var out [][]byte
	var pending []byte
	next := 0
	for len(pending) > 0 || next < len(units) {
		p := make([]byte, 188)
		p[0], p[1], p[2], p[3] = 0x47, byte(pid>>8)&0x1F, byte(pid), 0x10|*cc&0x0F
		*cc++
		pl := p[4:]
		// A new unit starts here when the last one is done, or, at random, right after the
		// end of the last one when that leaves room for the new unit's header.
		start := len(pending) == 0 || (next < len(units) && len(pending) <= 180 && rng.IntN(2) == 0)
		w := 0
		if start {
			p[1] |= 0x40
			pl[0] = byte(len(pending))
			w = 1
		}
		n := copy(pl[w:], pending)
		pending, w = pending[n:], w+n
		for start && len(pending) == 0 && next < len(units) && w < len(pl) {
			u := units[next]
			next++
			n := copy(pl[w:], u)
			pending, w = u[n:], w+n
			if len(pending) == 0 && rng.IntN(3) == 0 {
				break // stuffing after this one
			}
		}
		for ; w < len(pl); w++ {
			pl[w] = 0xFF
		}
		out = append(out, p)
	}
	return out
}

// reassemble reads back the units that unitPackets cut into the packets of pid in ts, as a
// demultiplexer would, with unitLen giving a unit's length from its first 6 bytes; it returns
// nil if the packets do not add up (pointer_fields, lengths, stuffing). It checks the fixtures.
func reassemble(stream []byte, pid uint16, unitLen func([]byte) int) [][]byte {
	var units [][]byte
	var cur []byte
	inUnit := false
	// take appends the bytes of b that belong to the current unit and returns the rest.
	take := func(b []byte) []byte {
		for len(b) > 0 {
			need := 6 - len(cur) // enough for either kind of header
			if len(cur) >= 6 {
				need = unitLen(cur) - len(cur)
			}
			n := min(need, len(b))
			cur, b = append(cur, b[:n]...), b[n:]
			if len(cur) >= 6 && len(cur) == unitLen(cur) {
				units, cur, inUnit = append(units, cur), nil, false
				return b
			}
		}
		return b
	}
	for at := 0; at+188 <= len(stream); at += 188 {
		p := stream[at : at+188]
		if ts.PID(p) != pid {
			continue
		}
		pl := ts.Payload(p)
		if ts.PUSI(p) {
			ptr := int(pl[0])
			if inUnit {
				if rest := take(pl[1 : 1+ptr]); len(rest) > 0 || inUnit {
					return nil // the pointer_field does not fall where the last unit ends
				}
			}
			pl = pl[1+ptr:]
			for len(pl) > 0 && pl[0] != 0xFF {
				inUnit = true
				pl = take(pl)
			}
			if strings.Trim(string(pl), "\xff") != "" {
				return nil
			}
			continue
		}
		if !inUnit {
			return nil
		}
		if rest := take(pl); strings.Trim(string(rest), "\xff") != "" {
			return nil // a unit starts without a pointer_field to it
		}
	}
	if inUnit {
		return nil
	}
	return units
}

// dataMux builds a clear single-service stream whose only elementary stream is pid with the
// given stream_type and descriptors, carrying the packets data: a PAT and PMT every 40 data
// packets (starting with them) and a null packet every 9.
func dataMux(pid uint16, typ byte, descriptors []byte, data [][]byte) []byte {
	const pmtPID = 0x1000
	var patCC, pmtCC byte
	rng := rand.New(rand.NewPCG(uint64(pid), uint64(typ)))
	var out []byte
	for i, d := range data {
		if i%40 == 0 {
			for _, p := range unitPackets(0, [][]byte{patSection([2]uint16{1, pmtPID})}, &patCC, rng) {
				out = append(out, p...)
			}
			for _, p := range unitPackets(pmtPID, [][]byte{pmtSection(1, esInfo{typ, pid, descriptors})}, &pmtCC, rng) {
				out = append(out, p...)
			}
		}
		if i%9 == 4 {
			out = append(out, nullPackets(1)...)
		}
		out = append(out, d...)
	}
	return out
}

// listPlan scrambles the PIDs of pids with cws in crypto periods of period packets of the
// whole stream (counting every packet, so that all of them change period at the same place):
// CW n mod len(cws) for period n, the parity alternating from even.
func listPlan(pids map[uint16]bool, cws [][]byte, period int) dvbcsa.Plan {
	return func(i int, pid uint16) ([]byte, bool) {
		if !pids[pid] {
			return nil, false
		}
		n := i / period
		return cws[n%len(cws)], n%2 == 1
	}
}
