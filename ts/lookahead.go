package ts

import (
	"io"
	"time"
)

// A look-ahead at the start of an input (the PMTs that name its scrambling system, say) reads
// the input through a Recorder; the run then reads it through the Replay, which gives the bytes
// the look-ahead read, with when they arrived, and then the rest: the run sees the same bytes
// whether or not anything looked.

// Recorder reads from r and keeps a copy of every byte it returns, up to limit bytes, after which
// it reports the end of its input (the input itself goes on): a look-ahead at the start of an
// input, which Replay then gives again. With a deadline, no read waits more than idle. The copy is
// kept in chunks rather than one growing slice, so that it costs what it holds and no more, and
// can be let go of a chunk at a time.
type Recorder struct {
	r        io.Reader
	deadline Deadliner
	idle     time.Duration
	Until    time.Time // when not zero, the end of the look-ahead
	// pending makes a read return ErrPending rather than wait for the input, unless wait is
	// set: the framer then hands over the whole packets it holds at once rather than wait for
	// the bytes of its look-ahead (see Framer.Next), and says ErrPending itself when it has
	// none, which sets wait (WaitForMore). A live input's look-ahead.
	pending, wait bool
	chunks        [][]byte
	reads         []recordedRead // how many bytes each read returned, and when
	n, limit      int
	err           error // the error that ended a read of r, io.EOF included
}

// recordedRead is a read of a Recorder's input: how many bytes it returned, and when.
type recordedRead struct {
	n  int
	at time.Time
}

// sameArrival is how close reads of a Recorder are taken to have arrived together: a pipe
// written a packet at a time returns a packet per read, and the times of the look-ahead's reads
// must cost little beside the bytes they date.
const sameArrival = time.Millisecond

// recordChunk is the largest size of the chunks of a Recorder. The first is of peekRead bytes,
// each next one twice the size of the one before.
const recordChunk = 256 << 10

// peekRead bounds a read of the look-ahead. A PMT most often comes in the first few kilobytes:
// the look-ahead then copies and reads twice that much, not a whole read of the framer
// (256 KiB, most of a small recording in a batch).
const peekRead = 16 << 10

func (r *Recorder) Read(p []byte) (int, error) {
	if r.err != nil {
		return 0, r.err
	}
	room := r.limit - r.n
	if room <= 0 || !r.Until.IsZero() && time.Now().After(r.Until) {
		return 0, io.EOF
	}
	if r.pending && !r.wait {
		return 0, ErrPending
	}
	r.wait = false
	p = p[:min(len(p), room, peekRead)]
	if r.deadline != nil {
		r.deadline.SetReadDeadline(time.Now().Add(r.idle))
	}
	n, err := r.r.Read(p)
	r.n += n
	if now := time.Now(); n > 0 {
		if last := len(r.reads) - 1; last >= 0 && now.Sub(r.reads[last].at) < sameArrival {
			r.reads[last].n += n // the earlier time: the bound of these bytes holds
		} else {
			r.reads = append(r.reads, recordedRead{n, now})
		}
	}
	for b := p[:n]; len(b) > 0; {
		if last := len(r.chunks) - 1; last < 0 || len(r.chunks[last]) == cap(r.chunks[last]) {
			size := peekRead
			if last >= 0 {
				size = 2 * cap(r.chunks[last])
			}
			r.chunks = append(r.chunks, make([]byte, 0, min(size, recordChunk, r.limit)))
		}
		c := &r.chunks[len(r.chunks)-1]
		k := min(len(b), cap(*c)-len(*c))
		*c = append(*c, b[:k]...)
		b = b[k:]
	}
	if err != nil {
		r.err = err
	}
	return n, err
}

// Deadliner is an input whose reads can be given a deadline.
type Deadliner interface{ SetReadDeadline(time.Time) error }

// NewRecorder returns a Recorder of the first limit bytes of r.
func NewRecorder(r io.Reader, limit int) *Recorder { return &Recorder{r: r, limit: limit} }

// SetDeadline makes no read of the Recorder wait on d more than idle.
func (r *Recorder) SetDeadline(d Deadliner, idle time.Duration) { r.deadline, r.idle = d, idle }

// Pending makes a read return ErrPending rather than wait for more input, until WaitForMore.
func (r *Recorder) Pending() { r.pending, r.wait = true, true }

// WaitForMore lets the next read wait for the input: the framer gave every whole packet it had.
func (r *Recorder) WaitForMore() { r.wait = true }

// Replay clears the deadline and returns a reader of the bytes recorded, then of rest; the
// error that ended the recording, when it is not io.EOF and fails (a read error, not the
// deadline of the look-ahead), comes in the place of rest.
func (r *Recorder) Replay(rest io.Reader, fails func(error) bool) *Replay {
	if r.deadline != nil {
		r.deadline.SetReadDeadline(time.Time{})
	}
	if err := r.err; err != nil && err != io.EOF && fails(err) {
		rest = errReader{err}
	}
	return &Replay{chunks: r.chunks, reads: r.reads, rest: rest}
}

// Replay reads the bytes a Recorder kept, then the rest of the input. It says when the bytes of
// each read arrived (ArrivalReporter): those of the look-ahead when the look-ahead read them,
// which on a live input is up to peekLive before the run reads them again, so that the run's
// latency bound counts from then and does not hold them another bound. It lets go of each chunk
// once it is read, so the look-ahead's memory goes back as the run catches up.
type Replay struct {
	chunks [][]byte
	reads  []recordedRead // the reads of the look-ahead not yet replayed, in order
	rest   io.Reader
	at     time.Time // when the bytes of the last Read arrived; zero: with that Read
}

func (r *Replay) Read(p []byte) (int, error) {
	for len(r.chunks) > 0 && len(r.chunks[0]) == 0 {
		r.chunks[0] = nil
		r.chunks = r.chunks[1:]
	}
	if len(r.chunks) == 0 || len(r.reads) == 0 {
		r.chunks, r.reads, r.at = nil, nil, time.Time{}
		return r.rest.Read(p)
	}
	// A Read returns the bytes of one read of the look-ahead at most: they arrived together.
	n := copy(p[:min(len(p), r.reads[0].n)], r.chunks[0])
	r.chunks[0] = r.chunks[0][n:]
	r.at = r.reads[0].at
	if r.reads[0].n -= n; r.reads[0].n == 0 {
		r.reads = r.reads[1:]
	}
	return n, nil
}

// ArrivedAt says when the bytes of the last Read arrived (see ArrivalReporter).
func (r *Replay) ArrivedAt() time.Time { return r.at }

// ArrivedAt returns what r says of when the bytes of its last Read arrived, if it can say
// (ArrivalReporter), else the zero time. The readers that wrap an input pass it on.
func ArrivedAt(r io.Reader) time.Time {
	if a, ok := r.(ArrivalReporter); ok {
		return a.ArrivedAt()
	}
	return time.Time{}
}

// errReader returns its error from every read.
type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }
