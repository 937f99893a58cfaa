package period

import (
	"context"
	"maps"
	"sync"
	"time"

	"github.com/tsdescramble/tsdescramble/keys"
	"github.com/tsdescramble/tsdescramble/psi"
	"github.com/tsdescramble/tsdescramble/scrambling"
	"github.com/tsdescramble/tsdescramble/ts"
)

// ID names a crypto period of a Tracker: the one a packet belongs to. None is no period.
type ID int32

// None is the ID of no period.
const None ID = -1

// State is what a Tracker decided of a crypto period.
type State uint8

const (
	Open      State = iota // undecided: its packets wait
	Fit                    // a unit start fitted its key: descramble with it
	Unchecked              // nothing could be checked: the key the schedule or a sibling places
	NoFit                  // no key fitted its unit starts (or none came in time): left as it came
	Glitch                 // a one-packet parity flip: left as it came
	Unplaced               // it began where its key may have changed unseen, and nothing placed it: left as it came
)

// Counts are a Tracker's counts of its decisions over all PIDs.
type Counts struct {
	KeySyncs    int // times a PID's CW list was (re)aligned because another CW than the expected one fit
	KeyFailures int // unit starts that did not fit the key their crypto period had: each began a period of its own
	// UnseenChanges counts the key failures whose period then fitted another CW: the key
	// changed where the stream showed nothing (packets lost that the continuity counters hid,
	// two streams joined), and the packets between that place and the unit start went out
	// descrambled with the key before.
	UnseenChanges  int
	ParityGlitches int64 // single packets of the other parity inside a period: left as they came
}

// Live configures a Tracker whose keys come from a Source while the stream runs (a key server,
// a CW log that grows), in place of a key list.
type Live struct {
	// Source is the key slots the CWs arrive in (a *keys.Live, typically); the Tracker
	// decides which of them each crypto period takes.
	Source keys.Source
	// Busy, when set, reports whether the key server has ECMs to answer still.
	Busy func() bool
	// Wait bounds how long a crypto period waits for its key (default 2 s).
	Wait time.Duration
	// FileInput says that the input runs ahead of real time: while a period waits and the
	// key server is busy, the tracker waits for it, within Wait.
	FileInput bool
	// AtOnce says that the keys come only with the stream's own sections, each answered as it
	// is read (an ECM cache): on a file input nothing can arrive while the reader stands
	// still, so no period waits in time; one without its key is decided by the stream alone
	// (its end, the packet bound, the end of the input), and the run's output does not depend
	// on how fast the machine reads.
	AtOnce bool
	// Log, when set, receives a line when a period gives up waiting.
	Log func(string)
	// ShowKeys puts each period's CW in the key log (keys are secrets).
	ShowKeys bool
	// Drop says that the packets of a period whose key did not come are dropped, not passed.
	Drop bool
	// Origin names where the keys come from in the log's lines: "the key server" when empty,
	// "the CW log" for a log that another program writes.
	Origin string
}

// Waits counts what waiting for keys from a Source did.
type Waits struct {
	Waited      int64         `json:"periods_waited"`   // crypto periods whose key came after their first packet
	Held        int64         `json:"packets_held"`     // their packets, held until the key came
	HeldMax     time.Duration `json:"held_max_ns"`      // the longest such wait
	GaveUp      int64         `json:"periods_no_key"`   // periods whose key never came in time
	PassedNoKey int64         `json:"packets_passed"`   // their packets, passed as they came (Live.Drop: dropped)
	Dropped     int64         `json:"packets_dropped"`  // packets dropped for want of a key (Live.Drop), counted by the caller
	BadSize     int64         `json:"cws_wrong_size"`   // CWs the input system cannot take, not used
	NotFitting  int64         `json:"cws_not_fitting"`  // CWs that did not fit their period's first unit start, not used
	Stale       int64         `json:"cws_stale"`        // CWs a slot still held from an earlier period, not fitting: the period waited for its own
	ReaderWaits time.Duration `json:"reader_waited_ns"` // time spent waiting for the key server (file input)
	// Applied counts the crypto periods that took a CW from the source, per PID and parity.
	Applied map[AppliedKey]int64 `json:"-"`
}

