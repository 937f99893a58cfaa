package live

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"slices"
	"testing"
	"time"

	"github.com/tsdescramble/tsdescramble/ts"
	"golang.org/x/net/ipv4"
)

// Datagrams keep their boundaries: each is checked on its own, one that is not a whole number
// of packets is dropped and counted, and no packet is made of bytes of two datagrams. The
// senders are plain sockets on loopback, for datagrams the Writer would never make.

// rtpDatagramFrom is rtpDatagram from the sender with the given SSRC.
func rtpDatagramFrom(ssrc uint32, seq uint16, payload []byte) []byte {
	b := rtpDatagram(seq, PayloadTypeMP2T, payload)
	binary.BigEndian.PutUint32(b[8:], ssrc)
	return b
}

// framed runs the framer over what a Reader passed on and returns its units.
func framed(t *testing.T, b []byte) [][]byte {
	t.Helper()
	f := ts.NewFramer(bytes.NewReader(b))
	var units [][]byte
	for {
		u, err := f.Next()
		if err == io.EOF {
			return units
		}
		if err != nil {
			t.Fatalf("framing what the Reader passed on: %v", err)
		}
		units = append(units, append([]byte(nil), u...))
	}
}

// onlyWhole checks that what a Reader passed on frames into the packets of want, in order, each
// a whole packet that was sent: none made of bytes of two datagrams.
func onlyWhole(t *testing.T, got, want []byte) {
	t.Helper()
	sent := map[string]bool{}
	for i := 0; i+188 <= len(want); i += 188 {
		sent[string(want[i:i+188])] = true
	}
	units := framed(t, got)
	for i, u := range units {
		if !sent[string(u)] {
			t.Fatalf("packet %d of %d (PID %#04x) is not one of the packets wanted: made of bytes of two datagrams, or another sender's", i, len(units), ts.PID(u))
		}
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("received stream differs: %s", firstDiff(got, want))
	}
}

// Short and cut datagrams between whole ones, as in the report: a 1-byte datagram (0x47) after
// each datagram of 7 packets, a datagram of one packet cut to 24 bytes, one of 7 packets whose
// last is cut to 24 bytes, one with a byte too many. Each is dropped whole and counted; the
// whole datagrams come through as they were sent.
func TestDatagramsNotWholePacketsDropped(t *testing.T) {
	for _, scheme := range []string{"udp", "rtp"} {
		t.Run(scheme, func(t *testing.T) {
			r := listenT(t, scheme+"://@127.0.0.1:0")
			stream := makeStream(70, 0, 1)
			other := makeStream(1100, 0, 1)[1000*188:] // packets numbered 1000 on: never sent whole
			var dgrams [][]byte
			seq := uint16(65530) // across the wrap
			add := func(b []byte) {
				if scheme == "rtp" {
					b = rtpDatagramFrom(5, seq, b)
					seq++
				}
				dgrams = append(dgrams, b)
			}
			bad := 0
			for i := range 10 {
				add(stream[i*7*188 : (i+1)*7*188])
				add([]byte{0x47})
				bad++
				switch i {
				case 3:
					add(other[:24])
					bad++
				case 6:
					add(other[7*188 : 7*188+6*188+24])
					bad++
				case 8:
					add(append(append([]byte(nil), other[14*188:21*188]...), 0x47))
					bad++
				}
			}
			sendRaw(t, r.LocalAddr(), dgrams...)
			got := readN(t, r, len(stream), 300*time.Millisecond, 10*time.Second)
			onlyWhole(t, got, stream)
			s := r.Stats()
			if s.Datagrams != int64(len(dgrams)) || s.Unaligned != int64(bad) || s.Bytes != int64(len(stream)) || s.Lost+s.Duplicates+s.Jumps+s.Reordered != 0 {
				t.Errorf("stats %+v, want %d datagrams, %d of them not whole packets", s, len(dgrams), bad)
			}
		})
	}
}

