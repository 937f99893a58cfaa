package period

import (
	"bytes"
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/tsdescramble/tsdescramble/ts"

	"github.com/tsdescramble/tsdescramble/keys"
	"github.com/tsdescramble/tsdescramble/psi"
)

// Crypto periods, one sequence per PID.
//
// Each PID's parity changes start that PID's crypto periods; a parity change on one PID says
// nothing about another's (a multiplex may carry services of several CA systems, each with its
// own clock). Every period gets its key once, by a decision that covers all of its packets:
//
//   - fit: a unit start of the period (a PES header, or a section with its CRC_32) descrambled
//     right with the schedule's expected key or, after a search, with another of its keys; the
//     schedule goes on from there for this PID;
//   - unchecked: the period had no unit start that could be checked (a PID of sections that
//     span packets, T2-MI, a period cut short): the schedule's expected key;
//   - no fit: its checked unit starts fitted no key: the packets pass through as they came;
//   - glitch: one packet of the other parity inside a period (a bit error): that packet passes
//     through as it came, and the period goes on.
//
// Until its period is decided, a packet is held with the unit of work it is in, and so are the
// units after it (output order is input order). A decision depends only on the packets of the
// stream in order, never on how they were cut into units: that is what keeps the output the same
// for every -batch and -workers. A period still open HoldPackets packets after its first packet
// is decided as if it had ended, which bounds the packets held.

// HoldPackets bounds how long a crypto period may stay undecided, in packets of the stream
// (12 MiB of 188-byte packets): far longer than the distance between two PES starts of any
// audio or video stream, so only PIDs without checkable unit starts reach it.
const HoldPackets = 1 << 16

// maxSyncAttempts bounds the unit starts of one crypto period on which keys are tried: a
// period whose unit starts fit no key is damaged or needs a key the schedule does not have.
const maxSyncAttempts = 4

// maxForeignChecks is the number of checked unit starts, with no key of the schedule fitting
// any of them, after which a PID that never fitted, in its second crypto period or later, is
// taken for another CA system's: its later periods are left as they came without trying keys,
// which bounds the cost of a long key list. (A key log that starts a period after the
// recording still fits from its second period on.)
const maxForeignChecks = 8

// A period's first checked unit start that no key fits is tried with every CW of the schedule;
// in a schedule of more than wideSearch periods, its later ones only with the nearSearch
// nearest, so that a long list costs one search a period, not maxSyncAttempts.
const (
	wideSearch = 4096
	nearSearch = 64
)

// trialBytes is how much of a payload a key trial descrambles to check a PES header.
const trialBytes = 24

// period is one crypto period of one PID.
type cryptoPeriod struct {
	pid       uint16
	odd       bool
	tentative bool  // a parity change that the PID's next packet has not confirmed yet
	late      bool  // Live: its key came after its first packet
	flip      bool  // it began at a change of its PID's parity, seen: its start is the period's
	unplaced  bool  // it began where the key may have changed unseen: only a unit start places it
	svcN      int32 // the number of its service's period (svcClock.n) it is part of, or 0
	gap       int64 // the packets from its PID's packet before its first to it
	expect    int   // the ring position its PID's periods before it lead to
	from      int32 // the period before it of its PID, or -1: its position is steps after from's
	steps     int32
	placed    bool // a sibling's key placed it (placeBySiblings)
	silenced  bool // split off the period before by a silence of its PID alone (gap)
	afterLoss bool // began where packets of its PID were lost (a break of its counters)
	// replaced is 1 + the CW of the period before, when this one began at a unit start that
	// CW did not fit (offerUnitStart); else 0.
	replaced int32
	// awaitNumber is the number of the PID's period split off it (where its key may have
	// changed, before it was checked) whose decision decides it, or 0.
	awaitNumber int
	// awaitFrom and awaitTo are its PID's packets around the silence that split it off the
	// period after it, when it waits to know whether that silence hid a crypto period
	// (settle), else awaitTo is 0; awaitQuiet is its service's longest silence in that time,
	// -1 until known; awaitPos is the ring position it takes if none hid.
	awaitFrom, awaitTo, awaitQuiet int64
	awaitPos                       int
	state                          State
	attempts                       uint8 // checked unit starts that no key fitted
	npending                       uint8
	pos                            int   // ring position in the schedule: expected, or aligned by a fit
	key                            int   // CW index of pos, or keys.NoKey
	first                          int64 // the stream's packet number of its first packet, from 1
	number                         int   // its number among the PID's periods, from 1
	// Unit starts of a tentative period, checked when it is confirmed.
	pending [maxSyncAttempts]unitStart
	// Unit starts checked before any PMT said what the PID carries, that no key made a PES
	// header or a whole section of: checked again when a PMT says (recheck).
	deferred  [2]unitStart
	ndeferred uint8
}

// unitStart is a scrambled payload that starts a PES packet or a section, as it came (its
// packet waits with its period).
type unitStart struct {
	payload  []byte
	carriage psi.Carriage
}

// pidKeys is the crypto-period state of one PID.
type pidKeys struct {
	last     int64 // the stream's packet number of its last scrambled packet
	prevLast int64 // that of its last packet before its current period began
	lastFlip int64 // that of the first packet of its latest period begun at a change of parity
	flipGap  int64 // the silence before that packet, in which the change came
	inStep   bool  // its periods follow the list in order: from its start, or since a change of parity fitted the list's next key
	unsure   bool  // the period being started may be more than its ring steps on (startPeriod)
	silenced bool  // the period being started is split off by a silence alone (startPeriod)
	// spanGap is the longest time between two of its packets from the one before lastFlip on:
	// how late a change may have been seen, and the silences that may have hidden one.
	spanGap      int64
	gap          int64 // the packets from its packet before the current one to it
	history      pidHistory
	svc          *svcClock // its service's periods, or nil
	cur, prev    int32     // indexes in Tracker.periods of the current period and of the one a tentative period interrupts
	run, prevRun int64     // packets of cur, and of prev when cur is tentative
	periods      int       // periods started, glitches included
	everFit      bool
	// fitKey is the CW index of its latest checked period of each parity (even, odd), or
	// keys.NoKey before one.
	fitKey [2]int
	// sameFits counts its latest checked periods that fitted one CW, with no packets lost
	// between them (a break of the counters starts it again): a key seen constant only
	// across losses may be a rotating list's that came round.
	sameFits int
	// lost says packets of it were lost just before the one being placed (its counters broke).
	lost    bool
	failed  int  // checked unit starts that fitted no key while the PID never fitted
	foreign bool // never fitted in maxForeignChecks checks: no more trials
}

// Check is what a key trial says of a unit start.
type Check int8

const (
	CheckBad     Check = -1
	CheckUnknown Check = 0 // nothing can be told (a section that goes on in the next packet)
	CheckGood    Check = 1
	// CheckUndescribed: on a PID no PMT has described, neither a PES header nor a whole
	// section with its CRC. It says nothing until the tables come; without them, a start that
	// does not fit (carriageNoTables).
	CheckUndescribed Check = 2
)

// CheckUnitStart checks the descrambled start of a payload of payloadLen bytes that starts a
// unit, as the PID's carriage says: a PES header, a section with its CRC, or either when the
// carriage is unknown. head holds the payload's first bytes, or all of it. A section whose end
// lies beyond head says nothing; for a PID whose carriage is unknown, only a PES header or a
// section whose CRC matched is good, so that noise never passes for a section, and anything
// else says nothing: a key is never judged not to fit before a PMT says what the PID carries.
func CheckUnitStart(head []byte, payloadLen int, carriage psi.Carriage) Check {
	switch carriage {
	case psi.CarriagePES:
		if ts.PESHeaderOK(head, payloadLen) {
			return CheckGood
		}
		return CheckBad
	case psi.CarriageSections:
		ok, checked := psi.SectionStartOK(head)
		switch {
		case checked && ok:
			return CheckGood
		case !ok:
			return CheckBad
		}
		return CheckUnknown
	case psi.CarriageUnknown, carriageNoTables:
		if ts.PESHeaderOK(head, payloadLen) {
			return CheckGood
		}
		if ok, checked := psi.SectionStartOK(head); ok && checked {
			return CheckGood
		}
		if carriage == carriageNoTables || len(head) >= 3 && head[0] == 0 && head[1] == 0 && head[2] == 1 {
			return CheckBad // a PES start code with a broken header; or no table will tell
		}
		// Neither: a wrong key, or a section that spans packets, or data of another kind;
		// until a PMT says which, it tells nothing.
		return CheckUndescribed
	}
	return CheckUnknown
}

