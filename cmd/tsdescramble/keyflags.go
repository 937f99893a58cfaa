package main

import (
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"

	"github.com/tsdescramble/tsdescramble/internal/keyhint"
	"github.com/tsdescramble/tsdescramble/internal/report"
	"github.com/tsdescramble/tsdescramble/internal/runfiles"
	"github.com/tsdescramble/tsdescramble/keys"
	"github.com/tsdescramble/tsdescramble/scrambling"
)

// rescrambleKeyFlags are the names of the key flags of a rescrambling run's output.
func rescrambleKeyFlags() []string {
	var names []string
	for _, f := range keySourceFlags(&cwFlags{}, "rescramble-", "", "") {
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
	// warnings are the notes that say something is wrong with the keys (a crypto period of
	// the list without a key), which a log gives a level of their own.
	warnings []string
	// What internal/keyhint needs to try the usual mistakes when the keys do not fit: the layout of
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

// readKeys builds the keys from the key flags k, of the side whose flag names start with
// prefix ("" for the input's, "rescramble-" for the output of a rescrambling run), for the
// given system.
func readKeys(k *cwFlags, prefix string, sys scrambling.System) (*keySet, error) {
	n := 0
	for _, s := range []string{k.cw, k.file, k.biss, k.env} {
		if s != "" {
			n++
		}
	}
	if k.even != "" || k.odd != "" {
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
	r := &keyReader{k: k, prefix: prefix, sys: sys}
	ks, err := r.read()
	if ks != nil {
		ks.given = r.given
	}
	return ks, err
}

// keyReader reads the one key source of a side's key flags.
type keyReader struct {
	k      *cwFlags
	prefix string
	sys    scrambling.System
	given  [][]byte // with -reduce-entropy, the first keys as they were given
}

// finish is called on every key in the order of the schedule's control words.
func (r *keyReader) finish(b []byte) []byte {
	if r.k.reduce {
		if len(r.given) < keyhint.MaxKeys {
			r.given = append(r.given, slices.Clone(b))
		}
		keys.ReduceEntropy(b)
	}
	return b
}

// parse reads the hex key s of flag (without its dash and prefix), or nil for "".
func (r *keyReader) parse(flag, s string) ([]byte, error) {
	if s == "" {
		return nil, nil
	}
	f := "-" + r.prefix
	b, err := parseKey(s, r.sys)
	if n, hex := hexDigits(s); err != nil && hex && n == 12 && r.prefix == "" && r.sys.Name() == "csa2" {
		// Twelve digits are the form BISS session words are published in.
		return nil, usageErr("%s%s: 12 hex digits make a BISS-1 session word: give it with -biss, which inserts the checksum bytes, or give all 16 digits", f, flag)
	}
	if err != nil {
		return nil, usageErr("%s%s: %v (example: %s%s %s)", f, flag, err, f, flag, exampleKey(r.sys))
	}
	return r.finish(b), nil
}

// fixed is the key set of one control word for both parities.
func fixed(b []byte) *keySet { return &keySet{sched: keys.NewFixed(b, b), list: [][]byte{b}} }

func (r *keyReader) read() (*keySet, error) {
	k, f, sys := r.k, "-"+r.prefix, r.sys
	switch {
	case k.cw != "":
		b, err := r.parse("cw", k.cw)
		if err != nil {
			return nil, err
		}
		return fixed(b), nil
	case k.biss != "":
		if sys.Name() != "csa2" {
			if r.prefix != "" {
				return nil, usageErr("%sbiss gives a DVB-CSA2 key: use it with -rescramble csa2", f)
			}
			return nil, usageErr("-biss gives a DVB-CSA2 key: use it with -cipher csa2")
		}
		b, err := keys.ParseBISS(k.biss)
		if err != nil {
			return nil, usageErr("-biss: %v (example: -biss 112233445566, or the 16-digit form 11223366445566ff)", err)
		}
		return fixed(r.finish(b)), nil
	case k.env != "":
		if looksLikeKey(k.env) {
			// A control word given where the variable's name belongs: not shown.
			return nil, usageErr("-cw-env takes the name of an environment variable that holds the control word, not the control word: TSD_CW=HEX tsdescramble -cw-env TSD_CW")
		}
		b, err := anySize(sys, func(size int) ([]byte, error) { return keys.FromEnv(k.env, size) })
		if err != nil {
			return nil, usageErr("-cw-env: %v", err)
		}
		return fixed(r.finish(b)), nil
	case k.file != "":
		return r.readFile()
	}
	e, err := r.parse("cw-even", k.even)
	if err != nil {
		return nil, err
	}
	o, err := r.parse("cw-odd", k.odd)
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

// readFile reads -cw-file.
func (r *keyReader) readFile() (*keySet, error) {
	file, f := r.k.file, "-"+r.prefix
	kf, err := anySize(r.sys, func(size int) (*keys.KeyFile, error) { return keys.LoadKeyFile(file, size) })
	if err != nil {
		var le *keys.LineError
		if errors.As(err, &le) {
			return nil, usageErr("%v", err)
		}
		if errors.Is(err, fs.ErrNotExist) && looksLikeKey(file) {
			// A control word given where the file's name belongs: not shown.
			return nil, usageErr("%scw-file names a file of control words: give a control word itself with %scw", f, f)
		}
		return nil, usageErr("cannot read the CW file: %v", runfiles.UnwrapPath(err))
	}
	for _, b := range kf.Keys() {
		r.finish(b)
	}
	notes := []string{fmt.Sprintf("%s: %s, %s", file, report.Plural(len(kf.Keys()), "control word"), kf.Format)}
	// The key file's own copy of the keys is dropped here: the schedule keeps them
	// in 8 bytes a CSA2 control word.
	return &keySet{sched: kf.Schedule(), notes: notes, warnings: kf.Notes, format: kf.Format}, nil
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
