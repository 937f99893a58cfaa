package simulcrypt_test

import (
	"fmt"

	"github.com/tsdescramble/tsdescramble/internal/wire/simulcrypt"
)

// A CW_provision for crypto period 16 of an ECMG that wants lead_CW 1 and CW_per_msg 2: the
// CWs of period 16 and 17, as the SCS sends it on the wire.
func ExampleNewCWProvision() {
	m := simulcrypt.NewCWProvision(2, 1, 1, 16, []simulcrypt.CPCW{
		{CP: 16, CW: []byte{0x11, 0x22, 0x33, 0x66, 0x44, 0x55, 0x66, 0xFF}},
		{CP: 17, CW: []byte{0x01, 0x02, 0x03, 0x06, 0x09, 0x08, 0x07, 0x18}},
	}, 100, nil)
	b := m.Append(nil)
	fmt.Printf("% X\n", b[:5])
	back, n, err := simulcrypt.Parse(b)
	fmt.Println(back.Type, len(back.Params), n == len(b), err)
	// Output:
	// 02 02 01 00 34
	// CW_provision 6 true <nil>
}
