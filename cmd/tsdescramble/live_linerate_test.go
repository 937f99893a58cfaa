//go:build linux

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tsdescramble/tsdescramble/internal/testsupport/proc"
	"github.com/tsdescramble/tsdescramble/internal/testsupport/udpload"
)

// TestLiveLineRate looks for the highest rate at which a live run loses nothing on this
// machine, UDP in and UDP out on loopback, the test's sender and receiver beside the command:
// at each rate in turn (TSD_LINERATE_MBITS, Mbit/s, comma-separated; 200 to 2000 by default)
// the batching sender of package udpload sends the scrambled sample looped for
// TSD_LINERATE_SECONDS (10 by default) into the built command, which descrambles it and sends
// it on to the batching receiver, which checks that every datagram is whole clear packets in
// order. The receiver takes the command's segmented sends whole (UDP_GRO), as a network card
// that segments would carry them; TSD_LINERATE_RECEIVER=plain has it take one datagram a
// message, so that the command's sends pay for the kernel cutting them up on loopback.
// TSD_LINERATE_SENDER=gso has the sender send each batch as one segmented send (UDP_SEGMENT),
// which the command's socket takes coalesced (UDP_GRO), as a network card that coalesces would
// hand it datagrams; by default it sends a datagram a message (sendmmsg). Each
// step logs where every datagram went: sent; taken by the command and dropped by the kernel
// on its socket (its -stats); sent on by the command; received by the receiver and dropped on
// its socket; and the machine's UDP error counters (/proc/net/snmp, which count other
// programs' sockets too). It logs the CPU time of the sender's and receiver's threads and of
// the command. The steps end at the first rate that loses anything twice in a row, or at
// which the sender falls short of the rate by more than 2 % twice (the machine could not
// run it); the highest rate before it is logged as the zero-loss rate. TSD_LINERATE_BEFORE=BINARY runs
// that build of the command too, alternating with this one at each step, so that two builds
// are compared under the same load. TSD_LINERATE_CPUPROFILE=DIR writes the command's CPU
// profile of each step there (BUILD-RATE-TRY.pprof). The test fails only when the command
// loses packets between its input and its output. Datagrams that come out other than the clear
// sample are logged and end the step: after the kernel drops some on the way in, periods are
// left as they came where a loss leaves their key unknown (pipeline's TestPacketLossLeavesOrClears
// holds the output to that).
func TestLiveLineRate(t *testing.T) {
	needLong(t, "streams 10 s at each of several rates up to 2 Gbit/s")
	rates := []float64{200, 500, 800, 1000, 1500, 2000}
	if s := os.Getenv("TSD_LINERATE_MBITS"); s != "" {
		rates = nil
		for _, f := range strings.Split(s, ",") {
			r, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
			if err != nil || r <= 0 {
				t.Fatalf("TSD_LINERATE_MBITS=%q: want rates in Mbit/s, comma-separated", s)
			}
			rates = append(rates, r)
		}
	}
	seconds := 10
	if s := os.Getenv("TSD_LINERATE_SECONDS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 || n > 600 {
			t.Fatalf("TSD_LINERATE_SECONDS=%q: want a number of seconds up to 600", s)
		}
		seconds = n
	}
	ends := lineRateEnds{coalesce: true}
	switch s := os.Getenv("TSD_LINERATE_RECEIVER"); s {
	case "", "gro":
	case "plain":
		ends.coalesce = false
	default:
		t.Fatalf("TSD_LINERATE_RECEIVER=%q: want gro (the default) or plain", s)
	}
	switch s := os.Getenv("TSD_LINERATE_SENDER"); s {
	case "", "plain":
	case "gso":
		ends.segment = true
	default:
		t.Fatalf("TSD_LINERATE_SENDER=%q: want plain (the default) or gso", s)
	}
	profDir := os.Getenv("TSD_LINERATE_CPUPROFILE")
	builds := []lineRateBuild{{name: "this", bin: buildBinary(t, "")}}
	if b := os.Getenv("TSD_LINERATE_BEFORE"); b != "" {
		if _, err := os.Stat(b); err != nil {
			t.Fatalf("TSD_LINERATE_BEFORE: %v; give the path of a built tsdescramble", err)
		}
		builds = []lineRateBuild{{name: "before", bin: b}, {name: "after", bin: builds[0].bin}}
	}
	scr, clear := readFile(t, demoScrambled), readFile(t, demoClear)
	t.Logf("CPU %s, %d cores; load average before: %s; receiver coalescing: %v; sender segmenting: %v", cpuName(), runtime.NumCPU(), loadAvg(), ends.coalesce, ends.segment)
	for _, rate := range rates {
		going := 0
		for i := range builds {
			b := &builds[i]
			if b.stopped {
				continue
			}
			lost := true
			// The machine is shared: a step that loses is run once more before it counts.
			for try := 1; try <= 2 && lost; try++ {
				t.Run(fmt.Sprintf("%s/%.0f Mbit/s, try %d", b.name, rate, try), func(t *testing.T) {
					prof := ""
					if profDir != "" {
						prof = filepath.Join(profDir, fmt.Sprintf("%s-%.0f-%d.pprof", b.name, rate, try))
					}
					lost = lineRateStep(t, b.bin, scr, clear, rate*1e6, time.Duration(seconds)*time.Second, ends, prof)
				})
			}
			if lost {
				b.stopped = true
				continue
			}
			b.best = rate
			going++
		}
		if going == 0 {
			break
		}
	}
	for _, b := range builds {
		t.Logf("%s build: highest rate without loss %.0f Mbit/s", b.name, b.best)
	}
	t.Logf("CPU %s; load average after: %s", cpuName(), loadAvg())
}

