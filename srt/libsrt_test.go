//go:build srt && cgo

package srt

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/tsdescramble/tsdescramble/internal/testsupport/ports"
)

// The Reader and the Writer against each other through libsrt, on loopback: both modes, with
// and without encryption, refusals, callers that come and go. The peers from Debian
// (srt-live-transmit, ffmpeg) are in cmd/tsdescramble.

const secret = "s3cret-Phrase"

func sample(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile("../samples/demo-scrambled.ts")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// waitFor waits up to 5 s for cond.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(5 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("%s: not within 5 s", what)
		}
	}
}

func TestLibsrtLoopback(t *testing.T) {
	data := sample(t)
	for _, opts := range []string{"latency=20", "latency=20&passphrase=" + secret, "passphrase=" + secret + "&pbkeylen=32"} {
		for _, readerListens := range []bool{true, false} {
			name := fmt.Sprintf("reader listens=%v/%s", readerListens, strings.ReplaceAll(opts, secret, "…"))
			t.Run(name, func(t *testing.T) {
				port := ports.UDP(t)
				listen := mustParse(t, fmt.Sprintf("srt://127.0.0.1:%d?mode=listener&%s", port, opts))
				call := mustParse(t, fmt.Sprintf("srt://127.0.0.1:%d?%s", port, opts))
				var r *Reader
				var w *Writer
				var err error
				if readerListens {
					if r, err = Open(context.Background(), listen); err != nil {
						t.Fatal(err)
					}
					if w, err = NewWriter(call); err != nil {
						t.Fatal(err)
					}
				} else {
					if w, err = NewWriter(listen); err != nil {
						t.Fatal(err)
					}
					if r, err = Open(context.Background(), call); err != nil {
						t.Fatal(err)
					}
				}
				defer r.Close()
				waitFor(t, "the writer's connection", func() bool { return w.Stats().Connections == 1 })
				for off := 0; off < len(data); off += 7 * 188 * 20 {
					w.Write(data[off:min(off+7*188*20, len(data))])
					time.Sleep(time.Millisecond)
				}
				w.Close()
				got := readN(t, r, len(data), 5*time.Second)
				if !bytes.Equal(got, data) {
					t.Fatal("the bytes differ")
				}
				ws, rs := w.Stats(), r.Stats()
				if ws.Packets != demoPackets || ws.Unconnected+ws.Full != 0 || rs.Packets != demoPackets || rs.Messages != ws.Messages || rs.Dropped+rs.Undecrypted != 0 {
					t.Errorf("writer %+v, reader %+v", ws, rs)
				}
			})
		}
	}
}

// demoPackets is the sample's length in packets.
const demoPackets = 4611

