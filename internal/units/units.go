// Package units writes quantities for people to read: byte counts in decimal units, and counts
// of things with the noun in the number they need, the same way in the command's summaries and
// in probe's reports.
package units

import (
	"math"
	"strconv"
	"strings"
)

// Bytes writes n bytes in decimal units, as disks and network rates count them (1 kB is 1000
// bytes), with the given number of decimals: Bytes(62099408, 1) is "62.1 MB". Under 1 kB it
// writes the exact count: "999 bytes". A one-line summary wants 1 decimal; a report that
// gives the exact count beside it, 2.
func Bytes(n int64, decimals int) string {
	if n < 1000 {
		return Count(n, "byte")
	}
	// A value that would round up to 1000 in one unit is written in the next: 1.0 MB, not
	// 1000.0 kB.
	limit := 1000 - 0.5*math.Pow10(-decimals)
	f, unit := float64(n)/1000, "kB"
	for _, u := range []string{"MB", "GB", "TB"} {
		if f < limit {
			break
		}
		f, unit = f/1000, u
	}
	return strconv.FormatFloat(f, 'f', decimals, 64) + " " + unit
}

// Count writes n things: "1 packet", "0 packets", "2 packets". thing is the singular, whose
// plural takes an s, or ies for a y after a consonant ("1 error reply", "2 error replies").
func Count(n int64, thing string) string {
	if n == 1 || n == -1 {
		return strconv.FormatInt(n, 10) + " " + thing
	}
	if l := len(thing); l > 1 && thing[l-1] == 'y' && !strings.ContainsRune("aeiou", rune(thing[l-2])) {
		thing = thing[:l-1] + "ie"
	}
	return strconv.FormatInt(n, 10) + " " + thing + "s"
}
