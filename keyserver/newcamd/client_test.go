package newcamd_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/tsdescramble/tsdescramble/internal/testsupport/camdouble"
	"github.com/tsdescramble/tsdescramble/keyserver"
	"github.com/tsdescramble/tsdescramble/keyserver/newcamd"
)

var (
	even = []byte{0x11, 0x22, 0x33, 0x66, 0x44, 0x55, 0x66, 0xFF}
	odd  = []byte{0xA1, 0xB2, 0xC3, 0x16, 0xD4, 0xE5, 0xF6, 0xAF}
)

func TestClientAnswers(t *testing.T) {
	srv := camdouble.NewNewcamd(t, "user", "pass", nil, camdouble.TestCAID)
	cl := newcamd.NewClient(newcamd.Config{Addr: srv.Addr, User: "user", Password: "pass", Timeout: 2 * time.Second})
	defer cl.Close()
	ctx := context.Background()
	ecm := camdouble.ECM(0x81, even, odd, 7)
	e, o, err := cl.ECM(ctx, newcamd.Request{Section: ecm, ServiceID: 5, CAID: camdouble.TestCAID, ProviderID: 0x123456})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(e, even) || !bytes.Equal(o, odd) {
		t.Fatalf("CWs %X %X", e, o)
	}
	r := srv.Requests()
	// The header names the service and the provider, not the CA system: the port's.
	if len(r) != 1 || !bytes.Equal(r[0].Section, ecm) || r[0].Msg.ServiceID != 5 || r[0].Msg.CAID != 0 ||
		r[0].Msg.ProviderID != 0x123456 || r[0].Msg.MsgID != 2 {
		t.Fatalf("the server got %+v", r)
	}
	if cd, ok := cl.CardData(); !ok || cd.CAID != camdouble.TestCAID || len(cd.Providers) != 1 {
		t.Fatalf("card data %+v %v", cd, ok)
	}
	// Not a test ECM: not found.
	if _, _, err := cl.ECM(ctx, newcamd.Request{Section: []byte{0x80, 0x70, 1, 0}}); !errors.Is(err, newcamd.ErrNotFound) || !errors.Is(err, keyserver.ErrNotFound) {
		t.Fatalf("want not found, got %v", err)
	}
	// An ECM of another CA system than the port's: not found, and the message says why.
	_, _, err = cl.ECM(ctx, newcamd.Request{Section: []byte{0x80, 0x70, 1, 0}, CAID: 0x0100})
	if !errors.Is(err, newcamd.ErrNotFound) || !strings.Contains(err.Error(), "the port serves CA system 0x0b00, the ECM is of 0x0100") {
		t.Fatalf("another CA system: %v", err)
	}
	if _, _, err := cl.ECM(ctx, newcamd.Request{Section: []byte{0x50, 0x70, 1, 0}}); err == nil {
		t.Fatal("a section that is not an ECM was sent")
	}
	if logins, _ := cl.Counts(); logins != 1 || srv.Counts().Logins != 1 {
		t.Fatalf("%d logins (the server counts %d), want 1 for all the requests", logins, srv.Counts().Logins)
	}
}

// The header's CA system and provider come from the config when it names them.
func TestClientConfigCAIDProvider(t *testing.T) {
	srv := camdouble.NewNewcamd(t, "user", "pass", nil, 0x0B01)
	cl := newcamd.NewClient(newcamd.Config{Addr: srv.Addr, User: "user", Password: "pass", CAID: 0x0B01, ProviderID: 0x000042})
	defer cl.Close()
	if _, _, err := cl.ECM(context.Background(), newcamd.Request{Section: camdouble.ECM(0x80, even, odd, 1), CAID: camdouble.TestCAID, ProviderID: 7}); err != nil {
		t.Fatal(err)
	}
	if r := srv.Requests(); len(r) != 1 || r[0].Msg.CAID != 0x0B01 || r[0].Msg.ProviderID != 0x42 {
		t.Fatalf("the server got %+v", r)
	}
}

