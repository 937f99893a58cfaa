// Package ecmgtest runs an independent ECMG for tests: the example ECMG of VideoLAN's bitstream
// library (Debian's libbitstream-dev ships its source, examples/dvb_ecmg.c), compiled with gcc
// into the test's temporary directory and served on 127.0.0.1 by socat, one ECMG process per
// connection. Its ECMs are sections of table_id 0x80 or 0x81 (the parity of the CP number)
// carrying the even and the odd CW of its CW_provision, each XORed with XORKey.
package ecmgtest

import (
	"compress/gzip"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/tsdescramble/tsdescramble/internal/testsupport/ports"
)

// XORKey is the fixed key the example ECMG XORs each CW with (dvb_ecmg.c, build_ecm).
var XORKey = []byte{0x42, 0x12, 0x02, 0x24, 0x21, 0x20, 0x66, 0x88}

// Its channel parameters (dvb_ecmg.c): what its channel_status says.
const (
	DelayStart  = 200 * time.Millisecond
	RepPeriod   = 300 * time.Millisecond
	LeadCW      = 1
	CWPerMsg    = 2
	MaxCompTime = 100 * time.Millisecond
)

const source = "/usr/share/doc/libbitstream-dev/examples/dvb_ecmg.c"

// Skip is the message of a test skipped for want of the tools.
const Skip = "needs the example ECMG: install libbitstream-dev, socat and gcc"

// Build compiles the example ECMG into a temporary directory of t and returns its path, or skips
// t when the source, gcc or socat is missing.
func Build(t testing.TB) string {
	t.Helper()
	src := source
	if _, err := os.Stat(src); err != nil {
		src += ".gz"
	}
	in, err := os.Open(src)
	if err != nil {
		t.Skip(Skip)
	}
	defer in.Close()
	for _, tool := range []string{"gcc", "socat"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skip(Skip)
		}
	}
	if _, err := os.Stat("/usr/include/bitstream/dvb/sim.h"); err != nil {
		t.Skip(Skip)
	}
	var r io.Reader = in
	if filepath.Ext(src) == ".gz" {
		if r, err = gzip.NewReader(in); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	c := filepath.Join(dir, "dvb_ecmg.c")
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(c, b, 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "dvb_ecmg")
	if out, err := exec.Command("gcc", "-O1", "-w", "-o", bin, c).CombinedOutput(); err != nil {
		t.Fatalf("compiling %s: %v\n%s", src, err, out)
	}
	return bin
}

// Start builds the example ECMG and serves it on a free port of 127.0.0.1 behind socat until t
// ends; it returns the address. The ECMGs' own messages go to t's log when they fail.
func Start(t testing.TB) string {
	t.Helper()
	return Serve(t, Build(t))
}

// Serve serves the ECMG program bin on a free port of 127.0.0.1 behind socat until t ends.
func Serve(t testing.TB, bin string) string {
	t.Helper()
	for attempt := 0; attempt < 3; attempt++ {
		port := freePort(t)
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		cmd := exec.Command("socat", "TCP-LISTEN:"+strconv.Itoa(port)+",bind=127.0.0.1,reuseaddr,fork", "EXEC:"+bin)
		inOwnGroup(cmd)
		logFile, err := os.Create(filepath.Join(t.TempDir(), "ecmg.log"))
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = logFile
		if err := cmd.Start(); err != nil {
			t.Fatalf("starting socat: %v", err)
		}
		pid := cmd.Process.Pid
		exited := make(chan struct{})
		go func() { cmd.Wait(); close(exited) }()
		t.Cleanup(func() {
			// socat and the ECMGs it forked share its process group: end them all by its pid.
			stopGroup(pid, false)
			select {
			case <-exited:
			case <-time.After(5 * time.Second):
				stopGroup(pid, true)
				<-exited
			}
			logFile.Close()
			if t.Failed() {
				if b, err := os.ReadFile(logFile.Name()); err == nil && len(b) > 0 {
					t.Logf("ECMG log:\n%s", b)
				}
			}
		})
		// Wait, bounded, until socat listens.
		deadline := time.Now().Add(5 * time.Second)
		for time.Now().Before(deadline) {
			select {
			case <-exited:
				deadline = time.Time{} // the port was taken meanwhile: try another
				continue
			default:
			}
			if up(port) {
				return addr
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	t.Fatal("socat did not start listening")
	return ""
}

// up reports whether something listens on the port. socat forks an ECMG for the probe, which
// reads end-of-file at once and exits.
func up(port int) bool {
	c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

func freePort(t testing.TB) int {
	return ports.TCP(t)
}
