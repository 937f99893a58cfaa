package main

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tsdescramble/tsdescramble/csa"
	"github.com/tsdescramble/tsdescramble/internal/testsupport/proc"
)

// Control words used by the tests. cwA and cwB have checksum bytes 3 and 7; cwC, cwD and
// cwRaw do not.
const (
	cwA   = "0102030608090a1b"
	cwB   = "1112133624252671"
	cwC   = "a1b2c3d4e5f60718"
	cwD   = "0f1e2d3c4b5a6978"
	cwRaw = "1122334455667788"
)

// TSC values in the two bits of header byte 3.
const (
	tscClear    = 0
	tscReserved = 1
	tscEven     = 2
	tscOdd      = 3
)

func mustCW(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != 8 {
		t.Fatalf("bad test control word %q", s)
	}
	return b
}

func mustKey(t testing.TB, cw []byte) *csa.Key {
	t.Helper()
	k, err := csa.NewKey(cw)
	if err != nil {
		t.Fatalf("csa.NewKey(%x): %v", cw, err)
	}
	return k
}

// reduced returns cw with bytes 3 and 7 set to the checksums of bytes 0-2 and 4-6.
func reduced(cw []byte) []byte {
	r := bytes.Clone(cw)
	r[3] = r[0] + r[1] + r[2]
	r[7] = r[4] + r[5] + r[6]
	return r
}

// fill returns a deterministic byte for position i of packet seed; it is never 0x47, so a
// clear test stream has sync bytes only where packets start.
func fill(seed, i int) byte {
	b := byte(seed*131 + i*7 + seed>>8)
	if b == 0x47 {
		b = 0x48
	}
	return b
}

// clearPacket returns a clear 188-byte packet of pid with a PES-like payload.
// afLen < 0 means no adaptation field; otherwise the adaptation field has length afLen and a
// payload follows it unless payload is false.
func clearPacket(pid uint16, seq int, afLen int, payload bool) []byte {
	p := make([]byte, 188)
	p[0] = 0x47
	p[1] = byte(pid>>8) & 0x1F
	p[2] = byte(pid)
	afc := byte(0)
	if payload {
		afc |= 1
	}
	off := 4
	if afLen >= 0 {
		afc |= 2
		p[4] = byte(afLen)
		if afLen > 0 {
			p[5] = 0x00 // no adaptation field flags
			for i := 6; i < 5+afLen; i++ {
				p[i] = 0xFF // stuffing
			}
		}
		off = 5 + afLen
	}
	p[3] = afc<<4 | byte(seq&0x0F)
	if payload {
		if seq%8 == 0 && 188-off >= 9 {
			p[1] |= 0x40 // PUSI: a PES header with a PTS starts here
			off += copy(p[off:], pesHeader(seq))
		}
		for i := off; i < 188; i++ {
			p[i] = fill(seq, i)
		}
	}
	return p
}

// pesHeader returns a video PES header with a valid PTS, without 0x47 bytes.
func pesHeader(seq int) []byte {
	for pts := uint64(seq) * 3600; ; pts++ {
		h := []byte{0x00, 0x00, 0x01, 0xE0, 0x00, 0x00, 0x80, 0x80, 0x05,
			0x21 | byte(pts>>29)&0x0E, byte(pts >> 22), byte(pts>>14) | 1, byte(pts >> 7), byte(pts<<1) | 1}
		if !bytes.Contains(h, []byte{0x47}) {
			return h
		}
	}
}

// nullPacket returns a null packet (PID 0x1FFF).
func nullPacket() []byte {
	p := make([]byte, 188)
	p[0], p[1], p[2], p[3] = 0x47, 0x1F, 0xFF, 0x10
	for i := 4; i < 188; i++ {
		p[i] = 0xFF
	}
	return p
}

func setTSC(p []byte, tsc byte) []byte {
	p[3] = p[3]&0x3F | tsc<<6
	return p
}

func payloadOffset(p []byte) int {
	if p[3]&0x20 != 0 {
		return 5 + int(p[4])
	}
	return 4
}