// carriageNoTables is the carriage a deferred unit start is checked as when no PMT described its
// PID in time (the hold ran out, or the stream ended): only a PES header or a section whose CRC
// matched fits, anything else does not.
const carriageNoTables psi.Carriage = 0xFF

// sectionEnd returns how many bytes of a payload starting with head must be read to check the
// section that starts in it: the section's end when the pointer_field and section_length are in
// head and it ends in the payload, else 0 (nothing more to read, or not enough bytes to tell).
func sectionEnd(head []byte, payloadLen int) int {
	if len(head) < 1 {
		return 0
	}
	start := 1 + int(head[0])
	if start+3 > len(head) {
		// The section header lies beyond head: read up to it first.
		if start+3 <= payloadLen {
			return start + 3
		}
		return 0
	}
	end := start + 3 + (int(head[start+1]&0x0F)<<8 | int(head[start+2]))
	if end > payloadLen {
		return 0
	}
	return end
}

// pidHistory is what a PID's packets showed lately: its silences longer than lagLimit and its
// changes of parity, each in a ring of pidRemembers. Its siblings' histories say, once a PMT
// names them, whether its silence was one of their service, and whether their service changed
// keys in it, before its service's clock began (quietBetween).
type pidHistory struct {
	first, last int64 // the stream's packet numbers of its first and latest packets
	odd         bool  // the parity of its latest packet
	silences    [pidRemembers]span
	nsilences   int
	changes     [pidRemembers]change
	nchanges    int
}

// pidRemembers is how many silences, and changes of parity, a PID's history keeps: more than a
// PID shows before the PMT, or from its silence to the next unit start.
const pidRemembers = 32

// change is a packet of another parity than the PID's packet before it (at prev).
type change struct {
	at, prev int64
	odd      bool
}

// span is the time between two packets (packet numbers), both excluded.
type span struct{ from, to int64 }

// add records a packet of the PID at packet number at, of parity odd, after its packet at last
// (0: its first).
func (h *pidHistory) add(last, at int64, odd bool) {
	switch {
	case last == 0:
		h.first = at
	case at-last > lagLimit:
		h.silences[h.nsilences%pidRemembers] = span{last, at}
		h.nsilences++
		fallthrough
	default:
		if odd != h.odd {
			h.changes[h.nchanges%pidRemembers] = change{at: at, prev: last, odd: odd}
			h.nchanges++
		}
	}
	h.last, h.odd = at, odd
}

// showedOtherParity reports whether the PID had a packet of the other parity than odd after
// packet number from and before to, or may have had (its history does not reach back so far),
// other than one that lagged a change to odd at packet number began by up to lagLimit (the
// PIDs of a service change keys together, give or take the packets in flight).
func (h *pidHistory) showedOtherParity(from, to, began int64, odd bool) bool {
	for k := range min(h.nchanges, pidRemembers) {
		c := h.changes[(h.nchanges-1-k)%pidRemembers]
		if c.at <= from {
			return false
		}
		if c.at < to && (c.odd != odd || c.prev > max(from, began+lagLimit)) {
			return true
		}
	}
	return h.nchanges > pidRemembers
}

// silentIn returns the times within sp in which the PID had no packet, as far as its history
// tells: before its first packet, after its latest, its silences longer than lagLimit, and
// whatever its history no longer reaches (gaps up to lagLimit are not kept: it counts as
// present in them). In order.
func (h *pidHistory) silentIn(sp span) []span {
	var out []span
	keep := func(a, b int64) {
		a, b = max(a, sp.from), min(b, sp.to)
		if a < b {
			out = append(out, span{a, b})
		}
	}
	if h.first == 0 {
		keep(sp.from, sp.to)
		return out
	}
	keep(sp.from, h.first)
	n := min(h.nsilences, pidRemembers)
	if h.nsilences > pidRemembers {
		keep(h.first, h.silences[(h.nsilences-n)%pidRemembers].from) // forgotten: silent, for all it knows
	}
	for k := range n {
		s := h.silences[(h.nsilences-n+k)%pidRemembers]
		keep(s.from, s.to)
	}
	keep(h.last, sp.to)
	return out
}

// intersect returns the times in both a and b, each in order.
func intersect(a, b []span) []span {
	var out []span
	for i, j := 0, 0; i < len(a) && j < len(b); {
		from, to := max(a[i].from, b[j].from), min(a[i].to, b[j].to)
		if from < to {
			out = append(out, span{from, to})
		}
		if a[i].to < b[j].to {
			i++
		} else {
			j++
		}
	}
	return out
}

// quietBetween returns the longest time from packet number from to packet number to (the
// packets of period q's PID around a silence of its own) without a packet of its service, and
// whether a sibling showed the other parity than q's in it, as their histories tell. A PID
// with no service is silent alone. Gaps up to lagLimit are not kept, so that is the least it
// returns.
func (t *Tracker) quietBetween(q *cryptoPeriod, from, to int64) (quiet int64, changed bool) {
	pid := q.pid
	silent := []span{{from, to}}
	if svc := t.pk[pid].svc; svc != nil {
		for sib, c := range t.svcOf {
			sk := t.pk[sib]
			if c != svc || sib == pid || sk == nil {
				continue // another service's, or never seen: silent throughout
			}
			if sk.history.showedOtherParity(from, to, q.first, q.odd) {
				return 0, true
			}
			silent = intersect(silent, sk.history.silentIn(span{from, to}))
		}
	}
	quiet = min(lagLimit, to-from)
	for _, sp := range silent {
		quiet = max(quiet, sp.to-sp.from)
	}
	return quiet, false
}

// pidKeys returns the crypto-period state of a PID, creating it the first time.
func (t *Tracker) pidKeys(pid uint16) *pidKeys {
	pk := t.pk[pid]
	if pk == nil {
		pk = &pidKeys{cur: -1, prev: -1, svc: t.svcOf[pid], inStep: true, fitKey: [2]int{keys.NoKey, keys.NoKey}}
		t.pk[pid] = pk
	}
	return pk
}

// svcClock is what the PIDs of one service say together of its crypto periods: a service's
// elementary streams are scrambled under one ECM stream, so they change keys together, and a
// PID silent over a period, or with too few packets to tell a period from a glitch, is placed
// by its siblings' changes. The first of its PIDs to change parity says the service's period
// changed, even while that change is tentative (a glitch it turns out to be is taken back).
type svcClock struct {
	odd    int8                  // parity of its current period (0 even, 1 odd), -1 before its first
	starts [svcClockStarts]int64 // the stream's packet numbers at which its latest periods began, a ring
	// restarted says which of them began where no change of parity was seen: its first, and
	// those after a silence of all its PIDs (restart).
	restarted [svcClockStarts]bool
	n         int    // periods begun
	by        uint16 // the PID whose change began the latest
	shared    bool   // another PID changed to the latest period's parity since
	// sharedFlip says another PID changed to the latest period's parity from the other
	// one since, at a change of its own parity: not a glitch of the PID that began it.
	sharedFlip bool
	born       int64 // the packet number from which its PIDs' changes are seen
	seen       int64 // the packet number of the latest scrambled packet of its PIDs
	// quietTo is the packet number at which the latest silence of all its PIDs longer than
	// lagLimit ended.
	quietTo int64
	before  int64 // that of the one before it
	// spanGap is the longest time between two of its packets from the one before the latest
	// period's first on: how late that change may have been seen, and the silences in which a
	// whole period may have passed unseen.
	spanGap int64
	// placed holds, for its latest periods, the ring position a checked unit start of one
	// of its PIDs fitted (placedN says which period, by number, each entry is for).
	placed  [svcClockStarts]int
	placedN [svcClockStarts]int
	// offStep says the latest fit of one of its PIDs needed a search: the list's order does
	// not say where its periods are.
	offStep bool
	// minPeriod is the shortest of its crypto periods seen whole, or HoldPackets; periodBound
	// the longest that one of them lasted at most, or HoldPackets.
	minPeriod, periodBound int64
}

