package ts

import (
	"context"
	"io"
	"sync"
	"sync/atomic"
	"time"
)

// Source is the one reader of a stream's packets: it owns the framer, the read-ahead of an input
// that must not hold its reader in a blocked read (a live input, a pipe), when each packet
// arrived, a look-ahead that a run takes before it decides how to read the stream (Peek), the
// stage that works on the packets before the reader sees them (SetStage), and the end of the
// input as the reader sees it (End). Files, pipes and network inputs plug in below it as an
// io.Reader of bytes; whoever reads the packets reads them from here, once.
//
//	io.Reader ──► [read-ahead] ──► framer ──► [look-ahead replay] ──► [stage] ──► Next
//
// Next, Peek, SetDeadline and the counters belong to one goroutine, the reader of the stream;
// End may come from any; Close comes once the reader is done.
type Source struct {
	in     endable    // the input, with its end as End makes it
	ra     *ReadAhead // reads in a goroutine of its own once a deadline is asked for; nil before
	raStop context.CancelFunc
	fr     *Framer
	ctx    context.Context // ends a wait for the read-ahead (SetContext)

	// With a read-ahead: the bytes handed to the framer so far, and when each block still in
	// the framer's buffer arrived (arrivals[head:], in order). latency, when set, bounds how
	// long the framer may wait for more bytes after a block came (SetLatency).
	read     int64
	arrivals []arrival
	head     int
	latency  time.Duration

	// The look-ahead (Peek): units the framer gave that Next has not returned yet, and when
	// they arrived, in runs of units that came together.
	peeked  Units
	peekAt  []arrivalRun
	peeking bool // a Peek with an idle bound is under way: a read waits for one block at most

	stage    Stage
	staged   Units     // what the stage handed on and Next has not returned yet
	stagedAt time.Time // when the oldest unit the stage was given since it last handed on arrived
	stageErr error     // what ended the stage's stream: its error, or the input's end or error
	stageEnd bool      // the stage's End was called

	onFirst func() // called once, when the first bytes have come (SetOnFirst)

	framing Framing
	at      time.Time // when the last unit Next returned arrived (zero: not known), unless atOff
	atOff   int64     // the input offset of the last unit, when its arrival is to be looked up; -1: at
	packets int64
	added   int64 // of packets, the units a Stage added of its own (Units.AppendAdded)
}

// arrival is where a block handed to the framer ends in the input, and when it arrived.
type arrival struct {
	end int64
	at  time.Time
}

// arrivalRun is a run of n units that arrived at once.
type arrivalRun struct {
	n  int
	at time.Time
}

const (
	// sourceBlock is the size of one read of the read-ahead. A live.Reader returns a batch of
	// datagrams per read (16 of 1316 bytes is 21 kB); a pipe returns what it holds (64 kB on
	// Linux).
	sourceBlock = 64 << 10
	// sourceBlocks is how many blocks may wait for the reader: with the framer's own buffer,
	// the read-ahead stays under 1 MiB.
	sourceBlocks = 8
	// maxArrivals bounds the arrival times kept: far more blocks than the framer's buffer
	// holds (256 kB: a few hundred datagrams).
	maxArrivals = 4096
)

// SourceOptions says what a Source needs of its input besides its bytes.
type SourceOptions struct {
	// Interrupt, when not nil, makes a read that waits on the input return at once: End calls
	// it, so that a source ended while its input is idle (a pipe, a socket) does not wait for
	// more. The error of the read it cut short is taken as the input's end.
	Interrupt func()
}

// NewSource returns a Source of the packets of r.
func NewSource(r io.Reader, opts ...SourceOptions) *Source {
	s := &Source{ctx: context.Background(), atOff: -1}
	s.in.r = r
	if len(opts) > 0 {
		s.in.interrupt = opts[0].Interrupt
	}
	s.fr = NewFramer(sourceReader{s})
	return s
}

// sourceReader is what the framer reads: the read-ahead once there is one, else the input.
type sourceReader struct{ s *Source }

func (r sourceReader) Read(p []byte) (int, error) {
	if r.s.ra == nil {
		return r.s.in.Read(p)
	}
	n, err := r.s.ra.Read(p)
	if n > 0 && r.s.peeking {
		// A look-ahead waits for one block at a time: the framer then hands over the whole
		// packets it has rather than wait for more bytes to look at after them (see Peek).
		r.s.ra.SetDeadline(alreadyRead)
	}
	return n, err
}

