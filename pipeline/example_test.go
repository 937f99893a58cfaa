package pipeline_test

import (
	"bytes"
	"context"
	"fmt"

	"github.com/tsdescramble/tsdescramble/csa"
	"github.com/tsdescramble/tsdescramble/keys"
	"github.com/tsdescramble/tsdescramble/pipeline"
)

// Descramble a stream held in memory with one control word for both parities.
func ExampleRun() {
	cw := []byte{0x11, 0x22, 0x33, 0x66, 0x44, 0x55, 0x66, 0xff}
	key, _ := csa.NewKey(cw)
	scrambled := pipeline.SyntheticStream(1000, 250, key) // 1000 packets, 4 crypto periods

	var clear bytes.Buffer
	st, err := pipeline.Run(context.Background(), bytes.NewReader(scrambled), &clear, pipeline.Options{
		Keys: keys.NewFixed(cw, cw),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(st.Packets, "packets,", st.Even, "even,", st.Odd, "odd,", st.Descrambled, "descrambled")
	fmt.Println("crypto-period changes:", st.KeyChanges)
	fmt.Println("same size out:", clear.Len() == len(scrambled))
	// Output:
	// 1000 packets, 500 even, 500 odd, 1000 descrambled
	// crypto-period changes: 3
	// same size out: true
}