// place records that a checked unit start of the service's period number n fitted the key at
// ring position pos.
func (c *svcClock) place(n, pos int) {
	c.placed[n%svcClockStarts], c.placedN[n%svcClockStarts] = pos, n
}

// placement returns the ring position a checked unit start fitted in the service's period
// number n, if one did and the period is still remembered.
func (c *svcClock) placement(n int) (int, bool) {
	if n <= 0 || c.placedN[n%svcClockStarts] != n || n <= c.n-svcClockStarts {
		return 0, false
	}
	return c.placed[n%svcClockStarts], true
}

// svcClockStarts is how many period starts a service remembers: more than a PID silent over
// several periods needs.
const svcClockStarts = 16

func newSvcClock(born int64) *svcClock {
	return &svcClock{odd: -1, born: born, minPeriod: HoldPackets, periodBound: HoldPackets}
}

// see records that a PID of the service has a scrambled packet at packet number at.
func (c *svcClock) see(at int64) {
	if c.seen > 0 {
		if at-c.seen > lagLimit {
			c.quietTo = at // a silence of the whole service: a change of key may have gone unseen
		}
		c.spanGap = max(c.spanGap, at-c.seen)
	}
	c.before, c.seen = c.seen, at
}

// watched reports whether the service's PIDs showed its periods from packet number last to
// now: its clock ran, one of them had a packet since last, and none of its silences since
// was longer than lagLimit.
func (c *svcClock) watched(last, now int64) bool {
	return c.born <= last && c.seen > last && c.quietTo <= last && now-c.seen <= lagLimit
}

// begin records that pid began a period of the given parity at packet at: the service's period
// changes when its parity does. It returns the length of the period that ended when it knows
// it: both its ends were seen promptly (the service's packet before each came within an
// eighth of the length) and another PID shared its start (not a glitch); else 0.
func (c *svcClock) begin(pid uint16, odd, flip bool, at int64) (length int64) {
	if c.odd == parityBit(odd) {
		c.shared = c.shared || pid != c.by
		c.sharedFlip = c.sharedFlip || pid != c.by && flip
		return 0
	}
	if c.n > 0 && c.shared {
		if n := at - c.latest(); 8*c.spanGap <= n {
			length = n
		}
	}
	c.spanGap = at - c.before
	c.restarted[c.n%svcClockStarts] = c.odd < 0 // its first: no change seen
	c.odd = parityBit(odd)
	c.starts[c.n%svcClockStarts] = at
	c.n++
	c.by, c.shared, c.sharedFlip = pid, false, false
	return length
}

// restart begins a period of the service at packet at, of the parity it has, where pid's period
// was split off after a silence of all its PIDs: how many changes of key the silence hid is
// not known, so nothing placed before it applies after.
func (c *svcClock) restart(pid uint16, at int64) {
	c.starts[c.n%svcClockStarts] = at
	c.restarted[c.n%svcClockStarts] = true
	c.n++
	c.by, c.shared, c.sharedFlip = pid, false, false
}

// retract takes back the period pid began at packet at, a change that was a glitch, unless
// another PID has changed with it.
func (c *svcClock) retract(pid uint16, at int64) {
	if c.n == 0 || c.latest() != at || c.by != pid || c.shared {
		return
	}
	c.placedN[c.n%svcClockStarts] = 0
	c.n--
	c.odd ^= 1
	if c.n == 0 {
		c.odd = -1
	}
}

// changedBetween reports whether one of the service's PIDs changed parity after packet number
// from and up to packet number to, as far as it remembers.
func (c *svcClock) changedBetween(from, to int64) bool {
	for k := range min(c.n, svcClockStarts) {
		i := (c.n - 1 - k) % svcClockStarts
		if c.starts[i] <= from {
			return false
		}
		if c.starts[i] <= to && !c.restarted[i] {
			return true
		}
	}
	return false
}

// latest returns the packet number at which the service's latest period began, or 0.
func (c *svcClock) latest() int64 {
	if c.n == 0 {
		return 0
	}
	return c.starts[(c.n-1)%svcClockStarts]
}

// since returns how many of the service's periods began after packet number at (at most the
// number remembered).
func (c *svcClock) since(at int64) int {
	k := 0
	for k < min(c.n, svcClockStarts) && c.starts[(c.n-1-k)%svcClockStarts] > at {
		k++
	}
	return k
}

func parityBit(odd bool) int8 {
	if odd {
		return 1
	}
	return 0
}

// periodOf returns the index of the crypto period of a scrambled packet of pid with the given
// parity, starting a period when the parity changes. A change of parity on a PID whose period
// has two packets or more is tentative until the PID's next packet: if that one is of the old
// parity again, the changed packet was a glitch and the old period goes on, unless the PID's
// siblings changed periods in between (siblingSteps). A PID that comes back after its
// siblings began two periods or more starts a new period, of the same parity or not, as many
// ring positions on.
func (t *Tracker) periodOf(pid uint16, odd, ccBreak bool) int32 {
	pk := t.pidKeys(pid)
	last := pk.last
	pk.last, pk.gap = t.now, t.now-last
	pk.history.add(last, t.now, odd)
	pk.spanGap = max(pk.spanGap, pk.gap)
	if pk.cur < 0 {
		if pk.svc != nil {
			pk.svc.see(t.now)
		}
		return t.startPeriod(pk, pid, odd, -1, 1)
	}
	cur := &t.periods[pk.cur]
	pk.lost = false
	if ccBreak {
		t.lose(pk)
	}
	// Its siblings watched the service's periods while it was silent, if one of them had a
	// packet since its last one and the service was never silent for long meanwhile: they
	// say how many periods began (steps).
	watched := pk.svc != nil && pk.svc.watched(last, t.now)
	steps := t.siblingSteps(pk, last, cur.odd, odd, watched)
	if pk.svc != nil {
		pk.svc.see(t.now)
	}
	if cur.odd == odd {
		if cur.tentative {
			t.confirm(pk.cur)
		}
		if steps >= 2 {
			// Silent over a whole period or more: its siblings say how many.
			return t.startPeriod(pk, pid, odd, pk.cur, steps)
		}
		if t.missedUncounted(pk, last, odd, 2) || t.silentAcross(pk, last, odd) {
			// Silent while its service began two periods or more, since before the
			// service's clock began: how many is not known. Its siblings' keys, or its
			// next unit start, place the period.
			return t.startPeriod(pk, pid, odd, pk.cur, 0)
		}
		if !t.keys.Fixed() && (ccBreak || !watched && t.now-last > lagLimit) {
			// Packets lost, two streams spliced, or a silence longer than lagLimit that no
			// sibling watched: the key of the period may stop applying here, before the next
			// unit start can tell. A period of its own, whose key that unit
			// start checks (the same key first), holds the packets until it does; without
			// such a unit start they are left as they came.
			pk.silenced = !ccBreak
			return t.startPeriod(pk, pid, odd, pk.cur, 0)
		}
		pk.run++
		return pk.cur
	}
	if cur.tentative {
		if back := t.siblingSteps(pk, pk.prevLast, odd, odd, true); back >= 2 {
			// Its siblings began two periods or more since the PID's packet before the
			// changed one: that was a real period (a sparse PID), not a glitch, and this
			// packet begins a later one.
			tentative := pk.cur
			t.confirm(tentative)
			return t.startPeriod(pk, pid, odd, tentative, back-1)
		}
		if svc := pk.svc; svc != nil && svc.latest() == cur.first && svc.by == pid && svc.sharedFlip {
			// A sibling changed to its parity after it: the service's period changed
			// (a sparse PID), not a glitch, and this packet begins the one after.
			tentative := pk.cur
			t.confirm(tentative)
			return t.startPeriod(pk, pid, odd, tentative, 1)
		}
		if t.pendingFits(cur) {
			// Its unit start fits a key of its own: a period of one packet (a sparse
			// PID), not a glitch.
			tentative := pk.cur
			t.confirm(tentative)
			return t.startPeriod(pk, pid, odd, tentative, 1)
		}
		// Back to the parity of the period before after a single packet: a glitch.
		if pk.svc != nil {
			pk.svc.retract(pid, cur.first)
		}
		t.decide(cur, Glitch)
		pk.cur, pk.run, pk.prev = pk.prev, pk.prevRun+1, -1
		if !t.keys.Fixed() && (ccBreak || cur.afterLoss || !watched && t.now-last > lagLimit) {
			// So long after it, with nothing watching, or with packets lost before or
			// after it, it may as well have been a real period (a PID thin here), and this
			// one two changes of key on: a period of its own, that a unit start (the old key
			// first) or a sibling places.
			pk.lost = pk.lost || cur.afterLoss
			pk.run--
			return t.startPeriod(pk, pid, odd, pk.cur, 0)
		}
		return pk.cur
	}
	// A change of parity after a silence over which its service began three periods or more,
	// not counted, or one that nothing watched, long enough to hold a whole crypto period: the
	// list's next key would be a guess.
	pk.unsure = steps == 0 && (ccBreak || t.missedUncounted(pk, last, odd, 3) ||
		!watched && !t.keys.Fixed() && (t.lateAfter(cur, last) || t.now-last > t.minPeriod))
	idx := t.startPeriod(pk, pid, odd, pk.cur, max(steps, 1))
	pk.prevLast = last
	return idx
}

