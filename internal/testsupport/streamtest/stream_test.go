//go:build dvbcsa

package streamtest

import (
	"bytes"
	"fmt"
	"github.com/tsdescramble/tsdescramble/ts"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/tsdescramble/tsdescramble/internal/testsupport/dvbcsa"
)

var (
	binOnce sync.Once
	binPath string
	binErr  error
	dir     string
)

func TestMain(m *testing.M) {
	d, err := os.MkdirTemp("", "streamtest")
	if err != nil {
		panic(err)
	}
	dir = d
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// binary builds the command once.
func binary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		binPath = filepath.Join(dir, "tsdescramble")
		out, err := exec.Command("go", "build", "-o", binPath, "github.com/tsdescramble/tsdescramble/cmd/tsdescramble").CombinedOutput()
		if err != nil {
			binErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

var (
	streamsOnce sync.Once
	streams     = map[string][]byte{}
	streamsErr  error
)

// clearStreams makes the clear test streams with ffmpeg: H.264 + AAC in one program, and
// MPEG-2 video + MP2 audio in two programs.
func clearStreams(t *testing.T) map[string][]byte {
	t.Helper()
	if _, err := exec.LookPath("ffmpeg"); err != nil {
		t.Skip("ffmpeg is not installed (apt-get install ffmpeg): whole-stream tests skipped")
	}
	streamsOnce.Do(func() {
		jobs := map[string][]string{
			"h264-aac": {"-f", "lavfi", "-i", "testsrc=size=320x240:rate=25", "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000",
				"-t", "12", "-c:v", "libx264", "-preset", "veryfast", "-b:v", "600k", "-g", "25", "-pix_fmt", "yuv420p",
				"-c:a", "aac", "-b:a", "96k", "-f", "mpegts"},
			"mpeg2-two-programs": {"-f", "lavfi", "-i", "testsrc2=size=352x288:rate=25", "-f", "lavfi", "-i", "smptebars=size=352x288:rate=25",
				"-f", "lavfi", "-i", "sine=frequency=1000:sample_rate=48000", "-t", "8",
				"-map", "0:v", "-map", "2:a", "-map", "1:v", "-map", "2:a",
				"-c:v", "mpeg2video", "-b:v", "1500k", "-c:a", "mp2", "-b:a", "128k",
				"-program", "program_num=1:title=one:st=0:st=1", "-program", "program_num=2:title=two:st=2:st=3",
				"-f", "mpegts"},
		}
		for name, args := range jobs {
			path := filepath.Join(dir, name+".ts")
			args = append([]string{"-hide_banner", "-loglevel", "error", "-y"}, append(args, path)...)
			if out, err := exec.Command("ffmpeg", args...).CombinedOutput(); err != nil {
				streamsErr = fmt.Errorf("ffmpeg %s: %v\n%s", name, err, out)
				return
			}
			b, err := os.ReadFile(path)
			if err != nil {
				streamsErr = err
				return
			}
			streams[name] = b
		}
	})
	if streamsErr != nil {
		t.Fatal(streamsErr)
	}
	return streams
}

// pesPIDs returns the PIDs whose packets start PES packets (payload 00 00 01 after PUSI).
func pesPIDs(stream []byte) map[uint16]bool {
	pids := map[uint16]bool{}
	for at := 0; at+188 <= len(stream); at += 188 {
		p := stream[at : at+188]
		if pl := ts.Payload(p); ts.PUSI(p) && len(pl) >= 3 && pl[0] == 0 && pl[1] == 0 && pl[2] == 1 {
			pids[ts.PID(p)] = true
		}
	}
	return pids
}

// reframe turns a 188-byte stream into framing fr, with random prefix or trailer bytes.
func reframe(stream []byte, fr ts.Framing, rng *rand.Rand) []byte {
	if fr.Size == 188 {
		return append([]byte{}, stream...)
	}
	out := make([]byte, 0, len(stream)/188*fr.Size)
	extra := make([]byte, fr.Size-188)
	for at := 0; at+188 <= len(stream); at += 188 {
		for i := range extra {
			extra[i] = byte(rng.IntN(256))
		}
		if fr.Prefix > 0 {
			out = append(out, extra...)
			out = append(out, stream[at:at+188]...)
		} else {
			out = append(out, stream[at:at+188]...)
			out = append(out, extra...)
		}
	}
	return out
}

var testCWs = [][]byte{
	{0x11, 0x22, 0x33, 0x66, 0x44, 0x55, 0x66, 0xff},
	{0x07, 0xe0, 0x1b, 0x02, 0xc9, 0xe0, 0x45, 0xee},
	{0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01, 0x00}, // checksums broken on purpose: all 64 bits count
	{0x2d, 0x11, 0x5f, 0x9d, 0x29, 0xbf, 0x7f, 0x67},
}

func writeCWFile(t *testing.T, cws [][]byte) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("# control words, one per crypto period\n")
	for _, cw := range cws {
		fmt.Fprintf(&b, "%x\n", cw)
	}
	path := filepath.Join(t.TempDir(), "cw.txt")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// scramble returns the stream in framing fr and its libdvbcsa-scrambled form.
func scramble(t *testing.T, clear188 []byte, fr ts.Framing, cws [][]byte, cp int, seed uint64) (clear, scrambled []byte) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 99))
	clear = reframe(clear188, fr, rng)
	scrambled = append([]byte{}, clear...)
	n, err := dvbcsa.ScrambleStream(scrambled, fr, dvbcsa.ScrambleOptions{CWs: cws, CPPackets: cp, PIDs: pesPIDs(clear188)})
	if err != nil {
		t.Fatal(err)
	}
	if n < 3 {
		t.Fatalf("only %d crypto periods: the test wants several", n)
	}
	if bytes.Equal(clear, scrambled) {
		t.Fatal("scrambling changed nothing")
	}
	return clear, scrambled
}

