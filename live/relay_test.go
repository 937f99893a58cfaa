package live

import (
	"net"
	"slices"
	"testing"
	"time"
)

// relayScript is the send order of one block of 100 datagrams, as indices into the block, with
// the damage a network does: losses, duplicates, swaps, delays within the reorder window and
// one past it. Events are ten datagrams apart, so that their counts add up.
func relayScript() (order []int, lost, dups, reordered, late int64) {
	for i := 0; i < 100; i++ {
		switch i {
		case 10, 60, 61: // lost
		case 20: // sent twice
			order = append(order, i, i)
		case 30: // swapped with the next
			order = append(order, 31, 30)
			i++
		case 40: // four later ones overtake it: still in the window
			order = append(order, 41, 42, 43, 44, 40)
			i += 4
		case 50: // five overtake it: past the window, it comes out late
			order = append(order, 51, 52, 53, 54, 55, 50)
			i += 5
		case 70: // a copy three datagrams late
			order = append(order, 70, 71, 72, 73, 70)
			i += 3
		case 80: // three reversed
			order = append(order, 80, 83, 82, 81)
			i += 3
		case 90: // lost, and the next two swapped
			order = append(order, 92, 91)
			i += 2
		default:
			order = append(order, i)
		}
	}
	return order, 4, 2, 5, 1
}

// Writer → a relay that damages the stream on purpose → Reader: the Reader's counts match
// what the relay did, and every datagram that arrived comes out once, in order where the
// window allowed.
func TestRelay(t *testing.T) {
	const blocks = 3
	block, lost, dups, reordered, late := relayScript()
	var order []int
	for b := range blocks {
		for _, i := range block {
			order = append(order, b*100+i)
		}
	}
	// What must come out: each datagram that arrived, once, in sequence order, except the
	// late one of each block, which follows the five that overtook it.
	var want []int
	for _, i := range order {
		if !slices.Contains(want, i) {
			want = append(want, i)
		}
	}
	slices.Sort(want)
	for b := range blocks {
		k := slices.Index(want, b*100+50)
		want = slices.Insert(slices.Delete(want, k, k+1), k+5, b*100+50)
	}

	r := listenT(t, "rtp://@127.0.0.1:0")
	relay, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer relay.Close()
	relay.SetReadBuffer(4 << 20)
	w := dialT(t, "rtp://"+relay.LocalAddr().String()+"?pkts=1")

	done := make(chan error, 1)
	go func() { // the relay: forwards datagrams in the script's order as they become available
		got := map[int][]byte{}
		buf := make([]byte, 2048)
		relay.SetReadDeadline(time.Now().Add(10 * time.Second))
		next := 0
		for n := 0; n < blocks*100 && next < len(order); n++ {
			m, err := relay.Read(buf)
			if err != nil {
				done <- err
				return
			}
			got[n] = append([]byte(nil), buf[:m]...)
			for next < len(order) && got[order[next]] != nil {
				if _, err := relay.WriteTo(got[order[next]], r.LocalAddr()); err != nil {
					done <- err
					return
				}
				next++
			}
		}
		done <- nil
	}()
	stream := makeStream(blocks*100, 10, 1_000_000)
	if _, err := w.Write(stream); err != nil {
		t.Fatal(err)
	}
	out := readN(t, r, len(want)*188, 500*time.Millisecond, 10*time.Second)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	var gotOrder []int
	for i := 0; i+188 <= len(out); i += 188 {
		gotOrder = append(gotOrder, packetNumber(out[i:]))
	}
	if !slices.Equal(gotOrder, want) {
		t.Errorf("out of the Reader:\n%v\nwant\n%v", gotOrder, want)
	}
	s := r.Stats()
	if s.Datagrams != int64(len(order)) || s.Lost != blocks*lost || s.Duplicates != blocks*dups ||
		s.Reordered != blocks*reordered || s.Late != blocks*late || s.Jumps != 0 || s.Bytes != int64(len(want)*188) {
		t.Errorf("stats %+v; want %d datagrams, lost %d, duplicates %d, reordered %d, late %d",
			s, len(order), blocks*lost, blocks*dups, blocks*reordered, blocks*late)
	}
}
