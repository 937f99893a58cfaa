//go:build dvbcsa

// Command dvbcsa-scramble scrambles a clear transport stream with libdvbcsa, an implementation of
// DVB-CSA2 independent of this project's, to make test streams and the bundled samples:
//
//	go run -tags dvbcsa ./internal/cmd/dvbcsa-scramble -in clear.ts -out scrambled.ts \
//	    -cw-file keys.txt -cp 500 -pids 256,257
//
// Crypto period i (of -cp scrambled packets) uses CW i of the list, cyclically, with the parity
// alternating from even. It needs Debian's libdvbcsa-dev and is not part of the default build.
package main

import (
	"flag"
	"fmt"
	"github.com/tsdescramble/tsdescramble/ts"
	"os"
	"strconv"
	"strings"

	"github.com/tsdescramble/tsdescramble/internal/testsupport/dvbcsa"
	"github.com/tsdescramble/tsdescramble/keys"
)

func main() {
	in := flag.String("in", "", "clear input `FILE` (188, 192 or 204-byte packets, no garbage)")
	out := flag.String("out", "", "scrambled output `FILE`")
	cwFile := flag.String("cw-file", "", "control words, one per line")
	cp := flag.Int("cp", 0, "crypto period length in scrambled packets (0: a single period)")
	pids := flag.String("pids", "", "comma-separated PIDs to scramble (decimal or 0x hex)")
	size := flag.Int("size", 188, "packet size: 188, 192 or 204")
	flag.Parse()
	if err := run(*in, *out, *cwFile, *cp, *pids, *size); err != nil {
		fmt.Fprintln(os.Stderr, "dvbcsa-scramble:", err)
		os.Exit(1)
	}
}

func run(in, out, cwFile string, cp int, pidList string, size int) error {
	cws, err := loadCWs(cwFile)
	if err != nil {
		return err
	}
	fr := map[int]ts.Framing{188: ts.Framing188, 192: ts.Framing192, 204: ts.Framing204}[size]
	if fr.Size == 0 {
		return fmt.Errorf("-size %d: want 188, 192 or 204", size)
	}
	pids := map[uint16]bool{}
	for _, s := range strings.Split(pidList, ",") {
		v, err := strconv.ParseUint(strings.TrimSpace(s), 0, 13)
		if err != nil {
			return fmt.Errorf("-pids: %v", err)
		}
		pids[uint16(v)] = true
	}
	stream, err := os.ReadFile(in)
	if err != nil {
		return err
	}
	n, err := dvbcsa.ScrambleStream(stream, fr, dvbcsa.ScrambleOptions{CWs: cws, CPPackets: cp, PIDs: pids})
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "dvbcsa-scramble: %d crypto periods\n", n)
	return os.WriteFile(out, stream, 0o644)
}

// loadCWs reads the control words of the list file at path. Crypto period i takes CW i
// whatever its parity, so only a plain list says which key each period gets; pair files and
// OSCam .cwl logs, whose keys carry a parity, are refused rather than guessed at.
func loadCWs(path string) ([][]byte, error) {
	kf, err := keys.LoadKeyFile(path, keys.CWSize)
	if err != nil {
		return nil, err
	}
	if kf.Format != keys.FormatList {
		return nil, fmt.Errorf("%s: %s, not a list of control words (one per line)", path, kf.Format)
	}
	return kf.CWs, nil
}
