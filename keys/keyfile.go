package keys

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
)

// Format is the layout of a key file.
type Format int

const (
	// FormatList is one control word per line, used in turn at each crypto period whatever
	// its parity (TSDuck's CW file).
	FormatList Format = iota + 1
	// FormatPairs is one line per pair of crypto periods: the even CW then the odd CW, with or
	// without a separator between them (the 32 hex digits of tsdecrypt's -Y).
	FormatPairs
	// FormatCWL is an OSCam control word log (.cwl): lines "P B0 B1 .. B7 # HH:MM:SS" where
	// P is 0 for an even key and 1 for an odd one.
	FormatCWL
)

// String returns a short name of the format, as the command may print it.
func (f Format) String() string {
	switch f {
	case FormatList:
		return "one control word per line"
	case FormatPairs:
		return "even/odd pairs"
	case FormatCWL:
		return "OSCam CW log"
	}
	return fmt.Sprintf("Format(%d)", int(f))
}

// Period is one crypto period of known parity and its control word.
type Period struct {
	Odd  bool   // the parity: false for even (TSC 10), true for odd (TSC 11)
	CW   []byte // the control word, or nil when the file has no key for this period
	Line int    // the line of the key file the CW comes from; 0 for a period without key
}

// KeyFile is the content of a key file. A file in FormatList gives a cyclic list of control
// words without parity (CWs); the other formats give crypto periods of known parity (Periods).
type KeyFile struct {
	Name   string // the file name as given, used in messages
	Format Format

	// CWs holds the control words of a FormatList file, in file order.
	CWs [][]byte

	// Periods holds the crypto periods of a FormatPairs or FormatCWL file, in stream order,
	// normalised so that parities alternate, also from the last period round to the first:
	// for a pair file, even and odd CW of each line in turn; for a .cwl, one period per line,
	// where two lines of the same parity in a row get a period without key between them
	// (an ECM answer of the other parity that was not logged), and a line repeating the
	// line before it (same parity, same CW) is dropped. See NewPeriods.
	Periods []Period

	// Notes are remarks on lines that were read but may not do what the user expects, such
	// as a missing crypto period in a .cwl, each "name:line: text".
	Notes []string
}

// Keys returns every control word of the file, sharing their storage: modifying them (with
// ReduceEntropy, say) changes the file's keys and those of schedules built from it afterwards
// (a Schedule copies the keys when it is made).
func (k *KeyFile) Keys() [][]byte {
	if k.Format == FormatList {
		return k.CWs
	}
	var cws [][]byte
	for _, p := range k.Periods {
		if p.CW != nil {
			cws = append(cws, p.CW)
		}
	}
	return cws
}

// Schedule returns the key schedule for the file: NewList over CWs for a FormatList file,
// NewPeriods over Periods for the others.
func (k *KeyFile) Schedule() *Schedule {
	if k.Format == FormatList {
		return NewList(k.CWs)
	}
	return NewPeriods(k.Periods)
}

// LoadKeyFile reads the key file at path (see ReadKeyFile).
func LoadKeyFile(path string, size int) (*KeyFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadKeyFile(f, path, size)
}

