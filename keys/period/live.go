package period

import (
	"bytes"
	"fmt"
	"slices"
	"time"

	"github.com/tsdescramble/tsdescramble/keys"
)

// Keys that arrive while the stream runs.
//
// With Config.Live, the CWs come from a keys.Source: key slots that hold, per parity, the CWs
// that arrived in order (keys.Live: a slot keeps a CW until another replaces it, so constant
// keys and keys a server sends once serve every period). Which of them each crypto period
// takes is decided here, from the slot's history (slots.go): at its first packet (begin), and
// again, by the period's number, at each unit of work read (Poll) while the key has not come,
// until it comes (it then applies from the period's first packet) or the wait runs out: then
// Live.Drop decides, the period's packets pass as they came (counted). On a live input a
// period that ends (its PID's parity changes) still waiting keeps waiting: the key server's
// answer often comes after the flip (liveEnded). Periods are started by parity changes alone,
// without glitch detection: the key server, not a search, says which key applies. The source
// is read once when a period begins and once for each look while it waits, never per packet.
//
// A period is offered the CW its slot holds for the period's parity, and the CW is checked
// before it is used: it must fit the period's first checkable unit start (one trial per offer,
// as a key list's expected key gets), and a period holds its packets until that unit start
// comes. A CW that does not fit is not used for the period, which waits for the next CW of its
// parity: a CW the slot still held from an earlier period is counted as stale and said nothing
// of, one new to the period that does not fit is logged. A period without a unit start to
// check (one that ends, or waits past Live.Wait, first) takes its CW unchecked only when it is
// not stale (freshness): a stale one may be the previous period's, not replaced yet, and such
// a period waits for its own. Holding is bounded as for any undecided period (HoldPackets),
// and in time by Live.Wait.

// liveState is the tracker's state for Live.
type liveState struct {
	cfg   Live
	slots *slotKeys // which of the source's CWs each period takes
	sizes []int     // the key sizes of the input system
	// systems is the source when its CWs may each name their system (a key server's
	// descrambling modes), else nil: all are the input system's.
	systems keys.SystemSource
	waiting []liveWait
	packets map[int32]int64 // packets of each waiting period so far
	st      Waits
}

type liveWait struct {
	idx   int32
	since time.Time
}

func newLiveState(cfg *Live, sizes []int) *liveState {
	l := &liveState{cfg: *cfg, slots: newSlotKeys(cfg.Source), sizes: sizes, packets: map[int32]int64{}}
	l.systems, _ = cfg.Source.(keys.SystemSource)
	if l.cfg.Wait <= 0 {
		l.cfg.Wait = 2 * time.Second
	}
	if l.cfg.Origin == "" {
		l.cfg.Origin = "the key server"
	}
	return l
}

// fromStream reports whether the keys of a file input come with its sections alone, answered
// as they are read (Live.AtOnce): no key arrives while the reader waits, so none is waited for.
func (l *liveState) fromStream() bool { return l.cfg.AtOnce && l.cfg.FileInput }

// liveSizeFits reports whether CW k of the source has a size its system takes: the system the
// source names for it, else the input system.
func (t *Tracker) liveSizeFits(k int) bool {
	n := len(t.live.cfg.Source.CW(k))
	if l := t.live; l.systems != nil {
		if sys := l.systems.System(k); sys != nil {
			return slices.Contains(sys.KeySizes(), n)
		}
	}
	return slices.Contains(t.live.sizes, n)
}

// busy reports whether the key server has ECMs to answer.
func (l *liveState) busy() bool { return l.cfg.Busy != nil && l.cfg.Busy() }

// livePeriodOf returns the crypto period of a scrambled packet of pid with the given parity,
// starting one, with its key from the source, at each change of parity, and where packets of
// the PID were lost (ccBreak) after a decided period: the key may have changed in the loss, and
// the period after it takes the key its slot holds, checked on its first unit start.
func (t *Tracker) livePeriodOf(pid uint16, odd, ccBreak bool) int32 {
	pk := t.pidKeys(pid)
	if pk.cur >= 0 {
		if cur := &t.periods[pk.cur]; cur.odd == odd && ccBreak && cur.state != Open {
			t.lose(pk)
			return t.liveBegin(pk, pid, odd, 0)
		} else if cur.odd == odd {
			pk.run++
			switch {
			case cur.state == Open:
				t.live.packets[pk.cur]++
			case cur.state == NoFit && !t.live.cfg.Drop:
				// The period gave up waiting before its end: the packets that follow pass as
				// they came too, and count with those held (liveDrop counts dropped ones).
				t.live.st.PassedNoKey++
			}
			return pk.cur
		}
	}
	if pk.cur >= 0 && t.periods[pk.cur].state == Open {
		// The parity changes while the period is undecided: it gets no more unit starts to
		// check a key on.
		t.liveEnded(pk.cur)
	}
	return t.liveBegin(pk, pid, odd, 0)
}

