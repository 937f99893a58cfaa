// Package keyhint finds, when a run's keys do not fit its stream, the usual mistake that
// explains it and says which flag or change makes the run right.
//
// When the keys do not fit, the cause is most often not a wrong key but a right key given the
// wrong way: even and odd swapped, a pair file or log a crypto period out of step, the
// checksum bytes 3 and 7 reduced by one tool and not by another (TSDuck reduces by default;
// libdvbcsa, FFdecsa and VLC use all 64 bits), or the bytes written in reverse order. Before
// giving up, the command tries each of these on the first scrambled unit starts of the input
// (pipeline.Stats.Samples) and, when one fits, says which flag or change makes the run right.
// It never applies the guess: the run's output and exit status stay those of the keys given,
// and the message names flags and files, never a key.
//
// A CW list out of step with the stream (shifted by one or more) needs no guess: key
// synchronisation tries every key of a list on every crypto period. For keys of known parity (a
// pair file, a log), a shift by one crypto period puts each key on the other parity, so the
// parity guess covers it.
package keyhint

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/tsdescramble/tsdescramble/keys"
	"github.com/tsdescramble/tsdescramble/pipeline"
	"github.com/tsdescramble/tsdescramble/psi"
	"github.com/tsdescramble/tsdescramble/scrambling"
	"github.com/tsdescramble/tsdescramble/ts"
)

// MaxKeys bounds the control words tried per parity: a trial costs about a microsecond,
// so a hint takes at most a few tens of milliseconds even for a list of a million CWs (whose
// first unit starts are scrambled with one of its first keys, if the list starts with the
// recording).
const MaxKeys = 1024

// Source says how the keys were given, as far as a hint must name it.
type Source struct {
	Flag      string      // "cw", "cw-even/cw-odd", "biss", "cw-env" or "cw-file"
	File      string      // the key file, for -cw-file
	Format    keys.Format // its layout
	Even, Odd bool        // for -cw-even/-cw-odd: which of the two were given
	Reduced   bool        // -reduce-entropy was given
}

// Keys are the keys a run used: its schedule and, with -reduce-entropy, the first control
// words as they were given, in the schedule's order (reducing loses bytes 3 and 7).
type Keys struct {
	Sched *keys.Schedule
	Given [][]byte
}

// byParity tells whether each parity has keys of its own, or every key may serve either.
func (s Source) byParity() bool {
	return s.Flag == "cw-even/cw-odd" || (s.Flag == "cw-file" && s.Format != keys.FormatList)
}

// keyGuess is one usual mistake: the keys to try on even ([0]) and odd ([1]) unit starts if
// it was made, and what to change.
type keyGuess struct {
	keys   [2][][]byte
	advice string
}

// Hint tries the usual mistakes on the samples that no key fits as given, and returns the
// advice of the one that makes most of them fit, or "" when none does. A guess must fit two
// of them (one when there is only one), so that a wrong key that passes a PES-header check
// by chance (about one in 2^26) does not make a hint.
func Hint(samples []pipeline.Sample, sys scrambling.System, ks Keys, src Source) string {
	used := usedKeys(ks, src)
	var buf [ts.PacketSize]byte
	var misfits []pipeline.Sample
	for _, s := range samples {
		if !anyFits(sys, used[parityIndex(s.Odd)], s, buf[:]) {
			misfits = append(misfits, s)
		}
	}
	if len(misfits) == 0 {
		return ""
	}
	best, bestN := "", 0
	for _, g := range guesses(ks, src, sys, used) {
		n := 0
		for _, s := range misfits {
			if anyFits(sys, g.keys[parityIndex(s.Odd)], s, buf[:]) {
				n++
			}
		}
		if n >= min(2, len(misfits)) && n > bestN {
			best, bestN = g.advice, n
		}
	}
	return best
}

func parityIndex(odd bool) int {
	if odd {
		return 1
	}
	return 0
}

// usedKeys returns the control words, as the run used them, that may descramble an even ([0])
// and an odd ([1]) unit start: for keys given per parity (-cw-even/-cw-odd, a pair file, a
// log), those of the crypto periods of that parity; otherwise every key, since key
// synchronisation tries each key of a list on every period. Repeated keys are given once.
func usedKeys(ks Keys, src Source) [2][][]byte {
	var used [2][][]byte
	s := ks.Sched
	if !src.byParity() {
		for i := range min(s.NumCWs(), MaxKeys) {
			used[0] = appendNew(used[0], s.CW(i))
		}
		used[1] = used[0]
		return used
	}
	// The ring alternates in parity from Start(false), the position of the first even period.
	even := s.Start(false)
	for pos := range min(s.Periods(), 2*MaxKeys) {
		if k := s.KeyAt(pos); k != keys.NoKey {
			p := ((pos-even)%2 + 2) % 2
			used[p] = appendNew(used[p], s.CW(k))
		}
	}
	return used
}

// appendNew appends cw to list unless list holds it already.
func appendNew(list [][]byte, cw []byte) [][]byte {
	for _, k := range list {
		if bytes.Equal(k, cw) {
			return list
		}
	}
	return append(list, cw)
}

