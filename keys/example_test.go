package keys_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/tsdescramble/tsdescramble/keys"
)

func ExampleParseBISS() {
	// A 12-digit BISS-1 session word gets its checksum bytes 3 and 7 inserted.
	cw, err := keys.ParseBISS("11 22 33 44 55 66")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%X\n", cw)
	// 16 digits are used as given.
	cw, _ = keys.ParseBISS("0123456989ABCD01")
	fmt.Printf("%X\n", cw)
	// Output:
	// 11223366445566FF
	// 0123456989ABCD01
}

func ExampleReadKeyFile() {
	// An OSCam control word log: the digit before each key is its parity.
	const cwl = `# OSCam cardserver v1.20 - http://www.streamboard.tv/oscam/
# control word log file for use with tsdec offline decrypter
0 11 22 33 66 44 55 66 FF # 21:10:29
1 AA BB CC 31 DD EE FF CA # 21:10:39
`
	kf, err := keys.ReadKeyFile(strings.NewReader(cwl), "20130620_I0001_My_Channel.cwl", keys.CWSize)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(kf.Format)
	for _, p := range kf.Periods {
		fmt.Printf("line %d odd=%v %X\n", p.Line, p.Odd, p.CW)
	}

	// A bad line is reported with the file name and line number.
	_, err = keys.ReadKeyFile(strings.NewReader("0 11 22 33 66 44 55 66\n"), "k.cwl", keys.CWSize)
	fmt.Println(err)
	// Output:
	// OSCam CW log
	// line 3 odd=false 11223366445566FF
	// line 4 odd=true AABBCC31DDEEFFCA
	// k.cwl:1: want a parity digit 0 or 1 then 8 hex bytes; found 7 bytes
}

func ExampleSchedule() {
	// A pair file: the even and odd keys of two pairs of crypto periods.
	const pairs = "11111133444444CC 2222226655555500\n" +
		"333333996666664C 77777765888888A0\n"
	kf, err := keys.ReadKeyFile(strings.NewReader(pairs), "pairs.txt", keys.CWSize)
	if err != nil {
		fmt.Println(err)
		return
	}
	s := kf.Schedule()
	// The parities of the scrambled packets, in stream order: each change starts a new
	// crypto period, which takes the next key.
	for _, odd := range []bool{false, false, true, true, false, true} {
		k := s.KeyFor(odd)
		fmt.Printf("odd=%-5v key %d %X\n", odd, k, s.CWs()[k])
	}
	fmt.Println("parity changes:", s.Changes())
	// Output:
	// odd=false key 0 11111133444444CC
	// odd=false key 0 11111133444444CC
	// odd=true  key 1 2222226655555500
	// odd=true  key 1 2222226655555500
	// odd=false key 2 333333996666664C
	// odd=true  key 3 77777765888888A0
	// parity changes: 3
}

func ExampleLive() {
	// Keys from a key server arrive while the stream runs, into key slots.
	live := keys.NewLive()
	// A crypto period notes when it begins (the arrival number of the latest CW): the CWs
	// that arrive after are new to it.
	begun := live.Seq()
	// The answer to the ECM arrives: both CWs of the pair; the odd one is sent again.
	live.Set(0, false, []byte{0x11, 0x22, 0x33, 0x66, 0x44, 0x55, 0x66, 0xFF})
	live.Set(0, true, []byte{0xAA, 0xBB, 0xCC, 0x31, 0xDD, 0xEE, 0xFF, 0xCA})
	live.Set(0, true, []byte{0xAA, 0xBB, 0xCC, 0x31, 0xDD, 0xEE, 0xFF, 0xCA})
	// What PID 0x100's slot received of each parity since: package keys/period decides from
	// it which CW each period takes.
	for _, odd := range []bool{false, true} {
		for _, a := range live.AppendSlot(nil, 0x100, odd, begun) {
			fmt.Printf("odd=%-5v %X arrived %d, last sent %d\n", odd, live.CW(a.CW), a.Seq, a.Last)
		}
	}
	// Output:
	// odd=false 11223366445566FF arrived 1, last sent 1
	// odd=true  AABBCC31DDEEFFCA arrived 2, last sent 3
}

func ExampleFollower() {
	dir, _ := os.MkdirTemp("", "follow")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "live.cwl")
	os.WriteFile(path, []byte("0 11 22 33 66 44 55 66 FF\n1 01 02 03 06 08 09 0A 1B\n"), 0o644)

	live := keys.NewLive()
	fl := keys.NewFollower(path, keys.CWSize, live, func(err error) { fmt.Println(err) })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go fl.Run(ctx, 200*time.Millisecond)

	// The even key is corrected in place; reading on from where it was would not see it.
	os.WriteFile(path, []byte("0 AA BB CC 31 DD EE FF CA\n1 01 02 03 06 08 09 0A 1B\n"), 0o644)
	read := make(chan int)
	fl.Reread(func(keyLines int, err error) { read <- keyLines })
	fmt.Println(<-read, "key lines read again")
	fmt.Printf("even key %X\n", live.CW(live.Held(0x100, false)))
	// Output:
	// 2 key lines read again
	// even key AABBCC31DDEEFFCA
}
