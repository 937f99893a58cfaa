package ts

import (
	"bytes"
	"context"
	"errors"
	"io"
	"runtime"
	"testing"
	"time"
)

// chunkReader hands out the chunks it is sent, one per Read, then its error.
type chunkReader struct {
	chunks chan []byte
	err    error
}

func (r *chunkReader) Read(p []byte) (int, error) {
	c, ok := <-r.chunks
	if !ok {
		return 0, r.err
	}
	return copy(p, c), nil
}

// readAhead reads a until an error other than ErrPending, or until limit.
func readAhead(t *testing.T, a *ReadAhead, limit time.Duration) ([]byte, error) {
	t.Helper()
	var out []byte
	buf := make([]byte, 7) // smaller than a block: a block is handed on over several reads
	end := time.Now().Add(limit)
	for time.Now().Before(end) {
		a.SetDeadline(time.Now().Add(time.Millisecond))
		n, err := a.Read(buf)
		out = append(out, buf[:n]...)
		if err != nil && err != ErrPending {
			return out, err
		}
	}
	t.Fatalf("no end after %v (%d bytes read)", limit, len(out))
	return nil, nil
}

// The blocks come out in order, whole, and the end of the input after them, again on every
// later Read.
func TestReadAheadOrderAndEnd(t *testing.T) {
	var want []byte
	for i := range 200 {
		want = append(want, bytes.Repeat([]byte{byte(i)}, 1+i%40)...)
	}
	var sizes []int
	var last time.Time
	a := NewReadAhead(context.Background(), bytes.NewReader(want), 33, 3, func(n int, at time.Time) {
		if at.Before(last) {
			t.Errorf("block arrived at %v, before the one before it (%v)", at, last)
		}
		sizes, last = append(sizes, n), at
	})
	got, err := readAhead(t, a, 10*time.Second)
	if err != io.EOF {
		t.Fatalf("error %v, want io.EOF", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%d bytes out of %d, or not in order", len(got), len(want))
	}
	sum := 0
	for _, n := range sizes {
		sum += n
	}
	if sum != len(want) || sizes[0] != 33 {
		t.Fatalf("block sizes %v: %d bytes, want %d in blocks of 33", sizes, sum, len(want))
	}
	for range 3 {
		if n, err := a.Read(make([]byte, 10)); n != 0 || err != io.EOF {
			t.Fatalf("Read after the end: %d, %v", n, err)
		}
	}
}

// A read error comes out after the bytes read before it, and stays.
func TestReadAheadError(t *testing.T) {
	bad := errors.New("device gone")
	r := &chunkReader{chunks: make(chan []byte, 2), err: bad}
	r.chunks <- []byte("abc")
	r.chunks <- []byte("defg")
	close(r.chunks)
	a := NewReadAhead(context.Background(), r, 16, 2, nil)
	got, err := readAhead(t, a, 10*time.Second)
	if err != bad || string(got) != "abcdefg" {
		t.Fatalf("%q, %v; want \"abcdefg\", %v", got, err, bad)
	}
	if _, err := a.Read(make([]byte, 4)); err != bad {
		t.Fatalf("Read after the error: %v", err)
	}
}

// With nothing read, Read returns ErrPending at the deadline, not before and not much after;
// with a deadline past, at once; with none, it waits for the next block.
func TestReadAheadDeadline(t *testing.T) {
	r := &chunkReader{chunks: make(chan []byte), err: io.EOF}
	a := NewReadAhead(context.Background(), r, 16, 2, nil)
	buf := make([]byte, 16)
	const wait = 30 * time.Millisecond
	start := time.Now()
	a.SetDeadline(start.Add(wait))
	if n, err := a.Read(buf); n != 0 || err != ErrPending {
		t.Fatalf("quiet input: %d, %v; want ErrPending", n, err)
	}
	if d := time.Since(start); d < wait || d > wait+2*time.Second {
		t.Fatalf("ErrPending after %v, want %v", d, wait)
	}
	if now := a.Now(); now.Before(start.Add(wait)) {
		t.Fatalf("Now() %v is before the deadline", now)
	}
	a.SetDeadline(time.Unix(0, 1))
	if _, err := a.Read(buf); err != ErrPending {
		t.Fatalf("deadline past: %v; want ErrPending", err)
	}
	// No deadline: the Read waits for the block sent after it began.
	a.SetDeadline(time.Time{})
	go func() {
		time.Sleep(wait)
		r.chunks <- []byte("late")
	}()
	if n, err := a.Read(buf); err != nil || string(buf[:n]) != "late" {
		t.Fatalf("%q, %v; want \"late\"", buf[:n], err)
	}
	// A block already read is taken even past the deadline.
	r.chunks <- []byte("early")
	for i := 0; len(a.full) == 0; i++ {
		if i > 1000 {
			t.Fatal("the block sent was not read ahead")
		}
		time.Sleep(time.Millisecond)
	}
	a.SetDeadline(time.Unix(0, 1))
	if n, err := a.Read(buf); err != nil || string(buf[:n]) != "early" {
		t.Fatalf("%q, %v; want \"early\" past the deadline", buf[:n], err)
	}
	close(r.chunks)
}

// When the context ends, the blocks read ahead still come out, then the context's error, and
// the reading goroutine ends once the read it may have begun returns.
func TestReadAheadCancel(t *testing.T) {
	before := runtime.NumGoroutine()
	ctx, cancel := context.WithCancel(context.Background())
	r := &chunkReader{chunks: make(chan []byte, 2), err: io.EOF}
	r.chunks <- []byte("one")
	r.chunks <- []byte("two")
	a := NewReadAhead(ctx, r, 16, 2, nil)
	// The goroutine fills its two blocks and waits for a free one.
	for i := 0; len(a.full) < 2; i++ {
		if i > 1000 {
			t.Fatal("the blocks were not read ahead")
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	var got []string
	buf := make([]byte, 16)
	var err error
	for range 10 {
		var n int
		n, err = a.Read(buf)
		if err != nil {
			break
		}
		got = append(got, string(buf[:n]))
	}
	if err != context.Canceled || len(got) != 2 || got[0] != "one" || got[1] != "two" {
		t.Fatalf("after the cancel: %q, %v; want \"one\", \"two\", then context.Canceled", got, err)
	}
	if _, err := a.Read(buf); err != context.Canceled {
		t.Fatalf("Read after the cancel: %v", err)
	}
	close(r.chunks) // the end of a read the goroutine may have begun with a block freed
	for i := 0; i < 100 && runtime.NumGoroutine() > before; i++ {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		t.Fatalf("%d goroutines before, %d after the cancel", before, n)
	}
}

// Through a Framer, a quiet input after a few packets gives those packets at the deadline,
// then ErrPending, rather than waiting for the framer's look-ahead.
func TestReadAheadFramer(t *testing.T) {
	r := &chunkReader{chunks: make(chan []byte, 1), err: io.EOF}
	pkts := make([]byte, 3*PacketSize)
	for i := range 3 {
		pkts[i*PacketSize] = SyncByte
	}
	r.chunks <- pkts
	a := NewReadAhead(context.Background(), r, 64<<10, 2, nil)
	fr := NewFramer(a)
	got := 0
	for end := time.Now().Add(5 * time.Second); got < 3; {
		if time.Now().After(end) {
			t.Fatalf("%d packets of 3 after 5 s", got)
		}
		a.SetDeadline(time.Now().Add(5 * time.Millisecond))
		_, err := fr.Next()
		switch err {
		case nil:
			got++
		case ErrPending:
		default:
			t.Fatal(err)
		}
	}
	a.SetDeadline(time.Now().Add(5 * time.Millisecond))
	if _, err := fr.Next(); err != ErrPending {
		t.Fatalf("after the packets: %v, want ErrPending", err)
	}
	close(r.chunks)
}

// swapReader is a BlockReader that hands over chunks in buffers of its own (larger, some of
// them, than the read-ahead's blocks).
type swapReader struct {
	chunks [][]byte
	given  int
}

func (r *swapReader) ReadBlock(buf []byte) ([]byte, error) {
	if len(r.chunks) == 0 {
		return buf[:0], io.EOF
	}
	c := r.chunks[0]
	r.chunks = r.chunks[1:]
	r.given++
	return c, nil
}

func (r *swapReader) Read([]byte) (int, error) { panic("a ReadAhead reads a BlockReader by blocks") }

// A ReadAhead over a BlockReader hands on the blocks it is given, in order, without reading
// them into its own.
func TestReadAheadBlockReader(t *testing.T) {
	var want []byte
	r := &swapReader{}
	for i := range 50 {
		c := bytes.Repeat([]byte{byte(i)}, 1+i*37%500)
		r.chunks = append(r.chunks, c)
		want = append(want, c...)
	}
	a := NewReadAhead(context.Background(), r, 64, 3, nil)
	got, err := readAhead(t, a, 10*time.Second)
	if err != io.EOF || !bytes.Equal(got, want) || r.given != 50 {
		t.Fatalf("%d bytes of %d, %v, %d blocks given", len(got), len(want), err, r.given)
	}
}