// ReadKeyFile reads a key file of control words of size bytes, telling its format from its
// content. name is used in messages.
//
// In every format, blank lines and lines whose first non-blank character is '#', ';' or '*'
// are comments, as is anything after a '#' on a line; hex digits may be separated by spaces,
// ':' or '-' as in ParseCW. The first line that is not a comment decides the format:
//
//	0 11 22 33 66 44 55 66 FF # 21:10:29      a parity digit, then size bytes: FormatCWL
//	11223366445566FF 0102030609080706         2×size bytes: FormatPairs (even, then odd)
//	11223366445566FF                          size bytes: FormatList
//
// A file whose name ends in ".cwl", or whose comments before the first key say "control word
// log" (OSCam's header), is read as FormatCWL from the start, so that a bad first line gets
// the .cwl error message. Every following line must be in the same format. A line that is not
// is reported as a *LineError giving the name, the line number and what was expected, such as
// "k.cwl:7: want a parity digit 0 or 1 then 8 hex bytes, found 7 bytes". A file without any
// key gives an error wrapping ErrEmptyList.
func ReadKeyFile(r io.Reader, name string, size int) (*KeyFile, error) {
	kf := &KeyFile{Name: name}
	if strings.HasSuffix(strings.ToLower(name), ".cwl") {
		kf.Format = FormatCWL
	}
	var periods []Period
	var arena []byte // storage for the control words of a list
	sc := bufio.NewScanner(r)
	line := 0
	for sc.Scan() {
		line++
		text := sc.Text()
		if line == 1 {
			text = strings.TrimPrefix(text, "\uFEFF") // a byte order mark left by some editors
		}
		t := strings.TrimSpace(text)
		if t == "" {
			continue
		}
		if t[0] == '#' || t[0] == ';' || t[0] == '*' {
			if kf.Format == 0 && strings.Contains(strings.ToLower(t), "control word log") {
				kf.Format = FormatCWL
			}
			continue
		}
		if i := strings.IndexByte(t, '#'); i >= 0 {
			t = strings.TrimSpace(t[:i])
		}
		if kf.Format == 0 {
			kf.Format = detect(t, size)
			if kf.Format == 0 {
				return nil, &LineError{File: name, Line: line, Err: fmt.Errorf(
					"want a control word of %d hex digits, an even and an odd CW (%d hex digits), or an OSCam .cwl line (0 or 1, then %d hex bytes); %s",
					2*size, 4*size, size, describeHex(t))}
			}
		}
		switch kf.Format {
		case FormatList:
			cw, err := ParseCW(t, size)
			if err != nil {
				return nil, &LineError{File: name, Line: line, Err: fmt.Errorf(
					"want one control word of %d hex digits, as on the lines before; %s", 2*size, describeHex(t))}
			}
			// Control words share arena blocks rather than taking an allocation each: a
			// list may hold millions of them. The blocks grow from 64 control words to 4096,
			// as most files hold a few: a program reading many of them (a batch of
			// recordings) would otherwise clear a whole block for each.
			if len(arena)+size > cap(arena) {
				arena = make([]byte, 0, min(max(64, 2*cap(arena)/size), 4096)*size)
			}
			arena = append(arena, cw...)
			kf.CWs = append(kf.CWs, arena[len(arena)-size:len(arena):len(arena)])
		case FormatPairs:
			b, err := ParseCW(t, 2*size)
			if err != nil {
				return nil, &LineError{File: name, Line: line, Err: fmt.Errorf(
					"want an even and an odd control word of %d hex digits each, as on the lines before; %s", 2*size, describeHex(t))}
			}
			periods = append(periods,
				Period{Odd: false, CW: b[:size:size], Line: line},
				Period{Odd: true, CW: b[size:], Line: line})
		case FormatCWL:
			odd, cw, err := parseCWLLine(t, size)
			if err != nil {
				return nil, &LineError{File: name, Line: line, Err: fmt.Errorf(
					"want a parity digit 0 or 1 then %d hex bytes; %v", size, err)}
			}
			periods = append(periods, Period{Odd: odd, CW: cw, Line: line})
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s:%d: %w", name, line+1, err)
	}
	if len(kf.CWs) == 0 && len(periods) == 0 {
		return nil, fmt.Errorf("%s: %w", name, ErrEmptyList)
	}
	if kf.Format != FormatList {
		var gaps []Period
		kf.Periods, gaps = alternate(periods)
		for _, g := range gaps {
			kf.Notes = append(kf.Notes, fmt.Sprintf("%s:%d: two %s keys in a row: the %s crypto period between them has no key and stays scrambled",
				name, g.Line, parityName(g.Odd), parityName(!g.Odd)))
		}
	}
	return kf, nil
}

// detect tells the format of the first key line t (comment removed), or 0.
func detect(t string, size int) Format {
	if _, _, err := parseCWLLine(t, size); err == nil {
		return FormatCWL
	}
	n, _, col := hexCount(t)
	switch {
	case col != 0:
		return 0
	case n == 2*size:
		return FormatList
	case n == 4*size:
		return FormatPairs
	}
	return 0
}

// parseCWLLine decodes a .cwl key line (comment removed): a parity digit, white space, then
// size bytes in hex. The error says what was found instead, without repeating key digits.
func parseCWLLine(t string, size int) (odd bool, cw []byte, err error) {
	f := strings.Fields(t)
	if len(f) < 2 || (f[0] != "0" && f[0] != "1") {
		return false, nil, fmt.Errorf("found no parity digit before the key")
	}
	rest := strings.TrimSpace(t[len(f[0]):])
	cw, err = ParseCW(rest, size)
	if err != nil {
		n, bad, col := hexCount(rest)
		if col != 0 {
			return false, nil, fmt.Errorf("found %q among the key bytes", bad)
		}
		if n%2 == 0 {
			return false, nil, fmt.Errorf("found %d bytes", n/2)
		}
		return false, nil, fmt.Errorf("found %d hex digits", n)
	}
	return f[0] == "1", cw, nil
}

// describeHex says what a line that is not a key holds, without repeating its digits.
func describeHex(t string) string {
	n, bad, col := hexCount(t)
	if col != 0 {
		return fmt.Sprintf("found %q at column %d", bad, col)
	}
	return fmt.Sprintf("found %d hex digits", n)
}

func parityName(odd bool) string {
	if odd {
		return "odd"
	}
	return "even"
}

// alternate normalises a sequence of crypto periods so that parities alternate, the last
// period included against the first (the list is used cyclically). A period equal to the one
// before it (same parity and CW) is the same crypto period logged twice and is dropped; two
// different keys of the same parity in a row leave out a period of the other parity, for which
// a period without key is inserted. gaps lists the second period of each such pair (not the
// one at the wrap).
func alternate(in []Period) (out []Period, gaps []Period) {
	out = make([]Period, 0, len(in)+1)
	for _, p := range in {
		if n := len(out); n > 0 && out[n-1].Odd == p.Odd {
			if q := out[n-1]; q.CW != nil && p.CW != nil && bytes.Equal(q.CW, p.CW) {
				continue
			}
			if out[n-1].CW != nil || p.CW != nil {
				gaps = append(gaps, p)
			}
			out = append(out, Period{Odd: !p.Odd})
		}
		out = append(out, p)
	}
	switch n := len(out); {
	case n == 1:
		out = append(out, Period{Odd: !out[0].Odd})
	case n > 1 && out[n-1].Odd == out[0].Odd:
		if out[n-1].CW != nil && out[0].CW != nil && bytes.Equal(out[n-1].CW, out[0].CW) {
			out = out[:n-1]
		} else {
			out = append(out, Period{Odd: !out[0].Odd})
		}
	}
	return out, gaps
}