// alreadyRead is a deadline long past: a read with it takes only a block already read.
var alreadyRead = time.Unix(0, 1)

// endable is the input as the Source reads it: after End, reads return io.EOF.
type endable struct {
	r         io.Reader
	interrupt func()
	ended     atomic.Bool
	once      sync.Once
}

func (e *endable) Read(p []byte) (int, error) {
	if e.ended.Load() {
		return 0, io.EOF
	}
	n, err := e.r.Read(p)
	if err != nil && e.ended.Load() {
		err = io.EOF // the read End cut short
	}
	return n, err
}

// ReadBlock hands the input's own buffer over when the input can (BlockReader), so that the
// read-ahead over a live input copies nothing; otherwise it reads into buf.
func (e *endable) ReadBlock(buf []byte) ([]byte, error) {
	br, ok := e.r.(BlockReader)
	if !ok {
		n, err := e.Read(buf[:cap(buf)])
		return buf[:n], err
	}
	if e.ended.Load() {
		return buf[:0], io.EOF
	}
	out, err := br.ReadBlock(buf)
	if err != nil && e.ended.Load() {
		err = io.EOF // the read End cut short
	}
	return out, err
}

// End ends the input as its end would: after a time limit, or when a run on a never-ending
// input must stop. What was read before goes on; reads after it return io.EOF, and a read
// waiting on an idle input is woken (SourceOptions.Interrupt). Safe for any goroutine.
func (s *Source) End() {
	s.in.once.Do(func() {
		s.in.ended.Store(true)
		if s.in.interrupt != nil {
			s.in.interrupt()
		}
	})
}

// Close stops the read-ahead and hands the framer's buffer on (Framer.Release): neither the
// source nor a unit it returned may be used afterwards.
func (s *Source) Close() {
	if s.raStop != nil {
		s.raStop()
	}
	// A read-ahead goroutine may still be in a read of the input, but into a block of its
	// own: the framer's buffer is the reader's alone.
	s.fr.Release()
}

// SetContext makes a wait of Next for the read-ahead end when ctx ends, with ctx's error: a run
// that stops does not wait on its input.
func (s *Source) SetContext(ctx context.Context) {
	s.ctx = ctx
	if s.ra != nil {
		s.ra.SetContext(ctx)
	}
}

// SetStage has st work on every unit the framer yields from now on, before Next returns it.
func (s *Source) SetStage(st Stage) { s.stage = st }

// SetOnFirst has f called once, by Next, when the first bytes of the input have come.
func (s *Source) SetOnFirst(f func()) { s.onFirst = f }

// SetLatency starts the read-ahead and bounds how long the framer waits for more bytes after a
// block came: the deadline of the next wait is set, when none is, to the block's arrival plus
// d, so that the packets of a block are not held past their bound for bytes yet to come.
func (s *Source) SetLatency(d time.Duration) {
	s.latency = d
	s.startReadAhead()
}

// SetDeadline sets when Next stops waiting for more input and returns ErrPending, handing out
// first the whole packets it holds (see Framer.Next). The zero time waits without limit; a
// time past takes only what was read already. The first call starts the read-ahead: from then
// on the input is read by a goroutine of its own.
func (s *Source) SetDeadline(t time.Time) {
	s.startReadAhead()
	s.ra.SetDeadline(t)
}

// Deadline returns the deadline SetDeadline set (zero without a read-ahead).
func (s *Source) Deadline() time.Time {
	if s.ra == nil {
		return time.Time{}
	}
	return s.ra.Deadline()
}

// Now returns when Next last looked at the clock for the read-ahead: when it took a block, or
// found none by the deadline (the zero time before then, and without a read-ahead).
func (s *Source) Now() time.Time {
	if s.ra == nil {
		return time.Time{}
	}
	return s.ra.Now()
}

func (s *Source) startReadAhead() {
	if s.ra != nil {
		return
	}
	ctx, stop := context.WithCancel(context.Background())
	s.raStop = stop
	s.ra = NewReadAhead(ctx, &s.in, sourceBlock, sourceBlocks, s.handedOn)
	s.ra.SetContext(s.ctx)
}

