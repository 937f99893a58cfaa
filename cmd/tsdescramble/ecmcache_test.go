package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tsdescramble/tsdescramble/internal/testsupport/camdouble"
	"github.com/tsdescramble/tsdescramble/keys"
	"github.com/tsdescramble/tsdescramble/pipeline"
)

// cacheStats reads the key counts of a run's -stats.
func cacheStats(t *testing.T, path string) pipeline.LiveKeyStats {
	t.Helper()
	var st struct {
		LiveKeys *pipeline.LiveKeyStats `json:"live_keys"`
	}
	if err := json.Unmarshal(readFile(t, path), &st); err != nil {
		t.Fatal(err)
	}
	if st.LiveKeys == nil || st.LiveKeys.ECMCache == nil {
		t.Fatalf("-stats has no live_keys.ecm_cache: %s", readFile(t, path))
	}
	return *st.LiveKeys
}

// noCWs fails the test if stderr shows a control word of the test streams.
func noCWs(t *testing.T, stderr string) {
	t.Helper()
	u := strings.ToUpper(stderr)
	for _, cw := range []string{"11223366445566FF", "A1B2C316D4E5F6AF", "0102030604050610", "7F6E5D4A3C2B1A81", "11 22 33 66"} {
		if strings.Contains(u, cw) {
			t.Fatalf("a control word was printed without -show-keys: %s", stderr)
		}
	}
}

// recordCache descrambles in with keys from url and -ecm-cache cache, and returns the output.
func recordCache(t *testing.T, url, in, cache string) []byte {
	t.Helper()
	dir := t.TempDir()
	out, stats := filepath.Join(dir, "live.ts"), filepath.Join(dir, "live.json")
	r := run(t, nil, "-key-server", url, "-ecm-cache", cache, "-in", in, "-out", out, "-stats", stats)
	if r.code != 0 {
		t.Fatalf("recording: %s", describe(r))
	}
	noCWs(t, r.stderr)
	if !strings.Contains(r.stderr, "ECM cache "+cache+": 4 answers appended") {
		t.Errorf("the summary does not count the answers appended: %s", r.stderr)
	}
	if c := cacheStats(t, stats).ECMCache; c.Mode != "record" || c.Appended != 4 || c.WriteErrors != 0 {
		t.Errorf("-stats: %+v", *c)
	}
	return readFile(t, out)
}

// A run with a key server writes the ECM cache; a run without one, the server gone, reads it:
// the same bytes, without waiting for -key-wait, whatever -batch and -workers. For each protocol
// the recording goes through the same path.
func TestECMCacheRecordThenDescrambleOffline(t *testing.T) {
	clear, _, in := keyServerStream(t)
	for _, proto := range []string{"cs378x", "dvbapi"} {
		t.Run("protocol="+proto, func(t *testing.T) {
			dir := t.TempDir()
			cache := filepath.Join(dir, "rec.ecm")
			var url string
			var stop func()
			if proto == "cs378x" {
				srv := camdouble.NewCS378x(t, "u", "p")
				url, stop = "cs378x://u:p@"+srv.Addr, srv.Stop
			} else {
				srv := camdouble.NewDVBAPI(t)
				url, stop = "dvbapi://"+srv.Addr, srv.Stop
			}
			start := time.Now()
			live := recordCache(t, url, in, cache)
			liveTime := time.Since(start)
			stop()
			sameBytes(t, "the live run", live, clear, 188)
			if fi, err := os.Stat(cache); err != nil || fi.Mode().Perm() != 0o600 {
				t.Fatalf("the cache: %v, mode %v; want 0600", err, fi.Mode().Perm())
			}
			if n := strings.Count(string(readFile(t, cache)), "\n"); n != 5 {
				t.Errorf("the cache has %d lines, want its first line and 4 answers", n)
			}

			const wait = "10s" // a wait that would show
			for _, tune := range [][]string{nil, {"-batch", "1", "-workers", "1"}, {"-batch", "7", "-workers", "2"}} {
				out, stats := filepath.Join(dir, "off.ts"), filepath.Join(dir, "off.json")
				start := time.Now()
				r := run(t, nil, append([]string{"-ecm-cache", cache, "-key-wait", wait, "-in", in, "-out", out, "-stats", stats}, tune...)...)
				offTime := time.Since(start)
				if r.code != 0 {
					t.Fatalf("%v: %s", tune, describe(r))
				}
				sameBytes(t, "the offline run", readFile(t, out), live, 188)
				noCWs(t, r.stderr)
				ls := cacheStats(t, stats)
				if c := ls.ECMCache; c.Mode != "read" || c.Hits != 4 || c.Misses != 0 || c.Entries != 4 {
					t.Errorf("%v: -stats: %+v", tune, *c)
				}
				if ls.ReaderWaits != 0 || ls.Waited != 0 || offTime > 5*time.Second {
					t.Errorf("%v: the reader waited %v, %d periods waited; the run took %v", tune, ls.ReaderWaits, ls.Waited, offTime)
				}
				if !strings.Contains(r.stderr, "ECM cache "+cache+" (4 answers): 4 distinct ECMs of the stream, 4 found in it, 0 not") {
					t.Errorf("%v: summary: %s", tune, r.stderr)
				}
				t.Logf("%v: live run %v, offline run %v", tune, liveTime.Round(time.Millisecond), offTime.Round(time.Millisecond))
				if tune == nil {
					t.Log(strings.TrimSpace(r.stderr))
				}
			}
			// -v -show-keys shows them, as for any key source.
			r := run(t, nil, "-v", "-show-keys", "-ecm-cache", cache, "-in", in, "-out", filepath.Join(dir, "o.ts"))
			if r.code != 0 || !strings.Contains(strings.ToUpper(r.stderr), "11223366445566FF") {
				t.Errorf("-v -show-keys: %s", describe(r))
			}
		})
	}
}

