//go:build dvbcsa

package main

import (
	"testing"

	"github.com/tsdescramble/tsdescramble/internal/testsupport/dvbcsa"
	"github.com/tsdescramble/tsdescramble/ts"
)

// simulcryptOracle descrambles the SimulCrypt output with Debian's libdvbcsa and the logged CWs:
// the scrambler flips every scrambled PID at the same packet, so the n-th parity change of the
// scrambled packets starts period n.
func simulcryptOracle(t *testing.T, scrambled, clear []byte, cws [][]byte, pmtPID uint16) {
	t.Helper()
	out := append([]byte(nil), scrambled...)
	var ks []*dvbcsa.Key
	for _, cw := range cws {
		k, err := dvbcsa.NewKey(cw)
		if err != nil {
			t.Fatal(err)
		}
		defer k.Free()
		ks = append(ks, k)
	}
	period, last := -1, ts.Scrambling(0xFF)
	for _, p := range packets(out) {
		tsc := ts.TSC(p)
		if tsc != ts.Even && tsc != ts.Odd {
			continue
		}
		if tsc != last {
			last = tsc
			period++
		}
		if period >= len(ks) {
			t.Fatalf("more periods than the log has CWs")
		}
		if off, ok := ts.PayloadOffset(p); ok {
			ks[period].Decrypt(p[off:])
		}
		ts.SetTSC(p, ts.Clear)
	}
	sameAsClear(t, "descrambled by libdvbcsa", clear, out, pmtPID)
	t.Logf("libdvbcsa descrambled %d crypto periods with the logged CWs", period+1)
}

// oracleName names the receiver model's descrambler.
const oracleName = "libdvbcsa"

// oracleDecrypt returns the receiver model's descrambler for cw: Debian's libdvbcsa, an
// implementation independent of this project's, freed when t ends.
func oracleDecrypt(t *testing.T, cw []byte) func([]byte) {
	t.Helper()
	k, err := dvbcsa.NewKey(cw)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.Free)
	return k.Decrypt
}
