package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"
	"time"
	"unsafe"

	"github.com/tsdescramble/tsdescramble/keys/period"

	"github.com/tsdescramble/tsdescramble/keys"
	"github.com/tsdescramble/tsdescramble/psi"
	"github.com/tsdescramble/tsdescramble/scrambling"
	"github.com/tsdescramble/tsdescramble/ts"
)

// Mode is what a run does to the packets it selects.
type Mode int

const (
	// Descramble descrambles packets marked scrambled (TSC 10 or 11) and clears their TSC.
	Descramble Mode = iota
	// Scramble scrambles clear packets of the selected PIDs and sets their TSC.
	Scramble
	// Rescramble descrambles packets marked scrambled and scrambles them again with the
	// output system and keys, in the same pass.
	Rescramble
	// Passthrough changes no packet: the run reads, counts and writes the stream as it came,
	// with its statistics and live figures, to record a feed for later or see what it carries.
	// It needs no key.
	Passthrough
)

// Options configure a run.
type Options struct {
	// Mode says what the run does (default Descramble).
	Mode Mode
	// Keys decides which control word descrambles each scrambled packet; every PID follows
	// it through its own crypto periods (see the package doc). Required to descramble and
	// rescramble.
	Keys *keys.Schedule
	// System is the scrambling system of the input (default: csa2 with Lanes lanes).
	System scrambling.System
	// Out says how to scramble. Required to scramble and rescramble.
	Out *Output
	// Workers is the number of goroutines running the cipher (default: GOMAXPROCS).
	Workers int
	// Batch is the number of packets per unit of work handed to a worker (default DefaultBatch).
	// Workers and Batch are cut down where they would take more than MaxMemory (see Limits).
	Batch int
	// Lanes is the width of the bitsliced CSA2 engine, one of csa.Available(), or 0 for the
	// fastest on this CPU (see csa.NewEngine). It applies where System or Out.System is nil.
	Lanes int
	// Observer, when set, is kept up to date with the run's counts while it goes, once per
	// unit of work, for a caller that reports them before the run ends.
	Observer *Observer
	// Log, when set, receives one-line notes about the run (key synchronisation) as they happen.
	Log func(msg string)
	// Warn, when set, receives the notes of what went wrong (new keys refused, a PMT that goes
	// out without its scrambling_descriptor); Log when nil.
	Warn func(msg string)
	// KeyLog, when set, receives a line at each crypto period of the input: its number, its
	// parity, the position of its control word in the schedule and its first packet.
	KeyLog func(msg string)
	// PIDs, when not empty, limits the run to these PIDs; packets of other PIDs pass
	// through untouched.
	PIDs []uint16
	// Service, when not 0, limits the run to the PIDs of this service (program number
	// 1 to 65535), as the PAT and PMT of the stream give them; other packets pass through
	// untouched. (Program number 0 is not a service: the PAT uses it for the network PID.)
	// When scrambling with neither PIDs nor Service, every elementary stream of every service
	// is scrambled, and PSI and null packets stay clear.
	Service int
	// ScramblingMode, when not 0, is the scrambling_mode a Scramble run writes into the PMT
	// of every service it scrambles, as a DVB scrambling_descriptor (EN 300 468, 6.2.32;
	// psi.ScramblingCISSA1 and so on), so that descramblers can tell the system. For
	// psi.ScramblingCSA2 no descriptor is added, only one already there set to it. It is
	// ignored by the other modes. See signal.go for which PMTs can take it.
	ScramblingMode psi.ScramblingMode
	// Latency, when above 0, bounds the delay the run adds to a packet: a packet is written,
	// in a partial unit of work if need be, at most about that long after Run read it, and the
	// output is flushed then (w's Flush method, if it has one: a live.Writer sends a partial
	// datagram). Packets of a crypto period still undecided stay held until it is decided, unless
	// DecideOnTime is set.
	// The input is then read by a goroutine of its own, so that a read that blocks never holds
	// packets back; it may still be waiting in r's Read when Run returns. 0 keeps the batching
	// of files: a unit of work leaves when it holds Batch packets.
	Latency time.Duration
	// DecideOnTime, with Latency, decides the crypto periods still undecided when their oldest
	// packet is due with what is known, as they are 65536 packets after they start (see the
	// package doc), so that the latency bound holds for them too. The output then depends on
	// when the input arrived: a period whose first checkable unit start comes after the bound
	// takes the key the schedule expects rather than the one a trial would find. Without it, a
	// run with a latency bound writes the same bytes as one without (only the cut of the units
	// of work changes), and a period waits for its first checkable unit start, as in a file.
	// Set it for a live input, where time matters more than a key search.
	DecideOnTime bool
	// MaxPackets, when above 0, ends the run after that many packet units of the input, as if
	// the input ended there (a live input that never ends); the units a stage adds of its own
	// (ECM packets inserted by SimulCrypt) are not counted.
	MaxPackets int64
	// Rekey, when set, brings key schedules that replace Keys while the run goes on (a key
	// file edited during a live run). A new schedule applies between two units of work: the
	// crypto periods already begun are decided with the old one, and every PID then finds its
	// key in the new one at its next unit start, as at the start of a stream. Options.Log says
	// when one applies, or why it was refused.
	Rekey <-chan *keys.Schedule
	// LiveKeys, when set, takes the input's control words from a key server as they arrive,
	// in place of Keys (see livekeys.go).
	LiveKeys *LiveKeys
}

