package keys

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
)

const cwlHeader = "# OSCam cardserver v1.20 - http://www.streamboard.tv/oscam/\n" +
	"# control word log file for use with tsdec offline decrypter\n" +
	"# DATE 2013-06-20, TIME 21:10:29, TZ CEST\n" +
	"# CAID 0x0B00, SID 0x0001, SERVICE \"My_Channel\"\n"

// cw builds a recognisable 8-byte key from one byte.
func cw(b byte) []byte { return []byte{b, b, b, 3 * b, b, b, b, 3 * b} }

// hexCW writes cw(b) in the .cwl style: "%02X " per byte.
func hexCW(b byte) string {
	var sb strings.Builder
	for _, x := range cw(b) {
		fmt.Fprintf(&sb, "%02X ", x)
	}
	return strings.TrimSpace(sb.String())
}

func TestReadKeyFileFormats(t *testing.T) {
	type per struct {
		odd bool
		b   byte // 0: no key
	}
	tests := []struct {
		name    string
		file    string
		in      string
		format  Format
		list    []byte // FormatList: the CWs, by their first byte
		periods []per
		notes   int
	}{
		{
			name: "TSDuck list", file: "k.txt", format: FormatList,
			in:   "# keys\n\n" + fmt.Sprintf("%x\n  %x  # second\n\t\n%s\n", cw(1), cw(2), hexCW(3)),
			list: []byte{1, 2, 3},
		},
		{
			name: "list with CRLF, a BOM and no final newline", file: "k.txt", format: FormatList,
			in:   "\uFEFF" + fmt.Sprintf("%x\r\n; comment\r\n* comment\r\n%X", cw(1), cw(2)),
			list: []byte{1, 2},
		},
		{
			name: "pairs without separator", file: "pairs.txt", format: FormatPairs,
			in:      fmt.Sprintf("%x%x\n%x%x\n", cw(1), cw(2), cw(3), cw(4)),
			periods: []per{{false, 1}, {true, 2}, {false, 3}, {true, 4}},
		},
		{
			name: "pairs with separators and comments", file: "pairs.txt", format: FormatPairs,
			in:      fmt.Sprintf("# even odd\n%x:%x  # one\n%s  %s\n", cw(1), cw(2), hexCW(3), hexCW(4)),
			periods: []per{{false, 1}, {true, 2}, {false, 3}, {true, 4}},
		},
		{
			name: "cwl", file: "20130620_I0001_My_Channel.cwl", format: FormatCWL,
			in: cwlHeader +
				"0 " + hexCW(1) + " # 21:10:29\n" +
				"1 " + hexCW(2) + " # 21:10:39\n" +
				"0 " + hexCW(3) + " # 21:10:49\n" +
				"1 " + hexCW(4) + " # 21:10:59\n",
			periods: []per{{false, 1}, {true, 2}, {false, 3}, {true, 4}},
		},
		{
			name: "cwl told by its content", file: "keys", format: FormatCWL,
			in:      "1 " + hexCW(2) + " # 21:10:39\n0 " + hexCW(3) + "\n",
			periods: []per{{true, 2}, {false, 3}},
		},
		{
			name: "cwl: a line logged twice is one period", file: "k.cwl", format: FormatCWL,
			in:      cwlHeader + "0 " + hexCW(1) + "\n0 " + hexCW(1) + "\n1 " + hexCW(2) + "\n",
			periods: []per{{false, 1}, {true, 2}},
		},
		{
			name: "cwl: a missing period gets no key", file: "k.cwl", format: FormatCWL,
			in:      "0 " + hexCW(1) + "\n1 " + hexCW(2) + "\n1 " + hexCW(4) + "\n0 " + hexCW(5) + "\n",
			periods: []per{{false, 1}, {true, 2}, {false, 0}, {true, 4}, {false, 5}, {true, 0}},
			notes:   1,
		},
		{
			name: "cwl: one line", file: "k.cwl", format: FormatCWL,
			in:      "1 " + hexCW(7) + "\n",
			periods: []per{{true, 7}, {false, 0}},
		},
		{
			name: "cwl: the last line repeats the first", file: "k.cwl", format: FormatCWL,
			in:      "0 " + hexCW(1) + "\n1 " + hexCW(2) + "\n0 " + hexCW(1) + "\n",
			periods: []per{{false, 1}, {true, 2}},
		},
		{
			name: "cwl: odd number of lines", file: "k.cwl", format: FormatCWL,
			in:      "0 " + hexCW(1) + "\n1 " + hexCW(2) + "\n0 " + hexCW(3) + "\n",
			periods: []per{{false, 1}, {true, 2}, {false, 3}, {true, 0}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			kf, err := ReadKeyFile(strings.NewReader(tc.in), tc.file, CWSize)
			if err != nil {
				t.Fatal(err)
			}
			if kf.Format != tc.format || kf.Name != tc.file {
				t.Fatalf("format %v name %q, want %v %q", kf.Format, kf.Name, tc.format, tc.file)
			}
			if len(kf.Notes) != tc.notes {
				t.Errorf("notes %q, want %d", kf.Notes, tc.notes)
			}
			if tc.format == FormatList {
				if len(kf.CWs) != len(tc.list) || kf.Periods != nil {
					t.Fatalf("CWs %x periods %v", kf.CWs, kf.Periods)
				}
				for i, b := range tc.list {
					if !bytes.Equal(kf.CWs[i], cw(b)) {
						t.Errorf("CW %d = %x, want %x", i, kf.CWs[i], cw(b))
					}
				}
				return
			}
			if len(kf.Periods) != len(tc.periods) || kf.CWs != nil {
				t.Fatalf("periods %v, want %v", kf.Periods, tc.periods)
			}
			for i, w := range tc.periods {
				p := kf.Periods[i]
				var want []byte
				if w.b != 0 {
					want = cw(w.b)
				}
				if p.Odd != w.odd || !bytes.Equal(p.CW, want) || (p.CW == nil) != (want == nil) || (p.Line == 0) != (want == nil) {
					t.Errorf("period %d = %v %x line %d, want %v %x", i, p.Odd, p.CW, p.Line, w.odd, want)
				}
			}
		})
	}
}