// Config configures a Tracker.
type Config struct {
	// Ctx stops a long key search and every wait when it is done.
	Ctx context.Context
	// Keys is the key list or schedule whose CWs the periods take; nil with Live.
	Keys *keys.Schedule
	// Live, when set, takes each period's CW from a Source instead.
	Live *Live
	// System is the input system, that key trials descramble with (a key source's CW for
	// another system, keys.SystemSource, with its own).
	System scrambling.System
	// Tables is the stream's PAT and PMTs: what each PID carries, and the services whose PIDs
	// change keys together.
	Tables *psi.Tracker
	// Counted, when set, is called once for each crypto period counted, when it is decided.
	Counted func(pid uint16, s State)
	// Log receives a line when a list is realigned; KeyLog a line for each crypto period.
	Log, KeyLog func(string)
}

// A Tracker is the one owner of the decision "which key applies to this packet": it follows
// the crypto periods of every PID of a stream, in stream order, and decides each period's key,
// or that its packets pass as they came, from the packets' parity, their unit starts (a key
// trial: does the descrambled start make a PES header or a section with its CRC?) and what
// the other PIDs of the same service showed. See the package doc for its rules.
type Tracker struct {
	cfg  Config
	ctx  context.Context
	keys *keys.Schedule
	live *liveState // keys that arrive while the stream runs (live.go), or nil

	// now is the stream's packet number of the packet last given, from 1.
	now int64

	// Crypto periods per PID: a table from sparePIDKeys, handed back by Release.
	pk       *[8192]*pidKeys
	periods  []cryptoPeriod
	open     []int32 // periods not yet decided, in order of their first packet
	deferred []int32 // open periods with unit starts deferred for want of a PMT (recheck)
	haveHint bool    // a period has fitted: hintPos and hintOdd are its ring position and parity
	hintPos  int
	hintOdd  bool
	hintSvc  *svcClock // the service of the PID that fitted first, if the tables said
	// startDisputed says a PID's first period fitted a CW other than the list's first for
	// its parity: the list's start is no evidence for another PID's first period.
	startDisputed bool

	counts Counts

	// svcOf is the period clock of the service each PID belongs to, from the PMTs.
	svcOf  map[uint16]*svcClock
	clocks map[uint16]*svcClock // by service number
	// minPeriod is the shortest crypto period of a service seen whole, in packets: a PID
	// silent for longer may have missed two changes of key and come back in the same parity.
	minPeriod int64
	// periodBound is the longest that one crypto period lasted at most, as a PID's changes of
	// parity and the silences before them show: a bound on minPeriod when the periods seen
	// whole are all long ones.
	periodBound int64
	// flips counts the changes of parity seen, over all PIDs.
	flips int

	trialBuf [ts.PacketSize]byte
}

// New returns a Tracker at the start of a stream.
func New(cfg Config) *Tracker {
	t := &Tracker{cfg: cfg, ctx: cfg.Ctx, keys: cfg.Keys, pk: newPIDKeysTable(), minPeriod: HoldPackets, periodBound: HoldPackets}
	if t.ctx == nil {
		t.ctx = context.Background()
	}
	if cfg.Live != nil {
		t.live = newLiveState(cfg.Live, cfg.System.KeySizes())
	}
	return t
}

// Packet returns the crypto period of a scrambled packet with a payload, the stream's packet
// number at (from 1, counting every packet), of pid, of the odd or even parity; ccBreak says
// its continuity counter broke after following on (packets lost, or two recordings joined).
func (t *Tracker) Packet(at int64, pid uint16, odd, ccBreak bool) ID {
	t.now = at
	if t.live != nil {
		return ID(t.livePeriodOf(pid, odd, ccBreak))
	}
	return ID(t.periodOf(pid, odd, ccBreak))
}

// UnitStart gives the tracker the scrambled payload of a packet of period id that starts a PES
// packet or a section, as carriage (the PMT's word for the PID) says to check it. It returns
// the period the packet belongs to: a unit start that fails its period's key begins a period
// of its own.
// The payload must stay as it is while the period it returns is open: the tracker may try
// keys on it later.
func (t *Tracker) UnitStart(id ID, payload []byte, carriage psi.Carriage) ID {
	u := unitStart{payload: payload, carriage: carriage}
	if t.live != nil { // a key server's keys are not searched, only checked
		return ID(t.liveUnitStart(int32(id), u))
	}
	return ID(t.offerUnitStart(int32(id), u))
}

// Decision returns the state of period id, and its CW's index in the schedule or the source
// (keys.NoKey: none) once it is decided.
func (t *Tracker) Decision(id ID) (State, int) {
	p := &t.periods[id]
	return p.state, p.key
}

// Decided reports whether period id is decided.
func (t *Tracker) Decided(id ID) bool { return t.periods[id].state != Open }