// handedOn notes a block the framer is given.
func (s *Source) handedOn(n int, at time.Time) {
	s.read += int64(n)
	s.arrivals = append(s.arrivals, arrival{end: s.read, at: at})
	if len(s.arrivals)-s.head > maxArrivals {
		// Bytes the framer holds that long are garbage it is skipping: forget when the
		// oldest came, so that the list stays bounded.
		s.head = len(s.arrivals) - maxArrivals
	}
	s.compact()
	if s.latency > 0 && s.ra.Deadline().IsZero() {
		s.ra.SetDeadline(at.Add(s.latency))
	}
}

// arrivedAt returns when the input's byte at offset off arrived (off counts from 0; it must not
// come before an offset asked for earlier); the zero time without a read-ahead.
func (s *Source) arrivedAt(off int64) time.Time {
	if s.ra == nil {
		return time.Time{}
	}
	for s.head < len(s.arrivals)-1 && s.arrivals[s.head].end <= off {
		s.head++
	}
	s.compact()
	if s.head < len(s.arrivals) {
		return s.arrivals[s.head].at
	}
	return s.ra.Now()
}

// compact drops the arrivals forgotten, when they are most of the list.
func (s *Source) compact() {
	if s.head > 64 && s.head*2 > len(s.arrivals) {
		s.arrivals = s.arrivals[:copy(s.arrivals, s.arrivals[s.head:])]
		s.head = 0
	}
}

// Next returns the next packet unit (prefix and trailer included), valid until the next call;
// ErrPending when the deadline passed with no whole packet at hand; io.EOF at the end of the
// input; ErrNoSync when the input holds no transport stream; or the input's read error.
func (s *Source) Next() ([]byte, error) {
	if s.stage == nil && s.onFirst == nil && s.ra == nil && s.peeked.Len() == 0 {
		// A file, once its first bytes are told of: the framer's unit as it is.
		unit, err := s.fr.Next()
		if err != nil {
			return nil, err
		}
		s.framing = s.fr.framing
		s.packets++
		return unit, nil
	}
	var unit []byte
	var err error
	if s.stage != nil {
		unit, err = s.nextStaged()
	} else {
		unit, err = s.nextFramed()
	}
	if s.onFirst != nil && s.fr.BytesRead() > 0 {
		f := s.onFirst
		s.onFirst = nil
		f()
	}
	if err != nil {
		return nil, err
	}
	s.packets++
	return unit, nil
}

// nextFramed returns the next unit of the look-ahead, or else of the framer, and notes its
// framing and arrival.
func (s *Source) nextFramed() ([]byte, error) {
	if s.peeked.Len() > 0 {
		unit := s.peeked.take()
		s.framing, _ = FramingOf(len(unit))
		r := &s.peekAt[0]
		s.at, s.atOff = r.at, -1
		if r.n--; r.n == 0 {
			s.peekAt = s.peekAt[1:]
		}
		if s.peeked.Len() == 0 {
			// The look-ahead is replayed: let its memory go. unit stays valid until the
			// next call, as the buffer is not reused.
			s.peeked, s.peekAt = Units{}, nil
		}
		return unit, nil
	}
	unit, err := s.fr.Next()
	if err != nil {
		return nil, err
	}
	s.framing = s.fr.Framing()
	if s.ra != nil {
		// Looked up when asked (ArrivedAt): a run asks for the first unit of each unit of
		// work only.
		s.atOff = s.fr.BytesRead() - int64(s.fr.Buffered()) - int64(len(unit))
	} else {
		s.at, s.atOff = time.Time{}, -1
	}
	return unit, nil
}

// nextStaged returns the next unit the stage handed on, handing it units until it does.
func (s *Source) nextStaged() ([]byte, error) {
	for s.staged.Len() == 0 {
		if s.stageErr != nil {
			return nil, s.stageErr
		}
		s.staged.reset()
		unit, err := s.nextFramed()
		switch {
		case err == ErrPending:
			return nil, err
		case err != nil:
			if !s.stageEnd {
				s.stageEnd = true
				if serr := s.stage.End(&s.staged); serr != nil {
					err = serr
				}
			}
			s.stageErr = err
			continue
		}
		if s.stagedAt.IsZero() {
			s.stagedAt = s.ArrivedAt()
		}
		if serr := s.stage.Packet(unit, s.framing, &s.staged); serr != nil {
			s.stageErr = serr
		}
	}
	unit, added := s.staged.takeUnit()
	if added {
		s.added++
	}
	s.framing, _ = FramingOf(len(unit))
	s.at, s.atOff = s.stagedAt, -1
	if s.staged.Len() == 0 {
		s.stagedAt = time.Time{}
	}
	return unit, nil
}

