package pipeline

import (
	"fmt"
	"slices"
	"time"

	"github.com/tsdescramble/tsdescramble/keys"
	"github.com/tsdescramble/tsdescramble/psi"
	"github.com/tsdescramble/tsdescramble/ts"
)

// Keys that arrive while the stream runs.
//
// With Options.LiveKeys, each PID's crypto period gets its control word from a keys.Source at
// its first packet (Begin). A period whose key has not arrived yet stays open: its packets are
// held, with the chunks after them, and the source is asked again at each unit of work read
// (Current, by the period's number), until the key comes (it then applies from the period's
// first packet) or the wait runs out: then LiveKeys.Drop decides, the period's packets pass as
// they came (counted). On a live input a period that ends (its PID's parity changes) still
// waiting keeps waiting: the key server's answer often comes after the flip (liveEnded).
// Periods are started by parity changes alone, without glitch detection: the key server, not a
// search, says which key applies. The source offers each period the CW its key slot holds for
// the period's parity (keys.Live: a slot keeps a CW until another replaces it, so constant
// keys and keys a server sends once serve every period), and the CW is checked before it is
// used: it must fit the period's first checkable unit start (one trial per offer, as a key
// list's expected key gets), and a period holds its packets until that unit start comes. A CW
// that does not fit is not used for the period, which waits for the next CW of its parity: a
// CW the slot still held from an earlier period is counted as stale and said nothing of, one
// new to the period that does not fit is logged. A period without a unit start to check (one
// that ends, or waits past LiveKeys.Wait, first) takes its CW unchecked only when the source
// does not call it stale (keys.Freshness): a stale one may be the previous period's, not
// replaced yet, and such a period waits for its own. Holding is bounded as for any undecided
// period (holdPackets), and in time by LiveKeys.Wait.
//
// The sections of the PIDs the key server wants (ECMs, EMMs) are gathered from the stream in
// order and handed to LiveKeys.Sections, with the services of the PAT and PMTs as they change.

// SectionSink is what takes the stream's sections for a key server.
type SectionSink interface {
	// Tables is called with the services of the PAT and their PMTs whenever they change.
	Tables(services []psi.Service)
	// WantedPIDs returns the PIDs whose sections the sink wants, and a number that changes
	// when they do.
	WantedPIDs() (pids []uint16, generation uint64)
	// Section hands over a whole section of pid; the sink copies what it keeps.
	Section(pid uint16, section []byte)
	// Busy reports whether ECMs were sent that the key server has not answered yet.
	Busy() bool
}

// LiveKeys configures descrambling with control words that arrive while the stream runs.
type LiveKeys struct {
	// Source answers which CW applies to each crypto period (a *keys.Live, typically).
	Source keys.Source
	// Sections, when set, receives the sections of the PIDs it wants and the services.
	Sections SectionSink
	// Wait bounds how long a crypto period waits for its key (default 2 s).
	Wait time.Duration
	// FileInput says that the input runs ahead of real time: while a period waits and the
	// key server is busy with ECMs, reading waits for it, within Wait: a server that stays
	// busy (answers that never come, a connection replayed again and again) does not keep a
	// file's run from ending.
	FileInput bool
	// Log, when set, receives a line when a period gives up waiting.
	Log func(string)
	// ShowKeys puts each period's CW in the lines of Options.KeyLog (keys are secrets).
	ShowKeys bool
	// Drop drops the packets of a period whose key did not come in time, instead of passing
	// them as they came (every other packet keeps its place and bytes).
	Drop bool
}