func TestReadKeyFileErrors(t *testing.T) {
	tests := []struct {
		name, file, in string
		line           int
		msg            string // the whole message
	}{
		{"not a key", "k.txt", "# x\nhello\n", 2,
			`k.txt:2: want a control word of 16 hex digits, an even and an odd CW (32 hex digits), or an OSCam .cwl line (0 or 1, then 8 hex bytes); found 'h' at column 1`},
		{"wrong length first", "k.txt", "\n112233\n", 2,
			`k.txt:2: want a control word of 16 hex digits, an even and an odd CW (32 hex digits), or an OSCam .cwl line (0 or 1, then 8 hex bytes); found 6 hex digits`},
		{"list: short line", "k.txt", "11223366445566ff\n# c\n11223366445566f\n", 3,
			`k.txt:3: want one control word of 16 hex digits, as on the lines before; found 15 hex digits`},
		{"list: pair among singles", "k.txt", "11223366445566ff\n11223366445566ff11223366445566ff\n", 2,
			`k.txt:2: want one control word of 16 hex digits, as on the lines before; found 32 hex digits`},
		{"list: bad character", "k.txt", "11223366445566ff\n1122336644x566ff\n", 2,
			`k.txt:2: want one control word of 16 hex digits, as on the lines before; found 'x' at column 11`},
		{"pairs: single among pairs", "p.txt", "11223366445566ff11223366445566ff\n11223366445566ff\n", 2,
			`p.txt:2: want an even and an odd control word of 16 hex digits each, as on the lines before; found 16 hex digits`},
		{"pairs: bad character", "p.txt", "11223366445566ff11223366445566ff\n11223366445566ff/11223366445566ff\n", 2,
			`p.txt:2: want an even and an odd control word of 16 hex digits each, as on the lines before; found '/' at column 17`},
		{"cwl: parity 2", "k.cwl", cwlHeader + "0 " + hexCW(1) + "\n1 " + hexCW(2) + "\n2 " + hexCW(3) + "\n", 7,
			`k.cwl:7: want a parity digit 0 or 1 then 8 hex bytes; found no parity digit before the key`},
		{"cwl: seven bytes", "k.cwl", cwlHeader + "0 " + hexCW(1) + "\n1 " + hexCW(2) + "\n0 01 02 03 06 04 05 06 # 21:11:00\n", 7,
			`k.cwl:7: want a parity digit 0 or 1 then 8 hex bytes; found 7 bytes`},
		{"cwl: odd digits", "k.cwl", "0 01 02 03 06 04 05 06 0\n", 1,
			`k.cwl:1: want a parity digit 0 or 1 then 8 hex bytes; found 15 hex digits`},
		{"cwl: bad character", "k.cwl", "0 01 02 03 06 04 05 06 0g\n", 1,
			`k.cwl:1: want a parity digit 0 or 1 then 8 hex bytes; found 'g' among the key bytes`},
		{"cwl: no parity", "k.cwl", hexCW(1) + "\n", 1,
			`k.cwl:1: want a parity digit 0 or 1 then 8 hex bytes; found no parity digit before the key`},
		{"cwl told by the header: list line", "log.txt", cwlHeader + "11223366445566ff\n", 5,
			`log.txt:5: want a parity digit 0 or 1 then 8 hex bytes; found no parity digit before the key`},
		{"cwl: list line after cwl lines", "log.txt", "0 " + hexCW(1) + "\n11223366445566ff\n", 2,
			`log.txt:2: want a parity digit 0 or 1 then 8 hex bytes; found no parity digit before the key`},
		{"cwl: parity glued to the key", "k.cwl", "011223366445566ff\n", 1,
			`k.cwl:1: want a parity digit 0 or 1 then 8 hex bytes; found no parity digit before the key`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			kf, err := ReadKeyFile(strings.NewReader(tc.in), tc.file, CWSize)
			var le *LineError
			if !errors.As(err, &le) {
				t.Fatalf("got %v, %v; want a *LineError", kf, err)
			}
			if le.File != tc.file || le.Line != tc.line || err.Error() != tc.msg {
				t.Fatalf("got  %q (line %d)\nwant %q (line %d)", err, le.Line, tc.msg, tc.line)
			}
		})
	}
}

