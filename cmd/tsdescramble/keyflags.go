package main

import (
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/tsdescramble/tsdescramble/keys"
	"github.com/tsdescramble/tsdescramble/scrambling"
)

// keyFlags are the flags that give control words, with the input's scrambling system; the
// descrambler and the scrambler share them.
func keyFlags() []cli.Flag {
	return append(keySourceFlags("", catKeys, ""),
		&cli.StringFlag{Name: "cipher", Value: "csa2", Category: catScrambling, Usage: "scrambling `SYSTEM`: " + strings.Join(scrambling.Names(), ", ")})
}

// keySourceFlags defines the key flags once for every side that takes keys: the input's (no
// prefix) and a rescrambling run's output ("rescramble-"), whose usage lines end with what.
func keySourceFlags(prefix, category, what string) []cli.Flag {
	flag := func(name, usage string, file bool) cli.Flag {
		return &cli.StringFlag{Name: prefix + name, TakesFile: file, Category: category, Usage: usage + what}
	}
	return []cli.Flag{
		flag("cw", "control word for both parities: `HEX` digits (16 for csa2, 32 for AES, 32/48/64 for dfc and serpent); spaces, ':' and '-' allowed", false),
		flag("cw-even", "control word for the even parity (TSC 10): `HEX` digits", false),
		flag("cw-odd", "control word for the odd parity (TSC 11): `HEX` digits", false),
		flag("cw-file", "`FILE` of control words: one per line (used in turn, one per crypto period), EVEN ODD pairs per line, or an OSCam .cwl log; the format is detected", true),
		flag("biss", "BISS-1 session word: 12 `HEX` digits (checksum bytes inserted) or 16", false),
		flag("cw-env", "read the control word from the environment variable `NAME` (keeps it out of ps)", false),
		&cli.BoolFlag{Name: prefix + "reduce-entropy", Category: category, Usage: "force CW bytes 3 and 7 to the checksums of bytes 0-2 and 4-6 (TSDuck's default; csa2 only)" + what},
	}
}

// rescrambleKeyFlags are the names of the key flags of a rescrambling run's output.
func rescrambleKeyFlags() []string {
	var names []string
	for _, f := range keySourceFlags("rescramble-", "", "") {
		names = append(names, f.Names()[0])
	}
	return names
}

// keySet is what the key flags give: a schedule for descrambling, the list in order for
// scrambling, and notes worth telling the user (never the keys themselves).
type keySet struct {
	sched *keys.Schedule
	list  [][]byte // nil for a key file: the schedule holds its keys, compactly (see cws)
	notes []string
	// What hints.go needs to try the usual mistakes when the keys do not fit: the layout of
	// a key file (0 for keys given as flags), and, with -reduce-entropy, the first control
	// words as they were given, in the schedule's order (reducing loses bytes 3 and 7).
	format keys.Format
	given  [][]byte
}

// cws returns the control words in order: those of the flags, or the schedule's.
func (ks *keySet) cws() [][]byte {
	if ks.list != nil {
		return ks.list
	}
	return ks.sched.CWs()
}

// anySize calls read with each key size of the system in turn and returns the first result
// that is not an error, or the error of the first size tried.
func anySize[T any](sys scrambling.System, read func(size int) (T, error)) (T, error) {
	var first error
	for _, size := range sys.KeySizes() {
		v, err := read(size)
		if err == nil {
			return v, nil
		}
		if first == nil {
			first = err
		}
	}
	var zero T
	return zero, first
}

// parseKey reads hex digits as a control word of one of the system's sizes.
func parseKey(s string, sys scrambling.System) ([]byte, error) {
	b, err := anySize(sys, func(size int) ([]byte, error) { return keys.ParseCW(s, size) })
	if sizes := sys.KeySizes(); err != nil && len(sizes) > 1 {
		return nil, fmt.Errorf("want %s hex digits for %s", digitList(sizes), sys.Name())
	}
	return b, err
}

// digitList says "32, 48 or 64" for key sizes of 16, 24 and 32 bytes.
func digitList(sizes []int) string {
	var d []string
	for _, n := range sizes {
		d = append(d, fmt.Sprint(2*n))
	}
	if len(d) < 2 {
		return strings.Join(d, "")
	}
	return strings.Join(d[:len(d)-1], ", ") + " or " + d[len(d)-1]
}

// exampleKey is a control word of the system's first size for messages.
func exampleKey(sys scrambling.System) string {
	return strings.Repeat("11223366445566ff", sys.KeySizes()[0]/8)
}

