//go:build csafake

package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// With the csafake tag, csa registers a 512-lane kernel that no CPU has (csa/kernel_fake.go).
// The command takes the width from csa alone: -group accepts it, its help and -version list it, bench
// measures it, and the output is the same as with the widths built in.
func TestFakeKernelWidth(t *testing.T) {
	clear, err := os.ReadFile("../../samples/demo-clear.ts")
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir() + "/out.ts"
	r := run(t, nil, "-in", "../../samples/demo-scrambled.ts", "-out", out,
		"-cw-file", "../../samples/demo-keys.txt", "-group", "512", "-workers", "1")
	if r.code != 0 {
		t.Fatalf("-group 512: exit %d: %s", r.code, r.stderr)
	}
	if got, _ := os.ReadFile(out); !bytes.Equal(got, clear) {
		t.Error("-group 512: the output differs from the clear sample")
	}
	if r := run(t, nil, "-help"); !strings.Contains(r.stdout+r.stderr, ", 512, or auto") {
		t.Errorf("-help does not offer -group 512:\n%s", r.stdout+r.stderr)
	}
	if r := run(t, nil, "-version"); !strings.Contains(r.stdout, ", 512)") {
		t.Errorf("-version does not list the 512-lane width: %s", r.stdout)
	}
	r = run(t, nil, "bench", "-packets", "1000", "-rounds", "1")
	if r.code != 0 || !strings.Contains(r.stdout, "csa2: 512 lanes fake") {
		t.Errorf("bench: exit %d, no 512-lane row:\n%s%s", r.code, r.stdout, r.stderr)
	}
}
