package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/tsdescramble/tsdescramble/internal/synth"
	"github.com/tsdescramble/tsdescramble/ts"

	"github.com/tsdescramble/tsdescramble/csa"
	"github.com/tsdescramble/tsdescramble/pipeline"
)

// faultCW is the control word of the synthetic streams of the fault tests.
var faultCW = []byte{0x11, 0x22, 0x33, 0x66, 0x44, 0x55, 0x66, 0xff}

// faultBlock returns a scrambled synthetic stream of 5000 packets (940 kB) and its
// descrambled form.
func faultBlock(t *testing.T) (scrambled, clear []byte) {
	t.Helper()
	faultBlocks.once.Do(func() {
		key, err := csa.NewKey(faultCW)
		if err != nil {
			faultBlocks.err = err
			return
		}
		faultBlocks.scrambled = synth.SyntheticStream(5000, 1000, key)
		faultBlocks.clear = descrambled(t, faultBlocks.scrambled, faultCW)
	})
	if faultBlocks.err != nil {
		t.Fatal(faultBlocks.err)
	}
	return bytes.Clone(faultBlocks.scrambled), bytes.Clone(faultBlocks.clear)
}

// faultBlocks is faultBlock's block, made once for the tests that share it: the clear side is
// descrambled by the scalar cipher, the reference, which costs most of a second.
var faultBlocks struct {
	once             sync.Once
	scrambled, clear []byte
	err              error
}

// repeatedPrefix checks that the bytes written to it are a prefix of want repeated without
// end, and counts them, without keeping them.
type repeatedPrefix struct {
	want []byte
	n    int64
	bad  int64 // offset of the first byte that differs, -1 while none does
}

func (w *repeatedPrefix) Write(p []byte) (int, error) {
	for i := 0; i < len(p); {
		at := int(w.n % int64(len(w.want)))
		m := min(len(p)-i, len(w.want)-at)
		if w.bad < 0 && !bytes.Equal(p[i:i+m], w.want[at:at+m]) {
			j := 0
			for p[i+j] == w.want[at+j] {
				j++
			}
			w.bad = w.n + int64(j)
		}
		i += m
		w.n += int64(m)
	}
	return len(p), nil
}

// feed writes data to w reps times, or until a write fails, then closes w. It counts the
// copies written in done, when done is not nil.
func feed(w io.WriteCloser, data []byte, reps int, done *atomic.Int64) {
	for range reps {
		if _, err := w.Write(data); err != nil {
			break
		}
		if done != nil {
			done.Add(1)
		}
	}
	w.Close()
}

// waitStatus returns how the command ended: its exit status, or the signal that killed it.
func waitStatus(t *testing.T, err error) (code int, sig syscall.Signal) {
	t.Helper()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, 0
	case errors.As(err, &ee):
		ws := ee.Sys().(syscall.WaitStatus)
		if ws.Signaled() {
			return -1, ws.Signal()
		}
		return ws.ExitStatus(), 0
	}
	t.Fatalf("running the binary: %v", err)
	return 0, 0
}

// lastLine returns the last line of s, without its newline.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	return lines[len(lines)-1]
}

