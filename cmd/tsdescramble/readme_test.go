package main

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadmeCommands runs every command of the README's sh blocks that uses the tool (and the
// cp and cmp lines around them) as written, in a directory holding a copy of samples/, with the
// built command first in PATH. Each must succeed. Commands that need the network or other tools
// (go install, apt-get, the test commands) are listed and left out.
func TestReadmeCommands(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command and runs every example of the README")
	}
	cmds := readmeCommands(t, filepath.Join("..", "..", "README.md"))
	dir := t.TempDir()
	bin := buildBinary(t, t.TempDir())
	if err := os.CopyFS(filepath.Join(dir, "samples"), os.DirFS(filepath.Join("..", "..", "samples"))); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "PATH="+filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"))
	ran := 0
	for _, c := range cmds {
		if !runnable(c) {
			t.Logf("not run: %s", c)
			continue
		}
		line := strings.ReplaceAll(c, "go run ./cmd/tsdescramble", "tsdescramble")
		cmd := exec.Command("sh", "-c", line)
		cmd.Dir, cmd.Env = dir, env
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			t.Errorf("README command failed: %s\n%v\n%s", c, err, out.String())
		}
		ran++
	}
	if ran < 20 {
		t.Fatalf("only %d README commands ran: the parser missed the examples", ran)
	}
}

// readmeCommands returns the lines of the sh blocks of a Markdown file, with continuation
// lines joined and trailing comments removed.
func readmeCommands(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var cmds []string
	in, cont := false, ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "```sh"):
			in = true
			continue
		case strings.HasPrefix(line, "```"):
			in = false
			continue
		case !in:
			continue
		}
		if i := strings.Index(line, "  #"); i >= 0 {
			line = line[:i]
		}
		line = strings.TrimSpace(line)
		if strings.HasSuffix(line, "\\") {
			cont += strings.TrimSuffix(line, "\\") + " "
			continue
		}
		if line = cont + line; line != "" {
			cmds = append(cmds, line)
		}
		cont = ""
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return cmds
}

// runnable reports whether a README command runs here as written: the tool itself, and the
// file commands of the examples.
func runnable(c string) bool {
	f := strings.Fields(c)
	for len(f) > 0 && strings.Contains(f[0], "=") { // VAR=value before the command
		f = f[1:]
	}
	if len(f) == 0 {
		return false
	}
	switch f[0] {
	case "tsdescramble", "cp", "cmp", "cat":
		return true
	case "go":
		return strings.HasPrefix(strings.Join(f, " "), "go run ./cmd/tsdescramble")
	}
	return false
}