// liveBegin starts a crypto period of pid with the given parity, with its key from the source;
// replaced is 1 + the CW of the period before when a unit start that CW did not fit begins
// this one (liveUnitStart), else 0.
func (t *Tracker) liveBegin(pk *pidKeys, pid uint16, odd bool, replaced int32) int32 {
	p := cryptoPeriod{pid: pid, odd: odd, first: t.now, number: pk.periods + 1, key: keys.NoKey, replaced: replaced}
	pk.periods++
	idx := int32(len(t.periods))
	t.periods = append(t.periods, p)
	pk.cur, pk.run = idx, 1
	k, final := t.live.slots.begin(pid, odd)
	switch {
	case k != keys.NoKey:
		t.liveOffer(idx, k, false) // checked on the period's first unit start
	case final:
		t.liveDecide(idx, k, false)
	}
	if t.periods[idx].state == Open {
		t.open = append(t.open, idx)
		t.live.waiting = append(t.live.waiting, liveWait{idx: idx, since: time.Now()})
		t.live.packets[idx] = 1
	}
	return idx
}

// liveOffer makes CW k of the source period idx's candidate key; late says it came after the
// period's first packet. A CW of a size its system cannot take decides the period without a
// key; another is checked at once if the period's first unit start is known.
func (t *Tracker) liveOffer(idx int32, k int, late bool) {
	p := &t.periods[idx]
	p.late = late
	if !t.liveSizeFits(k) {
		t.liveAccept(idx, k, false)
		return
	}
	p.key = k
	t.liveCheck(idx)
	if p.state == Open && p.key != keys.NoKey && t.pidKeys(p.pid).cur != idx {
		// A period past its end with no unit start to check the key on: none will come.
		t.liveUnchecked(idx)
	}
}

// liveUnchecked decides period idx with its candidate key unchecked (no unit start came to
// check it on) when the source says the key may be used so: one that may be the previous
// period's, not replaced yet, is dropped, and the period waits on for its own. It reports
// whether the period was decided.
func (t *Tracker) liveUnchecked(idx int32) bool {
	p := &t.periods[idx]
	sk := t.live.slots
	if t.live.cfg.FileInput {
		// A file is read ahead of the key server: the CW the slot held when the period
		// began may be replaced by the answer to an ECM still pending. Take what the slot
		// holds once the server is idle.
		t.liveAwaitIdle()
		if k, _ := sk.current(p.pid, p.number); k != keys.NoKey && k != p.key {
			if t.liveOffer(idx, k, true); p.state != Open {
				return true
			}
		}
	}
	if sk.fresh(p.pid, p.number) != freshStale {
		t.liveAccept(idx, p.key, false)
		return true
	}
	sk.reject(p.pid, p.number)
	p.key = keys.NoKey
	return false
}

// liveUnitStart is called for each checkable unit start of period idx: the first is kept (its
// packet waits while the period is open) and checks the period's key, now or when it comes. A
// later one, of a period decided with a key, is tried with that key: one the key does not fit
// begins a period of its own there (packets lost that the counters hid, or two streams joined),
// which takes the key its slot holds, checked on this unit start. It returns the period the
// unit start belongs to.
func (t *Tracker) liveUnitStart(idx int32, u unitStart) int32 {
	p := &t.periods[idx]
	if p.state != Open && p.key != keys.NoKey && t.liveSizeFits(p.key) {
		if t.trialDecided(p.key, u.payload, u.carriage) != CheckBad {
			return idx
		}
		pk := t.pk[p.pid]
		t.counts.KeyFailures++
		t.lose(pk)
		idx = t.liveBegin(pk, p.pid, p.odd, int32(p.key)+1)
		p = &t.periods[idx]
	}
	if p.state != Open || p.npending > 0 {
		return idx
	}
	p.pending[0], p.npending = u, 1
	t.liveCheck(idx)
	return idx
}