func TestReadKeyFileEmpty(t *testing.T) {
	for _, in := range []string{"", "\n\n", "# only\n; comments\n", cwlHeader} {
		if _, err := ReadKeyFile(strings.NewReader(in), "e.cwl", CWSize); !errors.Is(err, ErrEmptyList) || !strings.HasPrefix(err.Error(), "e.cwl: ") {
			t.Errorf("%q: %v", in, err)
		}
	}
}

func TestReadKeyFileReadError(t *testing.T) {
	boom := errors.New("boom")
	_, err := ReadKeyFile(&failAfter{r: strings.NewReader("11223366445566ff\n"), err: boom}, "k.txt", CWSize)
	if !errors.Is(err, boom) || !strings.HasPrefix(err.Error(), "k.txt:2: ") {
		t.Fatalf("%v", err)
	}
	// A line longer than the scanner accepts is an error, not a silent end of file.
	long := strings.Repeat("1", 100000)
	if _, err := ReadKeyFile(strings.NewReader("11223366445566ff\n"+long+"\n"), "k.txt", CWSize); err == nil {
		t.Fatal("long line accepted")
	}
}

// failAfter returns its reader's data, then err.
type failAfter struct {
	r   *strings.Reader
	err error
}

func (f *failAfter) Read(p []byte) (int, error) {
	if f.r.Len() == 0 {
		return 0, f.err
	}
	return f.r.Read(p)
}

func TestReadKeyFileSize16(t *testing.T) {
	k := "000102030405060708090a0b0c0d0e0f"
	kf, err := ReadKeyFile(strings.NewReader(k+"\n"+k+"\n"), "aes.txt", 16)
	if err != nil || kf.Format != FormatList || len(kf.CWs) != 2 || len(kf.CWs[1]) != 16 {
		t.Fatalf("%+v %v", kf, err)
	}
	kf, err = ReadKeyFile(strings.NewReader(k+k+"\n"), "aes.txt", 16)
	if err != nil || kf.Format != FormatPairs || len(kf.Periods) != 2 || len(kf.Periods[1].CW) != 16 {
		t.Fatalf("%+v %v", kf, err)
	}
}

func TestReadKeyFileList(t *testing.T) {
	in := "# keys of the demo\n\n11223366445566ff\n  0102030608090a1b  # second period\n\t\na1:b2:c3:b6:d4:e5:f6:cf\n"
	kf, err := ReadKeyFile(strings.NewReader(in), "k.txt", CWSize)
	if err != nil || kf.Format != FormatList || len(kf.CWs) != 3 || kf.CWs[1][7] != 0x1b || kf.CWs[2][0] != 0xa1 {
		t.Fatalf("ReadKeyFile = %+v, %v", kf, err)
	}
	_, err = ReadKeyFile(strings.NewReader("11223366445566ff\n\nnot a key\n"), "k.txt", CWSize)
	var le *LineError
	if !errors.As(err, &le) || le.Line != 3 || le.File != "k.txt" || !strings.HasPrefix(err.Error(), "k.txt:3: ") {
		t.Fatalf("bad line: %v", err)
	}
	if _, err := ReadKeyFile(strings.NewReader("# nothing\n\n"), "k.txt", CWSize); !errors.Is(err, ErrEmptyList) {
		t.Fatalf("empty list: %v", err)
	}
}