// LiveKeyStats counts what waiting for keys did.
type LiveKeyStats struct {
	Waited      int64         `json:"periods_waited"`   // crypto periods whose key came after their first packet
	Held        int64         `json:"packets_held"`     // their packets, held until the key came
	HeldMax     time.Duration `json:"held_max_ns"`      // the longest such wait
	GaveUp      int64         `json:"periods_no_key"`   // periods whose key never came in time
	PassedNoKey int64         `json:"packets_passed"`   // their packets, passed as they came (LiveKeys.Drop: dropped)
	Dropped     int64         `json:"packets_dropped"`  // packets dropped for want of a key (LiveKeys.Drop)
	BadSize     int64         `json:"cws_wrong_size"`   // CWs the input system cannot take, not used
	NotFitting  int64         `json:"cws_not_fitting"`  // CWs that did not fit their period's first unit start, not used
	Stale       int64         `json:"cws_stale"`        // CWs a slot still held from an earlier period, not fitting: the period waited for its own
	ReaderWaits time.Duration `json:"reader_waited_ns"` // time the reader waited for the key server (file input)

	// Server holds the key server client's counts, when the caller that runs the client
	// fills it in.
	Server *KeyServerStats `json:"key_server,omitempty"`
}

// KeyServerStats are a key server client's counts, for the run's statistics.
type KeyServerStats struct {
	Protocol  string        `json:"protocol"`
	ECMsSent  int64         `json:"ecms_sent"`
	Answers   int64         `json:"answers"`
	NotFound  int64         `json:"not_found"`
	NoCard    int64         `json:"no_card"`
	Timeouts  int64         `json:"timeouts"`
	Errors    int64         `json:"errors"`
	CWs       int64         `json:"cws"`
	Refused   int64         `json:"refused"` // CWs or modes the client did not use (not DVB-CSA2, out of range)
	RTTMedian time.Duration `json:"ecm_rtt_median_ns"`
	RTTMax    time.Duration `json:"ecm_rtt_max_ns"`
	// Applied counts the crypto periods that got a CW from the key server, per PID and parity.
	Applied []AppliedCWs `json:"applied"`
}

// AppliedCWs counts the periods of one PID and parity that got a CW from the key server.
type AppliedCWs struct {
	PID     uint16 `json:"pid"`
	Odd     bool   `json:"odd"`
	Periods int64  `json:"periods"`
}

// livePollEvery is how often the reader asks the key source again while it waits for a free
// chunk, all of them held for a key (Arrived wakes it sooner).
const livePollEvery = 10 * time.Millisecond

// liveState is the classifier's state for LiveKeys.
type liveState struct {
	cfg     LiveKeys
	sizes   []int
	waiting []liveWait
	packets map[int32]int64 // packets of each waiting period so far
	st      LiveKeyStats

	// Sections for the sink.
	wanted  [8192]bool
	gen     uint64
	tblGen  uint64
	reader  *psi.SectionReader
	pktCopy [ts.PacketSize]byte
}

type liveWait struct {
	idx   int32
	since time.Time
}

func newLiveState(o *Options, sizes []int) *liveState {
	l := &liveState{cfg: *o.LiveKeys, sizes: sizes, packets: map[int32]int64{}, reader: psi.NewSectionReader()}
	if l.cfg.Wait <= 0 {
		l.cfg.Wait = 2 * time.Second
	}
	l.refreshWanted()
	return l
}

// refreshWanted reads the sink's wanted PIDs when they changed.
func (l *liveState) refreshWanted() {
	if l.cfg.Sections == nil {
		return
	}
	pids, g := l.cfg.Sections.WantedPIDs()
	if g == l.gen && g != 0 {
		return
	}
	l.gen = g
	clear(l.wanted[:])
	for _, pid := range pids {
		l.wanted[pid&0x1FFF] = true
	}
}

