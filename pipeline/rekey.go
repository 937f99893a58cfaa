package pipeline

import (
	"errors"
	"fmt"
	"slices"

	"github.com/tsdescramble/tsdescramble/keys"
	"github.com/tsdescramble/tsdescramble/scrambling"
)

// rekey replaces the run's input key schedule (Options.Rekey: a key file edited while a live
// run goes on). It is called between two units of work, when no unit is held and no crypto
// period is open: the periods that began under the old schedule have been decided with it.
// Every PID then starts over as at the start of the stream: its next packet starts a crypto
// period whose key is found in the new schedule at its first unit start, wherever the new list
// begins. A schedule with a control word the input system cannot take is refused, and the old
// one kept.
func (cl *classifier) rekey(s *keys.Schedule) error {
	if s == nil || cl.mode == Scramble {
		return nil
	}
	if cl.live != nil {
		return errors.New("the keys come from Options.LiveKeys")
	}
	sizes := cl.cs.in.KeySizes()
	for i := range s.NumCWs() {
		if n := len(s.CW(i)); !slices.Contains(sizes, n) {
			_, err := cl.cs.in.NewKey(s.CW(i))
			return fmt.Errorf("control word %d: %w", i+1, err)
		}
	}
	cl.cs.sched, cl.cs.inKeys, cl.cs.cw = s, make(map[int]scrambling.Key), s.CW
	cl.keys = s
	cl.haveHint = false
	for _, pk := range cl.pk {
		if pk != nil {
			pk.cur, pk.prev, pk.run, pk.prevRun = -1, -1, 0, 0
			pk.everFit, pk.failed, pk.foreign = false, 0, false
		}
	}
	// No packet refers to a period any more.
	cl.periods, cl.open = cl.periods[:0], cl.open[:0]
	return nil
}
