package live

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/tsdescramble/tsdescramble/ts"
)

const testPID = 0x100

// makeStream returns n TS packets on testPID, numbered in their payload, with a PCR every
// pcrEvery packets at the given bitrate (no PCR when pcrEvery is 0).
func makeStream(n, pcrEvery, bitrate int) []byte {
	b := make([]byte, 0, n*188)
	for i := range n {
		p := make([]byte, 188)
		p[0], p[1], p[2], p[3] = 0x47, byte(testPID>>8), byte(testPID&0xFF), 0x10|byte(i&0xF)
		off := 4
		if pcrEvery > 0 && i%pcrEvery == 0 {
			pcr := int64(i) * 188 * 8 * ts.PCRHz / int64(bitrate)
			q := pcrPacket(testPID, pcr, false)
			copy(p[4:12], q[4:12])
			p[3] |= 0x20
			p[4] = 7
			off = 12
		}
		binary.BigEndian.PutUint32(p[off:], uint32(i))
		for j := off + 4; j < 188; j++ {
			p[j] = byte(i + j)
		}
		b = append(b, p...)
	}
	return b
}

// packetNumber reads back the number makeStream wrote into a packet.
func packetNumber(p []byte) int {
	off := 4
	if p[3]&0x20 != 0 {
		off = 5 + int(p[4])
	}
	return int(binary.BigEndian.Uint32(p[off:]))
}

func mustParse(t testing.TB, s string) *Address {
	t.Helper()
	a, err := ParseAddress(s)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func listenT(t testing.TB, s string) *Reader {
	t.Helper()
	r, err := Listen(context.Background(), mustParse(t, s))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func dialT(t testing.TB, s string) *Writer {
	t.Helper()
	w, err := Dial(mustParse(t, s))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w
}

// port returns the port a Reader was given.
func port(r *Reader) int { return r.LocalAddr().(*net.UDPAddr).Port }

// readN reads until want bytes came, the stream is idle for idle, or limit passes; it returns
// what it read.
func readN(t testing.TB, r *Reader, want int, idle, limit time.Duration) []byte {
	t.Helper()
	r.SetIdleTimeout(idle)
	defer r.SetIdleTimeout(0)
	end := time.Now().Add(limit)
	got := make([]byte, 0, want)
	buf := make([]byte, 64<<10)
	for len(got) < want && time.Now().Before(end) {
		n, err := r.Read(buf)
		got = append(got, buf[:n]...)
		if errors.Is(err, ErrIdle) || err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return got
}

// firstDiff describes where two packet streams first differ.
func firstDiff(got, want []byte) string {
	for i := 0; i+188 <= len(got) && i+188 <= len(want); i += 188 {
		if string(got[i:i+188]) != string(want[i:i+188]) {
			return fmt.Sprintf("packet %d differs (got number %d, want %d)", i/188, packetNumber(got[i:]), packetNumber(want[i:]))
		}
	}
	return fmt.Sprintf("%d bytes, want %d", len(got), len(want))
}

// sendRaw sends datagrams from a plain socket, for inputs the Writer would never make.
func sendRaw(t testing.TB, to net.Addr, dgrams ...[]byte) {
	t.Helper()
	c, err := net.Dial("udp", to.String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, d := range dgrams {
		if _, err := c.Write(d); err != nil {
			t.Fatal(err)
		}
	}
}

// withTimeout is a context bounded in time for one test step.
func withTimeout(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
