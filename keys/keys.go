// Package keys reads control words the way people hold them and decides which control word
// applies to each scrambled packet of a stream.
//
// A control word (CW) is given in hex; spaces, ':' and '-' may separate its digits (ParseCW), as a
// BISS-1 session word of 12 or 16 digits (ParseBISS), or in an environment variable (FromEnv).
// Key files (ReadKeyFile) hold one CW per line (TSDuck's form), EVEN ODD pairs per line, or an
// OSCam .cwl log; the format is told from the content. An ECM cache (ReadECMCache,
// AppendECMCache) holds a key server's answers, one line per distinct ECM, so that a recording
// that carries its ECMs can be descrambled later without the server. A Schedule turns them into a cycle of
// crypto periods: the first CW applies to the first crypto period and every change of
// scrambling parity moves to the next, cyclically; the cycle is immutable, so each PID of a
// stream can follow it on its own (Start, Next, KeyAt); Sync tries the other periods' keys,
// nearest first, when the expected one does not fit (the caller's trial tells, with
// ts.PESStartOK for instance).
//
// A Source is a set of key slots, as a DVB descrambler's, that control words arrive in while
// the stream runs: Live takes them from a key server answering the stream's ECMs, or from a
// CW log that grows (Follow), and keeps, for each slot and parity, the CWs in order of arrival
// with their arrival numbers; each PID uses a slot (MapPID). A Source decides nothing: which
// CW applies to each crypto period, and so to each packet, is decided by package keys/period,
// over a Schedule or a Source (a period takes the first CW of its parity that arrived after it
// began, or the one its slot held then).
package keys

import (
	"errors"
	"fmt"
	"strings"

	"github.com/tsdescramble/tsdescramble/csa"
)

// CWSize is the size of a DVB-CSA2 control word in bytes, [csa.CWSize]: the cipher package
// owns the number, and keys, which only parses and schedules control words, refers to it.
const CWSize = csa.CWSize

// ParseCW decodes a control word of size bytes from hex digits. Spaces, tabs, ':' and '-' between
// the digits are ignored, and a leading "0x" is allowed, so "11 22 33 66 44 55 66 ff",
// "11:22:33:66:44:55:66:FF" and "0x11223366445566ff" are the same key.
func ParseCW(s string, size int) ([]byte, error) {
	t := strings.TrimSpace(s)
	if len(t) > 2 && (t[:2] == "0x" || t[:2] == "0X") {
		t = t[2:]
	}
	cw := make([]byte, 0, size)
	var hi byte
	half := false
	digits := 0
	for i := 0; i < len(t); i++ {
		c := t[i]
		var v byte
		switch {
		case c >= '0' && c <= '9':
			v = c - '0'
		case c >= 'a' && c <= 'f':
			v = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			v = c - 'A' + 10
		case c == ' ' || c == '\t' || c == ':' || c == '-':
			continue
		default:
			return nil, fmt.Errorf("want %d hex digits, found %q", 2*size, c)
		}
		digits++
		if half {
			cw = append(cw, hi<<4|v)
		} else {
			hi = v
		}
		half = !half
	}
	if digits != 2*size {
		return nil, fmt.Errorf("want %d hex digits, found %d", 2*size, digits)
	}
	return cw, nil
}

// ReduceEntropy overwrites bytes 3 and 7 of an 8-byte control word with the checksums of bytes
// 0-2 and 4-6 (mod 256), the 48-bit form that DVB regulations ask scramblers to use and that
// TSDuck applies by default. Other sizes are left unchanged.
func ReduceEntropy(cw []byte) {
	if len(cw) != CWSize {
		return
	}
	cw[3] = cw[0] + cw[1] + cw[2]
	cw[7] = cw[4] + cw[5] + cw[6]
}

// ChecksumOK reports whether bytes 3 and 7 of an 8-byte control word hold the checksums of
// bytes 0-2 and 4-6, as in a 48-bit CW.
func ChecksumOK(cw []byte) bool {
	return len(cw) == CWSize && cw[3] == cw[0]+cw[1]+cw[2] && cw[7] == cw[4]+cw[5]+cw[6]
}

// LineError reports a line of a key file that could not be read.
type LineError struct {
	File string // the file name as given
	Line int    // 1-based line number
	Err  error  // what is wrong
}

func (e *LineError) Error() string { return fmt.Sprintf("%s:%d: %v", e.File, e.Line, e.Err) }

func (e *LineError) Unwrap() error { return e.Err }

// ErrEmptyList is returned for a CW file that holds no control word.
var ErrEmptyList = errors.New("no control word found")
