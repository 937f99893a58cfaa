package period_test

import (
	"fmt"

	"github.com/tsdescramble/tsdescramble/keys"
	"github.com/tsdescramble/tsdescramble/keys/period"
	"github.com/tsdescramble/tsdescramble/psi"
	"github.com/tsdescramble/tsdescramble/scrambling"
)

// A Tracker over a list of two CWs: the first packet of PID 0x100 starts a PES packet,
// scrambled with the list's second CW; the tracker finds it and its period takes it.
func ExampleTracker() {
	sys, _ := scrambling.NewCSA2(0)
	list := keys.NewList(cws[:2])
	tr := period.New(period.Config{Keys: list, System: sys, Tables: psi.NewTracker()})
	defer tr.Release()

	payload := pesStart()
	key, _ := sys.NewKey(cws[1])
	sys.NewProcessor().Encrypt(key, [][]byte{payload})

	id := tr.Packet(1, 0x100, false, false) // packet 1 of the stream, even parity
	id = tr.UnitStart(id, payload, psi.CarriagePES)
	state, cw := tr.Decision(id)
	fmt.Println(state == period.Fit, cw+1, "of", list.NumCWs())
	// Output: true 2 of 2
}