func TestClientLoginRefused(t *testing.T) {
	srv := camdouble.NewNewcamd(t, "user", "s3cretpw", nil, camdouble.TestCAID)
	cl := newcamd.NewClient(newcamd.Config{Addr: srv.Addr, User: "user", Password: "wrongpw", MinBackoff: time.Minute})
	defer cl.Close()
	ecm := camdouble.ECM(0x80, even, odd, 1)
	_, _, err := cl.ECM(context.Background(), newcamd.Request{Section: ecm})
	if !errors.Is(err, newcamd.ErrLoginRefused) {
		t.Fatalf("want the login refused, got %v", err)
	}
	// During the backoff the request fails at once, with the same reason.
	start := time.Now()
	_, _, err2 := cl.ECM(context.Background(), newcamd.Request{Section: ecm})
	if !errors.Is(err2, newcamd.ErrLoginRefused) || time.Since(start) > 100*time.Millisecond ||
		err.Error() != `newcamd: the key server refused the login of user "user" (wrong user name or password?)` || err2.Error() != err.Error() {
		t.Fatalf("during the backoff: %v after %v", err2, time.Since(start))
	}
	for _, e := range []error{err, err2} {
		if strings.Contains(e.Error(), "wrongpw") || strings.Contains(e.Error(), "s3cretpw") {
			t.Fatalf("a password in the error: %v", e)
		}
	}
	if c := srv.Counts(); c.Refused != 1 || c.Logins != 0 {
		t.Fatalf("server counts %+v", c)
	}
}

// A DES key that is not the port's: the server cannot decrypt the login and closes the
// connection without a word (OSCam after 3 s); the client says what that means, without the key.
func TestClientWrongDESKey(t *testing.T) {
	key := []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 0x10, 0x11, 0x12, 0x13, 0x99}
	srv := camdouble.NewNewcamd(t, "user", "pass", key, camdouble.TestCAID)
	srv.SetBadKeyWait(100 * time.Millisecond)
	cl := newcamd.NewClient(newcamd.Config{Addr: srv.Addr, User: "user", Password: "pass", Timeout: 2 * time.Second})
	defer cl.Close()
	_, _, err := cl.ECM(context.Background(), newcamd.Request{Section: camdouble.ECM(0x80, even, odd, 1)})
	if !errors.Is(err, newcamd.ErrNoLoginAnswer) || err.Error() != "newcamd: no answer to the login: the key server closed the connection (a wrong DES key?)" {
		t.Fatalf("want no answer to the login, got %v", err)
	}
	if strings.Contains(strings.ToLower(err.Error()), "0102030405") {
		t.Fatalf("the key in the error: %v", err)
	}
	if srv.Counts().BadKey != 1 {
		t.Fatalf("server counts %+v", srv.Counts())
	}
	// The same with the port's key: answered.
	cl2 := newcamd.NewClient(newcamd.Config{Addr: srv.Addr, User: "user", Password: "pass", DESKey: key})
	defer cl2.Close()
	if _, _, err := cl2.ECM(context.Background(), newcamd.Request{Section: camdouble.ECM(0x80, even, odd, 1)}); err != nil {
		t.Fatal(err)
	}
	cl3 := newcamd.NewClient(newcamd.Config{Addr: srv.Addr, DESKey: key[:13]})
	if _, _, err := cl3.ECM(context.Background(), newcamd.Request{Section: camdouble.ECM(0x80, even, odd, 1)}); !errors.Is(err, newcamd.ErrDESKey) {
		t.Fatalf("a 13-byte key: %v", err)
	}
}