// lose records that packets of the PID of pk were lost before the one being placed: the
// service went unseen for a while, as in a silence of all its PIDs, and what its PIDs showed
// before says nothing of after.
func (t *Tracker) lose(pk *pidKeys) {
	pk.lost, pk.sameFits = true, 0
	if pk.svc != nil && !t.keys.Fixed() {
		pk.svc.quietTo = t.now
	}
}

// silentAcross reports whether pid, back in the parity of its last packet, was silent across a
// change of its service to the other parity that came well before this packet (lagLimit): it
// is not a PID that changes a few packets after its siblings, and it may have missed two
// changes of key that no sibling's packet showed. Which is not known: its siblings' keys, or
// its next unit start, place the period.
func (t *Tracker) silentAcross(pk *pidKeys, last int64, odd bool) bool {
	svc := pk.svc
	if svc == nil || t.keys.Fixed() || svc.odd < 0 || svc.odd == parityBit(odd) {
		return false
	}
	changed := svc.latest()
	return changed > last && t.now-changed > lagLimit
}

// lateAfter reports whether a packet of period cur's PID comes so long after the PID's packet
// before (at last) that the period's key may have changed twice unseen, when nothing says how
// long the stream's crypto periods are: the silence is longer than lagLimit and than eight
// times what the PID showed of the period before it. A PID whose packets come every few
// packets never is; one with a packet now and then always is, and without a sibling or a unit
// start to place it, its packets are left as they came.
func (t *Tracker) lateAfter(cur *cryptoPeriod, last int64) bool {
	gap := t.now - last
	if cur.from < 0 {
		// A PID's first period: what it showed of it is no measure (its packets may come
		// in bursts at first): only a silence of eight times lagLimit counts.
		return gap > 8*lagLimit
	}
	if t.minPeriod >= HoldPackets {
		// No period seen whole yet: the part of this one seen is the only measure of how
		// short a period may be, and a silence longer than it may have held a whole one.
		return gap > lagLimit && gap > last-cur.first
	}
	return gap > lagLimit && gap > 8*(last-cur.first)
}

// firstPeriodKnown is how far into the stream a PID's first packet may come and still be in the
// stream's first crypto period, the one a list's first CW is for, when nothing else shows
// where the periods are: further on, they may have changed before it.
const firstPeriodKnown = lagLimit

// lagLimit is how many packets after its siblings a PID may change parity and still be in the
// period its siblings left: scramblers switch the PIDs of a service together, give or take
// the packets in flight.
const lagLimit = 64

// pendingFits reports whether a unit start a tentative period holds fits its expected key, or,
// after a search, another key of the schedule: then it was no glitch.
func (t *Tracker) pendingFits(p *cryptoPeriod) bool {
	for _, u := range p.pending[:p.npending] {
		payload := u.payload
		if p.key != keys.NoKey && t.trial(p.key, payload, u.carriage) == CheckGood {
			return true
		}
		if _, ok := t.keys.Sync(p.pos, nearSearch, func(k int) bool {
			return t.trial(k, payload, u.carriage) == CheckGood
		}); ok {
			return true
		}
	}
	return false
}

// missedUncounted reports whether pid's service, whose current parity is odd's, began at
// least n periods since pid's packet number last, without its clock having watched all that
// time (it began with the PMT, after last): pid missed changes of key that no one counted.
func (t *Tracker) missedUncounted(pk *pidKeys, last int64, odd bool, n int) bool {
	svc := pk.svc
	return svc != nil && !t.keys.Fixed() && svc.born > last && svc.odd == parityBit(odd) && svc.since(last) >= n
}

// siblingSteps returns how many crypto periods pid's service began between pid's packet number
// last and now, when that agrees with pid's parity going from was to odd (an even number for
// the same parity, odd for a change); else 0: a PID whose siblings say nothing (no PMT lists it
// with others, fixed keys, or its own clock) follows its own parity changes alone. When the
// service's parity is not odd's yet, this packet is the first of the service's next period,
// if the PID was silent for longer than a period while a sibling watched (a PID that lags its
// siblings by a few packets is still in the period before). A service whose clock began after last says
// nothing: it may have missed changes.
func (t *Tracker) siblingSteps(pk *pidKeys, last int64, was, odd, watched bool) int {
	svc := pk.svc
	if svc == nil || t.keys.Fixed() || svc.born > last || !watched {
		// A service whose PIDs were all silent for a while since last may have changed
		// keys unseen: its count is not the whole.
		return 0
	}
	k := svc.since(last)
	if svc.odd != parityBit(odd) {
		if svc.odd < 0 || t.now-last <= t.minPeriod {
			return 0
		}
		k++
	}
	if k%2 == 1 != (was != odd) {
		return 0
	}
	return k
}