// guesses returns the usual mistakes worth trying with these keys, in the order a tie is
// broken: the parity first, as the most common.
func guesses(ks Keys, src Source, sys scrambling.System, used [2][][]byte) []keyGuess {
	var gs []keyGuess
	if src.byParity() {
		gs = append(gs, keyGuess{keys: [2][][]byte{used[1], used[0]}, advice: parityAdvice(src)})
	}
	// each returns a guess whose keys are f of the keys used, where f changes them.
	each := func(f func(cw []byte) []byte, advice string) {
		g := keyGuess{advice: advice}
		for p := range used {
			for _, cw := range used[p] {
				if k := f(cw); k != nil && !bytes.Equal(k, cw) {
					g.keys[p] = append(g.keys[p], k)
				}
			}
		}
		if len(g.keys[0])+len(g.keys[1]) > 0 {
			gs = append(gs, g)
		}
	}
	csa2 := sys.Name() == "csa2"
	// asGiven maps a key the run used back to the one the user gave (they differ only when
	// -reduce-entropy changed it).
	given := givenKeys(ks)
	asGiven := func(cw []byte) []byte {
		if g, ok := given[string(cw)]; ok {
			return g
		}
		return cw
	}
	switch {
	case csa2 && !src.Reduced:
		each(func(cw []byte) []byte {
			r := slices.Clone(cw)
			keys.ReduceEntropy(r)
			return r
		}, "the keys fit with -reduce-entropy: the scrambler set CW bytes 3 and 7 to the checksums of bytes 0-2 and 4-6, as TSDuck does by default")
	case csa2 && len(given) > 0:
		each(asGiven, "the keys fit without -reduce-entropy: the scrambler used all 64 bits of each CW as given, as libdvbcsa, FFdecsa and VLC do")
	}
	each(func(cw []byte) []byte {
		r := slices.Clone(asGiven(cw))
		slices.Reverse(r)
		if src.Reduced {
			keys.ReduceEntropy(r)
		}
		return r
	}, reversedAdvice(src))
	return gs
}

// givenKeys maps each key the run used to the key as given, for the keys -reduce-entropy
// changed. Keys.Given holds the first keys in the schedule's order; a key whose reduction is
// not the schedule's key at that index is left out rather than guessed.
func givenKeys(ks Keys) map[string][]byte {
	m := map[string][]byte{}
	for i, g := range ks.Given {
		if i >= ks.Sched.NumCWs() {
			break
		}
		r := slices.Clone(g)
		keys.ReduceEntropy(r)
		if cw := ks.Sched.CW(i); bytes.Equal(r, cw) && !bytes.Equal(g, cw) {
			m[string(cw)] = g
		}
	}
	return m
}

// parityAdvice says how to give keys of the other parity, for keys given per parity.
func parityAdvice(src Source) string {
	switch {
	case src.Flag == "cw-file" && src.Format == keys.FormatCWL:
		return fmt.Sprintf("the keys of %s fit the other parity: its parity digits (0 even, 1 odd) are the wrong way round, or each key is one line off its digit", src.File)
	case src.Flag == "cw-file":
		return fmt.Sprintf("the keys of %s fit the other parity: swap its two columns (EVEN ODD), or shift its keys by one crypto period", src.File)
	case src.Even && src.Odd:
		return "the keys fit with -cw-even and -cw-odd swapped"
	case src.Even:
		return "the key fits the odd packets: give it with -cw-odd, not -cw-even"
	}
	return "the key fits the even packets: give it with -cw-even, not -cw-odd"
}

// reversedAdvice says how to give keys whose bytes fit in reverse order.
func reversedAdvice(src Source) string {
	if src.Flag == "cw-file" {
		return fmt.Sprintf("the keys of %s fit with their bytes in reverse order: write each CW from its last byte to its first", src.File)
	}
	return "the keys fit with their bytes in reverse order: write each CW from its last byte to its first"
}

// anyFits reports whether one of cws descrambles the start of s to a valid unit start, as the
// pipeline checks it: a PES header, or a section with its CRC_32 on a PID that carries
// sections, either when the PMT did not say. buf must hold a packet's payload.
func anyFits(sys scrambling.System, cws [][]byte, s pipeline.Sample, buf []byte) bool {
	n := len(s.Payload)
	if s.Carriage == psi.CarriagePES {
		// A PES header lies in the first bytes: descrambling them is enough.
		n = min(n, ts.PESHeaderBytes)
	}
	head := buf[:n]
	for _, cw := range cws {
		if scrambling.DecryptPrefix(sys, cw, s.Payload, head) != nil {
			continue
		}
		if s.Carriage != psi.CarriageSections && ts.PESHeaderOK(head, len(s.Payload)) {
			return true
		}
		if s.Carriage != psi.CarriagePES {
			if ok, checked := psi.SectionStartOK(head); ok && checked {
				return true
			}
		}
	}
	return false
}