// A last line torn by a crash costs its ECM: its crypto period gets no key (exit 3, the
// message naming the cache), the others are descrambled. A recording run appends after the
// torn line on a line of its own, and the cache then answers every ECM.
func TestECMCacheTornLastLine(t *testing.T) {
	clear, scrambled, in := keyServerStream(t)
	srv := camdouble.NewCS378x(t, "u", "p")
	dir := t.TempDir()
	cache := filepath.Join(dir, "rec.ecm")
	recordCache(t, "cs378x://u:p@"+srv.Addr, in, cache)
	data := readFile(t, cache)
	if err := os.WriteFile(cache, data[:len(data)-40], 0o600); err != nil { // into the even CW
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out.ts")
	r := run(t, nil, "-ecm-cache", cache, "-in", in, "-out", out)
	if r.code != exitNoFit {
		t.Fatalf("exit %d, want %d: %s", r.code, exitNoFit, r.stderr)
	}
	for _, w := range []string{
		cache + ":5: the last line has no newline (a write cut short) (1 line not read in all",
		"1 crypto period got no key from the ECM cache " + cache,
		"1 of the stream's 4 distinct ECMs are not in it",
	} {
		if !strings.Contains(r.stderr, w) {
			t.Errorf("stderr does not say %q: %s", w, r.stderr)
		}
	}
	t.Log(strings.TrimSpace(r.stderr))
	// The last period (odd, its key only in the last ECM) is left as it came; the rest is clear.
	got := readFile(t, out)
	for i := 0; i < len(got); i += 188 {
		want := clear
		if scrambled[i+3]&0xC0 == 0xC0 && i > len(got)/2 && ecmPeriod(scrambled, i) == 3 {
			want = scrambled
		}
		if !bytes.Equal(got[i:i+188], want[i:i+188]) {
			t.Fatalf("packet %d is not what it should be", i/188)
		}
	}

	// The server answers again: the torn ECM is appended after the torn line, on its own.
	r = run(t, nil, "-key-server", "cs378x://u:p@"+srv.Addr, "-ecm-cache", cache, "-in", in, "-out", out)
	if r.code != 0 || !strings.Contains(r.stderr, "1 answer appended, 3 held already") {
		t.Fatalf("recording again: %s", describe(r))
	}
	c, err := keys.LoadECMCache(cache)
	if err != nil || c.Len() != 4 || c.Skipped != 1 || c.Torn {
		t.Fatalf("the cache after an append: %v", err)
	}
	r = run(t, nil, "-ecm-cache", cache, "-in", in, "-out", out)
	if r.code != 0 {
		t.Fatalf("after the append: %s", describe(r))
	}
	sameBytes(t, "after the append", readFile(t, out), clear, 188)
}

// ecmPeriod returns the crypto period (from 0) of the elementary stream packet at byte i of a
// keyServerStream: 1000 elementary stream packets each.
func ecmPeriod(stream []byte, i int) int {
	n := 0
	for j := 0; j < i; j += 188 {
		if stream[j+1]&0x1F == camdouble.ESPID>>8 && stream[j+2] == camdouble.ESPID&0xFF {
			n++
		}
	}
	return n / 1000
}

// A cache recorded from another stream holds none of this one's ECMs: every packet is left as
// it came, the message says so, and the exit status is that of keys that do not fit, at once.
func TestECMCacheOfAnotherStream(t *testing.T) {
	_, scrambled, in := keyServerStream(t)
	dir := t.TempDir()
	otherCWs := [][]byte{mustCW(t, "0F1E2D5A3C4B5AF1"), mustCW(t, "1020306040506090")}
	_, other, _ := camdouble.ECMStream(camdouble.StreamSpec{Packets: 2000, PeriodPackets: 1000, CWs: otherCWs})
	otherIn := writeFile(t, dir, "other.ts", other)
	srv := camdouble.NewCS378x(t, "u", "p")
	cache := filepath.Join(dir, "other.ecm")
	r := run(t, nil, "-key-server", "cs378x://u:p@"+srv.Addr, "-ecm-cache", cache, "-in", otherIn, "-out", filepath.Join(dir, "o.ts"))
	if r.code != 0 {
		t.Fatal(describe(r))
	}
	srv.Stop()
	out, stats := filepath.Join(dir, "out.ts"), filepath.Join(dir, "st.json")
	start := time.Now()
	r = run(t, nil, "-ecm-cache", cache, "-key-wait", "10s", "-in", in, "-out", out, "-stats", stats)
	took := time.Since(start)
	if r.code != exitNoFit {
		t.Fatalf("exit %d, want %d: %s", r.code, exitNoFit, r.stderr)
	}
	if took > 5*time.Second {
		t.Errorf("the run took %v: it waited for keys no cache line holds", took)
	}
	if !strings.Contains(r.stderr, "4 crypto periods got no key from the ECM cache "+cache+": 4000 packets passed scrambled; it holds none of the stream's 4 distinct ECMs: it was recorded from another stream") {
		t.Errorf("message: %s", r.stderr)
	}
	t.Log(strings.TrimSpace(r.stderr))
	sameBytes(t, "the output", readFile(t, out), scrambled, 188)
	if c := cacheStats(t, stats).ECMCache; c.Hits != 0 || c.Misses != 4 {
		t.Errorf("-stats: %+v", *c)
	}
	var st struct {
		ExitStatus int `json:"exit_status"`
	}
	json.Unmarshal(readFile(t, stats), &st)
	if st.ExitStatus != exitNoFit {
		t.Errorf("-stats says exit %d", st.ExitStatus)
	}
}

// -ecm-cache's usage errors: exit 2, one line, every file as it was and nothing new.
func TestECMCacheFlagErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	in := writeFile(t, dir, "in.ts", nullPacket())
	notCache := writeFile(t, dir, "keys.cwl", []byte("0 11 22 33 66 44 55 66 FF\n"))
	empty := writeFile(t, dir, "empty.ecm", []byte(keys.ECMCacheHeader+"\n"))
	out := filepath.Join(dir, "out.ts")
	const server = "cs378x://u:secretpw@127.0.0.1:1"
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"offline, cache = out", []string{"-ecm-cache", empty, "-in", in, "-out", empty}, "-out and -ecm-cache name the same file"},
		{"recording, cache = out", []string{"-key-server", server, "-ecm-cache", empty, "-in", in, "-out", empty}, "-out and -ecm-cache name the same file"},
		{"offline, cache = in", []string{"-ecm-cache", in, "-in", in, "-out", out}, "-in and -ecm-cache name the same file"},
		{"recording, cache = in", []string{"-key-server", server, "-ecm-cache", in, "-in", in, "-out", out}, "-in and -ecm-cache name the same file"},
		{"recording, cache = stats", []string{"-key-server", server, "-ecm-cache", empty, "-in", in, "-out", out, "-stats", empty}, "-ecm-cache and -stats name the same file"},
		{"not a cache, offline", []string{"-ecm-cache", notCache, "-in", in, "-out", out}, "is not an ECM cache"},
		{"not a cache, recording", []string{"-key-server", server, "-ecm-cache", notCache, "-in", in, "-out", out}, "is not an ECM cache"},
		{"missing", []string{"-ecm-cache", filepath.Join(dir, "none.ecm"), "-in", in, "-out", out}, "record the ECM cache first"},
		{"empty", []string{"-ecm-cache", empty, "-in", in, "-out", out}, "holds no answer: record one first"},
		{"with -cw", []string{"-ecm-cache", empty, "-cw", "11223366445566FF", "-in", in, "-out", out}, "give one key source: -ecm-cache or -cw, not both"},
		{"with -ecm-xor", []string{"-ecm-cache", empty, "-ecm-xor", "4212022421206688", "-in", in, "-out", out}, "-ecm-xor and -ecm-cache"},
		{"with -follow", []string{"-ecm-cache", empty, "-follow", "-cw-file", notCache, "-in", in, "-out", out}, "not with -follow"},
		{"bad -missing-key", []string{"-ecm-cache", empty, "-missing-key", "keep", "-in", in, "-out", out}, "-missing-key: want pass"},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := map[string][]byte{}
			for _, n := range dirNames(t, dir) {
				before[n] = readFile(t, filepath.Join(dir, n))
			}
			r := run(t, nil, c.args...)
			if r.code != exitUsage || !strings.Contains(r.stderr, c.want) {
				t.Errorf("exit %d, %q; want exit %d and %q", r.code, r.stderr, exitUsage, c.want)
			}
			oneLine(t, r.stderr)
			if strings.Contains(r.stderr, "secretpw") {
				t.Errorf("the password was printed: %s", r.stderr)
			}
			names := dirNames(t, dir)
			if len(names) != len(before) {
				t.Errorf("the directory holds %v after the run", names)
			}
			for n, b := range before {
				if got := readFile(t, filepath.Join(dir, n)); !bytes.Equal(got, b) {
					t.Errorf("%s changed", n)
				}
			}
		})
	}
}