// runFiles runs the command (or the subcommand given as the first argument) with -in/-out
// files and returns the output.
func runFiles(t *testing.T, in []byte, args ...string) []byte {
	t.Helper()
	d := t.TempDir()
	inPath, outPath := filepath.Join(d, "in.ts"), filepath.Join(d, "out.ts")
	if err := os.WriteFile(inPath, in, 0o644); err != nil {
		t.Fatal(err)
	}
	var sub []string // a subcommand goes before the flags
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		sub, args = []string{args[0]}, args[1:]
	}
	cmd := exec.Command(binary(t), append(append(sub, "-in", inPath, "-out", outPath, "-q"), args...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("tsdescramble %v: %v\n%s", args, err, out)
	}
	out, err := os.ReadFile(outPath)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// runPipe runs the command between OS pipes, as in `cat in | tsdescramble ... > out`.
func runPipe(t *testing.T, in []byte, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(binary(t), append([]string{"-q"}, args...)...)
	cmd.Stdin = bytes.NewReader(in) // exec copies through an OS pipe
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("tsdescramble %v: %v\n%s", args, err, stderr.String())
	}
	return out.Bytes()
}

func TestWholeStreams(t *testing.T) {
	cwFile := writeCWFile(t, testCWs)
	for name, clear188 := range clearStreams(t) {
		for i, fr := range []ts.Framing{ts.Framing188, ts.Framing192, ts.Framing204} {
			t.Run(fmt.Sprintf("%s/%d", name, fr.Size), func(t *testing.T) {
				clear, scrambled := scramble(t, clear188, fr, testCWs, 700+100*i, uint64(i))
				if got := runFiles(t, scrambled, "-cw-file", cwFile); !bytes.Equal(got, clear) {
					t.Fatalf("files: output (%d bytes) differs from the clear stream (%d bytes)", len(got), len(clear))
				}
				if got := runPipe(t, scrambled, "-cw-file", cwFile); !bytes.Equal(got, clear) {
					t.Fatalf("pipes: output (%d bytes) differs from the clear stream (%d bytes)", len(got), len(clear))
				}
			})
		}
	}
}

// Every tuning value gives the same bytes.
func TestTuningFlags(t *testing.T) {
	cwFile := writeCWFile(t, testCWs)
	clear, scrambled := scramble(t, clearStreams(t)["h264-aac"], ts.Framing188, testCWs, 500, 7)
	for _, args := range [][]string{
		{"-workers", "1"}, {"-workers", "2"}, {"-workers", "5"},
		{"-batch", "1"}, {"-batch", "13"}, {"-batch", "4096"},
		{"-workers", "1", "-batch", "64"},
	} {
		if got := runPipe(t, scrambled, append(args, "-cw-file", cwFile)...); !bytes.Equal(got, clear) {
			t.Fatalf("%v: output differs from the clear stream", args)
		}
	}
}

