package keys

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestFollowGrowingCWL(t *testing.T) {
	path := filepath.Join(t.TempDir(), "live.cwl")
	if err := os.WriteFile(path, []byte("# OSCam control word log\n0 11 22 33 66 44 55 66 FF # 12:00:00\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	live := NewLive()
	var mu sync.Mutex
	var bad []string
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Follow(ctx, path, CWSize, live, 5*time.Millisecond, func(err error) {
			mu.Lock()
			bad = append(bad, err.Error())
			mu.Unlock()
		})
	}()
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for range 400 {
			if cond() {
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
		t.Fatalf("timed out waiting for %s", what)
	}
	waitFor("the first key", func() bool { return live.NumCWs() == 1 })
	appendTo := func(s string) {
		f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString(s)
		f.Close()
	}
	// A line written in two goes is read once whole; a bad line is reported and skipped.
	appendTo("1 01 02 03 06 08 09")
	time.Sleep(20 * time.Millisecond)
	if live.NumCWs() != 1 {
		t.Fatal("half a line was read")
	}
	appendTo(" 0A 1B # 12:00:10\n1 zz\n0 AA BB CC 31 DD EE FF CA\n")
	waitFor("the next keys", func() bool { return live.NumCWs() == 3 })
	k := live.Held(0x100, true)
	if k == NoKey || !bytes.Equal(live.CW(k), []byte{1, 2, 3, 6, 8, 9, 0x0A, 0x1B}) {
		t.Fatalf("odd key %X", live.CW(k))
	}
	k = live.Held(0x100, false)
	if !bytes.Equal(live.CW(k), []byte{0xAA, 0xBB, 0xCC, 0x31, 0xDD, 0xEE, 0xFF, 0xCA}) {
		t.Fatalf("even key %X", live.CW(k))
	}
	// Truncated and written anew: read from the start.
	if err := os.WriteFile(path, []byte("1 10 20 30 60 40 50 60 F0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor("the key after truncation", func() bool { return live.NumCWs() == 4 })
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(bad) != 1 || !strings.Contains(bad[0], "live.cwl:4") || strings.Contains(bad[0], "zz") {
		t.Fatalf("bad lines %q", bad)
	}
}

func TestFollowRefusesList(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keys.txt")
	os.WriteFile(path, []byte("11223366445566FF\n"), 0o644)
	err := Follow(context.Background(), path, CWSize, NewLive(), time.Millisecond, nil)
	var le *LineError
	if !errors.As(err, &le) || !strings.Contains(err.Error(), "no parities to follow") {
		t.Fatalf("%v", err)
	}
	if err := Follow(context.Background(), filepath.Join(t.TempDir(), "missing"), CWSize, NewLive(), time.Millisecond, nil); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
}

// Reread reads a log edited in place, which polling on from where it was does not see: the
// keys already used stay used, the new one joins.
func TestFollowerReread(t *testing.T) {
	path := filepath.Join(t.TempDir(), "live.cwl")
	const a, b, c = "11 22 33 66 44 55 66 FF", "01 02 03 06 08 09 0A 1B", "AA BB CC 31 DD EE FF CA"
	if err := os.WriteFile(path, []byte("0 "+a+"\n1 "+b+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	live := NewLive()
	fl := NewFollower(path, CWSize, live, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- fl.Run(ctx, time.Hour) }() // polls once, then only when asked
	defer func() {
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Error(err)
		}
	}()
	for i := 0; live.NumCWs() < 2; i++ {
		if i == 400 {
			t.Fatal("timed out waiting for the first keys")
		}
		time.Sleep(5 * time.Millisecond)
	}
	cw := func(k int) string { return fmt.Sprintf("% X", live.CW(k)) }
	if k := live.Held(0x100, false); cw(k) != a {
		t.Fatalf("even key %s", cw(k))
	}
	if k := live.Held(0x100, true); cw(k) != b {
		t.Fatalf("odd key %s", cw(k))
	}
	// The even key's line is corrected in place: same length, so the file does not shrink.
	if err := os.WriteFile(path, []byte("0 "+c+"\n1 "+b+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	read := make(chan int, 1)
	fl.Reread(func(n int, err error) {
		if err != nil {
			t.Error(err)
		}
		read <- n
	})
	select {
	case n := <-read:
		if n != 2 {
			t.Fatalf("%d key lines read again, want 2", n)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("Reread did not read the file")
	}
	if live.NumCWs() != 3 {
		t.Fatalf("%d CWs known, want the 2 first and the new one", live.NumCWs())
	}
	if k := live.Held(0x100, false); k == NoKey || cw(k) != c {
		t.Fatalf("even key after Reread %s", cw(k))
	}
	// The odd key did not change: the slot holds it still, the only odd key the log has had
	// (a constant key, to the periods that take it).
	k := live.Held(0x100, true)
	if k == NoKey || cw(k) != b {
		t.Fatalf("odd key after Reread %s", cw(k))
	}
	if h := live.AppendSlot(nil, 0x100, true, 0); len(h) != 1 || h[0].CW != k || h[0].Last == h[0].Seq {
		t.Fatalf("the odd key set again by the reread: slot %+v, want it once, sent again", h)
	}
}

// Poll sets the keys the file holds before it returns, so that a program can have them before
// its input starts; Run then reads what is appended.
func TestFollowerPoll(t *testing.T) {
	path := filepath.Join(t.TempDir(), "live.cwl")
	const a, b, c = "11 22 33 66 44 55 66 FF", "01 02 03 06 08 09 0A 1B", "AA BB CC 31 DD EE FF CA"
	if err := os.WriteFile(path, []byte("0 "+a+"\n1 "+b+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	live := NewLive()
	fl := NewFollower(path, CWSize, live, nil)
	if err := fl.Poll(); err != nil {
		t.Fatal(err)
	}
	if n := live.NumCWs(); n != 2 {
		t.Fatalf("%d CWs after Poll, want 2", n)
	}
	cw := func(k int) string { return fmt.Sprintf("% X", live.CW(k)) }
	if k := live.Held(0x100, false); cw(k) != a {
		t.Fatalf("even key %s", cw(k))
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("0 " + c + "\n")
	f.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- fl.Run(ctx, time.Hour) }()
	for i := 0; live.NumCWs() < 3; i++ {
		if i == 400 {
			t.Fatal("timed out waiting for the appended key")
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	<-done
	if k := live.Held(0x100, false); cw(k) != c {
		t.Fatalf("even key after the append %s", cw(k))
	}
}
