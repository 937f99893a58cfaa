package keyserver_test

import (
	"context"
	"errors"
	"fmt"
	"io"
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

// Dial reaches the server at Addr, and reaches it again after the connection drops and the
// backoff has passed: the server sees a second connection and answers on it. Dial counts
// nothing; the failure its caller records holds it back for the backoff.
func TestRedialDial(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	// The server echoes a line on each connection it takes, then drops it.
	accepted := make(chan net.Conn, 4)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- c
			go func() {
				defer c.Close()
				buf := make([]byte, 64)
				if n, err := c.Read(buf); err == nil {
					c.Write(buf[:n])
				}
			}()
		}
	}()
	// ask sends a request on conn and returns the answer, and whether the server dropped the
	// connection after it.
	ask := func(conn net.Conn, req string) (string, bool) {
		t.Helper()
		conn.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := conn.Write([]byte(req)); err != nil {
			t.Fatalf("request %q: %v", req, err)
		}
		buf := make([]byte, 64)
		n, err := io.ReadAtLeast(conn, buf, len(req))
		if err != nil {
			t.Fatalf("request %q: answer %q, %v", req, buf[:n], err)
		}
		_, err = conn.Read(buf)
		return string(buf[:n]), err == io.EOF
	}
	// serverSide returns the server's end of the connection conn made.
	serverSide := func(conn net.Conn) net.Conn {
		t.Helper()
		select {
		case c := <-accepted:
			if c.RemoteAddr().String() != conn.LocalAddr().String() {
				t.Fatalf("the server took a connection from %v; the client is at %v", c.RemoteAddr(), conn.LocalAddr())
			}
			return c
		case <-time.After(5 * time.Second):
			t.Fatal("the server saw no connection")
		}
		return nil
	}

	addr := ln.Addr().String()
	const backoff = 50 * time.Millisecond
	r := keyserver.NewRedial(addr, time.Second, backoff, time.Second)
	conn, err := r.Dial(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	serverSide(conn)
	answer, dropped := ask(conn, "first")
	if answer != "first" || !dropped {
		t.Fatalf("first connection: answer %q, dropped %v; want the request back, then EOF", answer, dropped)
	}
	conn.Close()
	if wait, err := r.Backoff(); wait != 0 || err != nil {
		t.Fatalf("Dial counted an attempt: backoff %v %v", wait, err)
	}
	lost := errors.New("connection lost")
	if wait, first := r.Failed(lost); wait != backoff || !first {
		t.Fatalf("the drop: wait %v first %v; want %v, true", wait, first, backoff)
	}
	start := time.Now()
	if err := r.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < backoff*8/10 {
		t.Fatalf("Wait returned after %v; the backoff is %v", d, backoff)
	}
	conn, err = r.Dial(context.Background())
	if err != nil {
		t.Fatalf("redial: %v", err)
	}
	serverSide(conn) // a second connection, from the client's new end
	if answer, _ := ask(conn, "second"); answer != "second" {
		t.Fatalf("after the redial: answer %q, want %q", answer, "second")
	}
	conn.Close()
	// Dial does not end the failures in a row; Connected does.
	if wait, first := r.Failed(lost); wait != 2*backoff || first {
		t.Fatalf("a second failure in a row: wait %v first %v; want %v, false", wait, first, 2*backoff)
	}
	r.Connected()
	if wait, first := r.Failed(lost); wait != backoff || !first {
		t.Fatalf("a failure after Connected: wait %v first %v; want %v, true", wait, first, backoff)
	}
	if len(accepted) != 0 {
		t.Fatalf("the server saw %d connections more than the two dials", len(accepted))
	}

	// A context already done: no attempt.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if conn, err := r.Dial(ctx); err == nil {
		conn.Close()
		t.Fatal("Dial with a context that ended connected")
	}
	ln.Close()
	for range accepted { // the accepting goroutine is done
	}
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

// The state follows how the attempts end: connecting before any, down after a failure to reach
// the server, connected after a handshake, connecting again when a connection that was up ends,
// and refused when the server turned the client away; only Connected leaves refused and down.
func TestRedialState(t *testing.T) {
	r := keyserver.NewRedial("", time.Second, time.Millisecond, time.Millisecond)
	boom := errors.New("boom")
	steps := []struct {
		do   func()
		want keyserver.ConnState
	}{
		{func() {}, keyserver.Connecting},
		{func() { r.Failed(boom) }, keyserver.Down},
		{r.Lost, keyserver.Down},
		{r.Connected, keyserver.Connected},
		{r.Lost, keyserver.Connecting},
		{func() { r.Rejected(boom) }, keyserver.Refused},
		{r.Lost, keyserver.Refused},
		{r.Connected, keyserver.Connected},
		{func() { r.Failed(boom) }, keyserver.Down},
	}
	for i, s := range steps {
		s.do()
		if got := r.State(); got != s.want {
			t.Fatalf("step %d: state %v, want %v", i, got, s.want)
		}
	}
	var names []string
	for _, s := range keyserver.ConnStates {
		names = append(names, s.String())
	}
	if got := fmt.Sprint(names); got != "[connecting connected refused down]" {
		t.Fatalf("state names %s", got)
	}
}
