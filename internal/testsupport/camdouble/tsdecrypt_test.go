package camdouble

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	wire "github.com/tsdescramble/tsdescramble/internal/wire/cs378x"
	"github.com/tsdescramble/tsdescramble/keyserver/cs378x"
	"github.com/tsdescramble/tsdescramble/ts"
)

func testCWs() [][]byte {
	return [][]byte{
		{0x11, 0x22, 0x33, 0x66, 0x44, 0x55, 0x66, 0xFF},
		{0xA1, 0xB2, 0xC3, 0x16, 0xD4, 0xE5, 0xF6, 0xAF},
		{0x01, 0x02, 0x03, 0x06, 0x04, 0x05, 0x06, 0x0F},
		{0x7F, 0x6E, 0x5D, 0x4A, 0x3C, 0x2B, 0x1A, 0x81},
		{0x10, 0x20, 0x30, 0x60, 0x40, 0x50, 0x60, 0xF0},
	}
}

// TestTSDecryptAgainstCS378xDouble pins the cs378x test server to an independent client:
// Debian's tsdecrypt reads a stream with ECMs, asks the server for each ECM's keys, and must
// give the clear stream back byte for byte.
func TestTSDecryptAgainstCS378xDouble(t *testing.T) {
	bin, err := exec.LookPath("tsdecrypt")
	if err != nil {
		t.Skip("tsdecrypt is not installed: skipping the cs378x server check against an independent client (apt-get install tsdecrypt)")
	}
	clear, scrambled, ecms := ECMStream(StreamSpec{Packets: 6000, PeriodPackets: 1000, CWs: testCWs()})
	if bytes.Equal(clear, scrambled) {
		t.Fatal("the stream was not scrambled")
	}
	srv := NewCS378x(t, "alice", "s3cret")
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.ts"), filepath.Join(dir, "out.ts")
	if err := os.WriteFile(in, scrambled, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-c", "CONAX", "-s", srv.Addr, "-U", "alice", "-P", "s3cret",
		"-I", "file://"+in, "-O", "file://"+out, "-p")
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Run(); err != nil {
		t.Fatalf("tsdecrypt: %v\n%s", err, log.String())
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	reqs := srv.Requests()
	t.Logf("tsdecrypt sent %d ECM requests for %d ECMs", len(reqs), len(ecms))
	if len(reqs) != len(ecms) {
		t.Errorf("the server got %d ECM requests, the stream has %d distinct ECMs", len(reqs), len(ecms))
	}
	for i, r := range reqs {
		if i < len(ecms) && !bytes.Equal(r.Msg.Data, ecms[i]) {
			t.Errorf("request %d carries %X, want ECM %X", i, r.Msg.Data, ecms[i])
		}
		// (tsdecrypt 10.0 puts 0xFFFF in the ECM PID field: it is not checked.)
		if r.Msg.CAID != TestCAID || r.Msg.ServiceID != ServiceID {
			t.Errorf("request %d: CAID %#x service %d", i, r.Msg.CAID, r.Msg.ServiceID)
		}
	}
	if n := srv.BadCRC(); n != 0 {
		t.Errorf("%d requests with a bad data CRC", n)
	}
	// This project's encoder, given the fields tsdecrypt sent, makes the same bytes: token,
	// header, CRC, padding and AES-128-ECB encryption.
	codec := wire.NewCodec("alice", "s3cret")
	for i, r := range reqs {
		m := r.Msg
		ours, err := codec.Append(nil, &m)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(ours, r.Raw) {
			t.Errorf("request %d: tsdecrypt sent\n% X\nthis project's encoder makes\n% X", i, r.Raw, ours)
		}
	}
	if !bytes.Equal(got, clear) {
		diff := 0
		first := -1
		for i := 0; i+ts.PacketSize <= min(len(got), len(clear)); i += ts.PacketSize {
			if !bytes.Equal(got[i:i+ts.PacketSize], clear[i:i+ts.PacketSize]) {
				diff++
				if first < 0 {
					first = i / ts.PacketSize
				}
			}
		}
		t.Fatalf("tsdecrypt's output differs from the clear stream: %d bytes for %d, %d packets differ, the first %d\n%s",
			len(got), len(clear), diff, first, log.String())
	}
}

// TestCS378xDoubleRejectsOtherAccounts checks that the double, like a real server, answers
// nothing to a client with another password.
func TestCS378xDoubleRejectsOtherAccounts(t *testing.T) {
	srv := NewCS378x(t, "alice", "s3cret")
	cl := cs378x.NewClient(cs378x.Config{Addr: srv.Addr, User: "alice", Password: "wrong", Timeout: 300 * time.Millisecond})
	defer cl.Close()
	_, _, err := cl.ECM(context.Background(), cs378x.Request{Section: ECM(0x80, testCWs()[0], testCWs()[1], 0)})
	if err == nil {
		t.Fatal("an answer under the wrong password")
	}
}