// packet looks at every packet for the sink: the services when the tables change, the
// sections of the wanted PIDs. Clear packets only: ECMs and EMMs are never scrambled.
func (cl *classifier) livePacket(p []byte, pid uint16) {
	l := cl.live
	if l.cfg.Sections == nil {
		return
	}
	if g := cl.tracker.Generation(); g != l.tblGen {
		l.tblGen = g
		l.cfg.Sections.Tables(cl.tracker.Services())
		if l.cfg.FileInput {
			// A file is read faster than a key server sets its filters: wait for them, so
			// that the ECMs that follow the PMT are not read past. Only Busy says when they
			// are set: the sink's generation also changes for other reasons (a client that
			// connects clears its filters), so a change of it ends nothing.
			begun := time.Now()
			for start := begun; l.cfg.Sections.Busy() && cl.ctx.Err() == nil && time.Since(begun) < l.cfg.Wait; {
				time.Sleep(time.Millisecond)
				l.st.ReaderWaits += time.Since(start)
				start = time.Now()
			}
		}
		l.refreshWanted()
	}
	if !l.wanted[pid] || ts.TSC(p) != ts.Clear {
		return
	}
	l.reader.Feed(p, func(spid uint16, section []byte) {
		l.cfg.Sections.Section(spid, section)
	})
}

// livePeriodOf returns the crypto period of a scrambled packet of pid with the given parity,
// starting one, with its key from the source, at each change of parity.
func (cl *classifier) livePeriodOf(pid uint16, odd bool) int32 {
	pk := cl.pidKeys(pid)
	if pk.cur >= 0 {
		if cur := &cl.periods[pk.cur]; cur.odd == odd {
			pk.run++
			switch {
			case cur.state == periodOpen:
				cl.live.packets[pk.cur]++
			case cur.state == periodNoFit && !cl.live.cfg.Drop:
				// The period gave up waiting before its end: the packets that follow pass as
				// they came too, and count with those held (liveDrop counts dropped ones).
				cl.live.st.PassedNoKey++
			}
			return pk.cur
		}
	}
	if pk.cur >= 0 && cl.periods[pk.cur].state == periodOpen {
		// The parity changes while the period is undecided: it gets no more unit starts to
		// check a key on.
		cl.liveEnded(pk.cur)
	}
	p := period{pid: pid, odd: odd, first: cl.packet, number: pk.periods + 1, key: keys.NoKey}
	pk.periods++
	idx := int32(len(cl.periods))
	cl.periods = append(cl.periods, p)
	pk.cur, pk.run = idx, 1
	k, final := cl.live.cfg.Source.Begin(pid, odd)
	switch {
	case k != keys.NoKey:
		cl.liveOffer(idx, k, false) // checked on the period's first unit start
	case final:
		cl.liveDecide(idx, k, false)
	}
	if cl.periods[idx].state == periodOpen {
		cl.open = append(cl.open, idx)
		cl.live.waiting = append(cl.live.waiting, liveWait{idx: idx, since: time.Now()})
		cl.live.packets[idx] = 1
	}
	return idx
}

// liveOffer makes CW k of the source period idx's candidate key; late says it came after the
// period's first packet. A CW of a size the input system cannot take decides the period
// without a key; another is checked at once if the period's first unit start is known.
func (cl *classifier) liveOffer(idx int32, k int, late bool) {
	p := &cl.periods[idx]
	l := cl.live
	p.late = late
	if !slices.Contains(l.sizes, len(l.cfg.Source.CW(k))) {
		cl.liveAccept(idx, k, false)
		return
	}
	p.key = k
	cl.liveCheck(idx)
	if p.state == periodOpen && p.key != keys.NoKey && cl.pidKeys(p.pid).cur != idx {
		// A period past its end with no unit start to check the key on: none will come.
		cl.liveUnchecked(idx)
	}
}

