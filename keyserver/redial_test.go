package keyserver_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/tsdescramble/tsdescramble/keyserver"
)

func TestRedialDefaults(t *testing.T) {
	r := keyserver.NewRedial("127.0.0.1:1", 0, 0, 0)
	if r.Timeout != keyserver.DefaultTimeout || r.MinBackoff != keyserver.DefaultMinBackoff || r.MaxBackoff != keyserver.DefaultMaxBackoff {
		t.Fatalf("defaults %v %v %v", r.Timeout, r.MinBackoff, r.MaxBackoff)
	}
	// A maximum below the minimum: the larger of the default maximum and the minimum.
	if r := keyserver.NewRedial("", 0, 20*time.Second, time.Second); r.MaxBackoff != 20*time.Second {
		t.Fatalf("max %v, want 20s", r.MaxBackoff)
	}
	if r := keyserver.NewRedial("", 0, time.Millisecond, time.Millisecond/2); r.MaxBackoff != keyserver.DefaultMaxBackoff {
		t.Fatalf("max %v, want %v", r.MaxBackoff, keyserver.DefaultMaxBackoff)
	}
}

// The backoff doubles at each failure in a row up to the maximum, even after very many
// failures (the shift is bounded), and starts again from the minimum after Connected.
func TestRedialBackoffDoubles(t *testing.T) {
	r := keyserver.NewRedial("", time.Second, 10*time.Millisecond, 70*time.Millisecond)
	if wait, err := r.Backoff(); wait != 0 || err != nil {
		t.Fatalf("a backoff before any failure: %v %v", wait, err)
	}
	boom := errors.New("boom")
	for i, want := range []time.Duration{10, 20, 40, 70, 70} {
		wait, first := r.Failed(boom)
		if wait != want*time.Millisecond || first != (i == 0) {
			t.Fatalf("failure %d: wait %v first %v; want %v, %v", i+1, wait, first, want*time.Millisecond, i == 0)
		}
	}
	if wait, err := r.Backoff(); wait <= 0 || wait > 70*time.Millisecond || err != boom {
		t.Fatalf("during the backoff: %v %v", wait, err)
	}
	for range 100 {
		r.Failed(boom)
	}
	if wait, _ := r.Failed(boom); wait != 70*time.Millisecond {
		t.Fatalf("after 106 failures: wait %v", wait)
	}
	r.Connected()
	if wait, err := r.Backoff(); wait != 0 || err != nil {
		t.Fatalf("a backoff after Connected: %v %v", wait, err)
	}
	if wait, first := r.Failed(boom); wait != 10*time.Millisecond || !first {
		t.Fatalf("after Connected: wait %v first %v", wait, first)
	}
}

func TestRedialWait(t *testing.T) {
	r := keyserver.NewRedial("", time.Second, 30*time.Millisecond, time.Minute)
	r.Failed(errors.New("x"))
	start := time.Now()
	if err := r.Wait(context.Background()); err != nil || time.Since(start) < 20*time.Millisecond {
		t.Fatalf("Wait: %v after %v", err, time.Since(start))
	}
	for range 10 {
		r.Failed(errors.New("x")) // a backoff of 30 s at the least
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	start = time.Now()
	if err := r.Wait(ctx); !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 5*time.Second {
		t.Fatalf("Wait with a context that ends: %v after %v", err, time.Since(start))
	}
}

func TestRedialDial(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	r := keyserver.NewRedial(addr, time.Second, 0, 0)
	conn, err := r.Dial(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	conn.Close()
	ln.Close()
	if conn, err := r.Dial(context.Background()); err == nil {
		conn.Close()
		t.Skip("the closed listener's port was taken by another")
	}
}

// A client that runs one connection after another, waiting out a backoff after each failure,
// until it is stopped.
func ExampleRedial() {
	r := keyserver.NewRedial("127.0.0.1:15011", time.Second, 100*time.Millisecond, 10*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	for {
		conn, err := r.Dial(ctx)
		if err == nil {
			r.Connected() // after the protocol's handshake
			err = errors.New("serving: the connection ended")
			conn.Close()
		}
		if _, first := r.Failed(err); first {
			fmt.Println("connection to the key server lost; connecting again")
		}
		if r.Wait(ctx) != nil {
			return
		}
	}
}
