package psi

import "testing"

// BenchmarkTrackerFeed feeds the Tracker a mix of PSI packets (repeated PAT and PMT) and
// packets of other PIDs, in MB/s of packets.
func BenchmarkTrackerFeed(b *testing.B) {
	c := carousel{}
	var pkts [][]byte
	for range 4 {
		pkts = append(pkts, c.packets(PATPID, demoPAT)...)
		pkts = append(pkts, c.packets(0x100, demoPMT1)...)
		pkts = append(pkts, c.packets(0x200, demoPMT2)...)
		for i := range 30 {
			pkts = append(pkts, packet(0x101, i == 0, byte(i), []byte{0, 0, 1, 0xE0}))
		}
	}
	tr := NewTracker()
	b.SetBytes(int64(len(pkts) * PacketSize))
	for b.Loop() {
		for _, p := range pkts {
			tr.Feed(p)
		}
	}
}