// startPeriod starts a crypto period of pid after the period prev (or the PID's first, when
// prev is -1), steps ring positions after prev's (0: a period of the same parity that starts
// where a unit start failed prev's key), and returns its index.
func (t *Tracker) startPeriod(pk *pidKeys, pid uint16, odd bool, prev int32, steps int) int32 {
	s := t.keys
	p := cryptoPeriod{pid: pid, odd: odd, first: t.now, number: pk.periods + 1, gap: pk.gap, from: prev, steps: int32(steps)}
	switch {
	case prev >= 0:
		p.pos = t.periods[prev].pos
		for range steps {
			p.pos = s.Next(p.pos)
		}
	case t.haveHint && !s.Fixed():
		// A PID's first period starts where the PIDs aligned before it are: their periods
		// change at about the same time.
		p.pos = t.hintPos
		if odd != t.hintOdd {
			p.pos = s.Next(p.pos)
		}
	default:
		p.pos = s.Start(odd)
	}
	p.key, p.expect = s.KeyAt(p.pos), p.pos
	p.flip = prev >= 0 && steps == 1 && odd != t.periods[prev].odd
	// A period that may be further on than its ring steps say, or a PID's first after the
	// stream's first change of parity or far into the stream (the list's first CW is the
	// stream's first period's), or placed elsewhere, where another PID's key fitted (of another
	// service, maybe), takes its key from a unit start or a sibling, not from the list's order.
	// A PID's first period whose service is not the one whose PID fitted first is not placed
	// by the list's start either: that start may be the other service's (two services' lists
	// in one file).
	otherService := t.haveHint && pk.svc != nil && t.hintSvc != nil && t.hintSvc != pk.svc
	p.unplaced = !s.Fixed() && s.NumCWs() > 1 &&
		(prev >= 0 && (steps == 0 || pk.unsure) ||
			prev < 0 && (t.flips > 0 || t.now > firstPeriodKnown || p.pos != s.Start(odd) || otherService))
	p.silenced, p.afterLoss = pk.silenced, pk.lost
	pk.unsure, pk.silenced = false, false
	pk.periods++
	// A parity change of a rotating schedule is tentative while the period it ends has two
	// packets or more: a single flipped bit must not move the schedule. One its siblings
	// made before it is not.
	p.tentative = prev >= 0 && !s.Fixed() && pk.run >= 2 && odd != t.periods[prev].odd && steps == 1 &&
		(pk.svc == nil || pk.svc.odd != parityBit(odd))
	idx := int32(len(t.periods))
	t.periods = append(t.periods, p)
	if prev >= 0 && !p.tentative {
		if p.flip {
			t.flips++
			t.learnPeriod(pk, &t.periods[idx])
		}
		if q := &t.periods[prev]; steps == 0 && q.state == Open && q.attempts == 0 && odd == q.odd && !pk.lost {
			// Split where its key may have changed, before anything checked it: the unit
			// start that places the new period says whether the key did change (decide).
			// Not where packets were lost: the new period's key says nothing of the one
			// before, whose key may have changed in a loss of its own.
			q.awaitNumber = p.number
		} else {
			t.end(prev)
		}
	}
	if svc := pk.svc; svc != nil {
		// Any period of the other parity than the service's shows the service changed,
		// a split after a silence too.
		np := &t.periods[idx]
		last := t.now - np.gap
		// A period split off after a silence of the whole service, the first to begin
		// since: the service's clock missed what happened meanwhile, so it begins a period
		// of its own there, that this one's key places (not one of before the silence).
		restart := prev >= 0 && steps == 0 && svc.odd == parityBit(odd) &&
			svc.quietTo > last && svc.latest() < svc.quietTo
		// A PID that changes to the parity a sibling began the service's period with, so
		// soon after that no whole period of the other parity fits between (half the
		// shortest period seen): the same period, whatever silence came before it.
		joined := prev >= 0 && svc.odd == parityBit(odd) && svc.n > 0 &&
			t.minPeriod < HoldPackets && 2*(t.now-svc.latest()) < t.minPeriod
		if restart {
			svc.restart(pid, t.now)
		} else if n := svc.begin(pid, odd, np.flip, t.now); n > 0 {
			t.learnMinPeriod(svc, n)
		}
		// The period is the service's current one if its parity is the service's and it
		// began in step with the service: the PID came promptly, or the service watched its
		// silence, or, for its first, the service's packets were coming. After a silence
		// nothing watched it may be a later period of the same parity.
		// A PID that lost packets is in step with nothing its siblings showed before.
		inStep := restart || !pk.lost && (joined || prev >= 0 && (np.gap <= lagLimit || svc.watched(last, t.now)) ||
			prev < 0 && t.now-svc.before <= lagLimit)
		if svc.odd == parityBit(odd) && inStep {
			np.svcN = int32(svc.n)
			t.placeBySiblings(np)
		}
	}
	pk.prev, pk.prevRun = prev, pk.run
	pk.cur, pk.run = idx, 1
	switch {
	case p.key == keys.NoKey && (s.Fixed() || s.NumCWs() == 0):
		// No key for this parity at all: nothing to decide.
		if !p.tentative {
			t.decide(&t.periods[idx], Unchecked)
		}
	case pk.foreign || t.carriage(pid) == psi.CarriageOther:
		if !p.tentative {
			t.decideUnchecked(&t.periods[idx], pk)
		}
	}
	if t.periods[idx].state == Open {
		t.open = append(t.open, idx)
	}
	return idx
}

// learnPeriod notes how long the period before p lasted at least, from the PID's change of
// parity before to the one that began p, less the silence before p (the change came in it):
// the shortest crypto period of a service bounds how long its PIDs may be silent before a key
// may have changed unseen. Only a period the PID showed whole counts: no silence of it in the
// period longer than a quarter of it (a silence may have hidden two changes), and no change of
// parity of a sibling in it (one that did hide two).
func (t *Tracker) learnPeriod(pk *pidKeys, p *cryptoPeriod) {
	if pk.lastFlip > 0 {
		// Some crypto period lasted no longer than from the first packet of the silence
		// before the change before (the change came in it) to p: the shortest seen whole may
		// be far longer than the shortest there is (a PID's silences hide the short ones).
		t.boundMinPeriod(pk.svc, p.first-pk.lastFlip+pk.flipGap)
		// Its siblings began no other period meanwhile: none hid in its silences.
		alone := pk.svc == nil || !pk.svc.changedBetween(pk.lastFlip, p.first-1)
		if n := p.first - pk.lastFlip; alone && 4*pk.spanGap <= n { // spanGap holds p.gap
			t.learnMinPeriod(pk.svc, n-p.gap)
		}
	}
	// The change may have come any time in the silence before p: the period it began is
	// longer than p's PID shows, and no shorter than from p's first packet to the packet
	// before the next change, whatever that silence hid.
	pk.lastFlip, pk.flipGap, pk.spanGap = p.first, p.gap, 0
}

// learnMinPeriod notes a crypto period of n packets seen whole, of service svc (nil: a PID no
// PMT has described): the periods that wait to know how long a silence may be are settled.
func (t *Tracker) learnMinPeriod(svc *svcClock, n int64) {
	t.minPeriod = min(t.minPeriod, n)
	if svc != nil {
		svc.minPeriod = min(svc.minPeriod, n)
	}
	t.settleAll()
}

// boundMinPeriod notes that a crypto period of service svc (nil: a PID no PMT has described)
// lasted n packets at most.
func (t *Tracker) boundMinPeriod(svc *svcClock, n int64) {
	t.periodBound = min(t.periodBound, n)
	if svc != nil {
		svc.periodBound = min(svc.periodBound, n)
	}
}

// settleAll settles every period that waits to know whether its silence hid a crypto period.
func (t *Tracker) settleAll() {
	for _, idx := range t.open {
		if q := &t.periods[idx]; q.state == Open && q.awaitTo > 0 {
			t.settle(idx, false)
		}
	}
}

// settle decides period idx, split off the period after it by a silence of its PID from packet
// number awaitFrom to awaitTo, once what decides it is known: the silence of its service in
// that time (its siblings' packets, once a PMT names them: before the tables, that the PID
// has none is not known) and whether a sibling changed parity in it, then the shortest
// period of its service seen whole. A silence of the service shorter than half of that holds
// no whole period: the period after it has its key. Else (a sibling changed parity, or the
// silence is longer) it ends with what is its own (endNow). With final (it is open too long,
// or the stream ends), tables that did not come say nothing: its silence is its own. It
// reports whether it decided the period.
func (t *Tracker) settle(idx int32, final bool) bool {
	q := &t.periods[idx]
	if q.awaitQuiet < 0 {
		if t.pk[q.pid].svc == nil && !t.cfg.Tables.AllPMTsRead() && !final {
			return false // its siblings are not known yet
		}
		quiet, changed := t.quietBetween(q, q.awaitFrom, q.awaitTo)
		if changed {
			q.awaitTo = 0
			t.endNow(idx)
			return true
		}
		q.awaitQuiet = quiet
	}
	shortest := t.shortestPeriod(q.pid)
	if shortest >= HoldPackets {
		return false // no period seen whole yet
	}
	q.awaitTo = 0
	if 2*q.awaitQuiet < shortest {
		q.pos, q.key = q.awaitPos, t.keys.KeyAt(q.awaitPos)
		t.decide(q, Fit)
		return true
	}
	t.endNow(idx)
	return true
}