// Garbage between packets and a truncated tail: the output is the clear stream without them.
func TestGarbageAndTruncatedTail(t *testing.T) {
	cwFile := writeCWFile(t, testCWs)
	for _, fr := range []ts.Framing{ts.Framing188, ts.Framing192, ts.Framing204} {
		clear, scrambled := scramble(t, clearStreams(t)["mpeg2-two-programs"], fr, testCWs, 600, 3)
		rng := rand.New(rand.NewPCG(uint64(fr.Size), 5))
		var damaged []byte
		n := len(scrambled) / fr.Size
		for i := 0; i < n; i++ {
			damaged = append(damaged, scrambled[i*fr.Size:(i+1)*fr.Size]...)
			// Garbage after every 50th packet (never right before the last few, which need
			// sync bytes after them to be trusted), without sync bytes. It is at least a packet
			// long: a shorter stretch after a packet whose payload happens to hold 0x47 where
			// the next sync byte would fall is, from the bytes alone, a packet cut short, and
			// the framer rightly treats it as one (see pipeline.TestFramerCutPacketMidStream).
			if i%50 == 49 && i < n-5 {
				g := make([]byte, fr.Size+rng.IntN(400))
				for j := range g {
					if g[j] = byte(rng.IntN(256)); g[j] == ts.SyncByte {
						g[j] = 0
					}
				}
				damaged = append(damaged, g...)
			}
		}
		// The last packet is cut short.
		damaged = damaged[:len(damaged)-fr.Size/2]
		want := clear[:len(clear)-fr.Size]
		if got := runPipe(t, damaged, "-cw-file", cwFile); !bytes.Equal(got, want) {
			t.Fatalf("%v: output (%d bytes) is not the clear stream without garbage and tail (%d bytes)", fr, len(got), len(want))
		}
		// The summary reports what was dropped.
		cmd := exec.Command(binary(t), "-cw-file", cwFile)
		cmd.Stdin = bytes.NewReader(damaged)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Run(); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(stderr.String(), "skipped") || !strings.Contains(stderr.String(), fmt.Sprintf("truncated last packet of %d bytes", fr.Size-fr.Size/2)) {
			t.Fatalf("%v: summary does not report the skipped bytes and the truncated packet:\n%s", fr, stderr.String())
		}
	}
}

// The bundled sample descrambles to its clear version, as the README promises.
func TestSample(t *testing.T) {
	root := filepath.Join("..", "..", "..", "samples")
	scrambled, err := os.ReadFile(filepath.Join(root, "demo-scrambled.ts"))
	if err != nil {
		t.Fatal(err)
	}
	clear, err := os.ReadFile(filepath.Join(root, "demo-clear.ts"))
	if err != nil {
		t.Fatal(err)
	}
	// The sample was scrambled by libdvbcsa; check that scrambling the clear stream again here
	// gives the same bytes, so the sample and its note stay true.
	cws := [][]byte{{0x11, 0x22, 0x33, 0x66, 0x44, 0x55, 0x66, 0xff}, {0x01, 0x02, 0x03, 0x06, 0x08, 0x09, 0x0a, 0x1b}, {0xa1, 0xb2, 0xc3, 0x16, 0xd4, 0xe5, 0xf6, 0xaf}}
	again := append([]byte{}, clear...)
	if _, err := dvbcsa.ScrambleStream(again, ts.Framing188, dvbcsa.ScrambleOptions{CWs: cws, CPPackets: 800, PIDs: map[uint16]bool{0x100: true, 0x101: true}}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again, scrambled) {
		t.Fatal("samples/demo-scrambled.ts is not libdvbcsa's scrambling of demo-clear.ts with demo-keys.txt")
	}
	if got := runFiles(t, scrambled, "-cw-file", filepath.Join(root, "demo-keys.txt")); !bytes.Equal(got, clear) {
		t.Fatal("the sample does not descramble to demo-clear.ts")
	}
}