// liveCheck tries period idx's candidate key on its first checkable unit start, when both are
// known: a key that fits decides the period, one that does not is rejected.
func (t *Tracker) liveCheck(idx int32) {
	p := &t.periods[idx]
	if p.key == keys.NoKey || p.npending == 0 {
		return
	}
	u := p.pending[0]
	switch t.trial(p.key, u.payload, u.carriage) {
	case CheckGood:
		t.liveAccept(idx, p.key, true)
	case CheckBad:
		t.liveReject(idx)
	default:
		p.npending = 0 // says nothing: the next unit start is checked
	}
}

// liveAccept decides period idx with CW k; checked says it fitted the period's first checkable
// unit start (a size the input system cannot take: without a key).
func (t *Tracker) liveAccept(idx int32, k int, checked bool) {
	p := &t.periods[idx]
	l := t.live
	if p.late {
		l.st.Waited++
		l.st.Held += l.packets[idx]
	}
	delete(l.packets, idx)
	t.liveDecide(idx, k, checked)
}

// liveReject drops period idx's candidate key, which did not fit its first unit start: the
// period waits for the next key of its parity, or gives up when the source has none.
func (t *Tracker) liveReject(idx int32) {
	p := &t.periods[idx]
	l := t.live
	if l.slots.fresh(p.pid, p.number) != freshNew {
		// The CW the slot still held from an earlier period: the period's own has not come.
		l.st.Stale++
		l.slots.reject(p.pid, p.number)
		p.key = keys.NoKey
		if k, _ := l.slots.current(p.pid, p.number); k != keys.NoKey {
			t.liveOffer(idx, k, true)
		}
		return
	}
	l.st.NotFitting++
	if l.cfg.Log != nil {
		l.cfg.Log(fmt.Sprintf("the CW from %s for PID %#04x crypto period %d (%s) does not fit its first unit start: not used", l.cfg.Origin,
			p.pid, p.number, parityName(p.odd)))
	}
	rejected := p.key
	p.key = keys.NoKey
	l.slots.reject(p.pid, p.number)
	switch k, final := l.slots.current(p.pid, p.number); {
	case k == rejected || final && k == keys.NoKey:
		t.liveGiveUp(idx, giveUpRejected) // the source has no other key for the period
	case k != keys.NoKey:
		t.liveOffer(idx, k, true) // another key came while this one was tried
	}
}

// liveDecide decides a period with CW k of the source (NoKey: passed as it came); checked says
// k fitted the period's first checkable unit start, which makes the period one that fits.
func (t *Tracker) liveDecide(idx int32, k int, checked bool) {
	p := &t.periods[idx]
	if k != keys.NoKey && !t.liveSizeFits(k) {
		t.live.st.BadSize++
		k, checked = keys.NoKey, false
	}
	p.key = k
	if p.replaced > 0 && k != keys.NoKey && !bytes.Equal(t.keys.CW(int(p.replaced-1)), t.keys.CW(k)) {
		t.counts.UnseenChanges++
	}
	if checked {
		t.decide(p, Fit)
	} else {
		t.decide(p, Unchecked)
	}
}

// livePoll asks the source again for the periods that wait for their key, and gives up on
// those that waited too long. For a file input it first waits while the key server is busy.
func (t *Tracker) livePoll() {
	l := t.live
	if len(l.waiting) == 0 {
		return
	}
	if l.cfg.FileInput && l.cfg.Busy != nil && !l.fromStream() {
		start := time.Now()
		arrived := l.cfg.Source.Arrived()
		// The oldest period waiting says how long: -key-wait from its first packet, in all.
		deadline := l.waiting[0].since.Add(l.cfg.Wait)
		for l.busy() && t.ctx.Err() == nil && time.Now().Before(deadline) && !t.liveResolve(false) {
			select {
			case <-arrived:
			case <-time.After(10 * time.Millisecond):
			case <-t.ctx.Done():
			}
		}
		l.st.ReaderWaits += time.Since(start)
	}
	t.liveResolve(true)
}