// liveUnchecked decides period idx with its candidate key unchecked (no unit start came to
// check it on) when the source says the key may be used so: one that may be the previous
// period's, not replaced yet, is dropped, and the period waits on for its own. It reports
// whether the period was decided.
func (cl *classifier) liveUnchecked(idx int32) bool {
	p := &cl.periods[idx]
	src := cl.live.cfg.Source
	if cl.live.cfg.FileInput {
		// A file is read ahead of the key server: the CW the slot held when the period
		// began may be replaced by the answer to an ECM still pending. Take what the slot
		// holds once the server is idle.
		cl.liveAwaitIdle()
		if k, _ := src.Current(p.pid, p.number); k != keys.NoKey && k != p.key {
			if cl.liveOffer(idx, k, true); p.state != periodOpen {
				return true
			}
		}
	}
	if src.Fresh(p.pid, p.number) != keys.Stale {
		cl.liveAccept(idx, p.key, false)
		return true
	}
	src.Reject(p.pid, p.number)
	p.key = keys.NoKey
	return false
}

// liveUnitStart is called for each checkable unit start of period idx: the first is kept (its
// chunk is held while the period is open) and checks the period's key, now or when it comes.
func (cl *classifier) liveUnitStart(idx int32, u unitStart) {
	p := &cl.periods[idx]
	if p.state != periodOpen || p.npending > 0 {
		return
	}
	p.pending[0], p.npending = u, 1
	cl.liveCheck(idx)
}

// liveCheck tries period idx's candidate key on its first checkable unit start, when both are
// known: a key that fits decides the period, one that does not is rejected.
func (cl *classifier) liveCheck(idx int32) {
	p := &cl.periods[idx]
	if p.key == keys.NoKey || p.npending == 0 {
		return
	}
	u := p.pending[0]
	switch cl.trial(p.key, u.c.buf[u.off:u.end], u.carriage) {
	case trialGood:
		cl.liveAccept(idx, p.key, true)
	case trialBad:
		cl.liveReject(idx)
	default:
		p.npending = 0 // says nothing: the next unit start is checked
	}
}

// liveAccept decides period idx with CW k; checked says it fitted the period's first checkable
// unit start (a size the input system cannot take: without a key).
func (cl *classifier) liveAccept(idx int32, k int, checked bool) {
	p := &cl.periods[idx]
	l := cl.live
	if p.late {
		l.st.Waited++
		l.st.Held += l.packets[idx]
	}
	delete(l.packets, idx)
	cl.liveDecide(idx, k, checked)
}

// liveReject drops period idx's candidate key, which did not fit its first unit start: the
// period waits for the next key of its parity, or gives up when the source has none.
func (cl *classifier) liveReject(idx int32) {
	p := &cl.periods[idx]
	l := cl.live
	if l.cfg.Source.Fresh(p.pid, p.number) != keys.New {
		// The CW the slot still held from an earlier period: the period's own has not come.
		l.st.Stale++
		l.cfg.Source.Reject(p.pid, p.number)
		p.key = keys.NoKey
		if k, _ := l.cfg.Source.Current(p.pid, p.number); k != keys.NoKey {
			cl.liveOffer(idx, k, true)
		}
		return
	}
	l.st.NotFitting++
	if l.cfg.Log != nil {
		l.cfg.Log(fmt.Sprintf("the key server's CW for PID %#04x crypto period %d (%s) does not fit its first unit start: not used",
			p.pid, p.number, parity(p.odd)))
	}
	rejected := p.key
	p.key = keys.NoKey
	l.cfg.Source.Reject(p.pid, p.number)
	switch k, final := l.cfg.Source.Current(p.pid, p.number); {
	case k == rejected || final && k == keys.NoKey:
		cl.liveGiveUp(idx, giveUpRejected) // the source has no other key for the period
	case k != keys.NoKey:
		cl.liveOffer(idx, k, true) // another key came while this one was tried
	}
}

// liveDecide decides a period with CW k of the source (NoKey: passed as it came); checked says
// k fitted the period's first checkable unit start, which makes the period one that fits.
func (cl *classifier) liveDecide(idx int32, k int, checked bool) {
	p := &cl.periods[idx]
	if k != keys.NoKey && !slices.Contains(cl.live.sizes, len(cl.live.cfg.Source.CW(k))) {
		cl.live.st.BadSize++
		k, checked = keys.NoKey, false
	}
	p.key = k
	if checked {
		cl.decide(p, periodFit)
	} else {
		cl.decide(p, periodUnchecked)
	}
}