// CW returns CW k of the keys the periods take (a schedule's, or a source's).
func (t *Tracker) CW(k int) []byte {
	if t.live != nil {
		return t.live.cfg.Source.CW(k)
	}
	return t.keys.CW(k)
}

// Expire decides the periods still open HoldPackets packets after their first packet: call it
// after each packet.
func (t *Tracker) Expire() {
	if len(t.open) > 0 {
		t.expire()
	}
}

// DecideNow decides open period id with what is known now, as at the packet bound: for a live
// input whose units are due. Periods that wait for a key server's key wait as Live.Wait says.
func (t *Tracker) DecideNow(id ID) {
	if t.live != nil || t.periods[id].state != Open {
		return
	}
	t.endNow(int32(id))
}

// Poll asks a key source again for the periods that wait for their key and gives up on those
// that waited too long (for a file input, it first waits while the key server is busy); it
// does nothing without Live.
func (t *Tracker) Poll() {
	if t.live != nil {
		t.livePoll()
	}
}

// Arrived returns a channel that a key source signals when keys arrive, or nil.
func (t *Tracker) Arrived() <-chan struct{} {
	if t.live == nil {
		return nil
	}
	return t.live.cfg.Source.Arrived()
}

// Finish decides every period still open at the end of the stream.
func (t *Tracker) Finish() { t.finish() }

// Compact forgets the periods no packet refers to any more. Call it only when no packet of an
// open period waits: then every period is decided.
func (t *Tracker) Compact() { t.compact() }

// TablesChanged is called when the PAT or a PMT changed: the services' PIDs change keys
// together, and unit starts that waited for a PMT to say what their PID carries are checked.
func (t *Tracker) TablesChanged() {
	t.refreshServices()
	t.settleAll()
	if len(t.deferred) > 0 {
		t.recheck()
	}
}

// Counts returns the tracker's counts so far.
func (t *Tracker) Counts() Counts { return t.counts }

// Waits returns what waiting for a key source did so far, or nil without Live.
func (t *Tracker) Waits() *Waits {
	if t.live == nil {
		return nil
	}
	w := t.live.st
	w.Applied = maps.Clone(t.live.slots.applied)
	return &w
}

// WaitCounts returns the crypto periods that waited for their key and those that gave up so
// far, as Waits counts them, without copying the rest; ok is false without Live.
func (t *Tracker) WaitCounts() (waited, gaveUp int64, ok bool) {
	if t.live == nil {
		return 0, 0, false
	}
	return t.live.st.Waited, t.live.st.GaveUp, true
}

// EachApplied calls f with each PID whose crypto periods took a CW from the Live source so far
// and how many did, in no order; without Live, never. Unlike Waits' Applied, a CW taken back
// because it did not fit is still counted: the count only grows. It does not allocate.
func (t *Tracker) EachApplied(f func(pid uint16, n int64)) {
	if t.live == nil {
		return
	}
	for pid, n := range t.live.slots.takes {
		f(pid, n)
	}
}

// Rekey replaces the key schedule (a key file edited while a live run goes on). Call it when no
// period is open: those that began under the old schedule have been decided with it. Every PID
// then starts over as at the start of the stream: its next packet begins a period whose key is
// found in the new schedule at its first unit start, wherever the new list begins.
func (t *Tracker) Rekey(s *keys.Schedule) {
	t.keys = s
	t.haveHint, t.startDisputed, t.hintSvc = false, false, nil
	for _, pk := range t.pk {
		if pk != nil {
			pk.cur, pk.prev, pk.run, pk.prevRun = -1, -1, 0, 0
			pk.everFit, pk.failed, pk.foreign = false, 0, false
			pk.fitKey, pk.sameFits = [2]int{keys.NoKey, keys.NoKey}, 0
		}
	}
	t.periods, t.open = t.periods[:0], t.open[:0] // no packet refers to a period any more
}

// Release hands the tracker's per-PID table to the trackers that follow; the tracker must not
// be used after it.
func (t *Tracker) Release() {
	clear(t.pk[:])
	sparePIDKeys.Put(t.pk)
	t.pk = nil
}

// newPIDKeysTable returns an empty table of per-PID crypto-period states: one a tracker that
// ended left (Release), or a new one.
func newPIDKeysTable() *[8192]*pidKeys {
	if t, _ := sparePIDKeys.Get().(*[8192]*pidKeys); t != nil {
		return t
	}
	return new([8192]*pidKeys)
}

