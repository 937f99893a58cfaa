package keys

import (
	"strings"
	"testing"
)

// walk feeds a parity string ('e' even, 'o' odd) to s and returns the first byte of each
// packet's key, '-' for NoKey.
func walk(s *Schedule, parities string) string {
	var sb strings.Builder
	for _, c := range parities {
		k := s.KeyFor(c == 'o')
		if k == NoKey {
			sb.WriteByte('-')
		} else {
			sb.WriteByte(s.CWs()[k][0])
		}
	}
	return sb.String()
}

func TestSchedulePeriods(t *testing.T) {
	k := func(c byte) []byte { return []byte{c, 0, 0, 0, 0, 0, 0, 0} }
	E := func(c byte) Period { return Period{Odd: false, CW: k(c), Line: 1} }
	O := func(c byte) Period { return Period{Odd: true, CW: k(c), Line: 1} }
	tests := []struct {
		name     string
		periods  []Period
		parities string
		want     string
	}{
		{"in order", []Period{E('a'), O('b'), E('c'), O('d')}, "eeooeeoo", "aabbccdd"},
		{"wraps round", []Period{E('a'), O('b'), E('c'), O('d')}, "eoeoeo", "abcdab"},
		{"stream starts odd: skip the first even", []Period{E('a'), O('b'), E('c'), O('d')}, "ooeeoo", "bbccdd"},
		{"log starts odd, stream even", []Period{O('b'), E('c'), O('d')}, "eeooee", "ccdd--"},
		{"one pair is a fixed pair", []Period{E('a'), O('b')}, "eoooeeoe", "abbbaaba"},
		{"one even key", []Period{E('a')}, "eoeo", "a-a-"},
		{"one odd key", []Period{O('b')}, "eoeo", "-b-b"},
		{"repeated line", []Period{E('a'), E('a'), O('b'), E('c')}, "eoeo", "abc-"},
		{"missing period", []Period{E('a'), O('b'), O('d'), E('e')}, "eoeoeo", "ab-de-"},
		{"nothing", nil, "eo", "--"},
		{"periods without key only", []Period{{Odd: true}, {Odd: true}}, "oeoe", "----"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := NewPeriods(tc.periods)
			if got := walk(s, tc.parities); got != tc.want {
				t.Fatalf("keys %q, want %q", got, tc.want)
			}
		})
	}
}

func TestScheduleFromKeyFile(t *testing.T) {
	// The pair file gives E1 O1 E2 O2: a stream of four periods uses them in turn.
	kf, err := ReadKeyFile(strings.NewReader("6100000000000000 6200000000000000\n6300000000000000:6400000000000000\n"), "p.txt", CWSize)
	if err != nil {
		t.Fatal(err)
	}
	if got := walk(kf.Schedule(), "eeoeeoo"); got != "aabccdd" {
		t.Fatalf("pairs: %q", got)
	}
	kf, err = ReadKeyFile(strings.NewReader(cwlHeader+"0 61 00 00 00 00 00 00 00 # 1\n1 62 00 00 00 00 00 00 00 # 2\n0 63 00 00 00 00 00 00 00 # 3\n"), "k.cwl", CWSize)
	if err != nil {
		t.Fatal(err)
	}
	if got := walk(kf.Schedule(), "oeoe"); got != "bc-a" {
		t.Fatalf("cwl: %q", got)
	}
	kf, err = ReadKeyFile(strings.NewReader("6100000000000000\n6200000000000000\n"), "l.txt", CWSize)
	if err != nil {
		t.Fatal(err)
	}
	if got := walk(kf.Schedule(), "ooeoe"); got != "aabab" {
		t.Fatalf("list: %q", got)
	}
}

func TestScheduleEmptyList(t *testing.T) {
	s := NewList(nil)
	if got := walk(s, "eoe"); got != "---" || s.Changes() != 2 {
		t.Fatalf("%q %d", got, s.Changes())
	}
}

