package clihelp

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/urfave/cli/v2"
)

// Patterns of the errors of Go's flag package, which urfave/cli passes on as they are. Their
// texts quote the value given; the messages built from them do not.
var (
	reUnknownFlag = regexp.MustCompile(`^flag provided but not defined: -(.*)$`)
	reNeedsValue  = regexp.MustCompile(`^flag needs an argument: -(.*)$`)
	reBadValue    = regexp.MustCompile(`(?s)^invalid (?:boolean )?value ".*" for (?:flag )?-([A-Za-z0-9-]+): `)
	reBadBool     = regexp.MustCompile(`^invalid boolean flag ([A-Za-z0-9-]+): `)
	reBadSyntax   = regexp.MustCompile(`^bad flag syntax: `)
	reTwoForms    = regexp.MustCompile(`^(?i:cannot use two forms of the same flag): (\S+) (\S+)$`)
	reQuoted      = regexp.MustCompile(`"[^"]*"`)
	reFlagName    = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9-]*$`)
)

// ParseMessage rewords an error of the flag parser, for the flags of a command, without the
// values it quotes: people paste secrets into command lines, and a value that secret says is
// one (a control word given to the wrong flag) is not even named as a flag.
func ParseMessage(err error, flags []cli.Flag, secret func(string) bool) string {
	msg := err.Error()
	if m := reUnknownFlag.FindStringSubmatch(msg); m != nil {
		name := strings.SplitN(m[1], "=", 2)[0]
		if !IsFlagName(name) || secret(name) {
			return "an argument starts with '-' but names no flag"
		}
		if s := SimilarFlag(name, flags); s != "" {
			return fmt.Sprintf("unknown flag -%s: did you mean -%s?", name, s)
		}
		return fmt.Sprintf("unknown flag -%s", name)
	}
	if m := reNeedsValue.FindStringSubmatch(msg); m != nil {
		return fmt.Sprintf("-%s needs a value", m[1])
	}
	name := ""
	if m := reBadValue.FindStringSubmatch(msg); m != nil {
		name = m[1]
	} else if m := reBadBool.FindStringSubmatch(msg); m != nil {
		name = m[1]
	}
	if name != "" {
		switch FlagByName(flags, name).(type) {
		case *cli.IntFlag:
			return fmt.Sprintf("-%s wants a whole number", name)
		case *cli.BoolFlag:
			return fmt.Sprintf("-%s is a switch: give it alone, without a value", name)
		case *cli.DurationFlag:
			return fmt.Sprintf("-%s wants a duration with its unit: 50ms, 2s, 1m30s", name)
		}
		return fmt.Sprintf("-%s: not a valid value", name)
	}
	if reBadSyntax.MatchString(msg) {
		return "an argument is not a well-formed flag: flags are -name or -name=value"
	}
	if m := reTwoForms.FindStringSubmatch(msg); m != nil {
		return fmt.Sprintf("-%s and -%s are one flag: give it once", m[2], m[1])
	}
	// Another error of the parser: keep its words, not what it quotes.
	return reQuoted.ReplaceAllString(msg, "(a value)")
}

// FlagByName returns the flag of flags that has the name, or nil.
func FlagByName(flags []cli.Flag, name string) cli.Flag {
	for _, f := range flags {
		for _, n := range f.Names() {
			if n == name {
				return f
			}
		}
	}
	return nil
}

// SimilarFlag returns the name of a flag that name is probably a misspelling of (at most two
// edits away, or the same letters without dashes), or "".
func SimilarFlag(name string, flags []cli.Flag) string {
	best, bestDist := "", 3
	for _, f := range flags {
		for _, n := range f.Names() {
			if len(n) < 3 {
				continue
			}
			d := editDistance(name, n)
			if strings.ReplaceAll(name, "-", "") == strings.ReplaceAll(n, "-", "") {
				d = 0
			}
			if d < bestDist {
				best, bestDist = n, d
			}
		}
	}
	return best
}

// SimilarName returns the name of names that name is probably a misspelling of (at most two
// edits away, and not the whole of a name of three letters or fewer), or "".
func SimilarName(name string, names []string) string {
	best, bestDist := "", 3
	for _, n := range names {
		if d := editDistance(name, n); d < bestDist && d < len(n) {
			best, bestDist = n, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance of a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// IsFlagName reports whether s has the form of a flag's name.
func IsFlagName(s string) bool { return reFlagName.MatchString(s) }
