package pipeline_test

import (
	"bytes"
	"context"
	"fmt"
	"log"
	"os"

	"github.com/tsdescramble/tsdescramble/keys"
	"github.com/tsdescramble/tsdescramble/pipeline"
	"github.com/tsdescramble/tsdescramble/ts"
)

// Descramble the bundled sample with its CW file, as tsdescramble -cw-file does. The README's
// library section quotes this body; a test in cmd/tsdescramble keeps the two the same.
func ExampleRun_keyFile() {
	// One CW per line, EVEN ODD pairs or an OSCam .cwl log: the layout is told from the content.
	kf, err := keys.LoadKeyFile("../samples/demo-keys.txt", keys.CWSize)
	if err != nil {
		log.Fatal(err)
	}
	in, err := os.Open("../samples/demo-scrambled.ts")
	if err != nil {
		log.Fatal(err)
	}
	defer in.Close()
	var out bytes.Buffer // any io.Writer: a file, a pipe, a connection

	// The source frames the input (188, 192 or 204 bytes, resynchronising after garbage).
	src := ts.NewSource(in)
	defer src.Close()
	// Each PID follows its own crypto periods; the list is aligned on the first PES start.
	st, err := pipeline.Run(context.Background(), src, &out, pipeline.Options{Keys: kf.Schedule()})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%d packets, %d descrambled, %d crypto periods, %d left scrambled\n",
		st.Packets, st.Descrambled, st.Periods, st.PeriodsLeft)

	clear, err := os.ReadFile("../samples/demo-clear.ts")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("identical to demo-clear.ts:", bytes.Equal(out.Bytes(), clear))
	// Output:
	// 4611 packets, 4192 descrambled, 12 crypto periods, 0 left scrambled
	// identical to demo-clear.ts: true
}
