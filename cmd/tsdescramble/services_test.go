package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tsdescramble/tsdescramble/internal/testsupport/testmedia"
	"github.com/tsdescramble/tsdescramble/split"
)

// A multiplex of four services, scrambled, descrambled into one file per service: each file is
// the split of the clear multiplex, byte for byte (package split is checked against go-astits
// and ffprobe itself), and a service the stream does not carry fails the run, naming it.
func TestOutServices(t *testing.T) {
	t.Parallel()
	clear := testmedia.Programs(t, 4, 3)
	dir := t.TempDir()
	const cw = "11223366445566ff"
	r := run(t, clear, "scramble", "-q", "-cw", cw)
	if r.code != 0 {
		t.Fatal(describe(r))
	}
	in := writeFile(t, dir, "mux.ts", []byte(r.stdout))
	want := map[uint16]*bytes.Buffer{1: {}, 2: {}, 4: {}}
	s := split.New(map[uint16]io.Writer{1: want[1], 2: want[2], 4: want[4]})
	if _, err := s.Write(clear); err != nil {
		t.Fatal(err)
	}
	outs := map[uint16]string{1: filepath.Join(dir, "one.ts"), 2: filepath.Join(dir, "two.ts"), 4: filepath.Join(dir, "four.ts")}
	d := run(t, nil, "-in", in, "-cw", cw, "-out-service", "1="+outs[1]+",2="+outs[2]+",0x4="+outs[4])
	if d.code != 0 {
		t.Fatal(describe(d))
	}
	for n, path := range outs {
		sameBytes(t, path, readFile(t, path), want[n].Bytes(), 188)
		if !strings.Contains(d.stderr, "service "+string(rune('0'+n))+" → "+path) {
			t.Errorf("the summary does not name service %d's output:\n%s", n, d.stderr)
		}
	}

	// Service 9 is not in the multiplex: exit 1 naming it; the others are written.
	nine := filepath.Join(dir, "nine.ts")
	d = run(t, nil, "-in", in, "-cw", cw, "-out-service", "1="+outs[1]+",9="+nine)
	if d.code != exitFail || !strings.Contains(d.stderr, "service 9 not in the stream's PAT") {
		t.Errorf("a service not in the stream: %s", describe(d))
	}
	if _, err := os.Stat(outs[1]); err != nil {
		t.Errorf("service 1's output: %v", err)
	}

	for _, bad := range [][]string{
		{"-out-service", "1=a.ts,1=b.ts"},
		{"-out-service", "1=a.ts,2=a.ts"},
		{"-out-service", "x=a.ts"},
		{"-out-service", "1=a.ts", "-out", "b.ts"},
		{"-out-service", "1=-"},
	} {
		d := run(t, nil, append([]string{"-in", in, "-cw", cw}, bad...)...)
		if d.code != exitUsage || !strings.Contains(d.stderr, "-out") {
			t.Errorf("%v: %s", bad, describe(d))
		}
	}
}
