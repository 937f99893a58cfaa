package psi

import (
	"crypto/sha256"
	"flag"
	"fmt"
	"strings"
	"testing"

	"github.com/tsdescramble/tsdescramble/internal/testsupport/pmtcorpus"
)

var updatePin = flag.Bool("update", false, "rewrite testdata/pmt-rewrite.golden from what the rewriter does now")

// TestPMTRewritePinned pins what the PMT rewriter makes of every packet of the shared corpus,
// for the ways the scrambling signalling uses it: a line per packet with a digest of the
// packet as it leaves and what Packet said. scs pins its own use on the same corpus.
func TestPMTRewritePinned(t *testing.T) {
	configs := []struct {
		name string
		s    PMTSignaller
	}{
		{"mode=dfc", PMTSignaller{Mode: ScramblingDFC}},
		{"mode=csa2/replace-only", PMTSignaller{Mode: ScramblingCSA2, ReplaceOnly: true}},
		{"mode=serpent/not-3", PMTSignaller{Mode: ScramblingSerpent, Want: func(n uint16) bool { return n != 3 }}},
		{"mode=cissa/replace-only/not-2", PMTSignaller{Mode: ScramblingCISSA1, ReplaceOnly: true, Want: func(n uint16) bool { return n != 2 }}},
	}
	var b strings.Builder
	for _, c := range configs {
		for i, in := range pmtcorpus.Packets(0x4ADC, 0x1FF0) {
			p := append([]byte(nil), in...)
			r := c.s.Packet(p)
			fmt.Fprintf(&b, "%s %2d %x %+v\n", c.name, i, sha256.Sum256(p), r)
		}
	}
	pmtcorpus.CheckGolden(t, "testdata/pmt-rewrite.golden", b.String(), *updatePin)
}