// shortestPeriod returns the shortest crypto period seen whole of pid's service, by its own
// PIDs (another service's clock says nothing of it), or, for a PID no PMT has described yet,
// of any PID, or the longest that one of its periods lasted at most, if shorter; HoldPackets
// when no period was seen whole. A period split off by a silence shorter than half of it is
// the same crypto period as the one after the silence (decide).
func (t *Tracker) shortestPeriod(pid uint16) int64 {
	if svc := t.pk[pid].svc; svc != nil {
		if svc.minPeriod >= HoldPackets {
			return HoldPackets
		}
		return min(svc.minPeriod, svc.periodBound)
	}
	if t.minPeriod >= HoldPackets {
		return HoldPackets
	}
	return min(t.minPeriod, t.periodBound)
}

// decideUnchecked decides a period without a check: left as it came on a PID taken for another
// CA system's; the schedule's key where the schedule or the PID's siblings place it; left as
// it came otherwise (Unplaced).
func (t *Tracker) decideUnchecked(p *cryptoPeriod, pk *pidKeys) {
	t.decide(p, t.uncheckedState(p, pk))
}

// uncheckedState returns what decideUnchecked decides for period p, placing it at the schedule's
// or a sibling's ring position.
func (t *Tracker) uncheckedState(p *cryptoPeriod, pk *pidKeys) State {
	t.follow(p)
	switch {
	case pk.foreign:
		return NoFit
	case p.unplaced && !t.placeBySiblings(p):
		return Unplaced
	case t.followsUnplaced(p) && !t.placeBySiblings(p):
		// Its place is steps after a period whose own place was never known: the list's
		// order from there would be a guess.
		return Unplaced
	case p.from < 0 && !p.placed && p.pos == t.keys.Start(p.odd) && t.startDisputed && !t.keys.Fixed() && t.keys.NumCWs() > 1 && !t.placeBySiblings(p):
		// A PID's first period, that only the list's start places, where another PID's
		// first period fitted elsewhere in the list: the start is another service's (two
		// services' lists in one file), or not the stream's.
		return Unplaced
	case t.keys.Fixed() || t.keys.NumCWs() <= 1 || pk.inStep && (pk.svc == nil || !pk.svc.offStep) || t.placeBySiblings(p):
		return Unchecked
	}
	// A PID whose periods did not follow the list in order (its last fit needed a search:
	// two services' lists in one file, a list with lines missing), and that no sibling
	// places: the list's next key would be a guess.
	return Unplaced
}

// followsUnplaced reports whether period p's ring position counts on from a period of its PID
// that nothing placed: left as it came for that (Unplaced), or open and unplaced still.
func (t *Tracker) followsUnplaced(p *cryptoPeriod) bool {
	if p.from < 0 || p.from == forgottenPeriod || p.placed {
		return false
	}
	q := &t.periods[p.from]
	return q.state == Unplaced || q.state == Open && q.unplaced && !q.placed
}

// confirm makes a tentative period a real one: the period before it ends, and the unit starts
// it holds are checked.
func (t *Tracker) confirm(idx int32) {
	p := &t.periods[idx]
	p.tentative = false
	pk := t.pk[p.pid]
	if pk.prev >= 0 {
		if p.flip {
			t.flips++
			t.learnPeriod(pk, p)
		}
		t.end(pk.prev)
		pk.prev = -1
	}
	if p.state != Open {
		return
	}
	if pk.foreign || t.carriage(p.pid) == psi.CarriageOther {
		t.decideUnchecked(p, pk)
		return
	}
	for i := range int(p.npending) {
		if p.state != Open {
			break
		}
		u := p.pending[i]
		t.check(idx, u)
	}
	p.npending = 0
}

// end decides a period that ends with what is known: no fit if some of its unit starts were
// checked and none fitted, the schedule's key if none could be. A period whose unit starts wait
// for a PMT to say what its PID carries stays open past its end, until the tables come or the
// hold runs out (endNow).
func (t *Tracker) end(idx int32) {
	if t.periods[idx].ndeferred > 0 {
		return
	}
	t.endNow(idx)
}

// endNow decides a period that ends, or that has been open too long, with what is known; unit
// starts that waited for a PMT in vain are checked as carriageNoTables says.
func (t *Tracker) endNow(idx int32) {
	p := &t.periods[idx]
	if p.state != Open {
		return
	}
	if p.awaitTo > 0 && t.settle(idx, true) {
		return
	}
	p.awaitTo = 0
	if p.tentative {
		t.confirm(idx)
		if p.state != Open {
			return
		}
	}
	if p.ndeferred > 0 {
		us, n := p.deferred, p.ndeferred
		p.ndeferred = 0
		for _, u := range us[:n] {
			if p.state != Open {
				break
			}
			if c := t.carriage(p.pid); c != psi.CarriageUnknown {
				u.carriage = c
			} else {
				u.carriage = carriageNoTables
			}
			t.check(idx, u)
		}
		if p.state != Open {
			return
		}
	}
	if p.attempts == 0 {
		t.placeBySiblings(p)
	}
	switch {
	case p.attempts > 0:
		t.decide(p, NoFit)
	case p.unplaced:
		// The period began where its key may have changed unseen, and no unit start came
		// to say which it is: its packets are left as they came, never given a guess.
		t.decide(p, Unplaced)
	default:
		t.decideUnchecked(p, t.pk[p.pid])
	}
}

// placeBySiblings gives period p the ring position a sibling's checked unit start fitted in the
// same period of their service, if one did: the PIDs of a service share their keys, so that
// places a period its own packets cannot (nothing to check, a silence before it), and is the
// first key to try on its unit starts. It reports whether it did.
func (t *Tracker) placeBySiblings(p *cryptoPeriod) bool {
	svc := t.pk[p.pid].svc
	if svc == nil || p.svcN == 0 || t.keys.Fixed() {
		return false
	}
	pos, ok := svc.placement(int(p.svcN))
	if !ok {
		return false
	}
	p.pos, p.key, p.unplaced, p.placed = pos, t.keys.KeyAt(pos), false, true
	return true
}

// follow sets the ring position of open period p again from the period before it, which may
// have been placed since p began (a period is placed when it is decided, after the next began):
// steps after it.
func (t *Tracker) follow(p *cryptoPeriod) {
	if p.placed || p.from < 0 || p.state != Open {
		return
	}
	pos := t.periods[p.from].pos
	for range p.steps {
		pos = t.keys.Next(pos)
	}
	p.pos, p.key, p.expect = pos, t.keys.KeyAt(pos), pos
}

// offerUnitStart is called for a scrambled payload of period idx that starts a PES packet or a
// section: it is checked at once, or when a tentative period is confirmed. A unit start of a
// decided period is checked with the period's key too: one that does not fit ends the decision
// there, and starts a period of the same parity whose key is looked for anew (a PID silent
// while its siblings' key changed, a recording cut and joined, a list that fell out of step);
// the packets before it keep their key. Every one is tried, on every PID: packets lost or a
// splice hide from the continuity counters one time in 16 (and some muxers' counters say
// nothing), and such a place shows only at the next unit start; a trial of the key a period
// has costs one block and the stream cipher's start (trialDecided). It returns the period the
// unit start belongs to.
func (t *Tracker) offerUnitStart(idx int32, u unitStart) int32 {
	p := &t.periods[idx]
	switch {
	case p.state == Open && p.tentative:
		if int(p.npending) < len(p.pending) {
			p.pending[p.npending] = u
			p.npending++
		}
	case p.state == Open:
		if later := t.splitAtLaterServicePeriod(idx, u); later >= 0 {
			return later
		}
		t.check(idx, u)
	case (p.state == Fit || p.state == Unchecked) && p.key != keys.NoKey:
		payload := u.payload
		switch t.trialDecided(p.key, payload, u.carriage) {
		case CheckBad:
		case CheckUndescribed:
			// Before a PMT says what the PID carries, the key says nothing; another key
			// that makes a PES header or a whole section of it does.
			if _, ok := t.keys.Sync(p.pos, nearSearch, func(k int) bool {
				return t.trial(k, payload, u.carriage) == CheckGood
			}); !ok {
				return idx
			}
		default:
			return idx
		}
		pk := t.pk[p.pid]
		t.counts.KeyFailures++
		// The key stopped applying with no change of parity: packets were lost that the
		// counters did not show, or two streams were joined.
		t.lose(pk)
		failed := p.key
		idx = t.startPeriod(pk, p.pid, p.odd, idx, 0)
		t.periods[idx].replaced = int32(failed) + 1
		if t.periods[idx].state == Open {
			t.check(idx, u)
		}
	}
	return idx
}