// Connect logs in before any request, and a request after it uses that login.
func TestClientConnect(t *testing.T) {
	srv := camdouble.NewNewcamd(t, "user", "pass", nil, camdouble.TestCAID)
	cl := newcamd.NewClient(newcamd.Config{Addr: srv.Addr, User: "user", Password: "pass"})
	defer cl.Close()
	if err := cl.Connect(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := srv.Counts().Logins; n != 1 {
		t.Fatalf("%d logins after Connect", n)
	}
	if _, _, err := cl.ECM(context.Background(), newcamd.Request{Section: camdouble.ECM(0x80, even, odd, 1)}); err != nil {
		t.Fatal(err)
	}
	if err := cl.Connect(context.Background()); err != nil || srv.Counts().Logins != 1 {
		t.Fatalf("Connect when connected: %v, %d logins", err, srv.Counts().Logins)
	}
	bad := newcamd.NewClient(newcamd.Config{Addr: srv.Addr, User: "user", Password: "other"})
	defer bad.Close()
	if err := bad.Connect(context.Background()); !errors.Is(err, newcamd.ErrLoginRefused) {
		t.Fatalf("Connect with another password: %v", err)
	}
}

func TestClientTimeoutThenRecovers(t *testing.T) {
	srv := camdouble.NewNewcamd(t, "user", "pass", nil, camdouble.TestCAID)
	cl := newcamd.NewClient(newcamd.Config{Addr: srv.Addr, User: "user", Password: "pass",
		Timeout: 200 * time.Millisecond, MinBackoff: 10 * time.Millisecond})
	defer cl.Close()
	srv.SetAnswer(func(ecm []byte) (byte, [16]byte, bool) { return 0, [16]byte{}, true })
	ecm := camdouble.ECM(0x80, even, odd, 1)
	start := time.Now()
	if _, _, err := cl.ECM(context.Background(), newcamd.Request{Section: ecm}); !errors.Is(err, newcamd.ErrTimeout) {
		t.Fatalf("want a timeout, got %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("the timeout took %v", d)
	}
	srv.SetAnswer(camdouble.TestCAAnswer)
	if e, _, err := cl.ECM(context.Background(), newcamd.Request{Section: ecm}); err != nil || !bytes.Equal(e, even) {
		t.Fatalf("after a timeout: %X %v", e, err)
	}
	if logins, _ := cl.Counts(); logins != 2 {
		t.Fatalf("%d logins, want 2: the timeout closed the connection", logins)
	}
}

func TestClientReconnects(t *testing.T) {
	srv := camdouble.NewNewcamd(t, "user", "pass", nil, camdouble.TestCAID)
	addr := srv.Addr
	cl := newcamd.NewClient(newcamd.Config{Addr: addr, User: "user", Password: "pass",
		Timeout: 500 * time.Millisecond, MinBackoff: 300 * time.Millisecond, MaxBackoff: 300 * time.Millisecond})
	defer cl.Close()
	ecm := camdouble.ECM(0x80, even, odd, 1)
	if _, _, err := cl.ECM(context.Background(), newcamd.Request{Section: ecm}); err != nil {
		t.Fatal(err)
	}
	srv.Stop()
	if _, _, err := cl.ECM(context.Background(), newcamd.Request{Section: ecm}); err == nil {
		t.Fatal("an answer from a stopped server")
	}
	// Connecting fails; until the backoff has passed, requests fail at once.
	if _, _, err := cl.ECM(context.Background(), newcamd.Request{Section: ecm}); err == nil {
		t.Fatal("an answer from a stopped server")
	}
	start := time.Now()
	if _, _, err := cl.ECM(context.Background(), newcamd.Request{Section: ecm}); !errors.Is(err, newcamd.ErrUnreachable) || time.Since(start) > 100*time.Millisecond {
		t.Fatalf("during the backoff: %v after %v", err, time.Since(start))
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("the port of the stopped server was taken: %v", err)
	}
	ln.Close()
	srv2 := camdouble.NewNewcamdAt(t, addr, "user", "pass", nil, camdouble.TestCAID)
	var e []byte
	for range 100 {
		if e, _, err = cl.ECM(context.Background(), newcamd.Request{Section: ecm}); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil || !bytes.Equal(e, even) || len(srv2.Requests()) == 0 {
		t.Fatalf("after the server came back: %X %v", e, err)
	}
}

func TestClientContextCancel(t *testing.T) {
	srv := camdouble.NewNewcamd(t, "user", "pass", nil, camdouble.TestCAID)
	srv.SetDelay(5 * time.Second)
	cl := newcamd.NewClient(newcamd.Config{Addr: srv.Addr, User: "user", Password: "pass", Timeout: 10 * time.Second})
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, _, err := cl.ECM(ctx, newcamd.Request{Section: camdouble.ECM(0x80, even, odd, 1)}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("want the context's error, got %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("cancel took %v", d)
	}
}

// A server that closes connections idle for 300 ms (OSCam's clientmaxidle with its newcamd
// keepalive off) keeps a client that sends keep-alives every 100 ms; without them it closes
// the connection, and the next request logs in again rather than fail. (OSCam r11757 with
// clientmaxidle 5 and keepalive 0 did both: it closed the connection of a client idle for 12 s
// and kept that of one sending keep-alives every 2 s.)
func TestClientKeepAlive(t *testing.T) {
	for _, c := range []struct {
		keepAlive  time.Duration
		wantLogins int64
	}{{100 * time.Millisecond, 1}, {-1, 2}} {
		srv := camdouble.NewNewcamd(t, "user", "pass", nil, camdouble.TestCAID)
		srv.SetMaxIdle(300 * time.Millisecond)
		cl := newcamd.NewClient(newcamd.Config{Addr: srv.Addr, User: "user", Password: "pass", KeepAlive: c.keepAlive, MinBackoff: 10 * time.Millisecond})
		ecm := camdouble.ECM(0x80, even, odd, 1)
		if _, _, err := cl.ECM(context.Background(), newcamd.Request{Section: ecm}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(700 * time.Millisecond)
		// Without keep-alives the request finds the connection closed, and connects again.
		if _, _, err := cl.ECM(context.Background(), newcamd.Request{Section: ecm}); err != nil {
			t.Fatalf("keep-alive %v: %v", c.keepAlive, err)
		}
		logins, kas := cl.Counts()
		if logins != c.wantLogins || c.keepAlive > 0 && (kas < 3 || srv.Counts().KeepAlives < 3) || c.keepAlive < 0 && kas != 0 {
			t.Fatalf("keep-alive %v: %d logins (want %d), %d keep-alives answered; server %+v", c.keepAlive, logins, c.wantLogins, kas, srv.Counts())
		}
		cl.Close()
	}
}

// Against a real server (OSCam with a constcw reader, /work/oscam-build/HOWTO.txt shows one):
// TSD_NEWCAMD_SERVER=USER:PASS@HOST:PORT names it; the test ECM of service 1 must get a CW pair.
func TestClientAgainstServer(t *testing.T) {
	v := os.Getenv("TSD_NEWCAMD_SERVER")
	if v == "" {
		t.Skip("TSD_NEWCAMD_SERVER=USER:PASS@HOST:PORT is not set: no real newcamd server to check against")
	}
	cred, addr, _ := strings.Cut(v, "@")
	user, pass, _ := strings.Cut(cred, ":")
	cl := newcamd.NewClient(newcamd.Config{Addr: addr, User: user, Password: pass, KeepAlive: 200 * time.Millisecond})
	defer cl.Close()
	e, o, err := cl.ECM(context.Background(), newcamd.Request{Section: camdouble.ECM(0x80, even, odd, 1), ServiceID: camdouble.ServiceID})
	if err != nil {
		t.Fatal(err)
	}
	cd, _ := cl.CardData()
	time.Sleep(500 * time.Millisecond)
	_, kas := cl.Counts()
	t.Logf("card data: CA system %#04x, providers %06X; CWs %X %X; %d keep-alives answered", cd.CAID, cd.Providers, e, o, kas)
	if _, _, err := cl.ECM(context.Background(), newcamd.Request{Section: camdouble.ECM(0x80, even, odd, 2), ServiceID: 0x7777}); !errors.Is(err, newcamd.ErrNotFound) {
		t.Errorf("an ECM of a service the reader has no key for: %v, want not found", err)
	}
	if kas == 0 {
		t.Error("no keep-alive was answered")
	}
}