// livePoll asks the source again for the periods that wait for their key, and gives up on
// those that waited too long. For a file input it first waits while the key server is busy.
func (cl *classifier) livePoll() {
	l := cl.live
	l.refreshWanted()
	if len(l.waiting) == 0 {
		return
	}
	if l.cfg.FileInput && l.cfg.Sections != nil {
		start := time.Now()
		arrived := l.cfg.Source.Arrived()
		// The oldest period waiting says how long: -key-wait from its first packet, in all.
		deadline := l.waiting[0].since.Add(l.cfg.Wait)
		for l.cfg.Sections.Busy() && cl.ctx.Err() == nil && time.Now().Before(deadline) && !cl.liveResolve(false) {
			select {
			case <-arrived:
			case <-time.After(10 * time.Millisecond):
			case <-cl.ctx.Done():
			}
		}
		l.st.ReaderWaits += time.Since(start)
	}
	cl.liveResolve(true)
}

// liveEnded is called when period idx, still open, ends (its PID's parity changed). A key it
// has is taken unchecked: no unit start will come to check it. A period without a key settles
// now on a file input, whose reader waits for the key server first; on a live input it keeps
// waiting, its packets held, for the rest of LiveKeys.Wait: a key server often answers after
// the next period began (an ECM close to the flip, a filter set late), and the period's key
// comes with the answer to the next period's ECM, as the other parity's.
func (cl *classifier) liveEnded(idx int32) {
	p := &cl.periods[idx]
	if p.key != keys.NoKey && cl.liveUnchecked(idx) {
		return
	}
	if cl.live.cfg.FileInput {
		cl.liveSettle(idx)
		return
	}
	switch k, final := cl.live.cfg.Source.Current(p.pid, p.number); {
	case k != keys.NoKey:
		cl.liveOffer(idx, k, true) // past its end: taken unchecked if fresh
	case final:
		cl.liveGiveUp(idx, giveUpNone)
	}
}

// liveSettle decides a waiting period of a file input with its key if it has come, or gives up
// on it.
func (cl *classifier) liveSettle(idx int32) {
	l := cl.live
	p := &cl.periods[idx]
	// Each key offered is either taken or rejected, and a rejected one is not offered again:
	// the loop ends. A key rejected here sends a file's reader back to wait for the server,
	// which may still be answering an ECM that carries the period's right key; without that
	// wait the period would give up or not by when the reader's units of work were cut.
	for p.state == periodOpen && p.key == keys.NoKey {
		cl.liveAwaitServer(p.pid, p.number)
		k, _ := l.cfg.Source.Current(p.pid, p.number)
		if k == keys.NoKey {
			break
		}
		cl.liveOffer(idx, k, true)
	}
	cl.liveEnd(idx, giveUpEnded)
}

// liveAwaitIdle waits, for a file input, while the key server is busy with ECMs.
func (cl *classifier) liveAwaitIdle() { cl.liveAwait(func() bool { return false }) }

// liveAwaitServer waits, for a file input, while the key server is busy and pid's period number
// has no key yet: the file's reader has run through the whole period.
func (cl *classifier) liveAwaitServer(pid uint16, number int) {
	cl.liveAwait(func() bool {
		k, _ := cl.live.cfg.Source.Current(pid, number)
		return k != keys.NoKey
	})
}

// liveAwait waits, for a file input, while the key server is busy, until done says so, for
// LiveKeys.Wait at most: a period never waits longer in all.
func (cl *classifier) liveAwait(done func() bool) {
	l := cl.live
	if !l.cfg.FileInput || l.cfg.Sections == nil {
		return
	}
	start := time.Now()
	arrived := l.cfg.Source.Arrived()
	for l.cfg.Sections.Busy() && cl.ctx.Err() == nil && time.Since(start) < l.cfg.Wait && !done() {
		select {
		case <-arrived:
		case <-time.After(10 * time.Millisecond):
		case <-cl.ctx.Done():
		}
	}
	l.st.ReaderWaits += time.Since(start)
}

