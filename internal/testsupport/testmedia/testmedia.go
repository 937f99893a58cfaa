// Package testmedia makes transport streams with ffmpeg for the tests of several packages:
// streams from a muxer written independently of this project. It is for tests only.
package testmedia

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

// Make runs ffmpeg with args, the output file name (in a temporary directory) last, and
// returns what it wrote. It skips the test when ffmpeg is not installed or under -short.
func Make(t testing.TB, name string, args ...string) []byte {
	t.Helper()
	ffmpeg, err := exec.LookPath("ffmpeg")
	if err != nil {
		t.Skip("ffmpeg is not installed: skipping the test on an ffmpeg-made stream (apt-get install ffmpeg)")
	}
	if testing.Short() {
		t.Skip("skipping ffmpeg in -short mode")
	}
	out := filepath.Join(t.TempDir(), name)
	cmd := exec.Command(ffmpeg, append(append([]string{"-hide_banner", "-loglevel", "error", "-nostdin", "-y"}, args...), out)...)
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("ffmpeg: %v\n%s", err, msg)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TwoPrograms returns an MPEG-2 video + MP2 audio transport stream of the given length in
// seconds and frame size (e.g. "352x288") with two programs: 1 titled "one", and 2 titled
// title2. It skips the test when ffmpeg is not installed or under -short.
func TwoPrograms(t testing.TB, seconds int, size, title2 string) []byte {
	t.Helper()
	return Make(t, "two-programs.ts",
		"-f", "lavfi", "-i", "testsrc2=size="+size+":rate=25",
		"-f", "lavfi", "-i", "smptebars=size="+size+":rate=25",
		"-f", "lavfi", "-i", "sine=frequency=1000:sample_rate=48000",
		"-t", strconv.Itoa(seconds), "-map", "0:v", "-map", "2:a", "-map", "1:v", "-map", "2:a",
		"-c:v", "mpeg2video", "-c:a", "mp2",
		"-program", "program_num=1:title=one:st=0:st=1",
		"-program", "program_num=2:title="+title2+":st=2:st=3",
		"-f", "mpegts")
}