// TestBinaryFaults runs the built command against failing outputs, signals, a reader that
// goes away, an output file whose run fails, and damaged input, and checks the exit status,
// the message and that no packet is lost: what was written is always a prefix of the
// expected output, in whole packets where the contract promises them.
func TestBinaryFaults(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the binary and streams hundreds of MB: skipped under -short")
	}
	dir := t.TempDir()
	bin := buildBinary(t, dir)
	block, clear := faultBlock(t)
	cw := fmt.Sprintf("%x", faultCW)
	const reps = 400 // 376 MB: far more than a run gets through before it is stopped

	command := func(t *testing.T, args ...string) (*exec.Cmd, *bytes.Buffer) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		t.Cleanup(cancel)
		cmd := exec.CommandContext(ctx, bin, args...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		return cmd, &stderr
	}

	// A device that refuses every write, while the input keeps coming: exit 1 at once, with a
	// message naming the output.
	t.Run("-out /dev/full", func(t *testing.T) {
		if _, err := os.Stat("/dev/full"); err != nil {
			t.Skip("no /dev/full:", err)
		}
		for _, quiet := range []bool{true, false} {
			args := []string{"-cw", cw, "-out", "/dev/full"}
			if quiet {
				args = append(args, "-q")
			}
			cmd, stderr := command(t, args...)
			stdin, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			go feed(stdin, block, reps, nil)
			code, sig := waitStatus(t, cmd.Wait())
			took := time.Since(start)
			t.Logf("-q %v: exit %d after %v; stderr:\n%s", quiet, code, took.Round(time.Millisecond), stderr)
			if code != 1 || sig != 0 {
				t.Errorf("exit %d (signal %v), want 1", code, sig)
			}
			if took > 10*time.Second {
				t.Errorf("the run took %v to fail", took)
			}
			if quiet {
				oneLine(t, stderr.String())
			}
			if last := lastLine(stderr.String()); !strings.HasPrefix(last, "tsdescramble: ") || !strings.Contains(last, "/dev/full") {
				t.Errorf("the last line of stderr does not name the output: %q", last)
			}
		}
	})

	// SIGTERM and SIGINT in the middle of a long run from a pipe: the conventional status, a
	// message, and the output holds whole packets, each the right one, as many as the message
	// says. Every packet counted in is counted out.
	for _, tc := range []struct {
		sig    syscall.Signal
		code   int
		toFile bool
	}{
		{syscall.SIGTERM, 143, false},
		{syscall.SIGINT, 130, false},
		{syscall.SIGTERM, 143, true},
		{syscall.SIGINT, 130, true},
		{syscall.SIGHUP, 129, false}, // a terminal that closes
		{syscall.SIGHUP, 129, true},
	} {
		name := map[syscall.Signal]string{syscall.SIGTERM: "SIGTERM", syscall.SIGINT: "SIGINT", syscall.SIGHUP: "SIGHUP"}[tc.sig]
		where := "stdout"
		if tc.toFile {
			where = "-out FILE"
		}
		t.Run(name+" to "+where, func(t *testing.T) {
			outPath := filepath.Join(t.TempDir(), "out.ts")
			args := []string{"-cw", cw, "-workers", "2"}
			if tc.toFile {
				args = append(args, "-out", outPath)
			}
			cmd, stderr := command(t, args...)
			stdin, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			got := &repeatedPrefix{want: clear, bad: -1}
			var stdout io.ReadCloser
			if !tc.toFile {
				if stdout, err = cmd.StdoutPipe(); err != nil {
					t.Fatal(err)
				}
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			var fed atomic.Int64
			go feed(stdin, block, reps, &fed)
			copied := make(chan error, 1)
			if stdout != nil {
				go func() {
					_, err := io.Copy(got, stdout)
					copied <- err
				}()
			}
			// Let the run get well under way (20 MB read through a 64 kB pipe), then stop it.
			for deadline := time.Now().Add(time.Minute); fed.Load() < 20 && time.Now().Before(deadline); {
				time.Sleep(10 * time.Millisecond)
			}
			if err := cmd.Process.Signal(tc.sig); err != nil {
				t.Fatal(err)
			}
			sent := time.Now()
			if stdout != nil {
				if err := <-copied; err != nil {
					t.Fatal(err)
				}
			}
			code, sig := waitStatus(t, cmd.Wait())
			t.Logf("exit %d %v after the signal; stderr:\n%s", code, time.Since(sent).Round(time.Millisecond), stderr)
			if code != tc.code {
				t.Fatalf("exit %d (signal %v), want %d", code, sig, tc.code)
			}
			if tc.toFile {
				if _, err := os.Stat(outPath); err == nil {
					t.Errorf("%s exists after a run stopped by %v", outPath, tc.sig)
				}
				if names := dirNames(t, filepath.Dir(outPath)); len(names) != 1 || names[0] != "out.ts.partial" {
					t.Errorf("the run left %v, want out.ts.partial alone", names)
				}
				if last := lastLine(stderr.String()); !strings.HasSuffix(last, " to "+outPath+".partial") {
					t.Errorf("the message does not name the partial output: %q", last)
				}
				f, err := os.Open(outPath + ".partial")
				if err != nil {
					t.Fatalf("no partial output: %v", err)
				}
				_, err = io.Copy(got, f)
				f.Close()
				if err != nil {
					t.Fatal(err)
				}
			}
			last := lastLine(stderr.String())
			m := regexp.MustCompile(`^tsdescramble: stopped by (SIG[A-Z]+) after writing (\d+) packets`).FindStringSubmatch(last)
			if m == nil || m[1] != name {
				t.Fatalf("the last line of stderr does not say the run was stopped by %v: %q", tc.sig, last)
			}
			written, _ := strconv.ParseInt(m[2], 10, 64)
			if got.bad >= 0 {
				t.Fatalf("output byte %d (packet %d) differs from the descrambled stream", got.bad, got.bad/188)
			}
			if got.n%188 != 0 || got.n/188 != written || written == 0 {
				t.Fatalf("%d bytes out (%d packets and %d bytes); the message says %d packets", got.n, got.n/188, got.n%188, written)
			}
			in := regexp.MustCompile(`(\d+) packets in, (\d+) out`).FindStringSubmatch(stderr.String())
			if in == nil || in[1] != in[2] || in[2] != m[2] {
				t.Fatalf("the summary does not count every packet read as written: %v", in)
			}
			t.Logf("%d packets in, %d written, 0 lost", written, got.n/188)
		})
	}

	// A reader that closes the pipe after 1000 bytes: the command dies of SIGPIPE, as any Unix
	// filter does, without a message.
	inPath := writeFile(t, dir, "in.ts", bytes.Repeat(block, 8))
	t.Run("reader closes stdout early", func(t *testing.T) {
		for _, extra := range [][]string{nil, {"-q"}, {"-workers", "1", "-batch", "1"}} {
			cmd, stderr := command(t, append([]string{"-cw", cw, "-in", inPath}, extra...)...)
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			cmd.Stdout = w
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			w.Close()
			head := make([]byte, 1000)
			if _, err := io.ReadFull(r, head); err != nil {
				t.Fatal(err)
			}
			r.Close()
			code, sig := waitStatus(t, cmd.Wait())
			if sig != syscall.SIGPIPE || stderr.Len() != 0 {
				t.Errorf("%v: exit %d, signal %v, want SIGPIPE and no message; stderr:\n%s", extra, code, sig, stderr)
			}
			if !bytes.Equal(head, clear[:1000]) {
				t.Errorf("%v: the first 1000 bytes are not those of the descrambled stream", extra)
			}
		}
		// As a shell sees it.
		if _, err := exec.LookPath("bash"); err != nil {
			t.Skip("no bash")
		}
		out, err := exec.Command("bash", "-c", `"$0" -cw "$1" -in "$2" | head -c 1000 >/dev/null; echo "${PIPESTATUS[0]}"`, bin, cw, inPath).CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) != "141" {
			t.Errorf("the shell reports %q (%v), want 141 and nothing else", out, err)
		}
	})

	// -out FILE whose run fails: no FILE that looks complete. A write that fails halfway (a file
	// size limit) keeps what was written as FILE.partial; an input with no transport stream
	// leaves nothing.
	t.Run("-out FILE, write fails halfway", func(t *testing.T) {
		if _, err := exec.LookPath("bash"); err != nil {
			t.Skip("no bash")
		}
		d := t.TempDir()
		outPath := filepath.Join(d, "out.ts")
		// ulimit -f counts 1024-byte blocks: the output may grow to 2 MB of the 7.5 MB it needs.
		cmd := exec.Command("bash", "-c", `ulimit -f 2000 && exec "$0" -q -cw "$1" -in "$2" -out "$3"`, bin, cw, inPath, outPath)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		code, sig := waitStatus(t, cmd.Run())
		t.Logf("exit %d; stderr: %s", code, stderr.String())
		if code != 1 || sig != 0 {
			t.Fatalf("exit %d (signal %v), want 1", code, sig)
		}
		oneLine(t, stderr.String())
		if !strings.Contains(stderr.String(), outPath) || !strings.Contains(stderr.String(), outPath+".partial") {
			t.Errorf("the message does not name the output and where the partial output is: %q", stderr.String())
		}
		if _, err := os.Stat(outPath); err == nil {
			t.Errorf("%s exists after a failed run", outPath)
		}
		// The limit cuts a packet: the partial output ends on the last whole one.
		got := &repeatedPrefix{want: clear, bad: -1}
		got.Write(readFile(t, outPath+".partial"))
		if want := int64(2000*1024/188) * 188; got.n != want || got.bad >= 0 {
			t.Errorf("%s: %d bytes, want %d (whole packets); differs from the output at byte %d", outPath+".partial", got.n, want, got.bad)
		}
		t.Logf("%d whole packets kept in %s", got.n/188, filepath.Base(outPath)+".partial")
		if names := dirNames(t, d); len(names) != 1 {
			t.Errorf("the run left %v", names)
		}
	})

	t.Run("-out FILE, no transport stream", func(t *testing.T) {
		d := t.TempDir()
		junk := writeFile(t, t.TempDir(), "junk.ts", noSyncInput(1<<20, true))
		cmd, stderr := command(t, "-cw", cw, "-in", junk, "-out", filepath.Join(d, "out.ts"))
		code, _ := waitStatus(t, cmd.Run())
		if code != 1 || !strings.Contains(stderr.String(), "sync") {
			t.Errorf("exit %d, want 1 and a message about sync; stderr:\n%s", code, stderr)
		}
		if names := dirNames(t, d); len(names) != 0 {
			t.Errorf("the run left %v", names)
		}
	})

	// A key that does not fit: exit 3, and the output is written in full, as documented.
	t.Run("-out FILE, wrong key", func(t *testing.T) {
		d := t.TempDir()
		s := periodStream(t, []period{{tscEven, cwA, 300}, {tscOdd, cwA, 300}})
		in := writeFile(t, d, "in.ts", s.input())
		outPath := filepath.Join(d, "out.ts")
		cmd, stderr := command(t, "-q", "-cw", cwB, "-in", in, "-out", outPath)
		code, _ := waitStatus(t, cmd.Run())
		if code != 3 {
			t.Errorf("exit %d, want 3; stderr:\n%s", code, stderr)
		}
		if fi, err := os.Stat(outPath); err != nil || fi.Size() != int64(len(s.input())) {
			t.Errorf("the output is not written in full: %v, %v", fi, err)
		}
	})

	t.Run("-in F -out F", func(t *testing.T) {
		d := t.TempDir()
		path := writeFile(t, d, "rec.ts", block)
		cmd, stderr := command(t, "-cw", cw, "-in", path, "-out", path)
		code, _ := waitStatus(t, cmd.Run())
		if code != 2 || !strings.Contains(stderr.String(), "same file") {
			t.Errorf("exit %d, want 2 and a message; stderr:\n%s", code, stderr)
		}
		oneLine(t, stderr.String())
		if !bytes.Equal(readFile(t, path), block) {
			t.Error("the file changed")
		}
		if names := dirNames(t, d); len(names) != 1 {
			t.Errorf("the run left %v", names)
		}
	})

	// Garbage between packets and a truncated last packet, in every framing: exit 0, every
	// whole packet out, and the bytes dropped counted exactly.
	t.Run("garbage and truncated tail", func(t *testing.T) {
		for _, size := range []int{188, 192, 204} {
			rng := rand.New(rand.NewPCG(uint64(size), 1))
			n := len(block) / 188
			pkts := make([][]byte, n)
			for i := range pkts {
				pkts[i] = block[i*188 : (i+1)*188]
			}
			framed, want := frame(pkts, size), frame(splitPackets(clear), size)
			var in []byte
			garbage := 0
			for i := 0; i < n; i++ {
				in = append(in, framed[i*size:(i+1)*size]...)
				if i%97 == 50 && i < n-10 {
					g := make([]byte, size+rng.IntN(1000))
					for j := range g {
						if g[j] = byte(rng.Uint32()); g[j] == ts.SyncByte {
							g[j] = 0x46
						}
					}
					in = append(in, g...)
					garbage += len(g)
				}
			}
			cut := 1 + rng.IntN(size-1)
			in = in[:len(in)-size+cut]
			want = want[:len(want)-size]
			statsPath := filepath.Join(t.TempDir(), "stats.json")
			cmd, stderr := command(t, "-cw", cw, "-stats", statsPath)
			var stdout bytes.Buffer
			cmd.Stdin, cmd.Stdout = bytes.NewReader(in), &stdout
			code, _ := waitStatus(t, cmd.Run())
			if code != 0 {
				t.Fatalf("%d: exit %d; stderr:\n%s", size, code, stderr)
			}
			sameBytes(t, fmt.Sprintf("%d-byte framing", size), stdout.Bytes(), want, size)
			var st pipeline.Stats
			if err := json.Unmarshal(readFile(t, statsPath), &struct {
				*pipeline.Stats
				Framing int `json:"framing"`
			}{Stats: &st}); err != nil {
				t.Fatal(err)
			}
			if st.Skipped != int64(garbage) || st.Truncated != int64(cut) || st.Packets != int64(n-1) || st.BytesOut != int64(len(want)) {
				t.Errorf("%d: statistics skipped %d truncated %d packets %d out %d; want %d, %d, %d, %d",
					size, st.Skipped, st.Truncated, st.Packets, st.BytesOut, garbage, cut, n-1, len(want))
			}
			t.Logf("%d-byte framing: %d bytes of garbage and a %d-byte tail dropped, %d packets in, %d out", size, st.Skipped, st.Truncated, st.Packets, st.BytesOut/int64(size))
			summaryHas(t, stderr.String(), fmt.Sprintf(`%d packets in, %d out`, n-1, n-1),
				fmt.Sprintf(`skipped %d bytes`, garbage), fmt.Sprintf(`truncated last packet of %d bytes`, cut))
		}
	})

	// The input cut at every offset of its first three packets: exit 0 and every whole packet
	// out; exit 1 and a message when not one packet is whole, or when the input is empty.
	// Each cut is a process: every offset takes 20 s, so the quick run takes those around the
	// packet boundaries.
	t.Run("cut at every offset", func(t *testing.T) {
		for cut := 0; cut <= 3*188; cut++ {
			if !longTests() && cut%188 > 2 && cut%188 < 186 && cut != 100 {
				continue
			}
			cmd, stderr := command(t, "-q", "-cw", cw, "-workers", "2", "-batch", "2")
			var stdout bytes.Buffer
			cmd.Stdin, cmd.Stdout = bytes.NewReader(block[:cut]), &stdout
			code, sig := waitStatus(t, cmd.Run())
			whole := cut / 188
			switch {
			case sig != 0:
				t.Fatalf("cut %d: killed by %v; stderr:\n%s", cut, sig, stderr)
			case cut == 0 && (code != 1 || stdout.Len() != 0 || stderr.String() != "tsdescramble: stdin: the input is empty\n"):
				t.Fatalf("empty input: exit %d, %d bytes out, want 1 and one line saying so; stderr:\n%s", code, stdout.Len(), stderr)
			case cut > 0 && whole == 0 && (code != 1 || stdout.Len() != 0 || !strings.Contains(stderr.String(), "sync")):
				t.Fatalf("cut %d: exit %d, %d bytes out, want 1 and a message about sync; stderr:\n%s", cut, code, stdout.Len(), stderr)
			case whole > 0 && (code != 0 || !bytes.Equal(stdout.Bytes(), clear[:whole*188])):
				t.Fatalf("cut %d: exit %d, %d bytes out, want 0 and %d whole packets; stderr:\n%s", cut, code, stdout.Len(), whole, stderr)
			}
		}
	})

	// Damaged packets pass through, are counted, and the good ones around them are
	// descrambled: an adaptation field longer than the packet, a PUSI whose PES header does
	// not decrypt to one, payloads of 0 to 7 bytes.
	t.Run("damaged packets", func(t *testing.T) {
		s := periodStream(t, []period{{tscEven, cwA, 150}, {tscOdd, cwB, 150}})
		in, want := s.input(), s.output()
		pkt := func(b []byte, i int) []byte { return b[i*188 : (i+1)*188] }
		stats := func(in []byte) (pipeline.Stats, []byte) {
			t.Helper()
			statsPath := filepath.Join(t.TempDir(), "stats.json")
			cmd, stderr := command(t, "-cw-even", cwA, "-cw-odd", cwB, "-stats", statsPath, "-workers", "3", "-batch", "7")
			var stdout bytes.Buffer
			cmd.Stdin, cmd.Stdout = bytes.NewReader(in), &stdout
			if code, sig := waitStatus(t, cmd.Run()); code != 0 || sig != 0 {
				t.Fatalf("exit %d (signal %v); stderr:\n%s", code, sig, stderr)
			}
			var st pipeline.Stats
			if err := json.Unmarshal(readFile(t, statsPath), &struct {
				*pipeline.Stats
				Framing int `json:"framing"`
			}{Stats: &st}); err != nil {
				t.Fatal(err)
			}
			return st, stdout.Bytes()
		}
		before, _ := stats(in)
		// Ten scrambled packets that do not start a PES packet.
		var idx []int
		for i := 0; len(idx) < 10; i++ {
			if p := pkt(in, i); p[3]>>6 >= tscEven && p[1]&0x40 == 0 {
				idx = append(idx, i)
			}
		}
		// An adaptation field length of 200: untouched, TSC kept.
		p := pkt(in, idx[0])
		p[3] = p[3]&0xCF | 0x30
		p[4] = 200
		copy(pkt(want, idx[0]), p)
		// A PUSI on a payload that is not the start of a PES packet: descrambled, and the
		// PES-start check fails.
		pkt(in, idx[1])[1] |= 0x40
		pkt(want, idx[1])[1] |= 0x40
		// Payloads of 0 to 7 bytes behind an adaptation field of stuffing: left as they are
		// but for the scrambling bits (none to clear without a payload).
		for n := 0; n < 8; n++ {
			p, w := pkt(in, idx[2+n]), pkt(want, idx[2+n])
			p[3] = p[3]&0xCF | 0x30
			p[4] = byte(183 - n)
			p[5] = 0 // no adaptation field flags
			for i := 6; i < 188-n; i++ {
				p[i] = 0xFF
			}
			copy(w, p)
			if n > 0 {
				w[3] &= 0x3F
			}
		}
		st, out := stats(in)
		sameBytes(t, "output", out, want, 188)
		if st.Packets != before.Packets || st.NoPayload != before.NoPayload+2 || st.Short != before.Short+7 ||
			st.Descrambled != before.Descrambled-9 || st.PESBad != 1 || st.PESGood != before.PESGood {
			t.Errorf("statistics: %d packets, %d without payload, %d short, %d descrambled, PES starts %d good %d bad; "+
				"want %d, %d, %d, %d, %d good 1 bad", st.Packets, st.NoPayload, st.Short, st.Descrambled, st.PESGood, st.PESBad,
				before.Packets, before.NoPayload+2, before.Short+7, before.Descrambled-9, before.PESGood)
		}
	})
}

// splitPackets cuts a 188-byte stream into its packets.
func splitPackets(stream []byte) [][]byte {
	var pkts [][]byte
	for at := 0; at+188 <= len(stream); at += 188 {
		pkts = append(pkts, stream[at:at+188])
	}
	return pkts
}
