package period_test

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/tsdescramble/tsdescramble/keys"
	"github.com/tsdescramble/tsdescramble/keys/period"
	"github.com/tsdescramble/tsdescramble/psi"
	"github.com/tsdescramble/tsdescramble/scrambling"
	"github.com/tsdescramble/tsdescramble/ts"
)

// The tests here drive a Tracker as the pipeline does, packet by packet, with payloads
// scrambled by the scalar path of CSA2, and check each decision against the row of the
// package doc's table it stands for.

// cws are the control words of the tests' lists (CSA2 CWs whose checksum bytes are right).
var cws = [][]byte{
	{0x11, 0x22, 0x33, 0x66, 0x44, 0x55, 0x66, 0xFF},
	{0x01, 0x02, 0x03, 0x06, 0x04, 0x05, 0x06, 0x0F},
	{0xA1, 0xB2, 0xC3, 0x16, 0xD4, 0xE5, 0xF6, 0xBF},
	{0x10, 0x20, 0x30, 0x60, 0x40, 0x50, 0x60, 0xF0},
	{0x99, 0x88, 0x77, 0x98, 0x66, 0x55, 0x44, 0xFF},
	{0x13, 0x57, 0x9B, 0x05, 0x24, 0x68, 0xAC, 0x38},
}

// stream drives a Tracker: each call is one scrambled packet of the stream, in order.
type stream struct {
	t      *testing.T
	tr     *period.Tracker
	tables *psi.Tracker
	sys    scrambling.System
	proc   scrambling.Processor
	at     int64
	counts map[uint16][]period.State // the crypto periods counted, per PID, in order
}

func newStream(t *testing.T, cfg period.Config) *stream {
	t.Helper()
	sys, err := scrambling.NewCSA2(0)
	if err != nil {
		t.Fatal(err)
	}
	s := &stream{t: t, tables: psi.NewTracker(), sys: sys, proc: sys.NewProcessor(), counts: map[uint16][]period.State{}}
	cfg.System, cfg.Tables = sys, s.tables
	cfg.Counted = func(pid uint16, st period.State) { s.counts[pid] = append(s.counts[pid], st) }
	s.tr = period.New(cfg)
	t.Cleanup(s.tr.Release)
	return s
}

// pesStart is the clear payload of a packet that starts a video PES packet.
func pesStart() []byte {
	p := make([]byte, 184)
	copy(p, []byte{0, 0, 1, 0xE0, 0, 0, 0x80, 0, 0})
	for i := 9; i < len(p); i++ {
		p[i] = byte(i * 7)
	}
	return p
}

// scrambled returns payload scrambled with cws[k].
func (s *stream) scrambled(k int, payload []byte) []byte {
	key, err := s.sys.NewKey(cws[k])
	if err != nil {
		s.t.Fatal(err)
	}
	out := append([]byte(nil), payload...)
	s.proc.Encrypt(key, [][]byte{out})
	return out
}

// data gives a scrambled packet of pid that starts nothing, and returns its period.
func (s *stream) data(pid uint16, odd bool) period.ID {
	s.at++
	id := s.tr.Packet(s.at, pid, odd, false)
	s.tr.Expire()
	return id
}

// start gives a packet of pid that starts a PES packet, scrambled with cws[k], and returns its
// period.
func (s *stream) start(pid uint16, odd bool, k int) period.ID {
	return s.startAs(pid, odd, k, psi.CarriagePES, pesStart())
}

// startAs gives a packet of pid that starts a unit, clear scrambled with cws[k], checked as
// carriage c.
func (s *stream) startAs(pid uint16, odd bool, k int, c psi.Carriage, clear []byte) period.ID {
	s.at++
	id := s.tr.Packet(s.at, pid, odd, false)
	id = s.tr.UnitStart(id, s.scrambled(k, clear), c)
	s.tr.Expire()
	return id
}

