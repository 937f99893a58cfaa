package pipeline_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tsdescramble/tsdescramble/internal/testsupport/camdouble"
	"github.com/tsdescramble/tsdescramble/keys"
	"github.com/tsdescramble/tsdescramble/keyserver"
	"github.com/tsdescramble/tsdescramble/pipeline"
	"github.com/tsdescramble/tsdescramble/ts"
)

// cacheOf returns an ECM cache holding the answers to ecms (the test CA's), but those skip
// names by their place.
func cacheOf(t *testing.T, ecms [][]byte, skip ...int) *keys.ECMCache {
	t.Helper()
	var b strings.Builder
	b.WriteString(keys.ECMCacheHeader + "\n")
	for i, e := range ecms {
		if contains(skip, i) {
			continue
		}
		cw, err := camdouble.AnswerECM(e)
		if err != nil {
			t.Fatal(err)
		}
		a := keys.ECMAnswer{CAID: camdouble.TestCAID, PID: camdouble.ECMPID, Digest: keys.ECMDigest(e), Even: cw[:8], Odd: cw[8:]}
		b.Write(a.AppendLine(nil))
	}
	c, err := keys.ReadECMCache(strings.NewReader(b.String()), "test.ecm")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func contains(s []int, x int) bool {
	for _, y := range s {
		if y == x {
			return true
		}
	}
	return false
}

// cacheKeys returns the LiveKeys of a file run whose ECMs a cache answers, at once.
func cacheKeys(c *keys.ECMCache, wait time.Duration) *pipeline.LiveKeys {
	live := keys.NewLive()
	f := keyserver.NewFeeder(live, keyserver.Cache{C: c})
	return &pipeline.LiveKeys{Source: live, Sections: keyserver.NewECMSink(f, keyserver.Choice{}), Wait: wait, FileInput: true, AtOnce: true}
}

// A file whose ECMs an ECM cache answers is descrambled without a wait, whatever the key wait:
// a key the cache holds is set as its ECM is read, and a period whose key it does not hold is
// decided by the stream (its end, the end of the input), not by the clock. The output is the
// same for every -batch and -workers.
func TestLiveKeysFromECMCache(t *testing.T) {
	const wait = 20 * time.Second // a wait that would show
	for _, lag := range []int{0, 120} {
		clear, scrambled, ecms := camdouble.ECMStream(camdouble.StreamSpec{Packets: 3000, PeriodPackets: 500, LagPackets: lag, CWs: liveCWs()})
		for _, c := range []struct {
			name   string
			skip   []int
			noKey  int // periods left without a key
			expect []byte
		}{
			{"whole cache", nil, 0, clear},
			// The ECM of period 3 (odd) is not in the cache: period 3 has no key, as the
			// next ECM, which carries it as the other parity's, comes after it (lead) or is
			// taken past its end (lag, where period 3's key came with ECM 2).
			{"one ECM missing", []int{3}, -1, nil},
			{"another stream's cache", []int{0, 1, 2, 3, 4, 5}, 6, scrambled},
		} {
			var first []byte
			for _, run := range []struct{ batch, workers int }{{1, 1}, {7, 2}, {1024, 2}} {
				t.Run(fmt.Sprintf("lag=%d/%s/batch=%d", lag, c.name, run.batch), func(t *testing.T) {
					cache := cacheOf(t, ecms, c.skip...)
					var out bytes.Buffer
					start := time.Now()
					st, err := pipeline.Run(context.Background(), ts.NewSource(bytes.NewReader(scrambled)), &out,
						pipeline.Options{LiveKeys: cacheKeys(cache, wait), Batch: run.batch, Workers: run.workers})
					if err != nil {
						t.Fatal(err)
					}
					if d := time.Since(start); d > wait/4 {
						t.Fatalf("the run took %v: it waited for keys the cache answers at once", d)
					}
					if st.LiveKeys.ReaderWaits > 0 {
						t.Errorf("the reader waited %v for the key source", st.LiveKeys.ReaderWaits)
					}
					if c.expect != nil && !bytes.Equal(out.Bytes(), c.expect) {
						t.Fatalf("output differs (%d packets descrambled, live %+v)", st.Descrambled, *st.LiveKeys)
					}
					if c.noKey >= 0 && st.LiveKeys.GaveUp != int64(c.noKey) {
						t.Errorf("%d periods without a key, want %d", st.LiveKeys.GaveUp, c.noKey)
					}
					if first == nil {
						first = bytes.Clone(out.Bytes())
					} else if !bytes.Equal(out.Bytes(), first) {
						t.Fatal("the output depends on -batch and -workers")
					}
					cs := cache.Stats()
					if want := int64(len(ecms) - len(c.skip)); cs.Hits != want || cs.Misses != int64(len(c.skip)) {
						t.Errorf("cache hits %d, misses %d; want %d, %d", cs.Hits, cs.Misses, want, len(c.skip))
					}
				})
			}
		}
	}
}