// Output says how a run scrambles: with which system and control words, and how long a crypto
// period lasts.
type Output struct {
	// System is the scrambling system (default: csa2 with Options.Lanes lanes).
	System scrambling.System
	// CWs are used in turn, one per crypto period, cyclically.
	CWs [][]byte
	// PeriodPackets is the length of a crypto period in scrambled packets; the parity
	// alternates at each period, starting even. 0 means a single (even) crypto period.
	PeriodPackets int
	// Feed, when set, gives the crypto periods and their control words as the run goes,
	// instead of CWs and PeriodPackets (see PeriodFeed).
	Feed *PeriodFeed
}

// DefaultBatch is the default number of packets per unit of work.
const DefaultBatch = 1024

// MaxBatch bounds Options.Batch so that memory stays bounded.
const MaxBatch = 1 << 16

// chunksPerWorker is how many units of work may be in flight per worker: enough for the reader
// to stay ahead and the writer to absorb workers finishing out of order.
const chunksPerWorker = 4

// MaxMemory bounds the memory of a run's units of work, whatever Options.Workers and
// Options.Batch ask for: the chunks in flight, those a crypto period still undecided holds back,
// and the workers' engines. See Limits.
const MaxMemory = 64 << 20

// packetMemory is what one packet of a unit of work costs: the largest packet unit, its job, and
// its payload's slice in the batcher of the worker that processes it (there are never more
// workers than chunks in flight, so each worker's batcher is counted once).
const packetMemory = 204 + int(unsafe.Sizeof(job{})) + int(unsafe.Sizeof([]byte(nil)))

// chunkMemory is what a chunk costs besides its packets: its own fields and the headers of
// its allocations. It counts when batches are small.
const chunkMemory = 256

// workerMemory is what a worker costs besides the chunk it works on: its cipher engine's state
// and its stack. (A csa2 worker of 256 lanes holds about 80 kB: measured as the growth of the
// resident memory of runs with many workers over tiny batches.)
const workerMemory = 96 << 10

// minInFlight is the fewest chunks in flight a run is given: one being read, one in a worker,
// one being written, and one to spare.
const minInFlight = 4

// Limits returns the workers, the batch and the number of chunks in flight that a run asked for
// workers and batch uses (values under 1 take the defaults), so that its units of work stay
// within MaxMemory. The workers come first, up to a quarter of it. The chunks in flight are
// chunksPerWorker per worker, plus, while a crypto period is undecided, those that hold back its
// packets (up to 65536 packets and two chunks, see the package doc). When they would not fit,
// there are fewer chunks in flight; when even minInFlight would not fit, the batch is halved
// until they do; and there are never more workers than chunks to work on. At the default batch,
// that leaves room for 4 chunks per worker up to 42 workers.
func Limits(workers, batch int) (w, b, inFlight int) {
	w, b = workers, batch
	if w <= 0 {
		w = runtime.GOMAXPROCS(0)
	}
	if b <= 0 {
		b = DefaultBatch
	}
	b = min(b, MaxBatch)
	w = min(w, MaxMemory/4/workerMemory)
	room := func(b int) int {
		return (MaxMemory-w*workerMemory)/(b*packetMemory+chunkMemory) - (period.HoldPackets/b + 2)
	}
	for b > 1 && room(b) < minInFlight {
		b /= 2
	}
	inFlight = max(min(w*chunksPerWorker, room(b)), minInFlight)
	return min(w, inFlight), b, inFlight
}