// liveEnded is called when period idx, still open, ends (its PID's parity changed). A key it
// has is taken unchecked: no unit start will come to check it. A period without a key settles
// now on a file input, whose reader waits for the key server first; on a live input it keeps
// waiting, its packets held, for the rest of Live.Wait: a key server often answers after
// the next period began (an ECM close to the flip, a filter set late), and the period's key
// comes with the answer to the next period's ECM, as the other parity's.
func (t *Tracker) liveEnded(idx int32) {
	p := &t.periods[idx]
	if p.key != keys.NoKey && t.liveUnchecked(idx) {
		return
	}
	if t.live.cfg.FileInput {
		t.liveSettle(idx)
		return
	}
	switch k, final := t.live.slots.current(p.pid, p.number); {
	case k != keys.NoKey:
		t.liveOffer(idx, k, true) // past its end: taken unchecked if fresh
	case final:
		t.liveGiveUp(idx, giveUpNone)
	}
}

// liveSettle decides a waiting period of a file input with its key if it has come, or gives up
// on it.
func (t *Tracker) liveSettle(idx int32) {
	l := t.live
	p := &t.periods[idx]
	// Each key offered is either taken or rejected, and a rejected one is not offered again:
	// the loop ends. A key rejected here sends a file's reader back to wait for the server,
	// which may still be answering an ECM that carries the period's right key; without that
	// wait the period would give up or not by when the reader's units of work were cut.
	for p.state == Open && p.key == keys.NoKey {
		t.liveAwaitServer(p.pid, p.number)
		k, _ := l.slots.current(p.pid, p.number)
		if k == keys.NoKey {
			break
		}
		t.liveOffer(idx, k, true)
	}
	t.liveEnd(idx, giveUpEnded)
}

// liveAwaitIdle waits, for a file input, while the key server is busy with ECMs.
func (t *Tracker) liveAwaitIdle() { t.liveAwait(func() bool { return false }) }

// liveAwaitServer waits, for a file input, while the key server is busy and pid's period number
// has no key yet: the file's reader has run through the whole period.
func (t *Tracker) liveAwaitServer(pid uint16, number int) {
	t.liveAwait(func() bool {
		k, _ := t.live.slots.current(pid, number)
		return k != keys.NoKey
	})
}

// liveAwait waits, for a file input, while the key server is busy, until done says so, for
// Live.Wait at most: a period never waits longer in all.
func (t *Tracker) liveAwait(done func() bool) {
	l := t.live
	if !l.cfg.FileInput || l.cfg.Busy == nil || l.fromStream() {
		return
	}
	start := time.Now()
	arrived := l.cfg.Source.Arrived()
	for l.busy() && t.ctx.Err() == nil && time.Since(start) < l.cfg.Wait && !done() {
		select {
		case <-arrived:
		case <-time.After(10 * time.Millisecond):
		case <-t.ctx.Done():
		}
	}
	l.st.ReaderWaits += time.Since(start)
}

// liveEnd decides an open period without waiting more: with its key, unchecked when no unit
// start could check it, or without one, for the reason given.
func (t *Tracker) liveEnd(idx int32, why giveUpReason) {
	switch p := &t.periods[idx]; {
	case p.state != Open:
	case p.key != keys.NoKey && t.liveUnchecked(idx):
	default:
		t.liveGiveUp(idx, why)
	}
}

// liveResolve decides the waiting periods whose key came and fits; with expire, it decides
// those that waited longer than the wait (with their key unchecked when no unit start came to
// check it). It reports whether none waits for a key any more.
func (t *Tracker) liveResolve(expire bool) bool {
	l := t.live
	now := time.Now()
	kept := l.waiting[:0]
	keyless := 0
	for _, w := range l.waiting {
		p := &t.periods[w.idx]
		if p.state != Open {
			t.liveSettled(w.idx)
			continue
		}
		if p.key == keys.NoKey {
			switch k, final := l.slots.current(p.pid, p.number); {
			case k != keys.NoKey:
				l.st.HeldMax = max(l.st.HeldMax, now.Sub(w.since))
				t.liveOffer(w.idx, k, true)
				if p.state != Open {
					continue
				}
			case final:
				t.liveGiveUp(w.idx, giveUpNone)
				continue
			}
		}
		if expire && !l.fromStream() && now.Sub(w.since) > l.cfg.Wait {
			t.liveEnd(w.idx, giveUpWait)
			continue
		}
		if p.state != Open {
			continue // gave up: the source has no other key
		}
		if p.key == keys.NoKey {
			keyless++
		}
		kept = append(kept, w)
	}
	l.waiting = kept
	return keyless == 0
}

// giveUpReason says why a period stopped waiting for its key, for the line Live.Log gets.
type giveUpReason int8