// A batch of recordings of one stream, each descrambled from one ECM cache, as pods of an
// Indexed Job would: jobs that only read the cache share it.
func TestBatchWithECMCache(t *testing.T) {
	clear, _, in := keyServerStream(t)
	srv := camdouble.NewCS378x(t, "u", "p")
	dir := t.TempDir()
	cache := filepath.Join(dir, "rec.ecm")
	recordCache(t, "cs378x://u:p@"+srv.Addr, in, cache)
	srv.Stop()
	var m strings.Builder
	var outs []string
	for i, extra := range []map[string]any{{}, {"batch": 7, "workers": 1}, {"missing-key": "drop"}} {
		job := map[string]any{"in": in, "out": filepath.Join(dir, "out"+string(rune('0'+i))+".ts"), "ecm-cache": cache}
		for k, v := range extra {
			job[k] = v
		}
		outs = append(outs, job["out"].(string))
		m.WriteString(manifestLine(t, job))
	}
	manifest := writeFile(t, dir, "jobs.jsonl", []byte(m.String()))
	r := run(t, nil, "batch", "-manifest", manifest, "-stats-dir", filepath.Join(dir, "stats"))
	if r.code != 0 {
		t.Fatal(describe(r))
	}
	for _, out := range outs {
		sameBytes(t, out, readFile(t, out), clear, 188)
	}
	// One job records while another reads the same cache: refused before any job runs.
	var bad strings.Builder
	bad.WriteString(manifestLine(t, map[string]any{"in": in, "out": filepath.Join(dir, "a.ts"), "ecm-cache": cache, "key-server": "cs378x://u:p@127.0.0.1:1"}))
	bad.WriteString(manifestLine(t, map[string]any{"in": in, "out": filepath.Join(dir, "b.ts"), "ecm-cache": cache}))
	r = run(t, nil, "batch", "-manifest", writeFile(t, dir, "bad.jsonl", []byte(bad.String())))
	if r.code != exitUsage || !strings.Contains(r.stderr, "ecm-cache") {
		t.Errorf("a cache one job writes and another reads: %s", describe(r))
	}
}