// job is one payload of a chunk that needs the cipher: bytes buf[off:end] of the packet at
// buf[pkt], in crypto period `period` of its PID (-1 when scrambling a clear packet). Once the
// period is decided, key is the input key's slot in the chunk's key table (or -1: left as it
// came, or clear by definition) and okey the output key (or -1), as the run's mode says.
type job struct {
	pkt, off, end int32
	key           int32
	okey          int32
	period        period.ID
	pid           uint16
	flags         uint8
	carriage      psi.Carriage // of the PID when the packet was read, for the unit-start check
	result        int8         // unit-start check after descrambling: 1 passed, -1 failed, 0 not checked
}

const (
	jobOdd   = 1 << iota // scrambled with the odd key
	jobCheck             // starts a PES packet or a section: check it after descrambling
	jobShort             // shorter than the input system changes: clear by definition
)

// chunk is a unit of work: packets back to back in their input framing, and the payloads
// among them that the cipher must process.
type chunk struct {
	seq   int64
	buf   []byte
	n     int
	jobs  []job
	ready int // jobs[:ready] belong to decided crypto periods
	// The input keys of the jobs: job.key indexes keys; cws holds their CW indexes, systems
	// the system each key is for. mixed says one is another system than the input system (a
	// key server's mode per key slot).
	keys    []scrambling.Key
	cws     []int
	systems []scrambling.System
	mixed   bool
	// okeys are the output keys of the jobs when a PeriodFeed gives them (job.okey indexes
	// okeys then), valid while oseq is seq+1; operiod is the fed period of the last one.
	okeys   []scrambling.Key
	oseq    int64
	operiod int64
	// runs says where each framing starts among the packet units of buf (one run unless the
	// input's framing changed inside the chunk), so that a write cut short can be counted in
	// whole units.
	runs []unitRun
	// due is when its first packet must leave, with Options.Latency (zero without).
	due time.Time
}

// unitRun is a stretch of a chunk's buffer, from byte at, holding units of size bytes.
type unitRun struct{ at, size int }

// whole returns how many bytes and packet units of the first n bytes of c.buf make whole units.
func (c *chunk) whole(n int) (size, units int) {
	for i, r := range c.runs {
		end := c.n
		if i+1 < len(c.runs) {
			end = c.runs[i+1].at
		}
		if n < end {
			k := (n - r.at) / r.size
			return r.at + k*r.size, units + k
		}
		units += (end - r.at) / r.size
	}
	return c.n, units
}

// slot returns the index in c.keys of the expanded key of CW k, adding it the first time.
func (c *chunk) slot(cs *ciphers, k int) int32 {
	for i, cw := range c.cws {
		if cw == k {
			return int32(i)
		}
	}
	sys := cs.system(k)
	c.cws = append(c.cws, k)
	c.keys = append(c.keys, cs.inKey(k))
	c.systems = append(c.systems, sys)
	c.mixed = c.mixed || sys != cs.in
	return int32(len(c.keys) - 1)
}