// Two RTP senders to one port: the Reader follows the first SSRC and drops the other's
// datagrams, counted, whatever their sequence numbers, on an rtp:// input and on a udp:// one
// that recognises RTP.
func TestRTPOtherSSRCDropped(t *testing.T) {
	for _, scheme := range []string{"rtp", "udp"} {
		for _, otherSeq := range []uint16{30000, 102, 95} {
			t.Run(fmt.Sprint(scheme, "-", otherSeq), func(t *testing.T) {
				r := listenT(t, scheme+"://@127.0.0.1:0")
				mine := makeStream(70, 0, 1)
				theirs := makeStream(1070, 0, 1)[1000*188:]
				var dgrams [][]byte
				for i := range 10 {
					dgrams = append(dgrams, rtpDatagramFrom(0x1111, 100+uint16(i), mine[i*7*188:(i+1)*7*188]),
						rtpDatagramFrom(0x2222, otherSeq+uint16(i), theirs[i*7*188:(i+1)*7*188]))
				}
				sendRaw(t, r.LocalAddr(), dgrams...)
				got := readN(t, r, len(mine), 300*time.Millisecond, 10*time.Second)
				onlyWhole(t, got, mine)
				s := r.Stats()
				if s.RTP != 20 || s.OtherSSRC != 10 || s.NewSSRC != 0 || s.Lost+s.Duplicates+s.Jumps+s.Reordered+s.Late != 0 {
					t.Errorf("stats %+v, want 10 of the 20 RTP datagrams from another SSRC", s)
				}
			})
		}
	}
}

// A sender that restarts draws a new SSRC and starts its sequence again, here at 0 after a
// full cycle, which the numbers the old sender used last still hold: once the old SSRC has
// been silent for senderTimeout, the new one is followed from its first datagram, none taken
// for a duplicate.
func TestRTPSenderRestart(t *testing.T) {
	r := listenT(t, "rtp://@127.0.0.1:0")
	stream := makeStream(70, 0, 1)
	var first [][]byte
	for i := range 60 {
		first = append(first, rtpDatagramFrom(7, 65500+uint16(i), stream[i*188:(i+1)*188])) // 65500 to 23
	}
	sendRaw(t, r.LocalAddr(), first...)
	got := readN(t, r, 60*188, time.Second, 10*time.Second)
	if len(got) != 60*188 {
		t.Fatalf("%d bytes from the first sender, want %d", len(got), 60*188)
	}
	time.Sleep(senderTimeout + 100*time.Millisecond)
	var second [][]byte
	for i := range 10 {
		second = append(second, rtpDatagramFrom(8, uint16(i), stream[(60+i)*188:(61+i)*188]))
	}
	sendRaw(t, r.LocalAddr(), second...)
	got = append(got, readN(t, r, 10*188, 300*time.Millisecond, 10*time.Second)...)
	onlyWhole(t, got, stream)
	s := r.Stats()
	if s.NewSSRC != 1 || s.OtherSSRC != 0 || s.Duplicates+s.Lost+s.Late != 0 {
		t.Errorf("stats %+v, want the new sender followed from its first datagram", s)
	}
}

// RTP and plain datagrams mixed on one input: each is taken for what it is, and the plain ones
// are never held back behind the RTP ones, nor the gaps they leave in the RTP sequence counted
// as losses.
func TestMixedRTPAndPlainInArrivalOrder(t *testing.T) {
	for _, scheme := range []string{"udp", "rtp"} {
		t.Run(scheme, func(t *testing.T) {
			r := listenT(t, scheme+"://@127.0.0.1:0")
			stream := makeStream(140, 0, 1)
			var dgrams [][]byte
			for i := range 20 {
				d := stream[i*7*188 : (i+1)*7*188]
				if i%2 == 0 {
					d = rtpDatagramFrom(3, uint16(i), d) // numbered among all the datagrams
				}
				dgrams = append(dgrams, d)
			}
			sendRaw(t, r.LocalAddr(), dgrams...)
			got := readN(t, r, len(stream), 300*time.Millisecond, 10*time.Second)
			onlyWhole(t, got, stream)
			s := r.Stats()
			notRTP := int64(0)
			if scheme == "rtp" {
				notRTP = 10
			}
			if s.RTP != 10 || s.NotRTP != notRTP || s.Lost+s.Reordered+s.Late+s.Duplicates+s.Jumps != 0 {
				t.Errorf("stats %+v", s)
			}
		})
	}
}

// wholeUnits is the test's own account of a datagram's TS bytes that the Reader passes on: a
// whole number of packets of one framing, each with its sync byte in place. It returns the
// packet size, or 0.
func wholeUnits(b []byte) int {
	for _, fr := range []struct{ size, prefix int }{{188, 0}, {192, 4}, {204, 0}} {
		ok := len(b) > 0 && len(b)%fr.size == 0
		for i := fr.prefix; ok && i < len(b); i += fr.size {
			ok = b[i] == 0x47
		}
		if ok {
			return fr.size
		}
	}
	return 0
}