// splitAtLaterServicePeriod begins a period at the unit start u of open period idx when the
// PID's siblings began periods since its first packet (the PID silent meanwhile, back in
// the same parity), the period's expected key does not fit u and the key as many periods on
// as they say does: the PID missed a whole period of the other parity, and u is in a later
// period of the same parity than the packets before it. Those keep what places them (a
// sibling's key, the list's order) or are left as they came; the later period has the key that
// fitted. It returns the later period, or -1 when the evidence is not all there.
func (t *Tracker) splitAtLaterServicePeriod(idx int32, u unitStart) int32 {
	p := &t.periods[idx]
	pk := t.pk[p.pid]
	svc := pk.svc
	if svc == nil || t.keys.Fixed() || p.tentative || p.attempts > 0 || p.first == t.now ||
		p.key == keys.NoKey || u.carriage == psi.CarriageUnknown {
		return -1
	}
	// The periods its siblings began after its first packet: as many as the service shows,
	// at least (it may have been silent over more); the keys say whether that is all.
	k := svc.since(p.first)
	if k < 1 || k >= svcClockStarts || (k%2 == 1) != (svc.odd != parityBit(p.odd)) {
		return -1
	}
	steps := k + k%2 // u, of p's parity, is in the service's next period when it is in the other
	t.follow(p)
	t.placeBySiblings(p)
	if t.trial(p.key, u.payload, u.carriage) != CheckBad {
		return -1
	}
	pos := p.pos
	for range steps {
		pos = t.keys.Next(pos)
	}
	if k := t.keys.KeyAt(pos); k == keys.NoKey || t.trial(k, u.payload, u.carriage) != CheckGood {
		return -1
	}
	later := t.startPeriod(pk, p.pid, p.odd, idx, steps)
	if t.periods[later].state == Open {
		t.check(later, u)
	}
	return later
}

// check tries the period's expected key on a unit start and, when it does not fit, the other
// keys of the schedule, nearest first; a key that fits decides the period and aligns this PID's
// schedule.
func (t *Tracker) check(idx int32, u unitStart) {
	p := &t.periods[idx]
	pk := t.pk[p.pid]
	payload := u.payload
	t.follow(p)
	t.placeBySiblings(p)
	if p.key != keys.NoKey {
		switch t.trial(p.key, payload, u.carriage) {
		case CheckGood:
			t.fit(p, pk, p.pos, false)
			return
		case CheckUnknown:
			return // a section that goes on: says nothing, wait for the next unit start
		}
	}
	limit := 0
	if p.attempts > 0 && t.keys.Periods() > wideSearch {
		// The whole list was searched on this period's first unit start: the later ones
		// (the first may have been damaged) search the neighbourhood of the expected key.
		limit = nearSearch
	}
	tries, stopped := 0, false
	pos, ok := t.keys.Sync(p.pos, limit, func(k int) bool {
		if tries++; tries&1023 == 0 && t.ctx.Err() != nil {
			stopped = true // stopping: the run ends without this period's key
		}
		return !stopped && t.trial(k, payload, u.carriage) == CheckGood
	})
	if ok {
		t.fit(p, pk, pos, true)
		return
	}
	if u.carriage == psi.CarriageUnknown {
		// Neither a PES header nor a whole section with its CRC under any key, on a PID no
		// PMT has described yet: a section that spans packets, or data of another kind.
		// The PMT, when it comes, says what to look for (recheck); till then it says nothing.
		t.deferUnitStart(idx, u)
		return
	}
	p.attempts++
	if !pk.everFit {
		pk.failed++
		if pk.failed >= maxForeignChecks && p.number > 1 {
			pk.foreign = true
			t.decide(p, NoFit)
			return
		}
	}
	if p.attempts >= maxSyncAttempts {
		t.decide(p, NoFit)
	}
}

// deferUnitStart keeps a unit start of open period idx, on a PID whose carriage is not known,
// to check it again when the tables change.
func (t *Tracker) deferUnitStart(idx int32, u unitStart) {
	p := &t.periods[idx]
	if int(p.ndeferred) == len(p.deferred) {
		return
	}
	if p.ndeferred == 0 {
		t.deferred = append(t.deferred, idx)
	}
	p.deferred[p.ndeferred] = u
	p.ndeferred++
}

// recheck checks again, after the tables changed, the unit starts of the open periods that were
// deferred for want of a PMT, as the carriage the PMTs now give says.
func (t *Tracker) recheck() {
	kept := t.deferred[:0]
	for _, idx := range t.deferred {
		p := &t.periods[idx]
		carriage := t.carriage(p.pid)
		if p.state != Open {
			p.ndeferred = 0
			continue
		}
		if carriage == psi.CarriageUnknown {
			kept = append(kept, idx)
			continue
		}
		us := p.deferred
		n := p.ndeferred
		p.ndeferred = 0
		for _, u := range us[:n] {
			if p.state != Open {
				break
			}
			if carriage == psi.CarriageOther {
				t.decideUnchecked(p, t.pk[p.pid])
				break
			}
			u.carriage = carriage
			t.check(idx, u)
		}
	}
	t.deferred = kept
}

// fit decides a period with the key at ring position pos; moved says the schedule was realigned
// to a key other than the expected one.
func (t *Tracker) fit(p *cryptoPeriod, pk *pidKeys, pos int, moved bool) {
	p.pos, p.key = pos, t.keys.KeyAt(pos)
	if pk.svc != nil && p.svcN > 0 {
		pk.svc.place(int(p.svcN), pos)
	}
	// The list is followed in order when, at a change of parity, the next key of the list
	// fitted; not when a search, or a sibling, found another.
	switch {
	case pos != p.expect:
		pk.inStep = false
	case p.flip && pk.everFit:
		pk.inStep = true
	}
	if svc := pk.svc; svc != nil && (pos != p.expect || p.flip && pk.everFit) {
		// What the service's latest fit says of the list's order goes for its PIDs that
		// have nothing to check: a sibling that needed a search says the order is off
		// there (two services' lists in one file, a constant CW listed once a period).
		svc.offStep = pos != p.expect
	}
	if p.from < 0 && pos != t.keys.Start(p.odd) {
		t.startDisputed = true
	}
	if p.replaced > 0 && !bytes.Equal(t.keys.CW(int(p.replaced-1)), t.keys.CW(p.key)) {
		t.counts.UnseenChanges++
	}
	first := !pk.everFit
	pk.everFit = true
	if !t.haveHint {
		t.hintSvc = pk.svc
	}
	t.haveHint, t.hintPos, t.hintOdd = true, pos, p.odd
	if moved {
		t.counts.KeySyncs++
		if t.cfg.Log != nil {
			what := "CW %d of %d fits the first scrambled PES start of PID %#04x: the list is aligned to it"
			if !first {
				what = "CW %d of %d fits this crypto period of PID %#04x, the expected one did not: the list is realigned to it"
			}
			t.cfg.Log(fmt.Sprintf("key sync: "+what, p.key+1, t.keys.NumCWs(), p.pid))
		}
	}
	if last := pk.fitKey[parityBit(!p.odd)]; last != keys.NoKey && pk.sameFits > 0 && bytes.Equal(t.keys.CW(last), t.keys.CW(p.key)) {
		pk.sameFits++
	} else {
		pk.sameFits = 1
	}
	// Before the decision: a period split off before p, which p's decision decides too, is
	// given p's key when the PID's keys of both parities, p's with them, are one constant CW.
	pk.fitKey[parityBit(p.odd)] = p.key
	t.decide(p, Fit)
}

