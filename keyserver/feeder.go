// Package keyserver connects a stream's ECMs to a key server: a Feeder takes the ECM sections
// the stream carries, sends each distinct one once to the server (through an Answerer: the
// cs378x client, for one), and sets the control words of each answer in a keys.Live source,
// which the descrambler asks at each crypto period. The protocols live in the packages below
// (cs378x, newcamd, dvbapi); this package holds what they share: the ECM, the errors a server answers,
// how a client connects again after a failure (Redial), and the counts a run reports (Stats).
// A Recorder takes the server's answers with their ECMs (Recording, for any Answerer), to
// append them to an ECM cache (CacheWriter); a Cache answers ECMs from one, at once, without a
// server.
package keyserver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"slices"
	"sync"
	"time"

	"github.com/tsdescramble/tsdescramble/internal/roundtrip"
	"github.com/tsdescramble/tsdescramble/keys"
)

// Errors an Answerer returns when the server answered without a key, or did not answer.
var (
	ErrNotFound = errors.New("the key server found no control word for the ECM")
	ErrNoCard   = errors.New("the key server has no card for the CA system")
	ErrTimeout  = errors.New("the key server did not answer the ECM in time")
	// ErrNotSent is wrapped by the errors of an ECM that never reached the server: it could
	// not be connected to, or waits to be tried again after a failed attempt.
	ErrNotSent = errors.New("the ECM was not sent")
)

// ECM is an ECM section from the stream and where it comes from.
type ECM struct {
	Section    []byte // table_id (0x80 or 0x81) first
	PID        uint16 // the ECM PID
	ServiceID  uint16
	CAID       uint16
	ProviderID uint32
}

// Odd reports the parity the ECM's table_id stands for: 0x81 odd, 0x80 even.
func (e *ECM) Odd() bool { return len(e.Section) > 0 && e.Section[0] == 0x81 }

// Answerer sends an ECM to a key server and returns the CW pair of its answer, even then odd;
// an all-zero CW means none for that parity. Its errors wrap ErrNotFound, ErrNoCard or
// ErrTimeout when they mean that.
type Answerer interface {
	Answer(ctx context.Context, ecm ECM) (even, odd []byte, err error)
}

// AtOnce is implemented by an Answerer that answers from what it holds, without a round trip
// to a server (an ECM cache), when AnswersAtOnce says so. A Feeder asks it as each ECM is
// offered, so that the ECM's CWs are in the key source before the stream's next packet is
// read, and a reader never waits for them.
type AtOnce interface {
	AnswersAtOnce() bool
}

// MaxQueue bounds the ECMs waiting to be sent: a server slower than the stream's ECMs loses
// the oldest, which are the least useful.
const MaxQueue = 64

// rememberECMs bounds the distinct ECMs remembered as sent, to send each once.
const rememberECMs = 256

// Feeder sends a stream's ECMs to a key server and puts the answers in a keys.Live source.
type Feeder struct {
	live   *keys.Live
	ans    Answerer
	atOnce bool // ans answers at once: Offer asks it
	seed   maphash.Seed

	mu      sync.Mutex
	queue   []ECM
	wake    chan struct{}
	sent    []uint64 // hashes of the ECMs sent or queued, oldest first
	busy    int      // ECMs being answered
	st      Stats
	rtts    roundtrip.Times
	lastErr error
	log     func(string)
}

// Stats counts what a key server client did: a Feeder (cs378x, newcamd, the stream's own
// ECMs) fills in every count but Refused; a DVBAPI client, whose server only ever answers with
// keys, ECMs, Sent, CWs, Refused and the round trips (dvbapi.Stats holds it beside its
// protocol's own counts). The client keeps them; a run's statistics write them as they are, under these JSON
// names (-stats: live_keys.key_server).
type Stats struct {
	// Sent = Answers + NotFound + NoCard + Timeouts + Errors: each ECM sent is in one of them
	// once its request has ended.
	Sent    int64 `json:"ecms_sent"`     // ECMs sent to the server
	NotSent int64 `json:"ecms_not_sent"` // ECMs that never reached it: it could not be connected to
	Answers int64 `json:"answers"`       // answers with a key: a CW of either parity that is not all zero
	// NotFound counts the answers without a key: the server found none, or its CWs are all
	// zero (NoKeys of them).
	NotFound int64 `json:"not_found"`
	NoCard   int64 `json:"no_card"`
	// Timeouts counts the ECMs that got no answer in time, Unanswered of them still waiting
	// when Run ended.
	Timeouts int64 `json:"timeouts"`
	Errors   int64 `json:"errors"`  // connection and protocol errors
	CWs      int64 `json:"cws"`     // CWs set in the key source (all-zero ones are not)
	Refused  int64 `json:"refused"` // CWs, IVs or descrambling modes not used (a mode or key size not supported, out of range)
	// RTTMedian and RTTMax are the median and the largest time from sending an ECM to its
	// answer (with or without a key), over the answers.
	RTTMedian time.Duration `json:"ecm_rtt_median_ns"`
	RTTMax    time.Duration `json:"ecm_rtt_max_ns"`

	// The details of the counts above, for the client's own tests and logs.
	ECMs       int64 `json:"-"` // ECM sections taken from the stream (a Feeder's include repeats)
	NoKeys     int64 `json:"-"` // of NotFound: answers whose CWs are all zero
	Unanswered int64 `json:"-"` // of Timeouts: in flight when Run ended, in no other count
	Dropped    int64 `json:"-"` // ECMs dropped from a Feeder's full queue
}

