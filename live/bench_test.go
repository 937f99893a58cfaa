package live

import (
	"encoding/binary"
	"errors"
	"testing"
	"time"

	"golang.org/x/net/ipv4"
)

// BenchmarkLoopback measures Writer → Reader throughput on 127.0.0.1: TS bytes that arrived
// per second of the run, in Gbit/s, and the share lost to a full receive buffer.
func BenchmarkLoopback(b *testing.B) {
	for _, c := range []struct{ name, in, out string }{
		{"udp-7pkts", "udp://@127.0.0.1:0", "udp://127.0.0.1:%d"},
		{"rtp-7pkts", "rtp://@127.0.0.1:0", "rtp://127.0.0.1:%d"},
		{"udp-64pkts", "udp://@127.0.0.1:0?buffer=33554432", "udp://127.0.0.1:%d?pkts=64"},
	} {
		b.Run(c.name, func(b *testing.B) {
			r := listenT(b, c.in)
			w := dialT(b, replacePort(c.out, port(r)))
			chunk := makeStream(7*64, 0, 1)
			got := make(chan int64, 1)
			go func() {
				var n int64
				buf := make([]byte, 1<<20)
				r.SetIdleTimeout(200 * time.Millisecond)
				for {
					k, err := r.Read(buf)
					n += int64(k)
					if errors.Is(err, ErrIdle) || err != nil {
						break
					}
				}
				got <- n
			}()
			b.SetBytes(int64(len(chunk)))
			b.ResetTimer()
			start := time.Now()
			for range b.N {
				if _, err := w.Write(chunk); err != nil {
					b.Fatal(err)
				}
			}
			w.Flush()
			n := <-got
			el := time.Since(start) - 200*time.Millisecond
			sent := int64(b.N) * int64(len(chunk))
			b.ReportMetric(float64(n)*8/el.Seconds()/1e9, "Gbit/s")
			b.ReportMetric(100*float64(sent-n)/float64(sent), "%lost")
		})
	}
}

func replacePort(s string, p int) string {
	for i := 0; i+1 < len(s); i++ {
		if s[i] == '%' && s[i+1] == 'd' {
			return s[:i] + itoa(p) + s[i+2:]
		}
	}
	return s
}

// BenchmarkTake measures the Reader's work per batch of received datagrams, without the
// socket: cutting them apart, the RTP header and sequence, the checks, the copy to Read's
// bytes. Bytes per second are TS bytes.
func BenchmarkTake(b *testing.B) {
	for _, c := range []struct {
		name string
		rtp  bool
		pkts int
	}{{"udp-7pkts", false, 7}, {"rtp-7pkts", true, 7}, {"udp-64pkts", false, 64}} {
		b.Run(c.name, func(b *testing.B) {
			r := &Reader{rtp: c.rtp}
			r.seq.emit = r.emit
			ms := make([]ipv4.Message, batchSize)
			payload := makeStream(c.pkts, 0, 1)
			hdr := 0
			if c.rtp {
				hdr = rtpHeaderSize
			}
			for i := range ms {
				d := make([]byte, hdr, hdr+len(payload))
				if c.rtp {
					putRTPHeader(d, 0, 0, 1)
				}
				d = append(d, payload...)
				ms[i].Buffers = [][]byte{d}
				ms[i].N = len(d)
			}
			now := time.Now()
			seq := uint16(0)
			b.SetBytes(int64(batchSize * len(payload)))
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if c.rtp {
					for i := range ms {
						binary.BigEndian.PutUint16(ms[i].Buffers[0][2:], seq)
						seq++
					}
				}
				r.take(ms, now)
				r.ready = r.ready[:0]
			}
		})
	}
}