// Servers that answer as OSCam does: a constant-CW reader (the same pair for every ECM; over
// DVBAPI each CW is written once and every later ECM gets no message, so only the first is
// recorded), and a card whose ECMs, sent after their period began, carry the current and the
// next key. The run from the cache gives the live run's bytes, the clear stream, with exit 0,
// however few of the ECMs the cache holds.
func TestECMCacheOSCamAnswers(t *testing.T) {
	a, b, c := mustCW(t, "11223366445566FF"), mustCW(t, "A1B2C316D4E5F6AF"), mustCW(t, "0102030604050610")
	for _, shape := range []struct {
		name   string
		lag    int
		cws    [][]byte
		answer camdouble.AnswerFunc
	}{
		{"constant", 0, [][]byte{a, b}, camdouble.ConstantCW(a, b)},
		{"current-and-next", 120, [][]byte{a, b, c}, camdouble.CurrentAndNext([][]byte{a, b, c})},
	} {
		clear, _, in := oscamStream(t, shape.lag, shape.cws...)
		for _, srv := range oscamServers() {
			t.Run(shape.name+"/"+srv.name, func(t *testing.T) {
				url, _ := srv.start(t, shape.answer, 0)
				dir := t.TempDir()
				cache, live, off := filepath.Join(dir, "c.ecm"), filepath.Join(dir, "live.ts"), filepath.Join(dir, "off.ts")
				// A server that stays silent for an ECM whose answer changes nothing keeps the
				// run's end waiting for it, up to -key-wait.
				if r := run(t, nil, "-key-server", url, "-key-wait", "500ms", "-ecm-cache", cache, "-in", in, "-out", live); r.code != 0 {
					t.Fatalf("recording: %s", describe(r))
				}
				r := run(t, nil, "-ecm-cache", cache, "-in", in, "-out", off)
				if r.code != 0 {
					t.Fatalf("from the cache: %s", describe(r))
				}
				sameBytes(t, "the live run", readFile(t, live), clear, 188)
				sameBytes(t, "the run from the cache", readFile(t, off), readFile(t, live), 188)
				c, _ := keys.LoadECMCache(cache)
				t.Logf("%d of the stream's ECMs in the cache", c.Len())
			})
		}
	}
}
