package main

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tsdescramble/tsdescramble/internal/testsupport/camdouble"
	"github.com/tsdescramble/tsdescramble/pipeline"
)

// newcamdKey is the DES key of the test port: not the protocol's default, so that a client
// that ignored key= would not log in.
const newcamdKey = "A1B2C3D4E5F60718293A4B5C6D7E"

func newcamdServer(t *testing.T, user, password string) *camdouble.Newcamd {
	key, err := hex.DecodeString(newcamdKey)
	if err != nil {
		t.Fatal(err)
	}
	return camdouble.NewNewcamd(t, user, password, key, camdouble.TestCAID)
}

// secretsIn returns the secrets of a newcamd URL that s shows: the password, the DES key in
// any case and with any of the separators the URL allows.
func secretsIn(s string, secrets ...string) []string {
	var found []string
	low := strings.ToLower(s)
	strip := strings.NewReplacer(" ", "", ":", "", "-", "")
	for _, x := range secrets {
		if strings.Contains(low, strings.ToLower(x)) || strings.Contains(strip.Replace(low), strings.ToLower(x)) {
			found = append(found, x)
		}
	}
	return found
}

func TestKeyServerNewcamd(t *testing.T) {
	t.Parallel()
	clear, _, in := keyServerStream(t)
	srv := newcamdServer(t, "alice", "pa55word")
	dir := t.TempDir()
	out, stats := filepath.Join(dir, "out.ts"), filepath.Join(dir, "st.json")
	url := "newcamd://alice:pa55word@" + srv.Addr + "?key=" + newcamdKey + "&caid=0B00"
	r := run(t, nil, "-v", "-key-server", url, "-in", in, "-out", out, "-stats", stats)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if got := readFile(t, out); !bytes.Equal(got, clear) {
		t.Fatalf("output differs from the clear stream\n%s", r.stderr)
	}
	if s := secretsIn(r.stderr+string(readFile(t, stats)), "pa55word", newcamdKey); len(s) > 0 {
		t.Fatalf("%q printed in stderr or -stats: %s", s, r.stderr)
	}
	if u := strings.ToUpper(r.stderr); strings.Contains(u, "11223366445566FF") || strings.Contains(u, "11 22 33 66") {
		t.Fatalf("a control word was printed without -show-keys: %s", r.stderr)
	}
	summaryHas(t, r.stderr, `key server \(newcamd\): 4 ECMs sent, 4 answered with keys, 0 not found, 0 no card, 0 timed out, 0 failed; 7 CWs`, // the first ECM has no previous key
		`CWs applied: PID 0x0100 even 2 periods, PID 0x0100 odd 2 periods`, `crypto periods 4 \(4 fit, 0 unchecked, 0 left scrambled\)`)
	var st struct {
		LiveKeys pipeline.LiveKeyStats `json:"live_keys"`
	}
	if err := json.Unmarshal(readFile(t, stats), &st); err != nil {
		t.Fatal(err)
	}
	if s := st.LiveKeys.Server; s == nil || s.Protocol != "newcamd" || s.Sent != 4 || s.Answers != 4 || len(s.Applied) != 2 {
		t.Fatalf("stats %+v", st.LiveKeys)
	}
	// Every request went through one login, and named the service.
	if n := srv.Counts().Logins; n != 1 {
		t.Fatalf("%d logins for one run", n)
	}
	for _, req := range srv.Requests() {
		if req.Msg.ServiceID != camdouble.ServiceID || req.Msg.CAID != camdouble.TestCAID {
			t.Fatalf("a request for service %d, CA system %#04x", req.Msg.ServiceID, req.Msg.CAID)
		}
	}
	// -v -show-keys prints the CW of each period, and still neither the password nor the key
	// (given here with colons between its bytes, as tvheadend shows it).
	var colons []string
	for i := 0; i < len(newcamdKey); i += 2 {
		colons = append(colons, newcamdKey[i:i+2])
	}
	url = "newcamd://alice:pa55word@" + srv.Addr + "?key=" + strings.Join(colons, ":")
	r2 := run(t, nil, "-v", "-show-keys", "-key-server", url, "-in", in, "-out", out)
	if r2.code != 0 || !strings.Contains(strings.ToUpper(r2.stderr), "11223366445566FF") || len(secretsIn(r2.stderr, "pa55word", newcamdKey)) > 0 {
		t.Fatalf("-v -show-keys: exit %d: %s", r2.code, r2.stderr)
	}
}