// scramble returns a copy of the clear packet p with its payload scrambled with key and its
// TSC set to tsc.
func scramble(p []byte, key *csa.Key, tsc byte) []byte {
	s := bytes.Clone(p)
	if s[3]&0x10 != 0 {
		key.Encrypt(s[payloadOffset(s):])
	}
	return setTSC(s, tsc)
}

// stream holds a test input and the output the command must produce from it.
type stream struct {
	in, want [][]byte // 188-byte packets
}

func (s *stream) add(in, want []byte) {
	s.in = append(s.in, in)
	s.want = append(s.want, want)
}

// addClear adds a packet that must pass through unchanged.
func (s *stream) addClear(p []byte) { s.add(p, p) }

// addScrambled adds the clear packet p scrambled with key in parity tsc; the command must
// give back p.
func (s *stream) addScrambled(p []byte, key *csa.Key, tsc byte) {
	s.add(scramble(p, key, tsc), p)
}

// crypto period of a test stream: n scrambled packets of parity tsc under cw.
type period struct {
	tsc byte
	cw  string
	n   int
}

// periodStream builds a stream of crypto periods: two scrambled PIDs, with a clear PAT-like
// packet and a null packet between them now and then.
func periodStream(t testing.TB, periods []period) *stream {
	t.Helper()
	s := &stream{}
	seq := 0
	for _, pd := range periods {
		key := mustKey(t, mustCW(t, pd.cw))
		for i := 0; i < pd.n; i++ {
			seq++
			pid := uint16(0x100)
			if i%3 == 2 {
				pid = 0x101
			}
			s.addScrambled(clearPacket(pid, seq, -1, true), key, pd.tsc)
			if i%10 == 0 {
				s.addClear(clearPacket(0, seq, -1, true))
			}
			if i%17 == 5 {
				s.addClear(nullPacket())
			}
		}
	}
	return s
}

// frame lays packets out in a framing: 188 bytes; 192 with a 4-byte prefix; 204 with a
// 16-byte trailer. The prefix and trailer bytes differ per packet and are never 0x47.
func frame(pkts [][]byte, size int) []byte {
	var b bytes.Buffer
	for i, p := range pkts {
		if size == 192 {
			b.Write([]byte{0x00, fill(i, 1), fill(i, 2), fill(i, 3)})
		}
		b.Write(p)
		if size == 204 {
			for j := 0; j < 16; j++ {
				b.WriteByte(fill(i+1000, j))
			}
		}
	}
	return b.Bytes()
}

func (s *stream) input() []byte  { return frame(s.in, 188) }
func (s *stream) output() []byte { return frame(s.want, 188) }

// result is what one run of the command did.
type result struct {
	code           int
	stdout, stderr string
}

// run runs the command in-process with stdin and args (without the program name).
func run(t testing.TB, stdin []byte, args ...string) result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := runEnv(t, Env{
		Stdin:      bytes.NewReader(stdin),
		Stdout:     &stdout,
		Stderr:     &stderr,
		IsTerminal: func(*os.File) bool { return false },
	}, args...)
	return result{code: code, stdout: stdout.String(), stderr: stderr.String()}
}

// runEnv runs the command in-process with env and args and fails the test if it does not
// return within a minute. Runs of Main share nothing they write (TestMainSideBySide), so the
// tests that call it run in parallel, but for those that change what every run reads (the
// environment, the umask, GOMAXPROCS, a package-level hook or limit) or that measure time.
func runEnv(t testing.TB, env Env, args ...string) int {
	t.Helper()
	return runWithin(t, time.Minute, env, args...)
}

func runWithin(t testing.TB, timeout time.Duration, env Env, args ...string) int {
	t.Helper()
	done := make(chan int, 1)
	go func() { done <- Main(append([]string{"tsdescramble"}, args...), env) }()
	select {
	case code := <-done:
		return code
	case <-time.After(timeout):
		t.Fatalf("tsdescramble %s did not return within %v", strings.Join(args, " "), timeout)
		return -1
	}
}