func TestKeyForDoesNotAllocate(t *testing.T) {
	for name, s := range map[string]*Schedule{
		"fixed":   NewFixed([]byte{1}, []byte{2}),
		"list":    NewList([][]byte{{1}, {2}, {3}}),
		"periods": NewPeriods([]Period{{CW: []byte{1}}, {Odd: true, CW: []byte{2}}, {CW: []byte{3}}}),
	} {
		i := 0
		if n := testing.AllocsPerRun(1000, func() { s.KeyFor(i%3 == 0); i++ }); n != 0 {
			t.Errorf("%s: %v allocations per KeyFor", name, n)
		}
	}
}

func BenchmarkKeyFor(b *testing.B) {
	s := NewPeriods([]Period{{CW: []byte{1}}, {Odd: true, CW: []byte{2}}})
	for i := 0; b.Loop(); i++ {
		s.KeyFor(i&1023 == 0)
	}
}

// Sync offers the other periods' keys nearest first, each once, never the expected one, and
// none for fixed keys; limit bounds the periods tried.
func TestScheduleSync(t *testing.T) {
	s := NewList([][]byte{{0}, {1}, {2}, {3}})
	var tried []int
	pos, ok := s.Sync(0, 0, func(cw int) bool { tried = append(tried, cw); return cw == 2 })
	if !ok || pos != 2 || len(tried) != 3 || tried[0] != 1 || tried[1] != 3 || tried[2] != 2 {
		t.Fatalf("list: found %d %v after trying %v", pos, ok, tried)
	}
	if _, ok := s.Sync(0, 2, func(cw int) bool { return cw == 2 }); ok {
		t.Fatal("limit 2 reached the third candidate")
	}
	p := NewPeriods([]Period{{CW: []byte{0}}, {Odd: true, CW: []byte{1}}, {CW: []byte{2}}, {Odd: true, CW: []byte{3}}})
	tried = nil
	if pos, ok := p.Sync(1, 0, func(cw int) bool { tried = append(tried, cw); return true }); !ok || pos != 3 || len(tried) != 1 {
		t.Fatalf("periods: found %d %v after trying %v", pos, ok, tried)
	}
	if _, ok := NewFixed([]byte{1}, []byte{2}).Sync(0, 0, func(int) bool { return true }); ok {
		t.Fatal("fixed keys offered a candidate")
	}
}

// Every candidate position is offered exactly once, nearest first, for every ring size and
// position, in lists and in period cycles.
func TestCandidatesCoverTheRing(t *testing.T) {
	for n := 1; n <= 9; n++ {
		cws := make([][]byte, n)
		var periods []Period
		for i := range cws {
			cws[i] = []byte{byte(i)}
			periods = append(periods, Period{Odd: i%2 == 1, CW: cws[i]})
		}
		for _, s := range []*Schedule{NewList(cws), NewPeriods(periods)} {
			for pos := range s.Periods() {
				seen := map[int]bool{pos: true}
				lastDist := 0
				for i := range s.numCandidates() {
					c := s.candidate(pos, i)
					if seen[c] {
						t.Fatalf("ring %d step %d pos %d: candidate %d offered twice", s.Periods(), s.step, pos, c)
					}
					seen[c] = true
					d := (c - pos + s.Periods()) % s.Periods()
					if s.step == 2 && d%2 != 0 {
						t.Fatalf("ring %d pos %d: candidate %d of the other parity", s.Periods(), pos, c)
					}
					d = min(d, s.Periods()-d)
					if d < lastDist {
						t.Fatalf("ring %d step %d pos %d: candidate %d nearer than the one before", s.Periods(), s.step, pos, c)
					}
					lastDist = d
				}
				if want := (s.Periods()-1)/max(s.step, 1) + 1; s.step != 0 && len(seen) != want {
					t.Fatalf("ring %d step %d pos %d: %d positions covered, want %d", s.Periods(), s.step, pos, len(seen), want)
				}
			}
		}
	}
}