// Run processes the transport stream of src and writes every packet, in input order and
// framing, to w. src stays the caller's, to close once Run returns. To descramble, packets scrambled with TSC 10 (even) or 11 (odd) are
// descrambled with the key that opts.Keys assigns and their TSC bits cleared; to scramble,
// clear packets of the selected PIDs are scrambled with opts.Out and marked; to rescramble,
// both. Everything else passes through byte-exact. It returns the run's statistics, and an
// error if the options are wrong, if reading or writing failed, if the input held no transport
// stream (ErrNoSync), or if ctx was cancelled; every packet read before the error that could be
// processed has been written.
func Run(ctx context.Context, src *ts.Source, w io.Writer, opts Options) (Stats, error) {
	start := time.Now()
	// Workers and Batch are cut down where they would take more than MaxMemory.
	workers, batch, nchunks := Limits(opts.Workers, opts.Batch)
	cs, err := newCiphers(&opts)
	if err != nil {
		return Stats{}, err
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	// Chunks in flight, plus those a crypto period still undecided may hold back (see
	// period.HoldPackets): the pool grows to that only while chunks are held.
	maxChunks := nchunks + period.HoldPackets/batch + 2
	free := make(chan *chunk, maxChunks)
	for range nchunks {
		free <- newChunk(batch)
	}
	allocated := nchunks
	work := make(chan *chunk, maxChunks)
	done := make(chan *chunk, maxChunks)

	// The run's counts end up in an Observer, whether or not the caller watches them as they
	// go: the Stats Run returns are its last snapshot.
	observed := opts.Observer != nil
	obs := opts.Observer
	if !observed {
		obs = new(Observer)
	}
	obs.begin(start)
	var st Stats          // the reading goroutine's counters
	var wst Stats         // the writer's: bytes and packets out, unit-start checks
	pids := newPIDTable() // the classifier's counters
	defer releasePIDTable(pids)
	var checks [8192]*pesChecks // the writer's unit-start checks
	var checked []uint16        // the PIDs checks has
	var readErr error
	var wg sync.WaitGroup

	// Reader and classifier: sequential, because which key a packet needs depends on the order
	// of each PID's parity changes. A chunk leaves for the workers once the crypto periods of
	// all its packets are decided; the chunks after it wait behind it.
	wg.Add(1)
	cl := newClassifier(ctx, &opts, cs, &st, pids)
	go func() {
		defer wg.Done()
		defer close(work)
		var held []*chunk
		// work has room for every chunk there is, so handing one on never blocks.
		dispatch := func() {
			for len(held) > 0 && cl.decided(held[0]) {
				c := held[0]
				cl.resolve(c)
				work <- c
				held[0] = nil
				held = held[1:]
			}
			if len(held) == 0 {
				cl.compact()
			}
		}
		// Stopping early: the periods still open are decided with what is known, so that
		// every packet read goes out.
		stop := func() {
			cl.finish()
			dispatch()
		}
		// With a latency bound the source reads ahead, and the deadline of each wait for
		// input is when the oldest packet held is due (latency.go).
		timed := opts.Latency > 0
		src.SetContext(ctx)
		if timed {
			src.SetLatency(opts.Latency)
		}
		stalled := false // the framer said ts.ErrPending with no packet: wait for more input
		var seq int64
		for {
			if opts.Rekey != nil {
				select {
				case s := <-opts.Rekey:
					// The periods begun are decided with the keys they began with.
					cl.finish()
					dispatch()
					err := errors.New("units of work still held") // cannot happen: all are decided
					if len(held) == 0 {
						err = cl.rekey(s)
					}
					switch {
					case opts.Log == nil && opts.Warn == nil:
					case err != nil:
						opts.warn(fmt.Sprintf("new keys refused, the old ones kept: %v", err))
					default:
						opts.note(fmt.Sprintf("new keys from packet %d on: %d control words", cl.packet+1, s.NumCWs()))
					}
				default:
				}
			}
			var c *chunk
			if len(held) > 0 && allocated < maxChunks {
				// Reading on is what decides the held chunks' periods: never wait for a
				// free chunk then.
				select {
				case c = <-free:
				default:
					c = newChunk(batch)
					allocated++
				}
			} else {
				// With keys from a key server, the chunks held may all wait for a key (on a
				// live input, units of work cut by the latency bound are small, and the pool
				// runs out long before the packet bound): the key's arrival, or the end of
				// its wait, decides them, so keep asking while no chunk is free.
				var tick <-chan time.Time
				var arrived <-chan struct{}
				if arrived = cl.keysArrived(); arrived != nil && len(held) > 0 {
					tick = time.After(livePollEvery)
				} else {
					arrived = nil
				}
				select {
				case c = <-free:
				case <-tick:
				case <-arrived:
				case <-ctx.Done():
					stop()
					return
				}
				if c == nil {
					dispatch()
					continue
				}
			}
			c.seq, c.n, c.jobs, c.ready = seq, 0, c.jobs[:0], 0
			c.keys, c.cws, c.systems, c.mixed = c.keys[:0], c.cws[:0], c.systems[:0], false
			c.runs = c.runs[:0]
			c.due = time.Time{}
			seq++
			var err error
			for n := 0; n < batch; n++ {
				if opts.MaxPackets > 0 && src.Packets()-src.Added() >= opts.MaxPackets {
					err = io.EOF
					break
				}
				if timed {
					src.SetDeadline(due(held, c, src, opts.Latency, stalled, opts.DecideOnTime))
				}
				var unit []byte
				unit, err = src.Next()
				if err != nil {
					stalled = err == ts.ErrPending && n == 0
					break
				}
				stalled = false
				if timed && n == 0 {
					c.due = src.ArrivedAt().Add(opts.Latency)
				}
				if k := len(c.runs); k == 0 || c.runs[k-1].size != len(unit) {
					c.runs = append(c.runs, unitRun{at: c.n, size: len(unit)})
				}
				c.n += copy(c.buf[c.n:], unit)
				cl.classify(c, c.n-len(unit), src.Framing())
			}
			st.BytesIn = src.BytesRead()
			if opts.MaxPackets > 0 && src.Packets()-src.Added() >= opts.MaxPackets {
				// The bytes read ahead of the last packet are not the run's.
				st.BytesIn -= int64(src.Buffered())
			}
			st.Packets = src.Packets() - src.Added() // a stage's own units are not the input's
			st.Skipped, st.Truncated = src.Skipped(), src.Truncated()
			st.Framing = src.Framing()
			if observed {
				cl.syncCounts()
				obs.fromReader(&st, pids, cl.seen, cl.tracker, cl.tr)
			}
			if c.n > 0 {
				held = append(held, c)
			} else {
				seq--
				free <- c
			}
			if err == ts.ErrPending {
				// Packets are due: the unit of work was cut, and the crypto periods of those
				// due are decided now.
				err = nil
				if timed && opts.DecideOnTime {
					cl.expireDue(held, src.Now())
				}
			}
			if timed && err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
				err = io.EOF // stopped: the source handed on every block it had read
			}
			if err != nil || ctx.Err() != nil {
				stop()
				if err == nil {
					return
				}
			} else {
				dispatch()
			}
			if err != nil {
				if err != io.EOF {
					readErr = err
				}
				return
			}
		}
	}()

	// Cipher workers: nearly all of the cost, on every core.
	var wwg sync.WaitGroup
	for range workers {
		wwg.Add(1)
		go func() {
			defer wwg.Done()
			wk := cs.newWorker()
			defer wk.done()
			for c := range work {
				wk.process(c)
				done <- c
			}
		}()
	}
	go func() { wwg.Wait(); close(done) }()

	// Ordered writer: chunks come back in any order and leave in sequence. With a latency bound,
	// the output is flushed whenever the writer has caught up, so that nothing it has taken
	// waits for the next unit of work.
	pending := make([]*chunk, maxChunks)
	var next int64
	var writeErr error
	flusher, _ := w.(interface{ Flush() error })
	if opts.Latency <= 0 {
		flusher = nil
	}
	for c := range done {
		pending[c.seq%int64(maxChunks)] = c
		for {
			c := pending[next%int64(maxChunks)]
			if c == nil || c.seq != next {
				break
			}
			pending[next%int64(maxChunks)] = nil
			next++
			tallyChecks(c, &wst, &checks, &checked)
			if writeErr == nil {
				var m int
				m, writeErr = w.Write(c.buf[:c.n])
				// Only whole units count: a write cut short (a full disk) may end inside one.
				size, units := c.whole(m)
				wst.BytesOut += int64(size)
				wst.PacketsOut += int64(units)
				if writeErr != nil {
					cancel() // stop reading; the workers drain what is in flight
				}
			}
			if observed {
				var arrived time.Time
				if !c.due.IsZero() {
					arrived = c.due.Add(-opts.Latency)
				}
				obs.fromWriter(&wst, &checks, checked, arrived)
			}
			free <- c
		}
		if flusher != nil && writeErr == nil {
			if c := pending[next%int64(maxChunks)]; c == nil || c.seq != next {
				if writeErr = flusher.Flush(); writeErr != nil {
					cancel()
				}
			}
		}
	}
	wg.Wait()
	// Every chunk is back in free: the reader, the workers and the writer are done with them.
	recycleChunks(free)
	elapsed := time.Since(start)
	var live *LiveKeyStats
	if cl.tr != nil {
		live = cl.liveKeyStats()
	}
	// The classifier is done (stopping decided the periods still open: their packets count
	// too), and so is the writer: their last counts make the run's.
	cl.syncCounts()
	obs.fromReader(&st, pids, cl.seen, cl.tracker, cl.tr)
	obs.fromWriter(&wst, &checks, checked, time.Time{})
	st = obs.finish(elapsed, st.Samples, live)
	cl.release() // the reader is done with it (wg.Wait)
	switch {
	case writeErr != nil:
		return st, writeErr
	case readErr != nil:
		return st, readErr
	case ctx.Err() != nil:
		return st, ctx.Err()
	}
	return st, nil
}

