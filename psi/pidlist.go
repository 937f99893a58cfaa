package psi

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// MaxPID is the largest PID of a transport stream (13 bits; 0x1FFF is the null packet PID).
const MaxPID = 0x1FFF

// ParsePIDList reads a list of PIDs such as "0x100,0x101, 256" or "0x100-0x10f,0x200": items
// separated by commas, each a PID or an inclusive range FIRST-LAST, every number decimal or hex
// with a "0x" prefix (a leading zero does not mean octal). The PIDs come back sorted, each once.
// PIDs above 0x1FFF, empty items and ranges that end before they start are errors.
func ParsePIDList(s string) ([]uint16, error) {
	if strings.TrimSpace(s) == "" {
		return nil, errors.New("no PID given: want PIDs such as 0x100,0x101 or 0x100-0x10f")
	}
	var pids []uint16
	for item := range strings.SplitSeq(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			return nil, fmt.Errorf("empty item in PID list %q", s)
		}
		lo, hi := item, item
		// A '-' separates a range; a leading one would be a sign, which parsePID refuses.
		if i := strings.IndexByte(item[1:], '-'); i >= 0 {
			lo, hi = strings.TrimSpace(item[:i+1]), strings.TrimSpace(item[i+2:])
		}
		a, err := parsePID(lo)
		if err != nil {
			return nil, err
		}
		b, err := parsePID(hi)
		if err != nil {
			return nil, err
		}
		if b < a {
			return nil, fmt.Errorf("PID range %q ends before it starts", item)
		}
		for p := int(a); p <= int(b); p++ {
			pids = append(pids, uint16(p))
		}
	}
	slices.Sort(pids)
	return slices.Compact(pids), nil
}

// parsePID reads one PID, decimal or 0x hex.
func parsePID(s string) (uint16, error) {
	digits, base := s, 10
	if len(s) > 2 && (s[:2] == "0x" || s[:2] == "0X") {
		digits, base = s[2:], 16
	}
	// ParseUint accepts '_' between digits when base is 0 only; with an explicit base it
	// refuses signs and underscores, which is what a PID list wants.
	v, err := strconv.ParseUint(digits, base, 64)
	if errors.Is(err, strconv.ErrRange) {
		v, err = MaxPID+1, nil
	}
	if err != nil {
		return 0, fmt.Errorf("PID %q: want a number, decimal or hex with 0x (such as 256 or 0x100)", s)
	}
	if v > MaxPID {
		return 0, fmt.Errorf("PID %q is out of range: PIDs go from 0 to 0x1FFF (8191)", s)
	}
	return uint16(v), nil
}