// FuzzReaderDatagrams hands the Reader batches of datagrams of mixed sizes, as the kernel does
// (coalesced by UDP_GRO where the plan says so, on Linux), without a socket: whole datagrams of
// 1 to 7 packets in 188, 192 or 204-byte framing, 1-byte datagrams, datagrams cut short or one
// byte long, garbage; plain or RTP, from the sender followed or another. What Read would return
// must be exactly the whole datagrams' TS bytes in order, the others counted, and no packet the
// framer makes of it may hold bytes of two datagrams. Each datagram takes two bytes of plan:
// kind, packets and framing; RTP or not, another sender, coalesced with the one before, and
// how much to cut. The packets hold 0x47 only at their sync positions, so that changes of
// framing from one datagram to the next are not ambiguous; where the framing changes, the
// framer is held to it when each framing lasts confirmSyncs+1 packets or more, the fewest a
// change can be told in (ts.FuzzFramerChanges), and to every packet back when it never changes.
func FuzzReaderDatagrams(f *testing.F) {
	f.Add(false, false, []byte{0x30, 0, 0x04, 0, 0x30, 0x10, 0x35, 0x05, 0x36, 0x20}, []byte{1, 2, 3})
	f.Add(true, true, []byte{0x31, 0x80, 0x72, 0xC0, 0x04, 0x80, 0x30, 0xA0, 0xB3, 0x80, 0x07, 0x00}, []byte{0x47, 9})
	f.Add(false, true, []byte{0x38, 0x80, 0x78, 0x40, 0x38, 0x40, 0xB8, 0x40, 0x05, 0x41, 0x38, 0}, []byte{5})
	f.Fuzz(func(t *testing.T, rtpInput, mixed bool, plan, fill []byte) {
		if len(plan) > 400 {
			plan = plan[:400]
		}
		if len(fill) == 0 {
			fill = []byte{0}
		}
		k := 0
		next := func() byte { k++; return fill[k%len(fill)] + byte(k/len(fill)) }
		framings := []ts.Framing{ts.Framing188, ts.Framing192, ts.Framing204}
		one := framings[int(fill[0])%3]
		id := 0
		units := func(n int, fr ts.Framing) []byte {
			b := make([]byte, n*fr.Size)
			for i := range b {
				if b[i] = next(); b[i] == 0x47 {
					b[i] = 0
				}
			}
			for i := 0; i < n; i++ {
				p := b[i*fr.Size+fr.Prefix:]
				p[0], p[1], p[2], p[3] = 0x47, byte(id>>14)|0x80, byte(id>>7)|0x80, byte(id)|0x80
				id++
			}
			return b
		}
		type message struct {
			data []byte
			seg  int
			n    int  // datagrams in it
			shut bool // its last datagram is shorter than seg: no more may follow
		}
		var msgs []message
		var want []byte                    // the TS bytes of the whole datagrams, in order
		var bounds []int                   // where each of them ends in want
		shortest, run, last := 1<<30, 0, 0 // the packets of the shortest run of one framing
		changes := 0
		var dgrams, unaligned, other, notRTP int64
		var seqs [2]uint16
		followed := -1
		for i := 0; i+1 < len(plan); i += 2 {
			a, b := plan[i], plan[i+1]
			n := 1 + int(a>>3&7)%7
			fr := one
			if mixed {
				fr = framings[int(a>>6)%3]
			}
			var payload []byte
			switch a & 7 {
			case 4:
				payload = []byte{0x47}
			case 5: // cut short
				payload = units(n, fr)
				payload = payload[:len(payload)-1-int(b&63)%(len(payload)-1)]
			case 6: // a byte too many, or more (zeros: a sync byte there could make a
				// datagram whole in two framings, which no framer can tell apart)
				payload = append(units(n, fr), make([]byte, 1+int(b&63))...)
			case 7: // garbage
				payload = make([]byte, 1+int(b&63)*13)
				for j := range payload {
					payload[j] = next()
				}
			default:
				payload = units(n, fr)
			}
			asRTP, sender := b&0x80 != 0, int(b>>6&1)
			if !asRTP && payload[0]>>6 == rtpVersion {
				// A plain datagram with the version bits of RTP is the subject of
				// TestPlainLikeRTP; here the version bits say what a datagram is.
				payload[0] ^= 0x80
			}
			if a&7 == 7 && wholeUnits(payload) != 0 {
				payload = append(payload, 0)
			}
			wire := payload
			if asRTP {
				wire = rtpDatagramFrom(uint32(1+sender), seqs[sender], payload)
				seqs[sender]++
			}
			// What the Reader must make of it: the first sender of whole packets is followed.
			dgrams++
			if rtpInput && !asRTP {
				notRTP++
			}
			switch {
			case wholeUnits(payload) == 0:
				unaligned++
			case asRTP && followed >= 0 && sender != followed:
				other++
			default:
				if asRTP && followed < 0 {
					followed = sender
				}
				want = append(want, payload...)
				bounds = append(bounds, len(want))
				if size := wholeUnits(payload); size == last {
					run += len(payload) / size
				} else {
					if last != 0 {
						shortest = min(shortest, run)
						changes++
					}
					last, run = size, len(payload)/size
				}
			}
			// Coalesced with the message before, as UDP_GRO does: datagrams of one size, the
			// last of them possibly shorter, up to 64 KiB.
			if m := len(msgs) - 1; b&0x20 != 0 && m >= 0 && groControl(1) != nil && !msgs[m].shut &&
				len(wire) <= msgs[m].seg && len(msgs[m].data)+len(wire) <= 65535 {
				msgs[m].data = append(msgs[m].data, wire...)
				msgs[m].n++
				msgs[m].shut = len(wire) < msgs[m].seg
				continue
			}
			msgs = append(msgs, message{data: append([]byte(nil), wire...), seg: len(wire), n: 1})
		}
		r := &Reader{rtp: rtpInput, gro: groControl(1) != nil}
		r.seq.emit = r.emit
		batch := make([]ipv4.Message, 0, batchSize)
		now := time.Now()
		for i, m := range msgs {
			im := ipv4.Message{Buffers: [][]byte{m.data}, N: len(m.data)}
			if m.n > 1 {
				im.OOB = groControl(m.seg)
				im.NN = len(im.OOB)
			}
			if batch = append(batch, im); len(batch) == batchSize || i == len(msgs)-1 {
				r.take(batch, now)
				batch = batch[:0]
			}
		}
		r.seq.flush()
		got := r.ready
		if !bytes.Equal(got, want) {
			t.Fatalf("the Reader passed on %d bytes, not the %d of the whole datagrams in order", len(got), len(want))
		}
		s := r.Stats()
		if s.Datagrams != dgrams || s.Unaligned != unaligned || s.OtherSSRC != other || s.NotRTP != notRTP || s.Truncated != 0 || s.Bytes != int64(len(want)) {
			t.Fatalf("stats %+v; want %d datagrams, %d not whole packets, %d from another SSRC, %d without RTP", s, dgrams, unaligned, other, notRTP)
		}
		if shortest = min(shortest, run); changes > 0 && shortest < 3 {
			return
		}
		// Every packet the framer makes lies within one datagram.
		fr := ts.NewFramer(bytes.NewReader(got))
		defer fr.Release()
		var out int64
		for {
			u, err := fr.Next()
			if err != nil {
				break
			}
			out += int64(len(u))
			end := int(fr.BytesRead()) - fr.Buffered() // where the packet ends in got
			d, _ := slices.BinarySearch(bounds, end-len(u)+1)
			if end > bounds[d] {
				t.Fatalf("the framer made a %d-byte packet of bytes %d to %d, across the end of a datagram at %d", len(u), end-len(u), end, bounds[d])
			}
		}
		if changes == 0 && (out != int64(len(want)) || fr.Skipped() != 0) {
			t.Fatalf("one framing: %d bytes framed of %d, %d skipped", out, len(want), fr.Skipped())
		}
	})
}

// Plain 192-byte units whose time code starts with the version bits of RTP and payload type
// 33 are whole packets as they are: taken as plain on a udp:// input and on an rtp:// one,
// never stripped of a header they do not have.
func TestPlainLikeRTP(t *testing.T) {
	stream := makeStream(14, 0, 1)
	var units []byte
	for i := 0; i < 14; i++ {
		units = append(units, 0x80, PayloadTypeMP2T, 0, byte(i))
		units = append(units, stream[i*188:(i+1)*188]...)
	}
	for _, scheme := range []string{"udp", "rtp"} {
		t.Run(scheme, func(t *testing.T) {
			r := listenT(t, scheme+"://@127.0.0.1:0")
			sendRaw(t, r.LocalAddr(), units[:7*192], units[7*192:])
			got := readN(t, r, len(units), 300*time.Millisecond, 5*time.Second)
			if !bytes.Equal(got, units) {
				t.Fatalf("got %d bytes, want the %d of the two datagrams as they were", len(got), len(units))
			}
			if s := r.Stats(); s.RTP != 0 || s.Unaligned != 0 {
				t.Errorf("stats %+v", s)
			}
		})
	}
}