// A login the server refuses (a wrong password) or cannot read (a wrong DES key): no key comes,
// every period passes as it came, the run exits 3, and its one line (-q) says why, with neither
// the password nor the key.
func TestKeyServerNewcamdLoginFails(t *testing.T) {
	t.Parallel()
	_, scrambled, in := keyServerStream(t)
	srv := newcamdServer(t, "alice", "pa55word")
	srv.SetBadKeyWait(50 * time.Millisecond)
	for _, c := range []struct {
		name, url, why string
	}{
		{"wrong password", "newcamd://alice:wrongpw@" + srv.Addr + "?key=" + newcamdKey,
			`newcamd: the key server refused the login of user "alice" (wrong user name or password?)`},
		{"wrong user", "newcamd://bob:pa55word@" + srv.Addr + "?key=" + newcamdKey,
			`newcamd: the key server refused the login of user "bob" (wrong user name or password?)`},
		{"wrong DES key", "newcamd://alice:pa55word@" + srv.Addr, // the default key
			`newcamd: no answer to the login: the key server closed the connection (a wrong DES key?)`},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out.ts")
			r := run(t, nil, "-q", "-key-server", c.url, "-key-wait", "300ms", "-in", in, "-out", out)
			want := "tsdescramble: 4 crypto periods got no key from the key server within -key-wait 300ms: 4000 packets passed scrambled (the key server's last answer: " +
				c.why + "); the output was written anyway\n"
			if r.code != exitNoFit || r.stderr != want {
				t.Fatalf("exit %d, %q; want exit %d and %q", r.code, r.stderr, exitNoFit, want)
			}
			if s := secretsIn(r.stderr, "pa55word", "wrongpw", newcamdKey, "0102030405060708091011121314"); len(s) > 0 {
				t.Fatalf("%q printed: %s", s, r.stderr)
			}
			if got := readFile(t, out); !bytes.Equal(got, scrambled) {
				t.Fatal("packets without a key were changed")
			}
		})
	}
	if c := srv.Counts(); c.Logins != 0 || c.Refused == 0 || c.BadKey == 0 {
		t.Fatalf("server counts %+v", c)
	}
}

// A server that restarts mid-run (its connections closed, its port open all along): the
// client finds its connection closed at the next ECM, logs in again and sends the ECM again,
// and the output is the clear stream; the request that met the closed connection is no error.
func TestKeyServerNewcamdServerRestarts(t *testing.T) {
	t.Parallel()
	clear, _, in := keyServerStream(t)
	srv := newcamdServer(t, "alice", "pa55word")
	var restarted atomic.Bool
	srv.SetAnswer(func(ecm []byte) (byte, [16]byte, bool) {
		if seq, err := camdouble.ECMSeq(ecm); err == nil && seq == 2 && restarted.CompareAndSwap(false, true) {
			go srv.Restart(0) // Restart closes the connection this runs on
			return 0, [16]byte{}, true
		}
		return camdouble.TestCAAnswer(ecm)
	})
	dir := t.TempDir()
	out, stats := filepath.Join(dir, "out.ts"), filepath.Join(dir, "st.json")
	r := run(t, nil, "-v", "-key-server", "newcamd://alice:pa55word@"+srv.Addr+"?key="+newcamdKey, "-in", in, "-out", out, "-stats", stats)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if got := readFile(t, out); !bytes.Equal(got, clear) {
		t.Fatalf("output differs from the clear stream\n%s", r.stderr)
	}
	if c := srv.Counts(); c.Logins != 2 {
		t.Fatalf("%d logins, want 2: one before the restart, one after (%+v)", c.Logins, c)
	}
	summaryHas(t, r.stderr, `key server \(newcamd\): 4 ECMs sent, 4 answered with keys, 0 not found, 0 no card, 0 timed out, 0 failed`)
}