// readKeys builds the keys from the key flags whose names start with prefix ("" for the
// input's, "rescramble-" for the output of a rescrambling run) for the given system.
func readKeys(c *cli.Context, prefix string, sys scrambling.System) (ks *keySet, err error) {
	get := func(name string) string { return c.String(prefix + name) }
	cw, even, odd, file := get("cw"), get("cw-even"), get("cw-odd"), get("cw-file")
	biss, env := get("biss"), get("cw-env")
	n := 0
	for _, s := range []string{cw, file, biss, env} {
		if s != "" {
			n++
		}
	}
	if even != "" || odd != "" {
		n++
	}
	f := "-" + prefix
	switch {
	case n == 0 && prefix == "":
		return nil, usageErr("no control word given: use -cw HEX, -cw-even/-cw-odd HEX, -cw-file FILE, -biss HEX or -cw-env NAME")
	case n == 0:
		return nil, usageErr("no control word to rescramble with: use %scw HEX, %scw-even/%scw-odd HEX, %scw-file FILE, %sbiss HEX or %scw-env NAME", f, f, f, f, f, f)
	case n > 1:
		return nil, usageErr("give one key source: %scw, %scw-even/%scw-odd, %scw-file, %sbiss or %scw-env, not several", f, f, f, f, f, f)
	}
	reduce := c.Bool(prefix + "reduce-entropy")
	var given [][]byte
	defer func() {
		if ks != nil {
			ks.given = given
		}
	}()
	// finish is called on every key in the order of the schedule's control words.
	finish := func(b []byte) []byte {
		if reduce {
			if len(given) < maxHintKeys {
				given = append(given, slices.Clone(b))
			}
			keys.ReduceEntropy(b)
		}
		return b
	}
	parse := func(flag, s string) ([]byte, error) {
		if s == "" {
			return nil, nil
		}
		b, err := parseKey(s, sys)
		if n, hex := hexDigits(s); err != nil && hex && n == 12 && prefix == "" && sys.Name() == "csa2" {
			// Twelve digits are the form BISS session words are published in.
			return nil, usageErr("%s%s: 12 hex digits make a BISS-1 session word: give it with -biss, which inserts the checksum bytes, or give all 16 digits", f, flag)
		}
		if err != nil {
			return nil, usageErr("%s%s: %v (example: %s%s %s)", f, flag, err, f, flag, exampleKey(sys))
		}
		return finish(b), nil
	}
	switch {
	case cw != "":
		b, err := parse("cw", cw)
		if err != nil {
			return nil, err
		}
		return &keySet{sched: keys.NewFixed(b, b), list: [][]byte{b}}, nil
	case biss != "":
		if sys.Name() != "csa2" {
			if prefix != "" {
				return nil, usageErr("%sbiss gives a DVB-CSA2 key: use it with -rescramble csa2", f)
			}
			return nil, usageErr("-biss gives a DVB-CSA2 key: use it with -cipher csa2")
		}
		b, err := keys.ParseBISS(biss)
		if err != nil {
			return nil, usageErr("-biss: %v (example: -biss 112233445566, or the 16-digit form 11223366445566ff)", err)
		}
		b = finish(b)
		return &keySet{sched: keys.NewFixed(b, b), list: [][]byte{b}}, nil
	case env != "":
		if looksLikeKey(env) {
			// A control word given where the variable's name belongs: not shown.
			return nil, usageErr("-cw-env takes the name of an environment variable that holds the control word, not the control word: TSD_CW=HEX tsdescramble -cw-env TSD_CW")
		}
		b, err := anySize(sys, func(size int) ([]byte, error) { return keys.FromEnv(env, size) })
		if err != nil {
			return nil, usageErr("-cw-env: %v", err)
		}
		b = finish(b)
		return &keySet{sched: keys.NewFixed(b, b), list: [][]byte{b}}, nil
	case file != "":
		kf, err := anySize(sys, func(size int) (*keys.KeyFile, error) { return keys.LoadKeyFile(file, size) })
		if err != nil {
			var le *keys.LineError
			if errors.As(err, &le) {
				return nil, usageErr("%v", err)
			}
			if errors.Is(err, fs.ErrNotExist) && looksLikeKey(file) {
				// A control word given where the file's name belongs: not shown.
				return nil, usageErr("%scw-file names a file of control words: give a control word itself with %scw", f, f)
			}
			return nil, usageErr("cannot read the CW file: %v", unwrapPath(err))
		}
		for _, b := range kf.Keys() {
			finish(b)
		}
		notes := append([]string{fmt.Sprintf("%s: %d control words, %s", file, len(kf.Keys()), kf.Format)}, kf.Notes...)
		// The key file's own copy of the keys is dropped here: the schedule keeps them
		// in 8 bytes a CSA2 control word.
		return &keySet{sched: kf.Schedule(), notes: notes, format: kf.Format}, nil
	default:
		e, err := parse("cw-even", even)
		if err != nil {
			return nil, err
		}
		o, err := parse("cw-odd", odd)
		if err != nil {
			return nil, err
		}
		var list [][]byte
		for _, b := range [][]byte{e, o} {
			if b != nil {
				list = append(list, b)
			}
		}
		return &keySet{sched: keys.NewFixed(e, o), list: list}, nil
	}
}

// lookupSystem reads a -cipher style flag.
func lookupSystem(flag, name string, lanes int) (scrambling.System, error) {
	if name == "csa2" {
		return scrambling.NewCSA2(lanes)
	}
	sys, err := scrambling.Lookup(name)
	if err != nil {
		return nil, usageErr("-%s: want one of %s", flag, strings.Join(scrambling.Names(), ", "))
	}
	return sys, nil
}