// checkUnitStarts checks every descrambled payload that starts a PES packet or a section.
func checkUnitStarts(c *chunk) {
	for i := range c.jobs {
		j := &c.jobs[i]
		if j.flags&jobCheck == 0 {
			continue
		}
		payload := c.buf[j.off:j.end]
		j.result = int8(period.CheckUnitStart(payload, len(payload), j.carriage))
	}
}

// newChunk returns an empty chunk for units of work of batch packets: one a run that ended left
// (recycleChunks), or a new one.
func newChunk(batch int) *chunk {
	if c, _ := spareChunks.Get().(*chunk); c != nil && cap(c.buf) >= batch*204 && cap(c.jobs) >= batch {
		c.buf = c.buf[:batch*204]
		return c
	}
	return &chunk{buf: make([]byte, batch*204), jobs: make([]job, 0, batch)}
}

// spareChunks are the chunks of runs that ended, for the runs that follow. A run's chunks (two
// megabytes at the default batch on two cores) would otherwise be allocated, zeroed and
// faulted in anew by every run, which costs a run over a small file as much as its work does
// (a batch of many small recordings); the pool lets the garbage collector take them back when
// no run follows.
var spareChunks sync.Pool

// recycleChunks hands the chunks of a run that ended to spareChunks, without what the run put
// in them but their buffers: its keys (secrets are not kept past their run) and its numbering.
func recycleChunks(free chan *chunk) {
	for {
		select {
		case c := <-free:
			clear(c.keys[:cap(c.keys)])
			clear(c.okeys[:cap(c.okeys)])
			clear(c.systems[:cap(c.systems)])
			spareChunks.Put(&chunk{buf: c.buf, jobs: c.jobs[:0], cws: c.cws[:0], systems: c.systems[:0], runs: c.runs[:0]})
		default:
			return
		}
	}
}