// A caller is told why a listener refused it, never with the passphrase; no answer at all
// takes the library's connection timeout, which a context cuts short.
func TestLibsrtRefusals(t *testing.T) {
	port := ports.UDP(t)
	r, err := Open(context.Background(), mustParse(t, fmt.Sprintf("srt://127.0.0.1:%d?mode=listener&passphrase=%s", port, secret)))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, c := range []struct{ opts, want string }{
		{"", "wants a passphrase"},
		{"?passphrase=another-phrase", "has another passphrase"},
	} {
		_, err := NewWriter(mustParse(t, fmt.Sprintf("srt://127.0.0.1:%d%s", port, c.opts)))
		var ce *ConnectError
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "another-phrase") {
			t.Errorf("%q: %v", c.opts, err)
		}
	}
	open := mustParse(t, fmt.Sprintf("srt://127.0.0.1:%d", ports.UDP(t)))
	if _, err := Open(context.Background(), mustParse(t, fmt.Sprintf("srt://127.0.0.1:%d?mode=listener", port))); err == nil || !strings.Contains(err.Error(), "cannot listen") {
		t.Errorf("a second listener on the port: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	t0 := time.Now()
	if _, err := Open(ctx, open); err == nil || time.Since(t0) > 2*time.Second {
		t.Errorf("a call to nobody, cut short by its context: %v after %v", err, time.Since(t0))
	}
	t0 = time.Now()
	if _, err := NewWriter(open); err == nil || !strings.Contains(err.Error(), "no answer") || time.Since(t0) > 5*time.Second {
		t.Errorf("a call to nobody: %v after %v", err, time.Since(t0))
	}
}

// A listening Reader takes one caller at a time: a second caller is turned away while the
// first sends, and taken when it calls again after the first has left.
func TestLibsrtListenerNextCaller(t *testing.T) {
	port := ports.UDP(t)
	r, err := Open(context.Background(), mustParse(t, fmt.Sprintf("srt://127.0.0.1:%d?mode=listener&latency=20", port)))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	call := mustParse(t, fmt.Sprintf("srt://127.0.0.1:%d?latency=20", port))
	w1, err := NewWriter(call)
	if err != nil {
		t.Fatal(err)
	}
	w1.Write(packets(0, 7))
	readN(t, r, 7*188, 5*time.Second)
	w2, err := NewWriter(call) // its handshake succeeds; the Reader closes it at once
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Close()
	waitFor(t, "the second caller turned away", func() bool { return r.Stats().Refused == 1 })
	w1.Write(packets(7, 7))
	w1.Close()
	if got := readN(t, r, 7*188, 5*time.Second); !bytes.Equal(got, packets(7, 7)) {
		t.Fatal("the first caller's second message differs")
	}
	// w2 calls again, with backoff, and gets through once w1 has gone.
	waitFor(t, "the second caller taken", func() bool { return r.Stats().Connections == 2 && w2.Stats().Connections == 2 })
	w2.Write(packets(14, 7))
	if got := readN(t, r, 7*188, 5*time.Second); !bytes.Equal(got, packets(14, 7)) {
		t.Fatal("the second caller's message differs")
	}
	if s := r.Stats(); s.Reconnects != 1 || s.Refused != 1 {
		t.Errorf("stats %+v", s)
	}
}

// A calling Reader whose listener goes away calls again until a listener is back.
func TestLibsrtCallerCallsAgain(t *testing.T) {
	port := ports.UDP(t)
	listen := mustParse(t, fmt.Sprintf("srt://127.0.0.1:%d?mode=listener&latency=20", port))
	w, err := NewWriter(listen)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Open(context.Background(), mustParse(t, fmt.Sprintf("srt://127.0.0.1:%d?latency=20", port)))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	waitFor(t, "the caller taken", func() bool { return w.Stats().Connections == 1 })
	w.Write(packets(0, 7))
	readN(t, r, 7*188, 5*time.Second)
	w.Close()
	time.Sleep(300 * time.Millisecond)
	if w, err = NewWriter(listen); err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	waitFor(t, "the caller back", func() bool { return w.Stats().Connections == 1 })
	w.Write(packets(7, 7))
	if got := readN(t, r, 7*188, 5*time.Second); !bytes.Equal(got, packets(7, 7)) {
		t.Fatal("the bytes after the reconnection differ")
	}
	if s := r.Stats(); s.Reconnects != 1 || s.GapTime <= 0 {
		t.Errorf("stats %+v", s)
	}
}

// Sending and receiving through libsrt allocate nothing: the hot path of a run.
func TestLibsrtNoAllocs(t *testing.T) {
	port := ports.UDP(t)
	// No latency: each round takes its message at once.
	l, err := library.listen(mustParse(t, fmt.Sprintf("srt://127.0.0.1:%d?mode=listener&latency=0", port)))
	if err != nil {
		t.Fatal(err)
	}
	defer l.close()
	s, err := library.dial(context.Background(), mustParse(t, fmt.Sprintf("srt://127.0.0.1:%d?latency=0", port)))
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	var c conn
	waitFor(t, "the caller accepted", func() bool {
		c, _, err = l.accept(poll)
		return c != nil || err != nil
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	msg := packets(0, 14)
	buf := make([]byte, chunkSize)
	got := 0
	if a := testing.AllocsPerRun(50, func() {
		s.send(msg, MessageSize)
		n, _, _, _ := c.recv(buf, time.Second)
		got += n
	}); a != 0 {
		t.Errorf("%v allocations a round", a)
	}
	if got == 0 {
		t.Error("nothing received")
	}
}