// psi feeds a table's section, in one packet of pid, to the tables and the tracker.
func (s *stream) psi(pid uint16, section []byte) {
	pkt := make([]byte, ts.PacketSize)
	for i := range pkt {
		pkt[i] = 0xFF
	}
	pkt[0], pkt[1], pkt[2], pkt[3], pkt[4] = 0x47, 0x40|byte(pid>>8), byte(pid), 0x10, 0
	copy(pkt[5:], section)
	s.at++
	s.tables.Feed(pkt)
	s.tr.TablesChanged()
}

// section returns a long-form section of table tid with its CRC_32.
func section(tid uint8, ext uint16, body []byte) []byte {
	n := 5 + len(body) + 4
	b := []byte{tid, 0xB0 | byte(n>>8), byte(n), byte(ext >> 8), byte(ext), 0xC1, 0, 0}
	b = append(b, body...)
	return binary.BigEndian.AppendUint32(b, psi.CRC32(b))
}

// service gives the tables a PAT with one program, number 1 at PMT PID 0x100, whose PMT lists
// the video PIDs given.
func (s *stream) service(pids ...uint16) { s.serviceOf(0x1B, pids...) }

// serviceOf is service with the PIDs' stream_type given.
func (s *stream) serviceOf(streamType uint8, pids ...uint16) {
	s.psi(0, section(0x00, 1, []byte{0, 1, 0xE1, 0x00}))
	body := []byte{0xE0 | byte(pids[0]>>8), byte(pids[0]), 0xF0, 0}
	for _, pid := range pids {
		body = append(body, streamType, 0xE0|byte(pid>>8), byte(pid), 0xF0, 0)
	}
	s.psi(0x100, section(0x02, 1, body))
}

// anyKey stands for any key in want: a key source's CW indexes are its own.
const anyKey = -100

// want checks the decision of period id.
func (s *stream) want(id period.ID, state period.State, key int) {
	s.t.Helper()
	st, k := s.tr.Decision(id)
	if st != state || st != period.Open && key != anyKey && k != key {
		s.t.Fatalf("period %d: state %d key %d, want state %d key %d", id, st, k, state, key)
	}
}

func TestUnitStartFitsExpectedKey(t *testing.T) {
	s := newStream(t, period.Config{Keys: keys.NewList(cws[:4])})
	a := s.start(0x100, false, 0)
	s.want(a, period.Fit, 0)
	s.data(0x100, false)
	b := s.start(0x100, true, 1)
	s.data(0x100, true) // a change of parity after two packets or more holds until the next
	s.want(b, period.Fit, 1)
	if n := s.tr.Counts(); n.KeySyncs != 0 || n.KeyFailures != 0 {
		t.Fatalf("counts %+v, want none", n)
	}
}

func TestUnitStartFitsAnotherKeyRealigns(t *testing.T) {
	s := newStream(t, period.Config{Keys: keys.NewList(cws[:6])})
	a := s.start(0x100, false, 4) // the list's fifth CW, where the first was expected
	s.want(a, period.Fit, 4)
	b := s.start(0x100, true, 5)
	s.want(b, period.Fit, 5)
	if n := s.tr.Counts().KeySyncs; n != 1 {
		t.Fatalf("%d key syncs, want 1", n)
	}
}

func TestUnitStartsFitNoKey(t *testing.T) {
	s := newStream(t, period.Config{Keys: keys.NewList(cws[:2])})
	var id period.ID
	for range 4 { // maxSyncAttempts checked unit starts
		key, _ := s.sys.NewKey(cws[3]) // not in the list
		payload := pesStart()
		s.proc.Encrypt(key, [][]byte{payload})
		s.at++
		id = s.tr.Packet(s.at, 0x100, false, false)
		id = s.tr.UnitStart(id, payload, psi.CarriagePES)
	}
	s.want(id, period.NoFit, 0)
}

