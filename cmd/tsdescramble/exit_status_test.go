package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Flags whose values are wrong are usage errors (exit 2) with one line that says what to
// write, whatever the run would have done with them next.
func TestExitStatusUsage(t *testing.T) {
	t.Parallel()
	in := sample(t, "demo-scrambled.ts")
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		// A bare port reached the listener and failed as a runtime error (exit 1).
		{"-metrics 9400", []string{"-metrics", "9400"}, "-metrics 9400: want [HOST]:PORT: to listen on every address, write :9400"},
		{"-metrics host", []string{"-metrics", "localhost:"}, `-metrics "localhost:": want [HOST]:PORT`},
		// An empty list descrambled every PID, exit 0.
		{`-pid ""`, []string{"-pid", ""}, "-pid: no PID given"},
		{`-pid " "`, []string{"-pid", " "}, "-pid: no PID given"},
	} {
		args := append([]string{"-in", in, "-out", os.DevNull, "-cw-file", sample(t, "demo-keys.txt")}, c.args...)
		r := run(t, nil, args...)
		if r.code != exitUsage || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%s: want exit 2 and %q: %s", c.name, c.want, describe(r))
		}
		oneLine(t, r.stderr)
	}
}

// -stats-dir on a read-only volume is a usage error (exit 2) with the same message whether the
// directory must be made or is there already; it was 2 and 1 (each job failing to remove "the
// statistics of an earlier run"). The volume is a read-only bind mount in a mount namespace of
// the command's own, so the test needs unshare and mount, and root.
func TestExitStatusStatsDirReadOnly(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("a read-only bind mount needs root")
	}
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("no unshare command:", err)
	}
	bin := buildBinary(t, t.TempDir())
	dir := t.TempDir()
	ro := filepath.Join(dir, "ro")
	if err := os.MkdirAll(filepath.Join(ro, "stats"), 0o755); err != nil {
		t.Fatal(err)
	}
	manifest := writeFile(t, dir, "jobs.jsonl", []byte(manifestLine(t, map[string]any{
		"in": sample(t, "demo-scrambled.ts"), "out": filepath.Join(dir, "out.ts"), "cw-file": sample(t, "demo-keys.txt")})))
	for _, c := range []struct{ name, statsDir string }{
		{"to be made", filepath.Join(ro, "new")},
		{"there already", filepath.Join(ro, "stats")},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		script := `mount --bind "$1" "$1" && mount -o remount,ro,bind "$1" || exit 99; shift; exec "$@"`
		cmd := exec.CommandContext(ctx, "unshare", "-m", "--propagation", "private", "sh", "-c", script, "sh", ro,
			bin, "batch", "-manifest", manifest, "-stats-dir", c.statsDir)
		out, err := cmd.CombinedOutput()
		cancel()
		code := cmd.ProcessState.ExitCode()
		if code == 99 || err != nil && code < 0 {
			t.Skipf("no read-only bind mount here: %v %s", err, out)
		}
		if code != exitUsage || !strings.Contains(string(out), "-stats-dir "+c.statsDir) || strings.Contains(string(out), "earlier run") {
			t.Errorf("-stats-dir on a read-only volume, %s: want exit 2 naming -stats-dir: exit %d: %s", c.name, code, out)
		}
		if n := strings.Count(strings.TrimSpace(string(out)), "\n"); n != 0 {
			t.Errorf("%s: want one line: %s", c.name, out)
		}
	}
}
