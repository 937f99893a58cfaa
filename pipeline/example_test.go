package pipeline_test

import (
	"bytes"
	"context"
	"fmt"

	"github.com/tsdescramble/tsdescramble/csa"
	"github.com/tsdescramble/tsdescramble/keys"
	"github.com/tsdescramble/tsdescramble/pipeline"
	"github.com/tsdescramble/tsdescramble/ts"
)

// scrambledStream returns n packets of PID 0x100, each starting a PES packet, scrambled with
// cw in crypto periods of period packets, the parity alternating from even.
func scrambledStream(cw []byte, n, period int) []byte {
	key, _ := csa.NewKey(cw)
	var stream []byte
	for i := range n {
		p := make([]byte, ts.PacketSize)
		p[0], p[1], p[2], p[3] = ts.SyncByte, 0x41, 0x00, 0x10|byte(i&0xF)
		copy(p[4:], []byte{0, 0, 1, 0xE0, 0, 0, 0x80, 0x80, 5, 0x21, 0, 1, 0, 1})
		key.Encrypt(p[4:])
		ts.SetTSC(p, ts.Even)
		if (i/period)%2 == 1 {
			ts.SetTSC(p, ts.Odd)
		}
		stream = append(stream, p...)
	}
	return stream
}

// Descramble a stream held in memory with one control word for both parities.
func ExampleRun() {
	cw := []byte{0x11, 0x22, 0x33, 0x66, 0x44, 0x55, 0x66, 0xff}
	scrambled := scrambledStream(cw, 1000, 250) // 1000 packets, 4 crypto periods

	var clear bytes.Buffer
	st, err := pipeline.Run(context.Background(), ts.NewSource(bytes.NewReader(scrambled)), &clear, pipeline.Options{
		Keys: keys.NewFixed(cw, cw),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(st.Packets, "packets,", st.Even, "even,", st.Odd, "odd,", st.Descrambled, "descrambled")
	fmt.Println("crypto periods:", st.Periods, "left scrambled:", st.PeriodsLeft)
	fmt.Println("same size out:", clear.Len() == len(scrambled))
	// Output:
	// 1000 packets, 500 even, 500 odd, 1000 descrambled
	// crypto periods: 4 left scrambled: 0
	// same size out: true
}

// Pass a stream through without keys: every packet goes out as it came, counted.
func ExampleRun_passthrough() {
	scrambled := scrambledStream([]byte{1, 2, 3, 6, 4, 5, 6, 15}, 1000, 250)
	var out bytes.Buffer
	st, err := pipeline.Run(context.Background(), ts.NewSource(bytes.NewReader(scrambled)), &out, pipeline.Options{Mode: pipeline.Passthrough})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%d packets in, %d even, %d odd, %d descrambled; output as it came: %v\n",
		st.Packets, st.Even, st.Odd, st.Descrambled, bytes.Equal(out.Bytes(), scrambled))
	// Output:
	// 1000 packets in, 500 even, 500 odd, 0 descrambled; output as it came: true
}