// lineRateEnds is how the test's sender and receiver meet the command's sockets.
type lineRateEnds struct {
	coalesce bool // the receiver takes datagrams coalesced (UDP_GRO)
	segment  bool // the sender's batches go as one segmented send each (UDP_SEGMENT)
}

// lineRateBuild is a build of the command the line rate test steps up.
type lineRateBuild struct {
	name, bin string
	best      float64 // the highest rate without loss so far, Mbit/s
	stopped   bool    // a rate lost twice
}

// lineRateStep sends at rate for d through the command and logs where the datagrams went; it
// reports whether any was lost, or the sender could not keep the rate.
func lineRateStep(t *testing.T, bin string, scr, clear []byte, rate float64, d time.Duration, ends lineRateEnds, prof string) (lost bool) {
	recv, err := udpload.Listen(clear)
	if err != nil {
		t.Fatal(err)
	}
	defer recv.Close()
	if ends.coalesce && !recv.Coalesce() {
		t.Log("the kernel does not coalesce datagrams for the receiver (UDP_GRO): it takes one a message")
	}
	in := freeUDPPort(t)
	stats := filepath.Join(t.TempDir(), "stats.json")
	args := []string{"-q", "-in", fmt.Sprintf("udp://@127.0.0.1:%d", in),
		"-out", fmt.Sprintf("udp://127.0.0.1:%d", recv.Addr().Port), "-cw-file", demoKeys, "-stats", stats}
	if prof != "" {
		args = append(args, "-cpuprofile", prof)
	}
	tsd := proc.Start(t, d+2*time.Minute, bin, args...)
	waitListening(t, in)
	queue := watchUDPQueue(t, in)
	snd, err := udpload.NewSender(&net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: in}, scr)
	if err != nil {
		t.Fatal(err)
	}
	defer snd.Close()
	if ends.segment && !snd.Segment() {
		t.Log("the kernel does not segment the sender's sends (UDP_SEGMENT): it sends a datagram a message")
	}

	snmp0 := udpCounters(t)
	var self0 syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &self0)
	cmd0 := procCPU(tsd.Cmd.Process.Pid)
	got := make(chan udpload.RecvStats, 1)
	go func() { got <- recv.Run(context.Background(), time.Second, d+time.Minute) }()
	sent, err := snd.Run(context.Background(), rate, d)
	if err != nil {
		t.Fatal(err)
	}
	rs := <-got // a second after the last datagram
	cmdCPU := procCPU(tsd.Cmd.Process.Pid) - cmd0
	var self1 syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &self1)
	snmp1 := udpCounters(t)
	peak, sockDrops := queue()
	tsd.Signal(t, os.Interrupt)

	var doc struct {
		PESGood int64 `json:"pes_good"`
		PESBad  int64 `json:"pes_bad"`
		Live    struct {
			In struct {
				Datagrams int64 `json:"datagrams"`
				Bytes     int64 `json:"bytes"`
				Dropped   int64 `json:"dropped_by_system"`
				Buffer    int   `json:"socket_buffer"`
			} `json:"input"`
			Out struct {
				Datagrams int64 `json:"datagrams"`
				Bytes     int64 `json:"bytes"`
			} `json:"output"`
		} `json:"live"`
	}
	if b, err := os.ReadFile(stats); err != nil || json.Unmarshal(b, &doc) != nil {
		t.Fatalf("no statistics from the command (%v):\n%s", err, tsd.Output())
	}
	ci, co := doc.Live.In, doc.Live.Out
	delta := func(k string) int64 { return snmp1[k] - snmp0[k] }
	pkts := func(b int64) int64 { return b / 188 }
	secs := sent.Elapsed.Seconds()
	t.Logf("asked %.0f Mbit/s, sent %.0f Mbit/s for %.1f s (%d batches late)", rate/1e6, sent.Rate()/1e6, secs, sent.Late)
	t.Logf("sender:   %d datagrams, %d packets", sent.Datagrams, pkts(sent.Bytes))
	t.Logf("command in:  %d datagrams, %d packets; dropped by the kernel on its socket: %d (buffer %d kB); not accounted for: %d datagrams",
		ci.Datagrams, pkts(ci.Bytes), ci.Dropped, ci.Buffer>>10, sent.Datagrams-ci.Datagrams-ci.Dropped)
	t.Logf("command in, its socket (/proc/net/udp, sampled every 5 ms): at most %d kB queued, %d drops", peak>>10, sockDrops)
	t.Logf("command out: %d datagrams, %d packets; lost inside the command: %d packets", co.Datagrams, pkts(co.Bytes), pkts(ci.Bytes-co.Bytes))
	t.Logf("receiver: %d datagrams in %d messages, %d packets (%d skips, %d packets skipped, %d wrong datagrams); dropped by the kernel on its socket: %d (buffer %d kB); not accounted for: %d packets",
		rs.Datagrams, rs.Messages, rs.Packets, rs.Skips, rs.Lost, rs.Wrong, rs.Dropped, rs.Buffer>>10, pkts(co.Bytes)-rs.Packets)
	t.Logf("machine UDP counters (/proc/net/snmp, all sockets): RcvbufErrors +%d, InErrors +%d, SndbufErrors +%d, InDatagrams +%d",
		delta("RcvbufErrors"), delta("InErrors"), delta("SndbufErrors"), delta("InDatagrams"))
	selfCPU := time.Duration(syscall.TimevalToNsec(self1.Utime) + syscall.TimevalToNsec(self1.Stime) -
		syscall.TimevalToNsec(self0.Utime) - syscall.TimevalToNsec(self0.Stime))
	t.Logf("CPU (share of a core over the %.1f s sent): sender thread %.2f, receiver thread %.2f, test process in all %.2f, command %.2f",
		secs, sent.CPU.Seconds()/secs, rs.CPU.Seconds()/secs, selfCPU.Seconds()/secs, cmdCPU.Seconds()/secs)
	if rs.Wrong > 0 {
		what := "in neither sample"
		if p := rs.FirstWrong; p != nil && bytes.Contains(scr, p) {
			what = "the scrambled sample's"
		}
		if p := rs.FirstWrong; p != nil {
			what += fmt.Sprintf(", header % x", p[:4])
		}
		t.Logf("%d datagrams came out with packets that are not the clear sample's: the first %s; the command's unit-start checks after descrambling: %d good, %d bad",
			rs.Wrong, what, doc.PESGood, doc.PESBad)
	}
	if ci.Bytes != co.Bytes {
		t.Errorf("the command took %d packets in and sent %d out:\n%s", pkts(ci.Bytes), pkts(co.Bytes), tsd.Output())
	}
	short := sent.Rate() < 0.98*rate
	if short {
		// The machine could not run the sender at the rate: the step says nothing of it.
		t.Logf("the sender fell short of the rate asked by %.1f %%: this rate is not shown", 100-100*sent.Rate()/rate)
	}
	return short || sent.Datagrams != ci.Datagrams || ci.Dropped > 0 || ci.Bytes != co.Bytes ||
		rs.Packets != pkts(sent.Bytes) || rs.Lost > 0 || rs.Dropped > 0 || rs.Wrong > 0
}

// udpCounters reads the Udp line of /proc/net/snmp.
func udpCounters(t *testing.T) map[string]int64 {
	b, err := os.ReadFile("/proc/net/snmp")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	m := map[string]int64{}
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) == 0 || f[0] != "Udp:" {
			continue
		}
		if names == nil {
			names = f[1:]
			continue
		}
		for i, v := range f[1:] {
			if i < len(names) {
				m[names[i]], _ = strconv.ParseInt(v, 10, 64)
			}
		}
	}
	return m
}

// procCPU is the user and system time a process has used so far (/proc/PID/stat, in ticks of
// 10 ms).
func procCPU(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	_, rest, _ := strings.Cut(string(b), ") ")
	f := strings.Fields(rest) // from the state, the third field
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	s, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+s) * 10 * time.Millisecond
}

// loadAvg is the first three figures of /proc/loadavg.
func loadAvg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}
