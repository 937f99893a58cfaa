package pipeline

import (
	"slices"
	"time"

	"github.com/tsdescramble/tsdescramble/keys"
	"github.com/tsdescramble/tsdescramble/keys/period"
	"github.com/tsdescramble/tsdescramble/keyserver"
	"github.com/tsdescramble/tsdescramble/psi"
	"github.com/tsdescramble/tsdescramble/ts"
)

// Keys that arrive while the stream runs.
//
// With Options.LiveKeys, each crypto period takes its control word from the key slots of a
// keys.Source (a key server's answers, a CW log that grows): package keys/period decides
// which, and how long a period waits for it. This file feeds the key server: the sections of the PIDs it wants
// (ECMs, EMMs) are gathered from the stream in order and handed to LiveKeys.Sections, with the
// services of the PAT and PMTs as they change; and, with LiveKeys.Drop, it takes out of the
// output the packets of the periods whose key did not come.

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
	// Source is the key slots the CWs arrive in (a *keys.Live, typically); package
	// keys/period decides which of them each crypto period takes. A keys.SystemSource's CW
	// for a system of its own is checked and descrambled with it, not Options.System.
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
	// AtOnce says that Sections answers each ECM as it is handed over (an ECM cache): with
	// FileInput, no period waits for its key in time, and the output does not depend on the
	// machine's speed (keys/period's Live.AtOnce).
	AtOnce bool
	// Log, when set, receives a line when a period gives up waiting.
	Log func(string)
	// ShowKeys puts each period's CW in the lines of Options.KeyLog (keys are secrets).
	ShowKeys bool
	// Drop drops the packets of a period whose key did not come in time, instead of passing
	// them as they came (every other packet keeps its place and bytes).
	Drop bool
	// Origin names the keys' source in the log's lines (default "the key server").
	Origin string
}

// LiveKeyStats counts what waiting for keys did.
type LiveKeyStats struct {
	period.Waits

	// Server is what the key server did, when the caller that runs its client says
	// (SetServer).
	Server *KeyServer `json:"key_server,omitempty"`
	// ECMCache is what an ECM cache did, when the caller that keeps it says: the answers it
	// gave (without a key server) or those it recorded (with one).
	ECMCache *keys.ECMCacheStats `json:"ecm_cache,omitempty"`
}

// KeyServer is a key server's part in a run: the counts its client keeps, the protocol it
// spoke, and the crypto periods that took its CWs.
type KeyServer struct {
	Protocol string `json:"protocol"`
	keyserver.Stats
	// Applied counts the crypto periods that got a CW from the key server, per PID and
	// parity, in PID order, even before odd.
	Applied []AppliedCWs `json:"applied"`
}

// AppliedCWs counts the periods of one PID and parity that got a CW from the key server.
type AppliedCWs struct {
	PID     uint16 `json:"pid"`
	Odd     bool   `json:"odd"`
	Periods int64  `json:"periods"`
}

// SetServer adds the counts of the key server's client, once it has stopped, to those of the
// run's waits; protocol names it (cs378x, dvbapi).
func (ls *LiveKeyStats) SetServer(protocol string, st keyserver.Stats) {
	s := &KeyServer{Protocol: protocol, Stats: st}
	for k, n := range ls.Applied {
		s.Applied = append(s.Applied, AppliedCWs{PID: k.PID, Odd: k.Odd, Periods: n})
	}
	slices.SortFunc(s.Applied, func(a, b AppliedCWs) int {
		if a.PID != b.PID {
			return int(a.PID) - int(b.PID)
		}
		switch {
		case a.Odd == b.Odd:
			return 0
		case a.Odd:
			return 1
		}
		return -1
	})
	ls.Server = s
}

// livePollEvery is how often the reader asks the key source again while it waits for a free
// chunk, all of them held for a key (Arrived wakes it sooner).
const livePollEvery = 10 * time.Millisecond