func TestFailedCheckBeginsAPeriod(t *testing.T) {
	// Rule 3: no key is applied past a unit start it failed.
	s := newStream(t, period.Config{Keys: keys.NewList(cws[:4])})
	a := s.start(0x100, false, 0)
	s.data(0x100, false)
	// Same parity, another CW: a splice, or packets lost, that the continuity counters did
	// not show (they follow on across one loss in 16, and say nothing on some muxers').
	b := s.startAs(0x100, false, 2, psi.CarriagePES, pesStart())
	if a == b {
		t.Fatal("the unit start that failed its period's key stayed in that period")
	}
	s.want(a, period.Fit, 0)
	s.want(b, period.Fit, 2)
	if n := s.tr.Counts().KeyFailures; n != 1 {
		t.Fatalf("%d key failures, want 1", n)
	}
}

func TestCounterBreakBeginsAPeriod(t *testing.T) {
	s := newStream(t, period.Config{Keys: keys.NewList(cws[:4])})
	a := s.start(0x100, false, 0)
	for range 20 {
		s.data(0x100, false)
	}
	s.at++
	b := s.tr.Packet(s.at, 0x100, false, true) // the counters broke after following on
	if a == b {
		t.Fatal("a continuity break kept the period")
	}
	s.tr.Finish()
	s.want(b, period.Unplaced, 0) // nothing placed it: left as it came
}

func TestNothingToCheckTakesTheListsNextKey(t *testing.T) {
	s := newStream(t, period.Config{Keys: keys.NewList(cws[:4])})
	a := s.start(0x100, false, 0)
	b := s.data(0x100, true)
	s.data(0x100, true)
	c := s.start(0x100, false, 2)
	s.tr.Finish()
	s.want(a, period.Fit, 0)
	s.want(b, period.Unchecked, 1)
	s.want(c, period.Fit, 2)
}

func TestOnePacketOfTheOtherParityIsAGlitch(t *testing.T) {
	s := newStream(t, period.Config{Keys: keys.NewList(cws[:4])})
	a := s.start(0x100, false, 0)
	s.data(0x100, false)
	g := s.data(0x100, true)
	b := s.data(0x100, false)
	if b != a {
		t.Fatal("the period did not go on after a one-packet flip")
	}
	s.want(g, period.Glitch, anyKey)
	if n := s.tr.Counts().ParityGlitches; n != 1 {
		t.Fatalf("%d glitches, want 1", n)
	}
}

func TestOnePacketChangeASiblingSharesIsAPeriod(t *testing.T) {
	// A sparse PID shows one packet of the other parity, a sibling then changes to that
	// parity too: the service's period changed, the packet was no glitch, and the PID's next
	// packet, back in its old parity, is in the period after.
	s := newStream(t, period.Config{Keys: keys.NewList(cws[:6])})
	s.service(0x101, 0x102)
	a := s.start(0x101, false, 0)
	s.data(0x101, false)
	s.start(0x102, false, 0)
	g := s.data(0x101, true)
	s.start(0x102, true, 1)
	b := s.start(0x101, false, 2)
	if b == a || b == g {
		t.Fatal("the packet after the change is in the period before it")
	}
	s.want(b, period.Fit, 2)
	s.tr.Finish()
	s.want(g, period.Unchecked, 1)
}

func TestUnitStartAfterASiblingsChangesBeginsALaterPeriod(t *testing.T) {
	// A PID changes parity, its sibling joins and then changes back; the PID's first unit start
	// since, of the parity it changed to, fits the key two periods on and not the one of the
	// packets before it: those keep their period's key, and the unit start begins a later
	// period of the same parity.
	s := newStream(t, period.Config{Keys: keys.NewList(cws[:6])})
	s.service(0x101, 0x102)
	s.start(0x101, false, 0)
	s.start(0x102, false, 0)
	p := s.data(0x101, true)
	s.start(0x102, true, 1)
	s.start(0x102, false, 2)
	b := s.start(0x101, true, 3)
	if b == p {
		t.Fatal("the unit start is in the period of the packets before it")
	}
	s.want(b, period.Fit, 3)
	s.want(p, period.Unchecked, 1)
}

