package main

import (
	"strings"
	"testing"

	"github.com/tsdescramble/tsdescramble/srt"
)

// srt:// as -in and -out in every build: a URL that cannot be used is a usage error of one
// line that never shows the passphrase; a build without SRT says how to get one. The runs
// against peers are in srt_peers_test.go (build tag srt).

const srtSecret = "Pa55-phrase-never-shown"

func TestSRTUsageErrors(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-in", "srt://127.0.0.1:9000?pasphrase=" + srtSecret}, `-in: srt://127.0.0.1:9000?pasphrase=xxxxx: unknown option "pasphrase"`},
		{[]string{"-in", "srt://127.0.0.1:9000?" + srtSecret}, "an option without '='"},
		{[]string{"-in", "srt://127.0.0.1:9000?passphrase=short"}, "has 5 characters"},
		{[]string{"-out", "srt://:9000?mode=caller&passphrase=" + srtSecret}, "-out: srt://:9000?mode=caller&passphrase=xxxxx: a caller needs the listener's host"},
		{[]string{"-out", "srt://h:9000?latency=120000"}, "ffmpeg's latency= is in microseconds"},
		{[]string{"-out", "srt://h:9000?pbkeylen=16"}, "give both, or neither"},
		{[]string{"-in", "srt://user:" + srtSecret + "@h:9000"}, "no user:password@"},
	} {
		args := append([]string{"-cw-file", demoKeys}, c.args...)
		if c.args[0] == "-out" {
			args = append(args, "-in", demoScrambled)
		} else {
			args = append(args, "-out", "-")
		}
		r := run(t, nil, args...)
		if r.code != exitUsage || !strings.Contains(r.stderr, c.want) || strings.Contains(r.stderr, srtSecret) || r.stdout != "" {
			t.Errorf("%v: want exit 2 saying %q; %s", c.args, c.want, describe(r))
		}
		oneLine(t, r.stderr)
	}
}

// A build without SRT takes srt:// apart, and says in one line that it has no SRT and how to
// build one that has: before anything is opened, a usage error (a retry would not mend it).
func TestSRTNotBuilt(t *testing.T) {
	t.Parallel()
	if srt.Built {
		t.Skip("this build has SRT")
	}
	for _, args := range [][]string{
		{"-in", "srt://:9000?passphrase=" + srtSecret, "-out", "-"},
		{"-in", demoScrambled, "-out", "srt://127.0.0.1:9000?passphrase=" + srtSecret},
	} {
		r := run(t, nil, append(args, "-cw-file", demoKeys)...)
		if r.code != exitUsage || !strings.Contains(r.stderr, "this build has no SRT: build it with -tags srt") ||
			!strings.Contains(r.stderr, "passphrase=xxxxx") || strings.Contains(r.stderr, srtSecret) || r.stdout != "" {
			t.Errorf("%v: %s", args, describe(r))
		}
		oneLine(t, r.stderr)
	}
}

// -version says on its second line whether the build has SRT, and which libsrt it runs.
func TestSRTVersion(t *testing.T) {
	t.Parallel()
	r := run(t, nil, "-version")
	want := "\nsrt: not in this build (build with -tags srt)\n"
	if srt.Built {
		want = "\nsrt: yes (libsrt " + srt.LibraryVersion() + ")\n"
	}
	if r.code != 0 || !strings.HasPrefix(r.stdout, "tsdescramble version ") || !strings.HasSuffix(r.stdout, want) || strings.Count(r.stdout, "\n") != 2 {
		t.Errorf("want two lines, the second %q; %s", want[1:], describe(r))
	}
}

// probe reads to the end, and an SRT input has none.
func TestSRTProbeRefused(t *testing.T) {
	t.Parallel()
	r := run(t, nil, "probe", "srt://:9000?passphrase="+srtSecret)
	if r.code != exitUsage || !strings.Contains(r.stderr, "never ends") || strings.Contains(r.stderr, srtSecret) {
		t.Errorf("%s", describe(r))
	}
	oneLine(t, r.stderr)
}
