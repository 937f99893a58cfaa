package main

import (
	"fmt"
	"strings"

	"github.com/tsdescramble/tsdescramble/pipeline"
)

// keyVerdict is what a descrambling run's statistics say of its keys: the exit status they call
// for (exitOK or exitNoFit), the one line a person reads first, and the lines that name the
// PIDs another CA system seems to protect.
type keyVerdict struct {
	code    int
	line    string   // "" when there is nothing to say beyond the counts
	foreign []string // one line per PID no control word fits, in PID order
}

// judgeKeys applies the rules of the exit status to the crypto periods of each PID:
//   - a PID that fits in some periods and not in others: the keys fit part of the stream
//     (exit 3): those periods were left as they came;
//   - a PID no key fits in any period is another CA system's, or one the keys do not cover:
//     reported, and a failure (exit 3) only when no PID fits at all;
//   - when no period of any PID could be checked (no scrambled PID carries PES, or sections
//     whose CRC can be read), the keys were used unchecked: said, and no failure.
func judgeKeys(st *pipeline.Stats) keyVerdict {
	var v keyVerdict
	var fitting, partly []pipeline.PIDStats
	var periodsLeft, periodsPartly, checked int
	for _, ps := range st.PIDs {
		if ps.Periods == 0 {
			continue
		}
		checked += ps.PeriodsFit + ps.PeriodsLeft
		switch {
		case ps.PeriodsFit > 0 && ps.PeriodsLeft > 0:
			partly = append(partly, ps)
			fitting = append(fitting, ps)
			periodsLeft += ps.PeriodsLeft
			periodsPartly += ps.Periods
		case ps.PeriodsFit > 0:
			fitting = append(fitting, ps)
		case ps.PeriodsLeft > 0:
			v.foreign = append(v.foreign, fmt.Sprintf("PID %#04x: no control word fits; left scrambled (%d packets, %s)",
				ps.PID, ps.LeftScrambled, plural(ps.PeriodsLeft, "crypto period")))
		}
	}
	scrambled := st.Even + st.Odd
	share := func() string {
		if scrambled == 0 {
			return "0%"
		}
		return fmt.Sprintf("%.0f%%", 100*float64(st.Descrambled+st.Short)/float64(scrambled))
	}
	switch {
	case scrambled > 0 && st.Descrambled+st.Short == 0 && st.NoKey > 0 && len(fitting) == 0:
		// Keys of one parity only, for a stream scrambled in the other: nothing was
		// descrambled, though no key was found not to fit.
		v.code = exitNoFit
		v.line = fmt.Sprintf("no control word for the parity the stream is scrambled in: %d scrambled packets have no key of their parity; %s",
			st.NoKey, parityHint(st))
	case len(partly) > 0:
		var per []string
		for _, ps := range partly {
			per = append(per, fmt.Sprintf("PID %#04x: %d of %d", ps.PID, ps.PeriodsLeft, ps.Periods))
		}
		v.code = exitNoFit
		v.line = fmt.Sprintf("the keys fit only part of the stream: crypto periods left scrambled: %d of %d (%s); %s of the scrambled packets descrambled",
			periodsLeft, periodsPartly, strings.Join(per, ", "), share())
	case len(v.foreign) > 0 && len(fitting) == 0:
		v.code = exitNoFit
		v.line = fmt.Sprintf("the keys do not fit this stream: no control word fits any crypto period of the %s checked; they were left scrambled",
			plural(len(v.foreign), "scrambled PID"))
	case checked == 0 && st.Descrambled > 0:
		v.line = "key check not possible: no scrambled PID carries PES (or sections whose CRC could be read); descrambled with the keys as given"
	}
	return v
}

// plural says "1 thing" or "n things".
func plural(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}

// parityHint names the flag that gives the stream's scrambled packets the key of their parity.
func parityHint(st *pipeline.Stats) string {
	switch {
	case st.Odd == 0:
		return "the stream is scrambled even (TSC 10) only: give its control word with -cw-even, or -cw for both parities"
	case st.Even == 0:
		return "the stream is scrambled odd (TSC 11) only: give its control word with -cw-odd, or -cw for both parities"
	}
	return "give a control word for each parity (-cw-even and -cw-odd, or -cw for both)"
}