func TestSiblingPlacesAPeriodWithNothingToCheck(t *testing.T) {
	// The PIDs of one service change keys together: a sibling's checked unit start places a
	// period its own packets cannot, wherever the list's order would put it.
	s := newStream(t, period.Config{Keys: keys.NewList(cws[:6])})
	s.service(0x101, 0x102)
	s.start(0x101, false, 0)
	s.data(0x102, false)
	s.start(0x101, true, 3) // CW 4 where 2 was next: a search realigns 0x101
	b := s.data(0x102, true)
	s.data(0x102, true)
	s.tr.Finish()
	s.want(b, period.Unchecked, 3)
}

func TestSilentPIDTakesItsSiblingsPeriods(t *testing.T) {
	s := newStream(t, period.Config{Keys: keys.NewList(cws[:6])})
	s.service(0x101, 0x102)
	s.start(0x101, false, 0)
	s.data(0x102, false)
	for i := 1; i <= 2; i++ { // two periods of 0x101 while 0x102 is silent
		for j := range 10 {
			if j == 0 {
				s.start(0x101, i%2 == 1, i)
			} else {
				s.data(0x101, i%2 == 1)
			}
		}
	}
	s.start(0x101, false, 2)
	b := s.data(0x102, false) // back in the same parity, two periods on
	s.tr.Finish()
	s.want(b, period.Unchecked, 2)
}

func TestUndescribedPIDWaitsForItsPMT(t *testing.T) {
	// Before the tables, a unit start that is neither a PES header nor a section with its
	// CRC says nothing: its period waits for the PMT, which says it carries sections.
	s := newStream(t, period.Config{Keys: keys.NewList(cws[:2])})
	long := append([]byte{0}, 0x3E, 0xB1, 0x00) // a section of 256 bytes: goes on in the next packet
	long = append(long, make([]byte, 180)...)
	id := s.startAs(0x200, false, 0, psi.CarriageUnknown, long)
	if s.tr.Decided(id) {
		st, _ := s.tr.Decision(id)
		t.Fatalf("decided (state %d) before any table said what the PID carries", st)
	}
	s.serviceOf(0x05, 0x200) // private sections
	s.tr.Finish()
	// A section that goes on in the next packet says nothing: the list's first key, unchecked.
	s.want(id, period.Unchecked, 0)
}

// liveSource is a keys.Live with one slot for PID 0x100.
func liveSource(t *testing.T) *keys.Live {
	l := keys.NewLive()
	if !l.MapPID(0x100, 0) {
		t.Fatal("MapPID refused")
	}
	return l
}

func TestLiveSlotCWFitsWhetherUsedBeforeOrNot(t *testing.T) {
	// Rule 2: a constant CW, the same for every period, serves every period it fits.
	src := liveSource(t)
	src.Set(0, false, cws[0])
	src.Set(0, true, cws[1])
	s := newStream(t, period.Config{Live: &period.Live{Source: src, Wait: time.Second}})
	for i := range 6 {
		odd := i%2 == 1
		id := s.start(0x100, odd, i%2)
		s.want(id, period.Fit, anyKey)
		if _, k := s.tr.Decision(id); string(s.tr.CW(k)) != string(cws[i%2]) {
			t.Fatalf("period %d: CW %X, want %X", i+1, s.tr.CW(k), cws[i%2])
		}
		s.data(0x100, odd)
	}
}

func TestLiveStaleCWWaitsForItsOwn(t *testing.T) {
	src := liveSource(t)
	src.Set(0, false, cws[0])
	s := newStream(t, period.Config{Live: &period.Live{Source: src, Wait: time.Second}})
	a := s.start(0x100, false, 0)
	s.want(a, period.Fit, anyKey)
	s.data(0x100, true)
	b := s.start(0x100, false, 2) // the slot still holds cws[0]: stale, not used
	if s.tr.Decided(b) {
		t.Fatal("a period took the stale CW its slot held")
	}
	src.Set(0, false, cws[2])
	s.tr.Poll()
	s.want(b, period.Fit, anyKey)
	if _, k := s.tr.Decision(b); string(s.tr.CW(k)) != string(cws[2]) {
		t.Fatalf("CW %X, want %X", s.tr.CW(k), cws[2])
	}
	if w := s.tr.Waits(); w.Stale != 1 {
		t.Fatalf("%d stale CWs, want 1", w.Stale)
	}
}