// siblingsChanged reports whether a sibling of period q's PID began a period of their service
// after q's first packet and before that of p, split off q: then p, of q's parity, is two
// changes of key on at least, whatever the shortest period seen says (an estimate, that a PID
// seen only now and then makes too long).
func (t *Tracker) siblingsChanged(q, p *cryptoPeriod) bool {
	svc := t.pk[q.pid].svc
	return svc != nil && svc.changedBetween(q.first, p.first-1)
}

// constantKey reports whether the key period p fitted is the one its PID's latest checked
// periods of both parities fitted too, with no packets lost between them: a constant CW (BISS,
// a fixed-key feed, a constant CW listed once a period), which a period between them of either
// parity had as well.
func (t *Tracker) constantKey(p *cryptoPeriod) bool {
	pk := t.pk[p.pid]
	if p.key == keys.NoKey || pk.fitKey[0] == keys.NoKey || pk.fitKey[1] == keys.NoKey || pk.sameFits < 2 {
		return false
	}
	cw := t.keys.CW(p.key)
	return bytes.Equal(t.keys.CW(pk.fitKey[0]), cw) && bytes.Equal(t.keys.CW(pk.fitKey[1]), cw)
}

// decide records the decision for a period: its packets held so far can go on.
func (t *Tracker) decide(p *cryptoPeriod, state State) {
	p.state = state
	if p.from >= 0 {
		if q := &t.periods[p.from]; q.state == Open && q.awaitNumber == p.number {
			// The period before was split off where the key may have changed, unchecked:
			// if the key that fits here is the one it expected, nothing changed, and it
			// has that key too; else it is decided by what it has of its own.
			q.awaitNumber = 0
			t.follow(q)
			switch {
			case state == Fit && t.sameCW(p, q):
				// The key it expected, at its place in the list or at another line of
				// the same CW (a constant CW listed once a period).
				q.pos, q.key = p.pos, p.key
				t.decide(q, Fit)
			case state == Fit && t.constantKey(p):
				// Its PID's key has been constant: whether the key changed in the silence
				// or not, it is this one.
				q.pos, q.key = p.pos, p.key
				t.decide(q, Unchecked)
			case state == Fit && (p.silenced || q.from < 0 && !q.placed) && !t.siblingsChanged(q, p):
				// Split off by a silence of its PID alone, or a PID's first period that only
				// the list's start placed: if no whole crypto period fits in the silence (no
				// two changes of key), of the same parity, it is the same period as p,
				// whatever the list's order guessed for it. It waits (open, its packets held)
				// until that is known (settle).
				q.awaitPos, q.awaitFrom, q.awaitTo, q.awaitQuiet = p.pos, p.first-p.gap, p.first, -1
				t.settle(p.from, false)
			default:
				t.endNow(p.from)
			}
		}
	}
	if t.live != nil {
		t.liveDecided(p)
		return
	}
	if t.continues(p) {
		return // the same crypto period goes on: counted and logged once
	}
	what := ""
	switch state {
	case Fit:
		what = fmt.Sprintf("CW %d of %d", p.key+1, t.keys.NumCWs())
	case Unchecked:
		what = "no unit start checked"
		if p.key == keys.NoKey {
			what = "no key"
		} else {
			what = fmt.Sprintf("CW %d of %d (%s)", p.key+1, t.keys.NumCWs(), what)
		}
	case NoFit:
		what = "no control word fits: left scrambled"
	case Unplaced:
		if pk := t.pk[p.pid]; pk != nil {
			pk.inStep = false // the list's order no longer says where its next period is
		}
		what = "its key may have changed unseen (a silence, or packets lost) and no unit start came to place it: left scrambled"
	case Glitch:
		t.counts.ParityGlitches++
		return
	}
	t.count(p.pid, state)
	if t.cfg.KeyLog != nil {
		t.cfg.KeyLog(fmt.Sprintf("PID %#04x crypto period %d: %s, %s, from packet %d",
			p.pid, p.number, parityName(p.odd), what, p.first))
	}
}

// count passes the decision of a crypto period to Config.Counted.
func (t *Tracker) count(pid uint16, s State) {
	if t.cfg.Counted != nil {
		t.cfg.Counted(pid, s)
	}
}

// parityName names a parity as key logs do.
func parityName(odd bool) string {
	if odd {
		return "odd"
	}
	return "even"
}

// sameCW reports whether periods p and q have the same control word: the same place in the
// list, or the same bytes.
func (t *Tracker) sameCW(p, q *cryptoPeriod) bool {
	return p.pos == q.pos || p.key != keys.NoKey && q.key != keys.NoKey && bytes.Equal(t.keys.CW(p.key), t.keys.CW(q.key))
}

// continues reports whether decided period p, split off the period before it where the key
// might have changed (a silence, a continuity break), turned out to be the same crypto period:
// decided alike, with the same key. The statistics and the key log count crypto periods.
func (t *Tracker) continues(p *cryptoPeriod) bool {
	if p.from < 0 || p.steps != 0 || p.state == Glitch {
		return false
	}
	q := &t.periods[p.from]
	return q.odd == p.odd && q.state == p.state && (p.state == NoFit || q.key == p.key)
}

// expire decides the periods still open HoldPackets packets after their first packet.
func (t *Tracker) expire() {
	for len(t.open) > 0 {
		idx := t.open[0]
		if p := &t.periods[idx]; p.state == Open {
			if t.now-p.first < HoldPackets {
				return
			}
			t.endNow(idx)
		}
		t.open = t.open[1:]
	}
}

// finish decides every period still open at the end of the stream.
func (t *Tracker) finish() {
	if t.live != nil {
		t.liveFinish()
	}
	for _, idx := range t.open {
		t.endNow(idx)
	}
	t.open = t.open[:0]
}

// compact drops the periods no packet refers to any more: those that are neither a PID's
// current period nor the one a tentative period interrupts, nor the period before one still
// open (whose decision may follow from it). Call it only when no packet waits. A period still
// open then (one that no packet waits for: a counting-only tracker's, as probe's) stays open
// and is decided as it would have been.
func (t *Tracker) compact() {
	if t.live != nil {
		t.liveResolve(false) // no packet waits: every period waiting is decided; forget them
	}
	if len(t.periods) < 4096 {
		return
	}
	newIdx := make(map[int32]int32)
	var order []int32
	keep := func(idx int32) {
		for idx >= 0 {
			if _, ok := newIdx[idx]; ok {
				return
			}
			newIdx[idx] = int32(len(order))
			order = append(order, idx)
			if t.periods[idx].state != Open {
				return
			}
			idx = t.periods[idx].from
		}
	}
	for _, pk := range t.pk {
		if pk != nil {
			keep(pk.prev)
			keep(pk.cur)
		}
	}
	for _, idx := range t.open {
		if t.periods[idx].state == Open {
			keep(idx) // one that waits for a period seen whole, not a PID's latest
		}
	}
	kept := make([]cryptoPeriod, len(order))
	open, deferred := t.open[:0], t.deferred[:0]
	for i, idx := range order {
		p := t.periods[idx]
		if p.from >= 0 {
			if to, ok := newIdx[p.from]; ok {
				p.from = to
			} else {
				// Decided, and so is the period before it: only that it had one is read.
				p.from = forgottenPeriod
			}
		}
		kept[i] = p
		if p.state == Open {
			open = append(open, int32(i))
			if p.ndeferred > 0 {
				deferred = append(deferred, int32(i))
			}
		}
	}
	for _, pk := range t.pk {
		if pk == nil {
			continue
		}
		for _, idx := range []*int32{&pk.prev, &pk.cur} {
			if *idx >= 0 {
				*idx = newIdx[*idx]
			}
		}
	}
	// In order of their first packet, as expire takes them.
	slices.SortFunc(open, func(a, b int32) int { return cmp.Compare(kept[a].first, kept[b].first) })
	t.periods, t.open, t.deferred = kept, open, deferred
}

// forgottenPeriod is the from of a decided period whose period before was dropped by compact:
// a decided period's from is read only for whether it has one.
const forgottenPeriod = math.MaxInt32
