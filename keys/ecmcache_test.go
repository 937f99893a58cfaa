package keys

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// testECM returns an ECM section that differs for each n, and its answer.
func testECM(n byte) ([]byte, ECMAnswer) {
	sec := []byte{0x80 | n&1, 0x70, 4, n, n + 1, n + 2, n + 3}
	return sec, ECMAnswer{CAID: 0x0B00, PID: 0x500, Digest: ECMDigest(sec),
		Even: []byte{n, 2, 3, 6, 4, 5, 6, 0xFF}, Odd: []byte{0xA1, n, 0xC3, 0x16, 0xD4, 0xE5, 0xF6, 0xAF}}
}

func appendAll(t *testing.T, path string, answers ...ECMAnswer) {
	t.Helper()
	w, err := AppendECMCache(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range answers {
		if _, err := w.Add(a); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestECMCacheRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.ecm")
	s1, a1 := testECM(1)
	s2, a2 := testECM(2)
	appendAll(t, path, a1, a2)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if m := fi.Mode().Perm(); m != 0o600 {
		t.Errorf("a new cache has mode %v, want 0600: it holds control words", m)
	}
	c, err := LoadECMCache(path)
	if err != nil {
		t.Fatal(err)
	}
	if c.Len() != 2 || c.Skipped != 0 || c.Torn {
		t.Fatalf("%d answers, %d lines skipped, torn %v; want 2, 0, false", c.Len(), c.Skipped, c.Torn)
	}
	for _, x := range []struct {
		sec []byte
		a   ECMAnswer
	}{{s1, a1}, {s2, a2}} {
		even, odd, ok := c.Answer(x.sec)
		if !ok || !bytes.Equal(even, x.a.Even) || !bytes.Equal(odd, x.a.Odd) {
			t.Errorf("ECM %x: answer %v, ok %v", x.sec, even == nil, ok)
		}
	}
	if _, _, ok := c.Answer([]byte{0x80, 0x70, 1, 9}); ok {
		t.Error("an ECM the cache does not hold was answered")
	}
	if st := c.Stats(); st.Hits != 2 || st.Misses != 1 || st.Entries != 2 || st.Mode != "read" {
		t.Errorf("stats %+v", st)
	}
	if pids := c.ECMPIDs(); len(pids) != 1 || pids[0] != (ECMPID{0x0B00, 0x500}) || !c.Holds(0x0B00, 0x500) || c.Holds(0x0B00, 0x501) {
		t.Errorf("ECM PIDs %v", pids)
	}
}

// An answer the cache holds already is not written again; one whose CWs differ is, and the
// last line of an ECM is the one read.
func TestECMCacheRepeats(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.ecm")
	s1, a1 := testECM(1)
	appendAll(t, path, a1)
	w, err := AppendECMCache(path)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := w.Add(a1); n || err != nil {
		t.Fatalf("the same answer again: written %v, %v", n, err)
	}
	b := a1
	b.Odd = []byte{9, 9, 9, 27, 9, 9, 9, 27}
	if n, err := w.Add(b); !n || err != nil {
		t.Fatalf("another answer to the ECM: written %v, %v", n, err)
	}
	if st := w.Stats(); st.Hits != 1 || st.Misses != 1 || st.Appended != 1 || st.Entries != 1 || st.Mode != "record" {
		t.Errorf("stats %+v", st)
	}
	w.Close()
	c, err := LoadECMCache(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, odd, ok := c.Answer(s1); !ok || !bytes.Equal(odd, b.Odd) {
		t.Errorf("the later answer is not the one read")
	}
	if n := strings.Count(string(readAll(t, path)), "\n"); n != 3 {
		t.Errorf("%d lines, want the first line and 2 answers", n)
	}
}

func readAll(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A last line cut short (a crash, a full disk) costs its ECM only, and the next append starts a
// line of its own.
func TestECMCacheTornLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.ecm")
	s1, a1 := testECM(1)
	s2, a2 := testECM(2)
	s3, a3 := testECM(3)
	appendAll(t, path, a1, a2)
	data := readAll(t, path)
	for _, cut := range []int{1, 20, 80, 100} { // into the CAID, the digest, the even CW, the odd CW
		torn := data[:len(data)-len(a2.AppendLine(nil))+cut]
		if err := os.WriteFile(path, torn, 0o600); err != nil {
			t.Fatal(err)
		}
		c, err := LoadECMCache(path)
		if err != nil {
			t.Fatal(err)
		}
		if !c.Torn || c.Skipped != 1 || c.Len() != 1 || !strings.Contains(c.FirstSkipped, "c.ecm:3: the last line has no newline") {
			t.Fatalf("cut at %d: torn %v, %d skipped (%q), %d answers", cut, c.Torn, c.Skipped, c.FirstSkipped, c.Len())
		}
		if _, _, ok := c.Answer(s1); !ok {
			t.Errorf("cut at %d: the whole line's ECM is not answered", cut)
		}
		if _, _, ok := c.Answer(s2); ok {
			t.Errorf("cut at %d: the torn line's ECM is answered", cut)
		}
		appendAll(t, path, a3)
		c, err = LoadECMCache(path)
		if err != nil {
			t.Fatal(err)
		}
		if c.Torn || c.Skipped != 1 || c.Len() != 2 {
			t.Fatalf("cut at %d, then appended to: torn %v, %d skipped, %d answers; want false, 1, 2", cut, c.Torn, c.Skipped, c.Len())
		}
		for _, s := range [][]byte{s1, s3} {
			if _, _, ok := c.Answer(s); !ok {
				t.Errorf("cut at %d, then appended to: ECM %x not answered", cut, s)
			}
		}
		// The torn ECM, answered again, is appended again and read.
		appendAll(t, path, a2)
		if c, err = LoadECMCache(path); err != nil || c.Len() != 3 {
			t.Fatalf("cut at %d: the torn ECM appended again: %v, %d answers", cut, err, c.Len())
		}
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// A line that is whole but wrong is skipped and counted; the first is named.
func TestECMCacheBadLines(t *testing.T) {
	_, a1 := testECM(1)
	good := string(a1.AppendLine(nil))
	for _, c := range []struct{ line, want string }{
		{"0B00 0x0500 abc 11223366445566FF 0000000000000000", "the digest is not 64 hex digits"},
		{"B00 0x0500 " + strings.Repeat("ab", 32) + " 11223366445566FF 0000000000000000", "the CA system id is not 4 hex digits"},
		{"0B00 0x2000 " + strings.Repeat("ab", 32) + " 11223366445566FF 0000000000000000", "the ECM PID is not a PID"},
		{"0B00 0x0500 " + strings.Repeat("ab", 32) + " 11223366445566F 0000000000000000", "the even CW is not 16 or 32 hex digits"},
		{"0B00 0x0500 " + strings.Repeat("ab", 32) + " 11223366445566FF 00000000000000zz", "the odd CW is not hex"},
		{"0B00 0x0500 " + strings.Repeat("ab", 32) + " 11223366445566FF", "want 5 fields"},
	} {
		text := ecmCacheFirstLine + "# a comment\n\n" + c.line + "\n" + good
		ec, err := ReadECMCache(strings.NewReader(text), "c.ecm")
		if err != nil {
			t.Fatal(err)
		}
		if ec.Len() != 1 || ec.Skipped != 1 || ec.Torn || ec.FirstSkipped != "c.ecm:4: "+c.want && !strings.HasPrefix(ec.FirstSkipped, "c.ecm:4: "+c.want) {
			t.Errorf("%q: %d answers, %d skipped, %q", c.line, ec.Len(), ec.Skipped, ec.FirstSkipped)
		}
		if strings.Contains(strings.ToUpper(ec.FirstSkipped), "11223366445566F") {
			t.Errorf("the message repeats a control word: %q", ec.FirstSkipped)
		}
	}
}

// A file that is not an ECM cache is neither read nor appended to; one cut short in its first
// line holds no answer, and is appended to as a new one.
func TestECMCacheHeader(t *testing.T) {
	dir := t.TempDir()
	other := filepath.Join(dir, "keys.cwl")
	body := []byte("0 11 22 33 66 44 55 66 FF\n")
	if err := os.WriteFile(other, body, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadECMCache(other); !errors.Is(err, ErrNotECMCache) {
		t.Errorf("read: %v, want ErrNotECMCache", err)
	}
	if _, err := AppendECMCache(other); !errors.Is(err, ErrNotECMCache) {
		t.Errorf("append: %v, want ErrNotECMCache", err)
	}
	if got := readAll(t, other); !bytes.Equal(got, body) {
		t.Errorf("the file was changed: %q", got)
	}
	if fi, _ := os.Stat(other); fi.Mode().Perm() != 0o644 {
		t.Errorf("the file's mode was changed to %v", fi.Mode().Perm())
	}

	cut := filepath.Join(dir, "cut.ecm")
	if err := os.WriteFile(cut, []byte(ecmCacheFirstLine[:10]), 0o644); err != nil {
		t.Fatal(err)
	}
	if c, err := LoadECMCache(cut); err != nil || c.Len() != 0 || c.Skipped != 0 {
		t.Fatalf("a first line cut short: %v", err)
	}
	s1, a1 := testECM(1)
	appendAll(t, cut, a1)
	if got := string(readAll(t, cut)); got != ecmCacheFirstLine+string(a1.AppendLine(nil)) {
		t.Errorf("appended to a first line cut short: %q", got)
	}
	if fi, _ := os.Stat(cut); fi.Mode().Perm() != 0o600 {
		t.Errorf("an existing cache appended to has mode %v, want 0600", fi.Mode().Perm())
	}
	if c, err := LoadECMCache(cut); err != nil || c.Len() != 1 {
		t.Fatalf("%v", err)
	} else if _, _, ok := c.Answer(s1); !ok {
		t.Error("not answered")
	}
}

func TestECMCacheLineForm(t *testing.T) {
	a := ECMAnswer{CAID: 0x0B00, PID: 0x500, Even: []byte{0x11, 0x22, 0x33, 0x66, 0x44, 0x55, 0x66, 0xFF}, Odd: make([]byte, 8)}
	a.Digest[0], a.Digest[31] = 0xAB, 0x01
	want := "0B00 0x0500 ab" + strings.Repeat("00", 30) + "01 11223366445566FF 0000000000000000\n"
	if got := string(a.AppendLine(nil)); got != want {
		t.Errorf("line %q\nwant %q", got, want)
	}
}

// FuzzParseECMCacheLine: any line either fails with a message that repeats none of its hex, or
// gives an answer whose line reads back as the same answer, alone and in a cache.
func FuzzParseECMCacheLine(f *testing.F) {
	_, a := testECM(7)
	f.Add(strings.TrimSuffix(string(a.AppendLine(nil)), "\n"))
	f.Add("0B00 1280 " + strings.Repeat("0", 64) + " 00112233445566778899AABBCCDDEEFF 0000000000000000")
	f.Add("0b00 0x1fff " + strings.Repeat("f", 64) + " 1122336644556 0")
	f.Add("")
	f.Fuzz(func(t *testing.T, line string) {
		a, err := ParseECMCacheLine(line)
		if err != nil {
			return
		}
		if len(a.Even) != 8 && len(a.Even) != 16 || len(a.Odd) != 8 && len(a.Odd) != 16 || a.PID > 0x1FFF {
			t.Fatalf("%q: even %d bytes, odd %d, PID %#x", line, len(a.Even), len(a.Odd), a.PID)
		}
		out := a.AppendLine(nil)
		b, err := ParseECMCacheLine(strings.TrimSuffix(string(out), "\n"))
		if err != nil || b.CAID != a.CAID || b.PID != a.PID || b.Digest != a.Digest || !bytes.Equal(b.Even, a.Even) || !bytes.Equal(b.Odd, a.Odd) {
			t.Fatalf("%q wrote %q, read back as %+v, %v", line, out, b, err)
		}
		c, err := ReadECMCache(strings.NewReader(ecmCacheFirstLine+line+"\n"), "f")
		if err != nil || c.Len() != 1 || c.Skipped != 0 {
			t.Fatalf("%q in a cache: %v", line, err)
		}
		got := c.answers[a.Digest]
		if !bytes.Equal(got.Even, a.Even) || !bytes.Equal(got.Odd, a.Odd) {
			t.Fatalf("%q in a cache reads as another answer", line)
		}
	})
}

// A cache created by a writer that appended nothing is removed when it closes; one that
// existed stays.
func TestECMCacheCreatedEmpty(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.ecm")
	appendAll(t, path)
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a new cache without an answer is left behind: %v", err)
	}
	if err := os.WriteFile(path, []byte(ecmCacheFirstLine), 0o600); err != nil {
		t.Fatal(err)
	}
	appendAll(t, path)
	if got := string(readAll(t, path)); got != ecmCacheFirstLine {
		t.Fatalf("an existing cache became %q", got)
	}
}