func TestLiveNoKeyWithinWaitPassesAsCame(t *testing.T) {
	src := liveSource(t)
	s := newStream(t, period.Config{Live: &period.Live{Source: src, Wait: 20 * time.Millisecond}})
	a := s.start(0x100, false, 0)
	time.Sleep(40 * time.Millisecond)
	s.tr.Poll()
	s.want(a, period.NoFit, anyKey)
	if w := s.tr.Waits(); w.GaveUp != 1 {
		t.Fatalf("%d periods gave up, want 1", w.GaveUp)
	}
}

// A key source's CW for a system of its own (a key server's descrambling mode for its slot) is
// checked with that system, whatever the input system: an AES-128 key and a DES one fit the
// starts they scrambled, a slot that goes back to the input system's keys mid-stream is checked
// with it again, and a start shorter than the system changes tells nothing.
func TestLiveCWCheckedWithItsOwnSystem(t *testing.T) {
	src := liveSource(t)
	s := newStream(t, period.Config{Live: &period.Live{Source: src, Wait: time.Second}})
	start := func(odd bool, sys scrambling.System, cw, clear []byte) period.ID {
		k, err := sys.NewKey(cw)
		if err != nil {
			t.Fatal(err)
		}
		p := append([]byte(nil), clear...)
		sys.NewProcessor().Encrypt(k, [][]byte{p})
		s.at++
		id := s.tr.Packet(s.at, 0x100, odd, false)
		id = s.tr.UnitStart(id, p, psi.CarriagePES)
		s.tr.Expire()
		return id
	}
	aesKey := []byte("0123456789abcdef")
	ecb, des := scrambling.AESECB(), scrambling.DESECB()
	src.SetFor(0, false, ecb, aesKey)
	a := start(false, ecb, aesKey, pesStart()[:12]) // under a block: AES leaves it clear
	if s.tr.Decided(a) {
		t.Fatal("a start that AES leaves clear decided its period")
	}
	start(false, ecb, aesKey, pesStart())
	s.want(a, period.Fit, anyKey)

	src.SetFor(0, true, des, cws[1])
	b := start(true, des, cws[1], pesStart())
	s.want(b, period.Fit, anyKey)
	if _, k := s.tr.Decision(b); string(s.tr.CW(k)) != string(cws[1]) {
		t.Fatalf("CW %X, want %X", s.tr.CW(k), cws[1])
	}

	// The slot goes back to the input system (CSA2) for the next even period: the AES key it
	// still holds does not fit a CSA2 start, the CSA2 key that comes does.
	c := s.start(0x100, false, 0)
	if s.tr.Decided(c) {
		t.Fatal("a CSA2 start took the AES key")
	}
	src.Set(0, false, cws[0])
	s.tr.Poll()
	s.want(c, period.Fit, anyKey)
	if w := s.tr.Waits(); w.BadSize != 0 || w.Stale != 1 {
		t.Fatalf("%d CWs of a bad size, %d stale; want 0 and 1", w.BadSize, w.Stale)
	}
}

// skip stands for n packets of the stream that are not scrambled (or of other PIDs): a silence
// of the PIDs the test follows.
func (s *stream) skip(n int64) { s.at += n }

// interleave gives packets of pids in turn, n in all, of one parity, scrambled with cws[k]: each
// PID's first starts a PES packet.
func (s *stream) interleave(odd bool, k, n int, pids ...uint16) {
	for i := range n {
		if i < len(pids) {
			s.start(pids[i], odd, k)
		} else {
			s.data(pids[i%len(pids)], odd)
		}
	}
}

