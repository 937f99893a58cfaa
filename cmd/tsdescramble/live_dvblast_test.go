//go:build linux

package main

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tsdescramble/tsdescramble/internal/testsupport/proc"
)

// dvblast, the headend's demultiplexer and multicast re-sender, as a peer of the command's live
// input and output: it parses our RTP and sends its own, which the command must read. Each test
// sends the sample paced at its PCR: the first two seconds of it (all 20 s with TSD_LONG=1).

// dvblastPackets returns how many packets of the sample a dvblast test sends: whole datagrams
// of 7, which dvblast re-sends as they came (it pads a datagram it sends part full with null
// packets).
func dvblastPackets() int {
	n := 480 // two seconds of the sample
	if longTests() {
		n = demoPackets
	}
	return n - n%7
}

// dvblast receives the command's descrambled RTP output (-D takes RTP, strips its header) and
// writes every packet it receives to its standard output (-3): the file path's output, byte for
// byte.
func TestPeerDvblastReceivesRTP(t *testing.T) {
	t.Parallel()
	needTool(t, "dvblast")
	bin := buildBinary(t, "")
	port := freeUDPPort(t)
	out := filepath.Join(t.TempDir(), "out.ts")
	// exec: the pid proc stops is dvblast's own.
	dvb := proc.Start(t, time.Minute, "sh", "-c", fmt.Sprintf("exec dvblast -D @127.0.0.1:%d -3 > '%s'", port, out))
	waitListening(t, port)
	packets := dvblastPackets()
	res, err := exec.Command(bin, "-in", demoScrambled, "-out", fmt.Sprintf("rtp://127.0.0.1:%d", port), "-cw-file", demoKeys,
		"-packets", fmt.Sprint(packets)).CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, res)
	}
	want := readFile(t, demoClear)[:packets*188]
	// dvblast writes its standard output in blocks of 4 kB, the last one when it ends.
	waitFile(t, out, int64(len(want))&^4095, 10*time.Second)
	time.Sleep(300 * time.Millisecond)
	dvb.Signal(t, syscall.SIGTERM)
	sameBytes(t, "received by dvblast", readFile(t, out), want, 188)
	if o := dvb.Output(); !strings.Contains(o, "rtpsource:") {
		t.Errorf("dvblast did not take the datagrams for RTP:\n%s", o)
	}
}

// dvblast re-sends, as RTP (-d duplicates every packet it receives), the raw UDP the command
// sends it, scrambled with a control word of its own; the command receives dvblast's RTP and
// descrambles it with that word: the clear sample again, with no RTP datagram lost. (-E 2000:
// dvblast holds a datagram part full up to 2 s, rather than 40 ms, before it pads it with null
// packets and sends it; the sample's packets come far more often than that.)
func TestPeerDvblastSendsRTP(t *testing.T) {
	t.Parallel()
	needTool(t, "dvblast")
	bin := buildBinary(t, "")
	dir := t.TempDir()
	in, relay := freeUDPPort(t), freeUDPPort(t)
	out, stats := filepath.Join(dir, "out.ts"), filepath.Join(dir, "stats.json")
	const cw = "11223366445566ff"
	packets := dvblastPackets()
	tsd := proc.Start(t, time.Minute, bin, "-in", fmt.Sprintf("rtp://@127.0.0.1:%d", relay), "-out", out, "-cw", cw,
		"-packets", fmt.Sprint(packets), "-timeout", "20s", "-stats", stats)
	waitListening(t, relay)
	proc.Start(t, time.Minute, "dvblast", "-D", fmt.Sprintf("@127.0.0.1:%d/udp", in), "-d", fmt.Sprintf("127.0.0.1:%d", relay), "-E", "2000")
	waitListening(t, in)
	res, err := exec.Command(bin, "scramble", "-in", demoClear, "-out", fmt.Sprintf("udp://127.0.0.1:%d", in), "-cw", cw,
		"-packets", fmt.Sprint(packets)).CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, res)
	}
	if code := tsd.Wait(t, 30*time.Second); code != 0 {
		t.Fatalf("exit %d:\n%s", code, tsd.Output())
	}
	sameBytes(t, "sent by dvblast, descrambled", readFile(t, out), readFile(t, demoClear)[:packets*188], 188)
	if s := string(readFile(t, stats)); !strings.Contains(s, `"rtp_lost": 0,`) || strings.Contains(s, `"rtp": 0,`) ||
		!strings.Contains(s, `"not_rtp": 0,`) {
		t.Errorf("RTP figures:\n%s", s)
	}
}
