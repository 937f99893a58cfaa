package keys

import (
	"fmt"
	"os"
	"strings"
)

// ParseBISS decodes a BISS-1 session word into the 8-byte control word it stands for.
//
// Twelve hex digits are the six key bytes k0..k5 of a BISS-1 session word; the control word is
// k0 k1 k2 (k0+k1+k2) k3 k4 k5 (k3+k4+k5), the sums taken mod 256 (the checksum bytes of a 48-bit
// CW, as IRDs and tsdecrypt's -Q insert them). Sixteen hex digits are taken as the expanded CW
// itself and used as given, checksum bytes included, as tsdecrypt does. Separators and a "0x"
// prefix are allowed as in ParseCW. The same CW serves both parities.
func ParseBISS(s string) ([]byte, error) {
	n, bad, col := hexCount(s)
	switch {
	case col != 0:
		return nil, fmt.Errorf("want 12 hex digits (a BISS-1 session word) or 16 (a whole CW), found %q", bad)
	case n == 12:
		k, err := ParseCW(s, 6)
		if err != nil {
			return nil, err
		}
		return []byte{k[0], k[1], k[2], k[0] + k[1] + k[2], k[3], k[4], k[5], k[3] + k[4] + k[5]}, nil
	case n == 16:
		return ParseCW(s, CWSize)
	default:
		return nil, fmt.Errorf("want 12 hex digits (a BISS-1 session word) or 16 (a whole CW), found %d", n)
	}
}

// FromEnv reads a control word of size bytes from the environment variable name, in any form
// ParseCW accepts. Keeping a key in the environment keeps it out of the process list (ps shows
// arguments, not the environment). Errors name the variable and describe what is wrong with
// its value without ever showing the value, or any character of it.
func FromEnv(name string, size int) ([]byte, error) {
	v, ok := os.LookupEnv(name)
	if !ok {
		return nil, fmt.Errorf("environment variable %s is not set (want a control word of %d hex digits)", name, 2*size)
	}
	if strings.TrimSpace(v) == "" {
		return nil, fmt.Errorf("environment variable %s is empty (want a control word of %d hex digits)", name, 2*size)
	}
	n, _, col := hexCount(v)
	if col != 0 {
		return nil, fmt.Errorf("environment variable %s: character %d is not a hex digit (want a control word of %d hex digits)", name, col, 2*size)
	}
	if n != 2*size {
		return nil, fmt.Errorf("environment variable %s holds %d hex digits, want %d", name, n, 2*size)
	}
	return ParseCW(v, size)
}

// hexCount counts the hex digits of s the way ParseCW reads it (surrounding space, a "0x"
// prefix and the separators ' ', '\t', ':' and '-' are skipped). bad is the first character
// that is none of these and col its 1-based position in s (in bytes); col is 0 when there is
// none (bad alone cannot say it: the character may be a NUL).
func hexCount(s string) (n int, bad rune, col int) {
	i, end := 0, len(s)
	for i < end && isSpace(s[i]) {
		i++
	}
	for end > i && isSpace(s[end-1]) {
		end--
	}
	if end-i > 2 && s[i] == '0' && (s[i+1] == 'x' || s[i+1] == 'X') {
		i += 2
	}
	for ; i < end; i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9', c >= 'a' && c <= 'f', c >= 'A' && c <= 'F':
			n++
		case c == ' ' || c == '\t' || c == ':' || c == '-':
		default:
			r := rune(c)
			if c >= 0x80 {
				r = []rune(s[i:])[0]
			}
			return n, r, i + 1
		}
	}
	return n, 0, 0
}

// isSpace reports the ASCII white space strings.TrimSpace removes.
func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}