func TestPIDJoiningItsSiblingsPeriodIsPlaced(t *testing.T) {
	// A PID that comes to the parity a sibling began the service's period with, after a
	// silence of the whole service too short to hold a period of the other parity, is in that
	// period: its checked key places the sibling's packets that had nothing to check.
	s := newStream(t, period.Config{Keys: keys.NewList(cws[:6])})
	s.service(0x101, 0x102)
	s.interleave(false, 0, 200, 0x101, 0x102)
	s.interleave(true, 1, 200, 0x101, 0x102)
	s.interleave(false, 2, 200, 0x101, 0x102) // the odd period was seen whole: 200 packets
	b := s.data(0x101, true)                  // the service's next period: CW 6, not the list's next
	s.data(0x101, true)
	s.skip(80) // the whole service silent
	s.start(0x102, true, 5)
	s.data(0x102, true)
	s.tr.Finish()
	s.want(b, period.Unchecked, 5)
}

func TestSilenceBeforeAnyPeriodSeenWaitsForOne(t *testing.T) {
	// A period split off by a silence, before any crypto period was seen whole: whether the
	// silence could hold a whole period is not known yet, so it waits (open, its packets held)
	// and is decided once a period is seen whole: the same period as the one after the
	// silence if that silence is shorter than half of it, else left as it came. Before the
	// tables, it waits for them too (they may name siblings that were not silent): without
	// them, it is decided at the end as if it had none.
	for _, tc := range []struct {
		tables  bool
		silence int64
		want    period.State
	}{{true, 100, period.Fit}, {true, 300, period.Unplaced}, {false, 100, period.Fit}} {
		s := newStream(t, period.Config{Keys: keys.NewList(cws[:6])})
		if tc.tables {
			s.service(0x101)
		}
		s.start(0x101, false, 0)
		for range 5 {
			s.data(0x101, false)
		}
		s.at += 1000 // back in the other parity after a long silence: where is not known
		q := s.data(0x101, true)
		for range 3 {
			s.data(0x101, true)
		}
		s.at += tc.silence
		p := s.start(0x101, true, 3) // CW 4 fits after the silence; the list said CW 2
		if q == p {
			t.Fatalf("%+v: the packets before the silence and after it are one period", tc)
		}
		s.want(p, period.Fit, 3)
		if s.tr.Decided(q) {
			st, k := s.tr.Decision(q)
			t.Fatalf("%+v: decided (state %d key %d) before a period was seen whole", tc, st, k)
		}
		// Two changes of parity 400 packets apart, the PID's packets 10 apart: a period of
		// about 400 packets seen whole.
		for _, next := range []struct {
			odd bool
			k   int
		}{{false, 4}, {true, 5}} {
			for range 40 {
				s.at += 9
				s.data(0x101, !next.odd)
			}
			s.at += 9
			s.start(0x101, next.odd, next.k)
		}
		s.data(0x101, true) // the change is a change, not a glitch
		if !tc.tables {
			if s.tr.Decided(q) {
				st, k := s.tr.Decision(q)
				t.Fatalf("%+v: decided (state %d key %d) while the tables may still come", tc, st, k)
			}
			s.tr.Finish()
		}
		key := 3
		if tc.want != period.Fit {
			key = anyKey
		}
		s.want(q, tc.want, key)
	}
}

func TestPeriodAfterAnUnplacedOneIsUnplaced(t *testing.T) {
	// A PID's first period far into the stream is not placed by the list's start (its unit
	// start waits for a PMT); the period after it, with nothing to check, is not placed by
	// the list's order from there while that one is not: it is left as it came.
	s := newStream(t, period.Config{Keys: keys.NewList(cws[:4])})
	long := append([]byte{0}, 0x3E, 0xB1, 0x00) // a section of 256 bytes: goes on in the next packet
	long = append(long, make([]byte, 180)...)
	s.at += 1000
	a := s.startAs(0x200, true, 0, psi.CarriageUnknown, long)
	s.data(0x200, true)
	b := s.data(0x200, false)
	s.data(0x200, false)
	s.data(0x200, true) // the next period: b ends, while a still waits for its PMT
	s.data(0x200, true)
	if s.tr.Decided(a) {
		t.Fatal("the first period was decided before a PMT said what its PID carries")
	}
	s.want(b, period.Unplaced, anyKey)
}