// sectionFeed gathers the sections a key server wants from the stream.
type sectionFeed struct {
	sink      SectionSink
	fileInput bool
	wait      time.Duration
	waited    time.Duration // time the reader waited for the sink's filters
	wanted    [8192]bool
	gen       uint64
	tblGen    uint64
	reader    *psi.SectionReader
}

func newSectionFeed(lk *LiveKeys) *sectionFeed {
	if lk.Sections == nil {
		return nil
	}
	f := &sectionFeed{sink: lk.Sections, fileInput: lk.FileInput, wait: lk.Wait, reader: psi.NewSectionReader()}
	if f.wait <= 0 {
		f.wait = 2 * time.Second
	}
	f.refreshWanted()
	return f
}

// liveConfig is the tracker's side of LiveKeys.
func liveConfig(lk *LiveKeys) *period.Live {
	l := &period.Live{Source: lk.Source, Wait: lk.Wait, FileInput: lk.FileInput, AtOnce: lk.AtOnce, Log: lk.Log,
		ShowKeys: lk.ShowKeys, Drop: lk.Drop, Origin: lk.Origin}
	if lk.Sections != nil {
		l.Busy = lk.Sections.Busy
	}
	return l
}

// refreshWanted reads the sink's wanted PIDs when they changed.
func (f *sectionFeed) refreshWanted() {
	pids, g := f.sink.WantedPIDs()
	if g == f.gen && g != 0 {
		return
	}
	f.gen = g
	clear(f.wanted[:])
	for _, pid := range pids {
		f.wanted[pid&0x1FFF] = true
	}
}

// packet looks at every packet for the sink: the services when the tables change, the
// sections of the wanted PIDs. Clear packets only: ECMs and EMMs are never scrambled.
func (cl *classifier) feedSections(p []byte, pid uint16) {
	f := cl.sections
	if g := cl.tracker.Generation(); g != f.tblGen {
		f.tblGen = g
		f.sink.Tables(cl.tracker.Services())
		if f.fileInput {
			// A file is read faster than a key server sets its filters: wait for them, so
			// that the ECMs that follow the PMT are not read past. Only Busy says when they
			// are set: the sink's generation also changes for other reasons (a client that
			// connects clears its filters), so a change of it ends nothing.
			begun := time.Now()
			for start := begun; f.sink.Busy() && cl.ctx.Err() == nil && time.Since(begun) < f.wait; {
				time.Sleep(time.Millisecond)
				f.waited += time.Since(start)
				start = time.Now()
			}
		}
		f.refreshWanted()
	}
	if !f.wanted[pid] || ts.TSC(p) != ts.Clear {
		return
	}
	f.reader.Feed(p, func(spid uint16, section []byte) {
		f.sink.Section(spid, section)
	})
}

// liveKeyStats returns the run's LiveKeyStats: the tracker's waits, with the reader's.
func (cl *classifier) liveKeyStats() *LiveKeyStats {
	w := cl.tr.Waits()
	if w == nil {
		return nil
	}
	ls := &LiveKeyStats{Waits: *w}
	ls.Dropped += cl.dropped
	if cl.sections != nil {
		ls.ReaderWaits += cl.sections.waited
	}
	return ls
}

// noFit reports whether decided period id passes as it came.
func (cl *classifier) noFit(id period.ID) bool {
	s, _ := cl.tr.Decision(id)
	return s == period.NoFit
}

// liveDrop removes from a resolved chunk the packets of the periods that gave up waiting, with
// LiveKeys.Drop: the packet units after them move down, and the jobs, the framing runs and
// the chunk's length follow. Only the packets that carry a payload of such a period go (those
// the period's jobs name); stream order is kept.
func (cl *classifier) liveDrop(c *chunk) {
	first := -1
	for i := range c.jobs {
		if p := c.jobs[i].period; p >= 0 && cl.noFit(p) {
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
				if p := j.period; p >= 0 && cl.noFit(p) {
					drop = true
					continue
				}
				j.pkt -= shift
				j.off -= shift
				j.end -= shift
				kept = append(kept, j)
			}
			if drop {
				cl.dropped++
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
