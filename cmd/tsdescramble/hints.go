package main

import (
	"github.com/tsdescramble/tsdescramble/internal/keyhint"
	"github.com/tsdescramble/tsdescramble/pipeline"
	"github.com/tsdescramble/tsdescramble/scrambling"
)

// keySourceOf says how the keys were given, for a hint (internal/keyhint) to name it.
func keySourceOf(k *cwFlags, ks *keySet) keyhint.Source {
	src := keyhint.Source{Format: ks.format, Reduced: k.reduce}
	switch {
	case k.cw != "":
		src.Flag = "cw"
	case k.biss != "":
		src.Flag = "biss"
	case k.env != "":
		src.Flag = "cw-env"
	case k.file != "":
		src.Flag, src.File = "cw-file", k.file
	default:
		src.Flag = "cw-even/cw-odd"
		src.Even, src.Odd = k.even != "", k.odd != ""
	}
	return src
}

// keyAdvice returns what the message of a run whose keys do not fit says to do, in
// parentheses: the change that makes the keys fit the first scrambled unit starts when a
// usual mistake explains the failure, else where to look.
func keyAdvice(c *config, st *pipeline.Stats, sys scrambling.System, ks *keySet) string {
	if c.ecmCache != "" && !c.keyServerGiven() {
		// No key was given to get wrong: the cache holds the answers to other ECMs.
		return " (an ECM cache answers the ECMs it was recorded from: record this stream's with -key-server URL -ecm-cache FILE)"
	}
	if lk := st.LiveKeys; lk != nil && lk.Server != nil && lk.Server.CWs == 0 {
		// No CW came from the key server: the line gives the server's last answer (a refused
		// login, nothing found), which no advice about control words would help with.
		return ""
	}
	if h := keyhint.Hint(st.Samples, sys, keyhint.Keys{Sched: ks.sched, Given: ks.given}, keySourceOf(&c.keys, ks)); h != "" {
		return " (" + h + ")"
	}
	return " (check the control words, their parity and order, -cipher and -reduce-entropy)"
}
