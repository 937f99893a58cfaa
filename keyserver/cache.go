package keyserver

import (
	"context"

	"github.com/tsdescramble/tsdescramble/keys"
)

// An ECM cache (keys.ECMCache) keeps a key server's answers so that a recording of the stream
// can be descrambled later without the server: while a run takes its keys from a server, a
// Recorder is given each answer with its ECM (Recording does it for any Answerer, the DVBAPI
// client for its own answers), and a later run's Feeder asks a Cache instead of a server.

// Recorder takes a key server's answers with their ECMs as they come: even and odd as an
// Answerer returns them (an all-zero CW: none for that parity). It is called only for answers
// with a CW, from the client's goroutine, and must not keep the slices.
type Recorder interface {
	Record(e ECM, even, odd []byte)
}

// Recording returns an Answerer that asks ans and gives each answer with a CW to rec.
func Recording(ans Answerer, rec Recorder) Answerer { return &recording{ans, rec} }

type recording struct {
	ans Answerer
	rec Recorder
}

func (r *recording) Answer(ctx context.Context, e ECM) (even, odd []byte, err error) {
	even, odd, err = r.ans.Answer(ctx, e)
	if err == nil && (len(even) > 0 && !allZero(even) || len(odd) > 0 && !allZero(odd)) {
		r.rec.Record(e, even, odd)
	}
	return even, odd, err
}

// CacheWriter is a Recorder that appends each answer to an ECM cache (keys.AppendECMCache). A
// line that cannot be written is counted by the cache and said to Log, once until a line is
// written again; never with its CWs.
type CacheWriter struct {
	W   *keys.ECMCacheWriter
	Log func(string)

	failing bool // the last write failed, and was said
}

// Record implements Recorder.
func (c *CacheWriter) Record(e ECM, even, odd []byte) {
	a := keys.ECMAnswer{CAID: e.CAID, PID: e.PID, Digest: keys.ECMDigest(e.Section), Even: cacheCW(even), Odd: cacheCW(odd)}
	_, err := c.W.Add(a)
	switch {
	case err == nil:
		c.failing = false
	case !c.failing && c.Log != nil:
		c.failing = true
		c.Log("ECM cache: an answer could not be written, and is not in the cache: " + err.Error())
	}
}

// cacheCW returns an answer's CW as a cache line takes it: one of 8 or 16 bytes, else all zeros
// (none), as the key source refuses other sizes too.
func cacheCW(cw []byte) []byte {
	if len(cw) == keys.CWSize || len(cw) == 2*keys.CWSize {
		return cw
	}
	return make([]byte, keys.CWSize)
}

// Cache is an Answerer that answers ECMs from an ECM cache, at once (AtOnce): an ECM the cache
// does not hold is answered with an error wrapping ErrNotFound.
type Cache struct{ C *keys.ECMCache }

// ErrNotCached is the error Cache answers for an ECM the cache does not hold.
var ErrNotCached error = notCached{}

type notCached struct{}

func (notCached) Error() string { return "the ECM cache holds no answer for the ECM" }
func (notCached) Unwrap() error { return ErrNotFound }

// Answer implements Answerer.
func (c Cache) Answer(_ context.Context, e ECM) (even, odd []byte, err error) {
	even, odd, ok := c.C.Answer(e.Section)
	if !ok {
		return nil, nil, ErrNotCached
	}
	return even, odd, nil
}

// AnswersAtOnce implements AtOnce.
func (Cache) AnswersAtOnce() bool { return true }