const (
	giveUpWait     giveUpReason = iota // Live.Wait ran out
	giveUpEnded                        // a file input's period ended with the key server idle
	giveUpRejected                     // its key did not fit, and the source has no other
	giveUpInputEnd                     // the input ended, or the run stopped, while it waited
	giveUpNone                         // no key will come for it (slotKeys: a period too far back)
)

// liveGiveUp decides a period whose key did not come: its packets pass as they came.
func (t *Tracker) liveGiveUp(idx int32, why giveUpReason) {
	p := &t.periods[idx]
	l := t.live
	l.st.GaveUp++
	what := "dropped" // counted as they go (liveDrop)
	if !l.cfg.Drop {
		l.st.PassedNoKey += l.packets[idx]
		what = "passed scrambled"
	}
	delete(l.packets, idx)
	l.slots.giveUp(p.pid, p.number)
	if l.cfg.Log != nil {
		var when string
		switch why {
		case giveUpWait:
			when = fmt.Sprintf("after -key-wait %v", l.cfg.Wait)
		case giveUpEnded:
			when = "when the period ended"
			if l.cfg.Busy != nil {
				when += ", no answer pending" // only a key server has answers to wait for
			}
		case giveUpRejected:
			when = "other than the CW that did not fit"
		case giveUpInputEnd:
			when = "before the run ended"
		case giveUpNone:
			when = "(the key source has none for it)"
		}
		l.cfg.Log(fmt.Sprintf("no key from %s for PID %#04x crypto period %d (%s) %s: its packets are %s", l.cfg.Origin,
			p.pid, p.number, parityName(p.odd), when, what))
	}
	t.decide(p, NoFit)
}

// liveFinish counts the packets of periods still waiting at the end of the stream, or when
// the packet bound decides them, as passed for want of a key.
func (t *Tracker) liveFinish() {
	l := t.live
	if l.cfg.FileInput && !l.fromStream() && t.ctx.Err() == nil {
		// The end of a file comes before the key server's answers: wait for them, as long as
		// the server is busy, or the wait.
		start := time.Now()
		arrived := l.cfg.Source.Arrived()
		for !t.liveResolve(false) && t.ctx.Err() == nil {
			if time.Since(start) > l.cfg.Wait {
				break // as long as a period may wait, in all, busy server or not
			}
			select {
			case <-arrived:
			case <-time.After(10 * time.Millisecond):
			case <-t.ctx.Done():
			}
		}
	}
	t.liveResolve(false) // the keys that came since the last unit of work
	for _, w := range l.waiting {
		if t.periods[w.idx].state == Open {
			t.liveEnd(w.idx, giveUpInputEnd)
		} else {
			t.liveSettled(w.idx)
		}
	}
	l.waiting = l.waiting[:0]
}

// liveDecided counts and logs the decision of a period (decide's part for Live).
func (t *Tracker) liveDecided(p *cryptoPeriod) {
	what := ""
	switch {
	case p.state == NoFit:
		what = "no key from " + t.live.cfg.Origin + " in time: left scrambled"
	case p.key == keys.NoKey:
		what = "no key"
	default:
		what = fmt.Sprintf("CW %d from %s", p.key+1, t.live.cfg.Origin)
		if l := t.live; l.systems != nil {
			if sys := l.systems.System(p.key); sys != nil {
				what += " for " + sys.Name() // the slot's mode, when not the input system
			}
		}
		if t.live.cfg.ShowKeys {
			what += fmt.Sprintf(" (%X)", t.live.cfg.Source.CW(p.key))
		}
		if p.state != Fit {
			what += ", no unit start checked"
		}
	}
	t.count(p.pid, p.state)
	if t.cfg.KeyLog != nil {
		t.cfg.KeyLog(fmt.Sprintf("PID %#04x crypto period %d: %s, %s, from packet %d",
			p.pid, p.number, parityName(p.odd), what, p.first))
	}
}

// liveSettled forgets a waiting period decided elsewhere: by liveSettle, or by the packet bound
// (HoldPackets) without its key, which passes it as it came and is counted here.
func (t *Tracker) liveSettled(idx int32) {
	l := t.live
	if p := &t.periods[idx]; p.state == Unchecked && p.key == keys.NoKey {
		l.st.GaveUp++
		l.st.PassedNoKey += l.packets[idx]
		l.slots.giveUp(p.pid, p.number)
	}
	delete(l.packets, idx)
}