// sameBytes fails the test if got differs from want, naming the first differing packet.
func sameBytes(t testing.TB, what string, got, want []byte, unit int) {
	t.Helper()
	if bytes.Equal(got, want) {
		return
	}
	n := min(len(got), len(want))
	i := 0
	for i < n && got[i] == want[i] {
		i++
	}
	t.Fatalf("%s: got %d bytes, want %d; first difference at byte %d (packet %d, offset %d)",
		what, len(got), len(want), i, i/unit, i%unit)
}

func writeFile(t testing.TB, dir, name string, data []byte) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func readFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// dirNames lists the names in dir.
func dirNames(t testing.TB, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

// oneLine fails the test unless s is exactly one line ending in a newline.
func oneLine(t testing.TB, s string) {
	t.Helper()
	if !strings.HasSuffix(s, "\n") || strings.Count(s, "\n") != 1 {
		t.Errorf("stderr is not one line: %q", s)
	}
}

func describe(r result) string {
	return fmt.Sprintf("exit %d, %d bytes on stdout, stderr:\n%s", r.code, len(r.stdout), r.stderr)
}

// summaryHas fails the test unless stderr matches every regular expression in patterns.
// The patterns look for counts next to the words that name them, so the wording around
// them may change.
func summaryHas(t testing.TB, stderr string, patterns ...string) {
	t.Helper()
	for _, p := range patterns {
		if !regexp.MustCompile(p).MatchString(stderr) {
			t.Errorf("summary does not match %q:\n%s", p, stderr)
		}
	}
}

// startPiped starts cmd with pipes to its stdin and from its stdout, and its stderr kept.
func startPiped(t *testing.T, cmd *exec.Cmd) (io.WriteCloser, io.ReadCloser, *bytes.Buffer) {
	t.Helper()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return stdin, stdout, &stderr
}

// stampArrivals reads a stream from r until an error, or until limit packets came (0: no
// limit), and returns the time each whole 188-byte packet arrived and the first packet: a
// packet that a read cuts arrives with the read that completes it.
func stampArrivals(r io.Reader, limit int) (arrived []time.Time, first []byte) {
	buf := make([]byte, 65536)
	held := 0 // bytes of a packet cut by the end of a read
	for limit == 0 || len(arrived) < limit {
		n, err := r.Read(buf[held:])
		now := time.Now()
		total := held + n
		if first == nil && total >= 188 {
			first = append([]byte(nil), buf[:188]...)
		}
		for range total / 188 {
			arrived = append(arrived, now)
		}
		held = copy(buf, buf[total/188*188:total])
		if err != nil {
			break
		}
	}
	return arrived, first
}

// syncBuffer is a bytes.Buffer safe to read while the command writes to it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Len()
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// mainOnPipe runs Main with args (after the program name) in the background, its stdin a pipe
// and its stdout discarded: it returns the pipe's writing end, a channel that gets Main's exit
// status, and its stderr, which may be read while it runs.
func mainOnPipe(t *testing.T, args ...string) (*os.File, <-chan int, *syncBuffer) {
	t.Helper()
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pr.Close(); pw.Close() })
	stderr := &syncBuffer{}
	done := make(chan int, 1)
	go func() {
		done <- Main(append([]string{"tsdescramble"}, args...),
			Env{Stdin: pr, Stdout: io.Discard, Stderr: stderr, IsTerminal: func(*os.File) bool { return false }})
	}()
	return pw, done, stderr
}

// awaitRun waits for the command to end with status 0 (30 s at most) and then for the test's
// receiver to be done (10 s at most); late says what did not happen in time.
func awaitRun(t *testing.T, tsd *proc.Proc, done <-chan struct{}, late string) {
	t.Helper()
	if code := tsd.Wait(t, 30*time.Second); code != 0 {
		t.Fatalf("exit %d:\n%s", code, tsd.Output())
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal(late)
	}
}

// delaysOf returns how long each packet took, from when it was sent to when it arrived.
func delaysOf(arrived, sent []time.Time) []time.Duration {
	delays := make([]time.Duration, len(arrived))
	for i := range delays {
		delays[i] = arrived[i].Sub(sent[i])
	}
	return delays
}
