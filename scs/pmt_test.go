package scs

import (
	"crypto/sha256"
	"flag"
	"fmt"
	"strings"
	"testing"

	"github.com/tsdescramble/tsdescramble/internal/testsupport/pmtcorpus"
	"github.com/tsdescramble/tsdescramble/psi"
	"github.com/tsdescramble/tsdescramble/simulcrypt"
)

var updatePin = flag.Bool("update", false, "rewrite testdata/pmt-rewrite.golden from what the stage does now")

// TestSignalPMTPinned pins what the CA_descriptor signalling makes of every packet of the
// corpus the PMT rewriter's tests share: a line per packet with a digest of the packet as it
// leaves, then the counts.
func TestSignalPMTPinned(t *testing.T) {
	var b strings.Builder
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"all", Config{ECMPID: 0x1FF0, ECMG: &simulcrypt.Config{SuperCASID: 0x4ADC0000}}},
		{"not-3", Config{ECMPID: 0x1FF0, ECMG: &simulcrypt.Config{SuperCASID: 0x4ADC0000},
			Scrambled: func(svc psi.Service) bool { return svc.Number != 3 }}},
		{"other-ecm-pid", Config{ECMPID: 0x0123, ECMG: &simulcrypt.Config{SuperCASID: 0x4ADC0000}}},
	} {
		var logs int
		tc.cfg.Log = func(string) { logs++ }
		s := &Stage{cfg: tc.cfg, tracker: psi.NewTracker(), wanted: map[uint16]bool{}}
		s.signalPMT(pmtcorpus.PAT(), 0)
		for i, in := range pmtcorpus.Packets(0x4ADC, 0x1FF0) {
			p := append([]byte(nil), in...)
			s.signalPMT(p, pmtcorpus.PID)
			fmt.Fprintf(&b, "%s %2d %x\n", tc.name, i, sha256.Sum256(p))
		}
		fmt.Fprintf(&b, "%s signalled %d left %d notes %d\n", tc.name, s.st.PMTSignalled, s.st.PMTLeft, logs)
	}
	pmtcorpus.CheckGolden(t, "testdata/pmt-rewrite.golden", b.String(), *updatePin)
}
