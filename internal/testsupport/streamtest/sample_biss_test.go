//go:build dvbcsa

package streamtest

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/tsdescramble/tsdescramble/internal/testsupport/dvbcsa"
	"github.com/tsdescramble/tsdescramble/ts"
)

// The fixed-key sample is libdvbcsa's scrambling of the first 1000 packets of the clear sample
// with one control word in one (even) crypto period, as samples/README.md says, and every
// fixed-key flag of the README gives those packets back.
func TestSampleBISS(t *testing.T) {
	root := filepath.Join("..", "..", "..", "samples")
	biss, err := os.ReadFile(filepath.Join(root, "demo-biss.ts"))
	if err != nil {
		t.Fatal(err)
	}
	clear, err := os.ReadFile(filepath.Join(root, "demo-clear.ts"))
	if err != nil {
		t.Fatal(err)
	}
	clear = clear[:1000*ts.PacketSize]
	cw := []byte{0x11, 0x22, 0x33, 0x66, 0x44, 0x55, 0x66, 0xff}
	again := bytes.Clone(clear)
	if _, err := dvbcsa.ScrambleStream(again, ts.Framing188, dvbcsa.ScrambleOptions{CWs: [][]byte{cw}, PIDs: map[uint16]bool{0x100: true, 0x101: true}}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again, biss) {
		t.Fatal("samples/demo-biss.ts is not libdvbcsa's scrambling of the first 1000 packets of demo-clear.ts with 11223366445566ff")
	}
	for _, args := range [][]string{
		{"-biss", "112233445566"},
		{"-cw", "11223366445566ff"},
		{"-cw-even", "11223366445566ff", "-cw-odd", "0102030608090a1b"},
	} {
		if got := runFiles(t, biss, args...); !bytes.Equal(got, clear) {
			t.Errorf("%v: demo-biss.ts does not descramble to the first 1000 packets of demo-clear.ts", args)
		}
	}
}
