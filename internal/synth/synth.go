// Package synth makes synthetic transport streams for benchmarks (the bench command) and tests.
package synth

import (
	"github.com/tsdescramble/tsdescramble/csa"
	"github.com/tsdescramble/tsdescramble/ts"
)

// SyntheticStream returns n 188-byte packets of a scrambled stream for measurements: payloads of
// 184 bytes on two PIDs, every 20th packet with an adaptation field of a varying size, every 8th
// packet of each PID (without adaptation field) the start of a PES packet with a PTS, scrambled
// with key in crypto periods of period packets that alternate between even and odd parity (the
// same key for both, so one schedule descrambles it). The bytes follow a fixed pattern, so the
// same arguments give the same stream.
//
// The payloads are scrambled many at a time (Scrambler): a stream of 50,000 packets takes
// milliseconds, not half a second.
func SyntheticStream(n, period int, key *csa.Key) []byte {
	stream := make([]byte, n*ts.PacketSize)
	var scr Scrambler
	x := uint32(2463534242)
	for i := range n {
		p := stream[i*ts.PacketSize : (i+1)*ts.PacketSize]
		for j := 4; j < ts.PacketSize; j++ {
			x ^= x << 13
			x ^= x >> 17
			x ^= x << 5
			p[j] = byte(x)
		}
		pid := 0x100 + i%2
		p[0], p[1], p[2], p[3] = ts.SyncByte, byte(pid>>8), byte(pid), 0x10|byte(i&0xF)
		if i%20 == 19 {
			p[3] |= 0x20
			p[4] = byte(i % 150)
			p[5] = 0
		}
		off, _ := ts.PayloadOffset(p)
		if (i/2)%8 == 0 && off == ts.HeaderSize {
			p[1] |= 0x40
			copy(p[off:], []byte{0, 0, 1, 0xE0, 0, 0, 0x80, 0x80, 5, 0x21, byte(i >> 8), byte(i) | 1, 0, 1})
		}
		scr.Add(key, i*ts.PacketSize+off, (i+1)*ts.PacketSize)
		if period > 0 && (i/period)%2 == 1 {
			ts.SetTSC(p, ts.Odd)
		} else {
			ts.SetTSC(p, ts.Even)
		}
	}
	scr.EncryptIn(stream)
	return stream
}