// sparePIDKeys are the per-PID tables of trackers that ended, for those that follow: 64 KiB
// each, which a run over a small file would otherwise allocate and fault in anew (a batch of
// many recordings).
var sparePIDKeys sync.Pool

// refreshServices gives each PID of a service with a PMT its service's period clock, after the
// tables changed. A service keeps its clock while it stays; a PID of two services takes the
// first's.
func (t *Tracker) refreshServices() {
	services := t.cfg.Tables.Services()
	if t.clocks == nil {
		t.clocks, t.svcOf = map[uint16]*svcClock{}, map[uint16]*svcClock{}
	}
	clear(t.svcOf)
	for _, svc := range services {
		if !svc.PMTSeen {
			continue
		}
		c := t.clocks[svc.Number]
		if c == nil {
			c = newSvcClock(t.now)
			t.clocks[svc.Number] = c
		}
		for _, es := range svc.Streams {
			if t.svcOf[es.PID] == nil {
				t.svcOf[es.PID] = c
			}
		}
	}
	for pid, pk := range t.pk {
		if pk != nil {
			pk.svc = t.svcOf[uint16(pid)]
		}
	}
}

// carriage returns what the PMTs say pid carries.
func (t *Tracker) carriage(pid uint16) psi.Carriage { return t.cfg.Tables.Carriage(pid) }

// trial descrambles the start of a payload with CW k and says whether it starts a unit as the
// PID's carriage expects. Only the bytes the check reads are descrambled: a key search may try
// millions of CWs.
func (t *Tracker) trial(k int, payload []byte, carriage psi.Carriage) Check {
	sys := t.system(k)
	if len(payload) < sys.MinPayload() {
		// The system leaves such a payload clear: any key would seem to fit it. The caller
		// marks such payloads of the input system clear before they get here; a key server's
		// key of another system (a mode of its own) may come with a longer shortest payload.
		return CheckUnknown
	}
	// The start code prefix first: three bytes, one block to decipher, reject nearly every
	// wrong key (all but one in 2^24).
	head := t.decryptPrefix(sys, k, payload, 3)
	pes := head[0] == 0 && head[1] == 0 && head[2] == 1
	if pes {
		head = t.decryptPrefix(sys, k, payload, min(len(payload), trialBytes))
	}
	switch carriage {
	case psi.CarriagePES:
		if !pes {
			return CheckBad
		}
		return CheckUnitStart(head, len(payload), carriage)
	case psi.CarriageUnknown:
		if pes && ts.PESHeaderOK(head, len(payload)) {
			return CheckGood
		}
	}
	// A section: read up to its header, then up to its end, so that its CRC can be checked.
	for range 2 {
		need := sectionEnd(head, len(payload))
		if need <= len(head) {
			break
		}
		head = t.decryptPrefix(sys, k, payload, need)
	}
	return CheckUnitStart(head, len(payload), carriage)
}

// trialDecided is trial for the key a decided period has, at each of its later unit starts: on a
// PID that carries PES, the start code alone (three bytes, one block to decipher), since the key
// fitted a whole header at the period's start and what is asked now is only whether it still
// applies. A key that stopped applying makes a start code one time in 2^24.
func (t *Tracker) trialDecided(k int, payload []byte, carriage psi.Carriage) Check {
	if sys := t.system(k); carriage == psi.CarriagePES && len(payload) >= sys.MinPayload() {
		if head := t.decryptPrefix(sys, k, payload, 3); head[0] == 0 && head[1] == 0 && head[2] == 1 {
			return CheckGood
		}
		return CheckBad
	}
	return t.trial(k, payload, carriage)
}

// system returns the scrambling system of CW k: the one a key source names for it (a key
// server's descrambling mode for the slot it came to), else the input system.
func (t *Tracker) system(k int) scrambling.System {
	if t.live != nil && t.live.systems != nil {
		if sys := t.live.systems.System(k); sys != nil {
			return sys
		}
	}
	return t.cfg.System
}

// decryptPrefix returns the first n bytes of payload descrambled with CW k of system sys,
// leaving payload as it is.
func (t *Tracker) decryptPrefix(sys scrambling.System, k int, payload []byte, n int) []byte {
	dst := t.trialBuf[:n]
	if err := scrambling.DecryptPrefix(sys, t.CW(k), payload, dst); err != nil {
		// The control words were all checked before the run (a source's, as they come).
		panic("period: " + err.Error())
	}
	return dst
}