// liveEnd decides an open period without waiting more: with its key, unchecked when no unit
// start could check it, or without one, for the reason given.
func (cl *classifier) liveEnd(idx int32, why giveUpReason) {
	switch p := &cl.periods[idx]; {
	case p.state != periodOpen:
	case p.key != keys.NoKey && cl.liveUnchecked(idx):
	default:
		cl.liveGiveUp(idx, why)
	}
}

// liveResolve decides the waiting periods whose key came and fits; with expire, it decides
// those that waited longer than the wait (with their key unchecked when no unit start came to
// check it). It reports whether none waits for a key any more.
func (cl *classifier) liveResolve(expire bool) bool {
	l := cl.live
	now := time.Now()
	kept := l.waiting[:0]
	keyless := 0
	for _, w := range l.waiting {
		p := &cl.periods[w.idx]
		if p.state != periodOpen {
			cl.liveSettled(w.idx)
			continue
		}
		if p.key == keys.NoKey {
			switch k, final := l.cfg.Source.Current(p.pid, p.number); {
			case k != keys.NoKey:
				l.st.HeldMax = max(l.st.HeldMax, now.Sub(w.since))
				cl.liveOffer(w.idx, k, true)
				if p.state != periodOpen {
					continue
				}
			case final:
				cl.liveGiveUp(w.idx, giveUpNone)
				continue
			}
		}
		if expire && now.Sub(w.since) > l.cfg.Wait {
			cl.liveEnd(w.idx, giveUpWait)
			continue
		}
		if p.state != periodOpen {
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

// giveUpReason says why a period stopped waiting for its key, for the line LiveKeys.Log gets.
type giveUpReason int8

const (
	giveUpWait     giveUpReason = iota // LiveKeys.Wait ran out
	giveUpEnded                        // a file input's period ended with the key server idle
	giveUpRejected                     // its key did not fit, and the source has no other
	giveUpInputEnd                     // the input ended, or the run stopped, while it waited
	giveUpNone                         // the source says no key will come for it
)

// liveGiveUp decides a period whose key did not come: its packets pass as they came.
func (cl *classifier) liveGiveUp(idx int32, why giveUpReason) {
	p := &cl.periods[idx]
	l := cl.live
	l.st.GaveUp++
	what := "dropped" // counted as they go (liveDrop)
	if !l.cfg.Drop {
		l.st.PassedNoKey += l.packets[idx]
		what = "passed scrambled"
	}
	delete(l.packets, idx)
	l.cfg.Source.GiveUp(p.pid, p.number)
	if l.cfg.Log != nil {
		var when string
		switch why {
		case giveUpWait:
			when = fmt.Sprintf("after -key-wait %v", l.cfg.Wait)
		case giveUpEnded:
			when = "when the period ended, no answer pending"
		case giveUpRejected:
			when = "other than the CW that did not fit"
		case giveUpInputEnd:
			when = "before the run ended"
		case giveUpNone:
			when = "(the key source has none for it)"
		}
		l.cfg.Log(fmt.Sprintf("no key from the key server for PID %#04x crypto period %d (%s) %s: its packets are %s",
			p.pid, p.number, parity(p.odd), when, what))
	}
	cl.decide(p, periodNoFit)
}

// liveFinish counts the packets of periods still waiting at the end of the stream, or when
// the packet bound decides them, as passed for want of a key.
func (cl *classifier) liveFinish() {
	l := cl.live
	if l.cfg.FileInput && cl.ctx.Err() == nil {
		// The end of a file comes before the key server's answers: wait for them, as long as
		// the server is busy, or the wait.
		start := time.Now()
		arrived := l.cfg.Source.Arrived()
		for !cl.liveResolve(false) && cl.ctx.Err() == nil {
			if time.Since(start) > l.cfg.Wait {
				break // as long as a period may wait, in all, busy server or not
			}
			select {
			case <-arrived:
			case <-time.After(10 * time.Millisecond):
			case <-cl.ctx.Done():
			}
		}
	}
	cl.liveResolve(false) // the keys that came since the last unit of work
	for _, w := range l.waiting {
		if cl.periods[w.idx].state == periodOpen {
			cl.liveEnd(w.idx, giveUpInputEnd)
		} else {
			cl.liveSettled(w.idx)
		}
	}
	l.waiting = l.waiting[:0]
}

// liveDecided counts and logs the decision of a period (decide's part for LiveKeys).
func (cl *classifier) liveDecided(p *period, ps *PIDStats) {
	what := ""
	switch {
	case p.state == periodNoFit:
		ps.PeriodsLeft++
		what = "no key from the key server in time: left scrambled"
	case p.key == keys.NoKey:
		ps.PeriodsUnchecked++
		what = "no key"
	default:
		what = fmt.Sprintf("key server CW %d", p.key+1)
		if cl.live.cfg.ShowKeys {
			what += fmt.Sprintf(" (%X)", cl.live.cfg.Source.CW(p.key))
		}
		if p.state == periodFit {
			ps.PeriodsFit++
		} else {
			ps.PeriodsUnchecked++
			what += ", no unit start checked"
		}
	}
	ps.Periods++
	if cl.keyLog != nil {
		cl.keyLog(fmt.Sprintf("PID %#04x crypto period %d: %s, %s, from packet %d",
			p.pid, p.number, parity(p.odd), what, p.first))
	}
}

// liveSettled forgets a waiting period decided elsewhere: by liveSettle, or by the packet bound
// (holdPackets) without its key, which passes it as it came and is counted here.
func (cl *classifier) liveSettled(idx int32) {
	l := cl.live
	if p := &cl.periods[idx]; p.state == periodUnchecked && p.key == keys.NoKey {
		l.st.GaveUp++
		l.st.PassedNoKey += l.packets[idx]
		l.cfg.Source.GiveUp(p.pid, p.number)
	}
	delete(l.packets, idx)
}

// liveDrop removes from a resolved chunk the packets of the periods that gave up waiting, with
// LiveKeys.Drop: the packet units after them move down, and the jobs, the framing runs and
// the chunk's length follow. Only the packets that carry a payload of such a period go (those
// the period's jobs name); stream order is kept.
func (cl *classifier) liveDrop(c *chunk) {
	first := -1
	for i := range c.jobs {
		if p := c.jobs[i].period; p >= 0 && cl.periods[p].state == periodNoFit {
			first = i
			break
		}
	}
	if first < 0 {
		return
	}
	var runs []unitRun
	w, ji := 0, 0
	kept := c.jobs[:0]
	for ri, r := range c.runs {
		end := c.n
		if ri+1 < len(c.runs) {
			end = c.runs[ri+1].at
		}
		for u := r.at; u+r.size <= end; u += r.size {
			drop := false
			shift := int32(u - w)
			for ji < len(c.jobs) && int(c.jobs[ji].pkt) < u+r.size {
				j := c.jobs[ji]
				ji++
				if p := j.period; p >= 0 && cl.periods[p].state == periodNoFit {
					drop = true
					continue
				}
				j.pkt -= shift
				j.off -= shift
				j.end -= shift
				kept = append(kept, j)
			}
			if drop {
				cl.live.st.Dropped++
				continue
			}
			if k := len(runs); k == 0 || runs[k-1].size != r.size {
				runs = append(runs, unitRun{at: w, size: r.size})
			}
			copy(c.buf[w:w+r.size], c.buf[u:u+r.size])
			w += r.size
		}
	}
	c.jobs, c.runs, c.n = kept, runs, w
	c.ready = len(c.jobs)
}
