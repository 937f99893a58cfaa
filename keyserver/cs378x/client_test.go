package cs378x_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/tsdescramble/tsdescramble/internal/testsupport/camdouble"
	wire "github.com/tsdescramble/tsdescramble/internal/wire/cs378x"
	"github.com/tsdescramble/tsdescramble/keyserver/cs378x"
)

var (
	even = []byte{0x11, 0x22, 0x33, 0x66, 0x44, 0x55, 0x66, 0xFF}
	odd  = []byte{0xA1, 0xB2, 0xC3, 0x16, 0xD4, 0xE5, 0xF6, 0xAF}
)

func TestClientAnswers(t *testing.T) {
	srv := camdouble.NewCS378x(t, "user", "pass")
	cl := cs378x.NewClient(cs378x.Config{Addr: srv.Addr, User: "user", Password: "pass", Timeout: 2 * time.Second})
	defer cl.Close()
	ctx := context.Background()
	ecm := camdouble.ECM(0x81, even, odd, 7)
	e, o, err := cl.ECM(ctx, cs378x.Request{Section: ecm, ServiceID: 5, CAID: 0x0B00, ProviderID: 0x123456, PID: 0x500})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(e, even) || !bytes.Equal(o, odd) {
		t.Fatalf("CWs %X %X", e, o)
	}
	r := srv.Requests()
	if len(r) != 1 || !bytes.Equal(r[0].Msg.Data, ecm) || r[0].Msg.ServiceID != 5 || r[0].Msg.CAID != 0x0B00 ||
		r[0].Msg.ProviderID != 0x123456 || r[0].Msg.ECMPID != 0x500 || !r[0].Msg.CRCOK() {
		t.Fatalf("the server got %+v", r)
	}
	// Not a test ECM: not found.
	if _, _, err := cl.ECM(ctx, cs378x.Request{Section: []byte{0x80, 0x70, 1, 0}}); !errors.Is(err, cs378x.ErrNotFound) {
		t.Fatalf("want not found, got %v", err)
	}
	srv.SetAnswer(func([]byte) (byte, [16]byte, bool) { return wire.CmdNoCard, [16]byte{}, false })
	if _, _, err := cl.ECM(ctx, cs378x.Request{Section: ecm}); !errors.Is(err, cs378x.ErrNoCard) {
		t.Fatalf("want no card, got %v", err)
	}
	if _, _, err := cl.ECM(ctx, cs378x.Request{Section: make([]byte, 256)}); err == nil {
		t.Fatal("an ECM longer than a message can hold was sent")
	}
}

func TestClientTimeoutThenRecovers(t *testing.T) {
	srv := camdouble.NewCS378x(t, "user", "pass")
	cl := cs378x.NewClient(cs378x.Config{Addr: srv.Addr, User: "user", Password: "pass",
		Timeout: 200 * time.Millisecond, MinBackoff: 10 * time.Millisecond})
	defer cl.Close()
	srv.SetAnswer(func(ecm []byte) (byte, [16]byte, bool) { return 0, [16]byte{}, true })
	ecm := camdouble.ECM(0x80, even, odd, 1)
	start := time.Now()
	if _, _, err := cl.ECM(context.Background(), cs378x.Request{Section: ecm}); !errors.Is(err, cs378x.ErrTimeout) {
		t.Fatalf("want a timeout, got %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("the timeout took %v", d)
	}
	srv.SetAnswer(camdouble.TestCAAnswer)
	if e, _, err := cl.ECM(context.Background(), cs378x.Request{Section: ecm}); err != nil || !bytes.Equal(e, even) {
		t.Fatalf("after a timeout: %X %v", e, err)
	}
}

func TestClientReconnects(t *testing.T) {
	srv := camdouble.NewCS378x(t, "user", "pass")
	addr := srv.Addr
	cl := cs378x.NewClient(cs378x.Config{Addr: addr, User: "user", Password: "pass",
		Timeout: 500 * time.Millisecond, MinBackoff: 300 * time.Millisecond, MaxBackoff: 300 * time.Millisecond})
	defer cl.Close()
	ecm := camdouble.ECM(0x80, even, odd, 1)
	if _, _, err := cl.ECM(context.Background(), cs378x.Request{Section: ecm}); err != nil {
		t.Fatal(err)
	}
	srv.Stop()
	if _, _, err := cl.ECM(context.Background(), cs378x.Request{Section: ecm}); err == nil {
		t.Fatal("an answer from a stopped server")
	}
	// Connecting fails; until the backoff has passed, requests fail at once.
	if _, _, err := cl.ECM(context.Background(), cs378x.Request{Section: ecm}); err == nil {
		t.Fatal("an answer from a stopped server")
	}
	start := time.Now()
	if _, _, err := cl.ECM(context.Background(), cs378x.Request{Section: ecm}); !errors.Is(err, cs378x.ErrUnreachable) || time.Since(start) > 100*time.Millisecond {
		t.Fatalf("during the backoff: %v after %v", err, time.Since(start))
	}
	// A server again on the same port: the client connects to it after its backoff.
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("the port of the stopped server was taken: %v", err)
	}
	ln.Close()
	srv2 := camdouble.NewCS378xAt(t, addr, "user", "pass")
	var e []byte
	for range 100 {
		if e, _, err = cl.ECM(context.Background(), cs378x.Request{Section: ecm}); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil || !bytes.Equal(e, even) || len(srv2.Requests()) == 0 {
		t.Fatalf("after the server came back: %X %v", e, err)
	}
}

func TestClientContextCancel(t *testing.T) {
	srv := camdouble.NewCS378x(t, "user", "pass")
	srv.SetDelay(5 * time.Second)
	cl := cs378x.NewClient(cs378x.Config{Addr: srv.Addr, User: "user", Password: "pass", Timeout: 10 * time.Second})
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, _, err := cl.ECM(ctx, cs378x.Request{Section: camdouble.ECM(0x80, even, odd, 1)}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("want the context's error, got %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("cancel took %v", d)
	}
}
