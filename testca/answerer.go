package testca

import (
	"context"
	"fmt"

	"github.com/tsdescramble/tsdescramble/keyserver"
)

// Answerer answers the ECMs of the test CA system with their CW pair, by XOR with Key, for a
// keyserver.Feeder: the ECMs of any input, a pipe or a live one too, become CWs in a keys.Live
// as they come, where ReadCWs needs the whole stream first.
type Answerer struct {
	Key []byte // KeySize bytes
}

// Answer implements keyserver.Answerer: the even and the odd CW the ECM section carries.
func (a Answerer) Answer(_ context.Context, ecm keyserver.ECM) (even, odd []byte, err error) {
	if len(a.Key) != KeySize {
		return nil, nil, fmt.Errorf("testca: key of %d bytes, want %d", len(a.Key), KeySize)
	}
	s := ecm.Section
	if len(s) < 3+2*KeySize || s[0]&0xFE != 0x80 || int(s[1]&0x0F)<<8|int(s[2]) < 2*KeySize {
		return nil, nil, fmt.Errorf("testca: not an ECM of the test CA system: %w", keyserver.ErrNotFound)
	}
	even, odd = make([]byte, KeySize), make([]byte, KeySize)
	for i := range KeySize {
		even[i] = s[3+i] ^ a.Key[i]
		odd[i] = s[3+KeySize+i] ^ a.Key[i]
	}
	return even, odd, nil
}