// NewFeeder returns a Feeder that answers ECMs through ans and sets their CWs in live, in key
// slot 0 (a DVBAPI server's key slots come with its own messages).
func NewFeeder(live *keys.Live, ans Answerer) *Feeder {
	f := &Feeder{live: live, ans: ans, seed: maphash.MakeSeed(), wake: make(chan struct{}, 1)}
	if a, ok := ans.(AtOnce); ok {
		f.atOnce = a.AnswersAtOnce()
	}
	return f
}

// SetLog makes the Feeder report, in one line each, the ECMs the server answered without a key
// or did not answer (never a key, nor the ECM's bytes). Call it before Run.
func (f *Feeder) SetLog(log func(string)) { f.log = log }

// Offer hands the Feeder an ECM section of the stream; it copies what it keeps and never
// blocks on a server: an Answerer that answers at once (AtOnce) is asked here, any other by
// Run. An ECM identical to one already sent (or waiting) is not sent again, unless it failed.
func (f *Feeder) Offer(e ECM) {
	h := maphash.Bytes(f.seed, e.Section)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.st.ECMs++
	if slices.Contains(f.sent, h) {
		return
	}
	if len(f.sent) >= rememberECMs {
		f.sent = f.sent[1:]
	}
	f.sent = append(f.sent, h)
	if len(f.queue) >= MaxQueue {
		f.queue = f.queue[1:]
		f.st.Dropped++
	}
	e.Section = bytes.Clone(e.Section)
	if f.atOnce {
		// Answered here, on the reader's goroutine: the ECM's keys are in the key source
		// before the stream's next packet is read, however fast it is read.
		f.busy++
		f.mu.Unlock()
		f.serve(context.Background(), e)
		f.mu.Lock()
		return
	}
	f.queue = append(f.queue, e)
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// Pending returns the number of ECMs waiting or being answered: a reader of a file, which runs
// ahead of real time, waits for them before giving up on a key.
func (f *Feeder) Pending() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.queue) + f.busy
}

// Run sends the ECMs offered, one at a time, until ctx is done. A Feeder whose Answerer
// answers at once (AtOnce) has answered each in Offer, and Run only waits for ctx.
func (f *Feeder) Run(ctx context.Context) {
	for {
		f.mu.Lock()
		if len(f.queue) == 0 {
			f.mu.Unlock()
			select {
			case <-f.wake:
				continue
			case <-ctx.Done():
				return
			}
		}
		e := f.queue[0]
		f.queue = f.queue[1:]
		f.busy++
		f.mu.Unlock()
		f.serve(ctx, e)
		if ctx.Err() != nil {
			return
		}
	}
}

// serve asks the Answerer for one ECM's CWs and sets them; the ECM counts as busy (f.busy)
// until they are set.
func (f *Feeder) serve(ctx context.Context, e ECM) {
	f.mu.Lock()
	f.st.Sent++
	f.mu.Unlock()
	start := time.Now()
	even, odd, err := f.ans.Answer(ctx, e)
	rtt := time.Since(start)

	// The keys are set before the ECM stops counting as pending: a reader that sees
	// Pending fall to 0 must find them (else it gives up on a period whose key came).
	cws, keyed := 0, false
	if err == nil {
		for i, cw := range [][]byte{even, odd} {
			if len(cw) == 0 || allZero(cw) {
				continue
			}
			keyed = true
			if f.live.Set(0, i == 1, cw) {
				cws++
			}
		}
	}

	f.mu.Lock()
	f.busy--
	f.st.CWs += int64(cws)
	switch {
	case err == nil && keyed:
		f.st.Answers++
		f.rtts.Add(rtt)
	case err == nil:
		// All-zero CWs are the server saying it has none: not an answer with keys.
		f.st.NoKeys++
		f.st.NotFound++
		f.rtts.Add(rtt)
	case errors.Is(err, ErrNotFound):
		f.st.NotFound++
		f.rtts.Add(rtt)
	case errors.Is(err, ErrNoCard):
		f.st.NoCard++
		f.rtts.Add(rtt)
	case ctx.Err() != nil:
		// No answer came in time for the run: a timeout, of its own kind.
		f.st.Unanswered++
		f.st.Timeouts++
	case errors.Is(err, ErrTimeout):
		f.st.Timeouts++
		f.forget(e)
	case errors.Is(err, ErrNotSent):
		f.st.Sent--
		f.st.NotSent++
		f.forget(e)
	default:
		f.st.Errors++
		f.forget(e)
	}
	if err != nil {
		f.lastErr = err
	}
	log := f.log
	f.mu.Unlock()
	if err != nil && log != nil && ctx.Err() == nil {
		log(fmt.Sprintf("ECM of service %d on PID %#04x (table %#02x, CA system %#04x): %v after %v",
			e.ServiceID, e.PID, e.Section[0], e.CAID, err, rtt.Round(time.Microsecond)))
	}
}

// forget lets an ECM whose request failed be sent again when the stream repeats it.
func (f *Feeder) forget(e ECM) {
	h := maphash.Bytes(f.seed, e.Section)
	if i := slices.Index(f.sent, h); i >= 0 {
		f.sent = slices.Delete(f.sent, i, i+1)
	}
}

// Stats returns the counts so far.
func (f *Feeder) Stats() Stats {
	f.mu.Lock()
	defer f.mu.Unlock()
	st := f.st
	st.RTTMedian, st.RTTMax = f.rtts.Summary()
	return st
}

// LastError returns the last error an ECM met, or nil.
func (f *Feeder) LastError() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lastErr
}

func allZero(b []byte) bool {
	for _, x := range b {
		if x != 0 {
			return false
		}
	}
	return true
}
