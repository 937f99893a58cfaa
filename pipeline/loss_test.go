package pipeline

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/tsdescramble/tsdescramble/keys"
	"github.com/tsdescramble/tsdescramble/ts"
)

// A loss profile: a burst of lost packets begins at a packet with probability 1/every, and
// is datagrams of 7 packets, from 1 to maxDatagrams of them.
type lossProfile struct {
	name                string
	every, maxDatagrams int
}

var lossProfiles = []lossProfile{
	// Seconds of signal lost (up to 2800 packets, more than half the sample): the losses
	// join crypto periods that are not neighbours, of either parity.
	{"seconds", 100, 400},
	// Datagrams lost on a network, a few at a time.
	{"datagrams", 50, 10},
}

// lossyLoop plays the sample stream loops times over, losing bursts of packets as profile
// says. It returns the stream and, for each of its packets, the sample packet it is.
func lossyLoop(sample []byte, loops int, profile lossProfile, seed uint64) ([]byte, []int) {
	rng := rand.New(rand.NewPCG(seed, 0))
	n := len(sample) / ts.PacketSize
	var out []byte
	var from []int
	for i := 0; i < loops*n; {
		if rng.IntN(profile.every) == 0 {
			i += 7 * (1 + rng.IntN(profile.maxDatagrams))
			continue
		}
		k := i % n
		out = append(out, sample[k*ts.PacketSize:(k+1)*ts.PacketSize]...)
		from = append(from, k)
		i++
	}
	return out, from
}

// unseenLoss marks the packets of a PES packet that a loss the continuity counters cannot show
// cuts (the PID lost a multiple of 16 of its packets, so its counter follows on): the PID's
// packets after its last unit start before the loss and before its first unit start after it.
// Nothing in the stream says there that the key may have stopped applying: a period those
// packets are in takes the key its first unit start fits, after the loss.
func unseenLoss(stream []byte, from []int, sample []byte) []bool {
	n := len(sample) / ts.PacketSize
	// next[k] is the sample index of the packet of the same PID after sample packet k.
	next := make([]int, n)
	last := map[uint16]int{}
	for k := 2*n - 1; k >= 0; k-- { // twice round: the sample loops
		kk := k % n
		pid := ts.PID(sample[kk*ts.PacketSize:])
		if j, ok := last[pid]; ok && k < n {
			next[kk] = j
		}
		last[pid] = kk
	}
	marked := make([]bool, len(from))
	prev := map[uint16]int{}         // PID → index in stream of its last packet
	sinceStart := map[uint16][]int{} // PID → its packets since its last unit start
	unseen := map[uint16]bool{}
	for i, k := range from {
		p := stream[i*ts.PacketSize:]
		pid := ts.PID(p)
		if j, ok := prev[pid]; ok && next[from[j]] != k && p[3]&0x0F == (stream[j*ts.PacketSize+3]+1)&0x0F {
			unseen[pid] = true
			for _, b := range sinceStart[pid] {
				marked[b] = true
			}
		}
		prev[pid] = i
		if ts.PUSI(p) {
			unseen[pid], sinceStart[pid] = false, sinceStart[pid][:0]
			continue
		}
		sinceStart[pid] = append(sinceStart[pid], i)
		marked[i] = unseen[pid]
	}
	return marked
}

// A stream that loses packets, bursts of them that join crypto periods far apart, comes out with
// every packet clear or as it came: a period whose key may have changed in a loss takes a key
// only from a unit start (or a sibling's) after it. The one exception is what no stream can
// show: the packets after a loss the counters hide, up to the PID's next unit start, which
// fails the key and ends its use there.
func TestPacketLossLeavesOrClears(t *testing.T) {
	t.Parallel()
	scrambled, err := os.ReadFile("../samples/demo-scrambled.ts")
	if err != nil {
		t.Fatal(err)
	}
	clear, err := os.ReadFile("../samples/demo-clear.ts")
	if err != nil {
		t.Fatal(err)
	}
	kf, err := keys.LoadKeyFile("../samples/demo-keys.txt", keys.CWSize)
	if err != nil {
		t.Fatal(err)
	}
	loops := 40
	if testing.Short() {
		loops = 12
	}
	seeds := uint64(4)
	if os.Getenv("TSD_LONG") != "" {
		seeds = 30
	}
	for run := uint64(0); run < seeds*uint64(len(lossProfiles)); run++ {
		profile, seed := lossProfiles[run%uint64(len(lossProfiles))], 1+run/uint64(len(lossProfiles))
		in, from := lossyLoop(scrambled, loops, profile, seed)
		exempt := unseenLoss(in, from, scrambled)
		var first []byte
		for _, tune := range []struct{ workers, batch int }{{1, 1}, {2, 64}} {
			t.Run(fmt.Sprintf("%s-seed%d/w%d-b%d", profile.name, seed, tune.workers, tune.batch), func(t *testing.T) {
				var out bytes.Buffer
				st, err := Run(context.Background(), ts.NewSource(bytes.NewReader(in)), &out,
					Options{Keys: kf.Schedule(), Workers: tune.workers, Batch: tune.batch})
				if err != nil {
					t.Fatal(err)
				}
				if first == nil {
					first = out.Bytes()
				} else if !bytes.Equal(first, out.Bytes()) {
					t.Fatal("the output depends on -workers and -batch")
				}
				o := out.Bytes()
				var good, asCame, wrong, excused int
				for i, k := range from {
					got := o[i*ts.PacketSize : (i+1)*ts.PacketSize]
					switch {
					case bytes.Equal(got, clear[k*ts.PacketSize:(k+1)*ts.PacketSize]):
						good++
					case bytes.Equal(got, scrambled[k*ts.PacketSize:(k+1)*ts.PacketSize]):
						asCame++
					case exempt[i]:
						excused++
					default:
						if wrong < 5 {
							t.Errorf("packet %d (sample packet %d, PID %#04x) descrambled with a key that does not apply", i, k, ts.PID(got))
						}
						wrong++
					}
				}
				t.Logf("%d packets: %d clear, %d as they came, %d wrong after a loss the counters hide; %d continuity errors",
					len(from), good, asCame, excused, st.CCErrors)
				if wrong > 0 {
					t.Fatalf("%d packets descrambled with a key that does not apply", wrong)
				}
				// Most periods have unit starts after the losses: most packets come out clear.
				if good < len(from)*9/10 {
					t.Fatalf("only %d of %d packets clear", good, len(from))
				}
			})
		}
	}
}
