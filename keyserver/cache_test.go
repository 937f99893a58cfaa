package keyserver_test

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/tsdescramble/tsdescramble/keys"
	"github.com/tsdescramble/tsdescramble/keyserver"
	"github.com/tsdescramble/tsdescramble/psi"
)

// A server's answers recorded through Recording and a CacheWriter are answered again by Cache,
// at once: a Feeder over it sets each ECM's CWs in Offer, with no Run and no wait.
func TestCacheRecordThenAnswer(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.ecm")
	w, err := keys.AppendECMCache(path)
	if err != nil {
		t.Fatal(err)
	}
	srv := &fakeServer{fail: map[byte]error{9: keyserver.ErrNotFound}}
	rec := keyserver.Recording(srv, &keyserver.CacheWriter{W: w})
	ecm := func(table, b byte) keyserver.ECM {
		return keyserver.ECM{Section: []byte{table, 0x70, 1, b}, PID: 0x500, CAID: 0x0B00}
	}
	for _, e := range []keyserver.ECM{ecm(0x80, 1), ecm(0x81, 2), ecm(0x80, 9)} {
		rec.Answer(context.Background(), e)
	}
	if st := w.Stats(); st.Appended != 2 {
		t.Fatalf("%d answers appended, want 2 (the one without a key is not)", st.Appended)
	}
	w.Close()

	c, err := keys.LoadECMCache(path)
	if err != nil {
		t.Fatal(err)
	}
	live := keys.NewLive()
	f := keyserver.NewFeeder(live, keyserver.Cache{C: c})
	f.Offer(ecm(0x80, 1))
	if f.Pending() != 0 {
		t.Fatal("an ECM answered from the cache is pending")
	}
	if k := live.Held(0x100, false); k == keys.NoKey || !bytes.Equal(live.CW(k), bytes.Repeat([]byte{1}, 8)) {
		t.Fatal("the even CW of the first ECM is not set once it is offered")
	}
	f.Offer(ecm(0x81, 2))
	if k := live.Held(0x100, true); k == keys.NoKey || !bytes.Equal(live.CW(k), bytes.Repeat([]byte{2}, 8)) {
		t.Fatal("the odd CW of the second ECM is not set once it is offered")
	}
	f.Offer(ecm(0x80, 9)) // not recorded
	f.Offer(ecm(0x80, 7)) // of another stream
	f.Offer(ecm(0x80, 1)) // a repeat: not asked again
	st := f.Stats()
	if st.Sent != 4 || st.Answers != 2 || st.NotFound != 2 || st.CWs != 2 {
		t.Errorf("feeder stats %+v", st)
	}
	if !errors.Is(f.LastError(), keyserver.ErrNotFound) || !errors.Is(f.LastError(), keyserver.ErrNotCached) {
		t.Errorf("last error %v", f.LastError())
	}
	if cs := c.Stats(); cs.Hits != 2 || cs.Misses != 2 {
		t.Errorf("cache stats %+v", cs)
	}
}

// Prefer picks, among a service's CA descriptors, the ECM PID a cache holds answers of, not
// the first one.
func TestECMSinkPrefer(t *testing.T) {
	svc := psi.Service{Number: 1, CA: []psi.CA{{SystemID: 0x0500, PID: 0x600}, {SystemID: 0x0B00, PID: 0x700}}}
	for _, c := range []struct {
		prefer func(caid, pid uint16) bool
		want   uint16
	}{
		{nil, 0x600},
		{func(caid, pid uint16) bool { return caid == 0x0B00 && pid == 0x700 }, 0x700},
		{func(caid, pid uint16) bool { return false }, 0x600},
	} {
		s := keyserver.NewECMSink(keyserver.NewFeeder(keys.NewLive(), &fakeServer{}), keyserver.Choice{Prefer: c.prefer})
		s.Tables([]psi.Service{svc})
		if pids, _ := s.WantedPIDs(); len(pids) != 1 || pids[0] != c.want {
			t.Errorf("ECM PIDs %#x, want %#x", pids, c.want)
		}
	}
}