func TestKeyFileKeysShareStorage(t *testing.T) {
	in := fmt.Sprintf("%x%x\n", []byte{1, 2, 3, 0, 4, 5, 6, 0}, []byte{7, 8, 9, 0, 1, 1, 1, 0})
	kf, err := ReadKeyFile(strings.NewReader(in), "p.txt", CWSize)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range kf.Keys() {
		ReduceEntropy(k)
	}
	// The schedule copies the keys as they are when it is made.
	s := kf.Schedule()
	if len(kf.Keys()) != 2 || !ChecksumOK(s.CWs()[0]) || !ChecksumOK(s.CWs()[1]) {
		t.Fatalf("keys %x, schedule %x", kf.Keys(), s.CWs())
	}
	// The halves of a pair line share an array: reducing the even key must not touch the odd one.
	if !bytes.Equal(s.CWs()[1], []byte{7, 8, 9, 24, 1, 1, 1, 3}) {
		t.Fatalf("odd key %x", s.CWs()[1])
	}
	lf, _ := ReadKeyFile(strings.NewReader("11223366445566ff\n"), "k.txt", CWSize)
	if len(lf.Keys()) != 1 {
		t.Fatal("list keys")
	}
}

func TestFormatString(t *testing.T) {
	for f, want := range map[Format]string{FormatList: "one control word per line", FormatPairs: "even/odd pairs", FormatCWL: "OSCam CW log", 0: "Format(0)"} {
		if f.String() != want {
			t.Errorf("%d: %q", int(f), f.String())
		}
	}
}

func FuzzReadKeyFile(f *testing.F) {
	f.Add([]byte("11223366445566ff\n"))
	f.Add([]byte(cwlHeader + "0 " + hexCW(1) + " # 1\n1 " + hexCW(2) + "\n"))
	f.Add([]byte("11223366445566ff:0102030609080706\n"))
	f.Add([]byte("\uFEFF0x1122 3366-4455:66ff\r\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		kf, err := ReadKeyFile(bytes.NewReader(b), "f", CWSize)
		if err != nil {
			return
		}
		for _, k := range kf.Keys() {
			if len(k) != CWSize {
				t.Fatalf("key of %d bytes", len(k))
			}
		}
		if n := len(kf.Periods); n%2 != 0 {
			t.Fatalf("%d periods", n)
		}
		for i, p := range kf.Periods {
			if p.Odd == kf.Periods[(i+1)%len(kf.Periods)].Odd {
				t.Fatalf("periods %d and %d have the same parity", i, i+1)
			}
		}
		s := kf.Schedule()
		for i := range 20 {
			if k := s.KeyFor(b[i%len(b)]&1 == 1); k != NoKey && (k < 0 || k >= len(s.CWs())) {
				t.Fatalf("key index %d of %d", k, len(s.CWs()))
			}
		}
	})
}

func TestReadKeyFileNotes(t *testing.T) {
	in := cwlHeader + "0 " + hexCW(1) + "\n1 " + hexCW(2) + "\n1 " + hexCW(4) + "\n"
	kf, err := ReadKeyFile(strings.NewReader(in), "k.cwl", CWSize)
	if err != nil {
		t.Fatal(err)
	}
	want := "k.cwl:7: two odd keys in a row: the even crypto period between them has no key and stays scrambled"
	if len(kf.Notes) != 1 || kf.Notes[0] != want {
		t.Fatalf("notes %q", kf.Notes)
	}
}

// A NUL byte in a key line is named as such, not counted away.
func TestKeyFileNUL(t *testing.T) {
	for _, in := range []string{"1122336644556\x0066ff\n", "11223366445566ff\n01020306080\x00090a1b\n"} {
		_, err := ReadKeyFile(strings.NewReader(in), "k.txt", CWSize)
		if err == nil || !strings.Contains(err.Error(), `'\x00' at column`) {
			t.Errorf("%q: %v, want the NUL named", in, err)
		}
	}
}