// newPIDTable returns a table of per-PID counters with none in it: one a run that ended left
// (its counters were copied into its Stats), or a new one.
func newPIDTable() *[8192]*PIDStats {
	if t, _ := sparePIDTables.Get().(*[8192]*PIDStats); t != nil {
		return t
	}
	return new([8192]*PIDStats)
}

// releasePIDTable hands the table of a run that ended to the runs that follow, emptied.
func releasePIDTable(t *[8192]*PIDStats) {
	clear(t[:])
	sparePIDTables.Put(t)
}

// sparePIDTables are the per-PID tables of runs that ended, for the runs that follow: 64 KiB
// each, which a run over a small file would otherwise allocate and clear anew (a batch of many
// recordings).
var sparePIDTables sync.Pool

// pesChecks counts PES-start checks of one PID by parity.
type pesChecks struct {
	good, bad [2]int64
	// undescribed counts the starts of a PID no PMT had described that were neither a PES
	// header nor a whole section: bad if none ever describes it, nothing otherwise.
	undescribed [2]int64
}

// tallyChecks adds up the checks of a chunk, in stream order; checked lists the PIDs checks has.
func tallyChecks(c *chunk, st *Stats, checks *[8192]*pesChecks, checked *[]uint16) {
	for i := range c.jobs {
		j := &c.jobs[i]
		if j.result == 0 {
			continue
		}
		ck := checks[j.pid]
		if ck == nil {
			ck = new(pesChecks)
			checks[j.pid] = ck
			*checked = append(*checked, j.pid)
		}
		parity := int(j.flags & jobOdd)
		switch period.Check(j.result) {
		case period.CheckGood:
			st.PESGood++
			ck.good[parity]++
		case period.CheckUndescribed:
			ck.undescribed[parity]++ // judged as the tables say when counted (Observer.summary)
		default:
			st.PESBad++
			ck.bad[parity]++
		}
	}
}

// note writes a one-line note to Log, if set.
func (o *Options) note(msg string) {
	if o.Log != nil {
		o.Log(msg)
	}
}

// warn writes a note of what went wrong to Warn, or Log when Warn is not set.
func (o *Options) warn(msg string) {
	if w := o.warnFunc(); w != nil {
		w(msg)
	}
}

// warnFunc returns where the notes of what went wrong go: Warn, else Log, else nil.
func (o *Options) warnFunc() func(string) {
	if o.Warn != nil {
		return o.Warn
	}
	return o.Log
}
