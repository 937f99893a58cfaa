package chunkq

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"
	"time"
)

var errIdle = errors.New("idle")

func idleErr(time.Duration) error { return errIdle }

// send passes each of parts through q from a goroutine of its own, then Finish(end).
func send(q *Queue, end error, parts ...[]byte) {
	go func() {
		for _, p := range parts {
			b, _, err := q.Buffer(context.Background())
			if err != nil {
				panic(err)
			}
			q.Pass(context.Background(), append(b[:0], p...))
		}
		q.Finish(end)
	}()
}

// The chunks come out in order whatever the reads' sizes, then the error Finish was given;
// ReadBlock hands a chunk over in its own buffer, and the rest of one a Read began as a copy.
func TestOrderAndEnd(t *testing.T) {
	boom := errors.New("boom")
	q := New(2, 8, idleErr)
	parts := [][]byte{[]byte("abcdefgh"), []byte("ij"), []byte("klmnop"), []byte("q")}
	send(q, boom, parts...)
	var got []byte
	small := make([]byte, 3)
	n, err := q.Read(small) // "abc" of the first chunk
	got = append(got, small[:n]...)
	var block []byte
	for err == nil {
		block, err = q.ReadBlock(make([]byte, 0, 8))
		got = append(got, block...)
	}
	if want := []byte("abcdefghijklmnopq"); !bytes.Equal(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	if !errors.Is(err, boom) {
		t.Fatalf("the end: %v, want %v", err, boom)
	}
	if _, err := q.Read(small); !errors.Is(err, boom) {
		t.Fatalf("a Read after the end: %v", err)
	}
}

// Read gives up after the idle timeout with the Queue's idle error, counted from the last
// bytes; the Queue stays usable, and Close makes a waiting Read return io.EOF.
func TestIdleAndClose(t *testing.T) {
	q := New(2, 8, idleErr)
	q.SetIdleTimeout(50 * time.Millisecond)
	start := time.Now()
	if _, err := q.Read(make([]byte, 8)); !errors.Is(err, errIdle) {
		t.Fatalf("a silent queue: %v", err)
	}
	if d := time.Since(start); d < 40*time.Millisecond || d > 5*time.Second {
		t.Fatalf("the idle error after %v, want about 50ms", d)
	}
	b, _, _ := q.Buffer(context.Background())
	q.Pass(context.Background(), append(b[:0], 'x'))
	p := make([]byte, 8)
	if n, err := q.Read(p); n != 1 || err != nil || p[0] != 'x' {
		t.Fatalf("after the idle error: %d %v", n, err)
	}
	q.SetIdleTimeout(0)
	go func() {
		time.Sleep(20 * time.Millisecond)
		q.Close()
	}()
	if _, err := q.Read(p); err != io.EOF {
		t.Fatalf("Read after Close: %v", err)
	}
	q.Close() // again: no panic
}

// The receiving goroutine waits for a buffer while the reader holds them all, and says it
// waited; a context that ends stops the wait.
func TestBufferWaits(t *testing.T) {
	q := New(1, 8, idleErr)
	b, waited, err := q.Buffer(context.Background())
	if err != nil || waited {
		t.Fatalf("the first buffer: waited %v, %v", waited, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, waited, err := q.Buffer(ctx); !waited || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("no buffer left: waited %v, %v", waited, err)
	}
	q.Unused(b)
	if _, _, err := q.Buffer(context.Background()); err != nil {
		t.Fatalf("a buffer given back unused: %v", err)
	}
}
