package live

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/tsdescramble/tsdescramble/ts"
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