// Peek reads ahead of Next and hands each unit to look, until look returns false, until units
// of limit bytes were read, at the end of the input or a read error, or, when idle is not zero,
// once the input has sent nothing for idle or it is past until (when not zero). Next then
// returns the units Peek read, with when they arrived, and goes on with the input: its reader
// sees the same packets whether or not anything looked, and a read error that ended the look
// comes in its place.
//
// With idle, the look takes the whole packets at hand before it waits for more, so that a slow
// live feed does not hold the packet it looks for behind the framer's own look-ahead.
func (s *Source) Peek(limit int, idle time.Duration, until time.Time, look func(unit []byte, fr Framing) bool) {
	waited := false
	s.peeking = idle > 0
	defer func() { s.peeking = false }()
	for s.peeked.Bytes() < limit {
		if idle > 0 {
			if !until.IsZero() && !time.Now().Before(until) {
				break
			}
			switch d := time.Now().Add(idle); {
			case !waited:
				s.SetDeadline(alreadyRead)
			case !until.IsZero() && until.Before(d):
				s.SetDeadline(until)
			default:
				s.SetDeadline(d)
			}
		}
		unit, err := s.fr.Next()
		if err == ErrPending && !waited {
			waited = true // every whole packet at hand was taken: now wait for more
			continue
		}
		if err != nil {
			break
		}
		waited = false
		fr := s.fr.Framing()
		at := s.arrivedAt(s.fr.BytesRead() - int64(s.fr.Buffered()) - int64(len(unit)))
		s.peeked.Append(unit)
		if k := len(s.peekAt) - 1; k >= 0 && s.peekAt[k].at.Equal(at) {
			s.peekAt[k].n++
		} else {
			s.peekAt = append(s.peekAt, arrivalRun{1, at})
		}
		if !look(unit, fr) {
			break
		}
	}
	if s.ra != nil {
		s.ra.SetDeadline(time.Time{})
	}
}

// Framing returns the framing of the last unit Next returned (188-byte framing before the
// first one).
func (s *Source) Framing() Framing {
	if s.framing.Size == 0 {
		return Framing188
	}
	return s.framing
}

// ArrivedAt returns when the last unit Next returned arrived, as the read-ahead saw it: the
// zero time without one (a regular file, read as fast as it goes).
func (s *Source) ArrivedAt() time.Time {
	if s.atOff >= 0 {
		s.at, s.atOff = s.arrivedAt(s.atOff), -1
	}
	return s.at
}

// HeldSince returns when the oldest byte of the input that the source holds and Next has not
// returned yet arrived (in the look-ahead, the stage or the framer's buffer), and false when it
// holds none or cannot say.
func (s *Source) HeldSince() (time.Time, bool) {
	switch {
	case s.ra == nil:
		return time.Time{}, false
	case s.peeked.Len() > 0:
		return s.peekAt[0].at, true
	case s.staged.Len() > 0 || s.stage != nil && !s.stagedAt.IsZero():
		return s.stagedAt, true
	case s.fr.Buffered() > 0:
		return s.arrivedAt(s.fr.BytesRead() - int64(s.fr.Buffered())), true
	}
	return time.Time{}, false
}

// Packets returns the number of units Next returned: with a Stage, the units it added too.
func (s *Source) Packets() int64 { return s.packets }

// Added returns the number of units Next returned that a Stage added of its own
// (Units.AppendAdded): Packets less Added is the input's units that Next returned.
func (s *Source) Added() int64 { return s.added }

// BytesRead returns the number of input bytes read so far.
func (s *Source) BytesRead() int64 { return s.fr.BytesRead() }

// Buffered returns the number of input bytes read and not yet returned by Next in a unit nor
// skipped: in the look-ahead and in the framer's buffer.
func (s *Source) Buffered() int { return s.fr.Buffered() + s.peeked.Bytes() }

// Skipped returns the number of bytes dropped so far to regain sync (Framer.Skipped).
func (s *Source) Skipped() int64 { return s.fr.Skipped() }

// Truncated returns the size of a truncated last packet dropped at the end of the input.
func (s *Source) Truncated() int64 { return s.fr.Truncated() }
