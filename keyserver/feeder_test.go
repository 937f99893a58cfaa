package keyserver_test

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/tsdescramble/tsdescramble/keys"
	"github.com/tsdescramble/tsdescramble/keyserver"
)

// fakeServer answers ECMs whose first byte after the header names the answer.
type fakeServer struct {
	mu   sync.Mutex
	got  [][]byte
	fail map[byte]error
}

func (s *fakeServer) Answer(ctx context.Context, e keyserver.ECM) ([]byte, []byte, error) {
	s.mu.Lock()
	s.got = append(s.got, e.Section)
	err := s.fail[e.Section[3]]
	s.mu.Unlock()
	if err != nil {
		return nil, nil, err
	}
	b := e.Section[3]
	zero := make([]byte, 8)
	if e.Odd() {
		return zero, bytes.Repeat([]byte{b}, 8), nil
	}
	return bytes.Repeat([]byte{b}, 8), zero, nil
}

func (s *fakeServer) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.got)
}

func wait(t *testing.T, f *keyserver.Feeder) {
	t.Helper()
	for range 500 {
		if f.Pending() == 0 {
			return
		}
		time.Sleep(2 * time.Millisecond)
	}
	t.Fatal("the feeder did not finish")
}

func TestFeederSendsEachECMOnceAndSetsKeys(t *testing.T) {
	srv := &fakeServer{fail: map[byte]error{9: keyserver.ErrNotFound, 8: fmt.Errorf("wrapped: %w", keyserver.ErrTimeout)}}
	live := keys.NewLive()
	f := keyserver.NewFeeder(live, srv)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { f.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()

	ecm := func(table, b byte) keyserver.ECM {
		return keyserver.ECM{Section: []byte{table, 0x70, 1, b}, PID: 0x500}
	}
	for range 5 {
		f.Offer(ecm(0x80, 1))
	}
	wait(t, f)
	f.Offer(ecm(0x81, 2))
	f.Offer(ecm(0x81, 2))
	f.Offer(ecm(0x80, 9)) // not found: not sent again
	f.Offer(ecm(0x80, 8)) // timeout: sent again when repeated
	wait(t, f)
	f.Offer(ecm(0x80, 9))
	f.Offer(ecm(0x80, 8))
	wait(t, f)
	if n := srv.count(); n != 5 {
		t.Fatalf("%d ECMs sent, want 5 (1, 2, 9, 8, 8 again)", n)
	}
	st := f.Stats()
	if st.ECMs != 11 || st.Sent != 5 || st.Answers != 2 || st.CWs != 2 || st.NotFound != 1 || st.Timeouts != 2 {
		t.Fatalf("stats %+v", st)
	}
	if st.RTTMax <= 0 || st.RTTMedian > st.RTTMax {
		t.Fatalf("round trips %v %v", st.RTTMedian, st.RTTMax)
	}
	if k := live.Held(0x100, false); k == keys.NoKey || live.CW(k)[0] != 1 {
		t.Fatalf("even key %d", k)
	}
	if k := live.Held(0x100, true); k == keys.NoKey || live.CW(k)[0] != 2 {
		t.Fatalf("odd key %d", k)
	}
}

func TestFeederQueueIsBounded(t *testing.T) {
	srv := &fakeServer{}
	f := keyserver.NewFeeder(keys.NewLive(), srv)
	for i := range keyserver.MaxQueue + 10 {
		f.Offer(keyserver.ECM{Section: []byte{0x80, 0x70, 2, byte(i), byte(i >> 8)}})
	}
	if p := f.Pending(); p != keyserver.MaxQueue {
		t.Fatalf("%d queued, want %d", p, keyserver.MaxQueue)
	}
	if d := f.Stats().Dropped; d != 10 {
		t.Fatalf("%d dropped", d)
	}
}

// blockingServer answers with all-zero CWs, except an ECM whose byte is 7, which it holds until
// the request's context ends.
type blockingServer struct{ held chan struct{} }

func (s *blockingServer) Answer(ctx context.Context, e keyserver.ECM) ([]byte, []byte, error) {
	if e.Section[3] == 7 {
		close(s.held)
		<-ctx.Done()
		return nil, nil, ctx.Err()
	}
	return make([]byte, 8), make([]byte, 8), nil
}

// The counts add up at the end: an answer with all-zero CWs is an answer without keys (not
// found), and an ECM still in flight when the run ends is unanswered (timed out); both were in
// no category, or the wrong one.
func TestFeederCountsAddUp(t *testing.T) {
	srv := &blockingServer{held: make(chan struct{})}
	f := keyserver.NewFeeder(keys.NewLive(), srv)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { f.Run(ctx); close(done) }()
	f.Offer(keyserver.ECM{Section: []byte{0x80, 0x70, 1, 1}, PID: 0x500})
	wait(t, f)
	f.Offer(keyserver.ECM{Section: []byte{0x81, 0x70, 1, 7}, PID: 0x500})
	select {
	case <-srv.held:
	case <-time.After(5 * time.Second):
		t.Fatal("the second ECM was not sent")
	}
	cancel()
	<-done
	st := f.Stats()
	if st.Sent != 2 || st.Answers != 0 || st.NoKeys != 1 || st.CWs != 0 || st.Unanswered != 1 {
		t.Fatalf("stats %+v: want 2 sent, 1 answer without keys, 1 unanswered", st)
	}
	if st.NotFound != st.NoKeys || st.Timeouts != st.Unanswered {
		t.Fatalf("stats %+v: the answer without keys is not found, the unanswered ECM a timeout", st)
	}
	if sum := st.Answers + st.NotFound + st.NoCard + st.Timeouts + st.Errors; sum != st.Sent {
		t.Fatalf("stats %+v: the categories add up to %d, not the %d sent", st, sum, st.Sent)
	}
}
