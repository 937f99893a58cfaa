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

// Programs returns a transport stream of the given length in seconds with n programs
// (numbered 1 to n, titled "svc1" …), each an MPEG-2 video at 176x144 and an MP2 audio, muxed
// by ffmpeg with an SDT naming each. It skips the test when ffmpeg is not installed or under
// -short.
func Programs(t testing.TB, n, seconds int) []byte {
	t.Helper()
	args := []string{"-f", "lavfi", "-i", "testsrc2=size=176x144:rate=25", "-f", "lavfi", "-i", "sine=frequency=1000:sample_rate=48000",
		"-t", strconv.Itoa(seconds)}
	for range n {
		args = append(args, "-map", "0:v", "-map", "1:a")
	}
	args = append(args, "-c:v", "mpeg2video", "-b:v", "300k", "-c:a", "mp2", "-b:a", "64k")
	for i := range n {
		args = append(args, "-program", "program_num="+strconv.Itoa(i+1)+":title=svc"+strconv.Itoa(i+1)+
			":st="+strconv.Itoa(2*i)+":st="+strconv.Itoa(2*i+1))
	}
	return Make(t, "programs.ts", append(args, "-f", "mpegts")...)
}
