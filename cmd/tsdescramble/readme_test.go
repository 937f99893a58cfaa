package main

import (
	"bufio"
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/tsdescramble/tsdescramble/psi"
	"github.com/tsdescramble/tsdescramble/ts"
)

// readmeScratch is the scratch directory the README has the examples run in; the test runs
// them in a temporary directory of its own instead.
const readmeScratch = "/tmp/tsd"

// TestReadmeCommands runs every command of the README's sh blocks that uses the tool (and the
// mkdir, cp, cmp, cat and head lines around them) as written, one after the other, starting in
// a directory that stands for the clone's root (holding a copy of samples/), with the built
// command first in PATH; a line that ends in "cd DIR" moves the following ones to DIR, and the
// README's scratch directory is a temporary one. Each must succeed. Commands that need the
// network or other tools (go install, apt-get, the test commands) are listed and left out.
//
// Each descrambling example's output is checked byte for byte (see checkDescrambled), and the
// files the guide leaves, in the clone and in the scratch directory, must all be named by the
// repository's .gitignore.
func TestReadmeCommands(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the command and runs every example of the README")
	}
	cmds := readmeCommands(t, filepath.Join("..", "..", "README.md"), "sh")
	root, scratch := t.TempDir(), t.TempDir()
	bin := buildBinary(t, t.TempDir())
	samples := filepath.Join("..", "..", "samples")
	if err := os.CopyFS(filepath.Join(root, "samples"), os.DirFS(samples)); err != nil {
		t.Fatal(err)
	}
	clear := readFile(t, filepath.Join(samples, "demo-clear.ts"))
	env := append(os.Environ(), "PATH="+filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"))
	dir, ran, checked := root, 0, 0
	for _, c := range cmds {
		if !runnable(c) {
			t.Logf("not run: %s", c)
			continue
		}
		line := strings.ReplaceAll(c, "go run ./cmd/tsdescramble", "tsdescramble")
		line = strings.ReplaceAll(line, readmeScratch, scratch)
		cmd := exec.Command("sh", "-c", line)
		cmd.Dir, cmd.Env = dir, env
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			t.Fatalf("README command failed: %s\n%v\n%s", c, err, out.String())
		}
		ran++
		if ex, ok := descramblingExample(t, line); ok {
			checkDescrambled(t, c, dir, ex, clear, out.String())
			t.Logf("output checked: %s", c)
			checked++
		}
		if cd, ok := finalCD(line); ok {
			if !filepath.IsAbs(cd) {
				cd = filepath.Join(dir, cd)
			}
			dir = cd
		}
	}
	if ran < 20 || checked < 10 {
		t.Fatalf("only %d README commands ran, %d outputs checked: the parser missed the examples", ran, checked)
	}
	if dir != scratch {
		t.Errorf("the guide ends in %s, not in its scratch directory %s", dir, readmeScratch)
	}
	// What the guide leaves behind: in the clone, beside samples/, and in the scratch
	// directory, beside the copies of the samples.
	ignore := gitignorePatterns(t, filepath.Join("..", "..", ".gitignore"))
	sampleNames := dirNames(t, samples)
	for _, d := range []string{root, scratch} {
		for _, name := range dirNames(t, d) {
			if d == root && name == "samples" || d == scratch && slices.Contains(sampleNames, name) {
				continue
			}
			if !ignored(ignore, name) {
				t.Errorf("the guide leaves %s in the %s, and .gitignore does not name it", name,
					map[string]string{root: "clone", scratch: "scratch directory"}[d])
			}
		}
	}
}

// descrambling is a README command that descrambles a file.
type descrambling struct {
	in, out string
	pids    []uint16 // -pid, or nil for all (-service too: the samples carry one service)
	status  bool     // the line prints its exit status (|| echo "exit status $?")
}

// descramblingExample reads a command line (after substitutions) and says whether it runs
// tsdescramble to descramble a file into a file, and which. Subcommands (scramble, probe,
// bench) and -rescramble, whose output is scrambled again, are not descrambling examples:
// the README descrambles what they make in a later example.
func descramblingExample(t *testing.T, line string) (descrambling, bool) {
	f := strings.Fields(line)
	at := slices.Index(f, "tsdescramble")
	if at < 0 || at+1 < len(f) && !strings.HasPrefix(f[at+1], "-") {
		return descrambling{}, false
	}
	var d descrambling
	d.status = strings.Contains(line, `exit status $?`)
	if at >= 3 && f[at-3] == "cat" && f[at-1] == "|" {
		d.in = f[at-2]
	}
	for i := at + 1; i < len(f); i++ {
		a, next := f[i], ""
		if i+1 < len(f) {
			next = f[i+1]
		}
		switch a {
		case "|", "||", "&&", ";":
			i = len(f)
		case ">":
			d.out = next
		case "-in", "-i":
			d.in = next
		case "-out", "-o":
			d.out = next
		case "-rescramble":
			return descrambling{}, false
		case "-pid":
			pids, err := psi.ParsePIDList(next)
			if err != nil {
				t.Fatalf("%s: -pid %s: %v", line, next, err)
			}
			d.pids = pids
		}
	}
	return d, d.in != "" && d.out != "" && d.out != "-"
}

// checkDescrambled checks the output of a descrambling example byte for byte. Every input is
// the clear sample, or its first packets, scrambled packet for packet (with the PMT changed by
// some), so the example must give each scrambled packet of a selected PID back as it is in the
// clear sample and every other packet as it came in. A line that prints its exit status is the
// README's example of keys that fit part of the stream: it must exit with status 3, and its
// output must be neither the expected one nor the input, each packet being one or the other.
func checkDescrambled(t *testing.T, c, dir string, d descrambling, clear []byte, printed string) {
	t.Helper()
	in := readFile(t, filepath.Join(dir, d.in))
	got := readFile(t, filepath.Join(dir, d.out))
	if len(in)%ts.PacketSize != 0 || len(in) > len(clear) {
		t.Fatalf("%s: the input %s is not the clear sample's packets scrambled", c, d.in)
	}
	want := bytes.Clone(in)
	for i := 0; i < len(in); i += ts.PacketSize {
		p := in[i : i+ts.PacketSize]
		if ts.TSC(p) != ts.Clear && (d.pids == nil || slices.Contains(d.pids, ts.PID(p))) {
			copy(want[i:], clear[i:i+ts.PacketSize])
		}
	}
	if !d.status {
		// A clear packet may also come out as the clear sample has it: the PMT of a service
		// that goes out clear loses the scrambling_descriptor the scrambler gave it.
		if len(got) == len(in) {
			for i := 0; i < len(in); i += ts.PacketSize {
				if ts.TSC(in[i:]) == ts.Clear && bytes.Equal(got[i:i+ts.PacketSize], clear[i:i+ts.PacketSize]) {
					copy(want[i:], clear[i:i+ts.PacketSize])
				}
			}
		}
		sameBytes(t, c, got, want, ts.PacketSize)
		return
	}
	if !strings.Contains(printed, "exit status 3") {
		t.Fatalf("%s: want exit status 3 (the keys fit part of the stream); it printed:\n%s", c, printed)
	}
	if len(got) != len(in) || bytes.Equal(got, want) || bytes.Equal(got, in) {
		t.Fatalf("%s: the output is not part clear, part as it came", c)
	}
	for i := 0; i < len(in); i += ts.PacketSize {
		g := got[i : i+ts.PacketSize]
		if !bytes.Equal(g, want[i:i+ts.PacketSize]) && !bytes.Equal(g, in[i:i+ts.PacketSize]) {
			t.Fatalf("%s: packet %d is neither clear nor as it came", c, i/ts.PacketSize)
		}
	}
}

// finalCD returns the directory of a "cd DIR" that ends a line of commands joined by &&.
func finalCD(line string) (string, bool) {
	parts := strings.Split(line, "&&")
	f := strings.Fields(parts[len(parts)-1])
	if len(f) == 2 && f[0] == "cd" {
		return f[1], true
	}
	return "", false
}

// gitignorePatterns returns the patterns of a .gitignore file that ignored can read: globs of
// a name anywhere, or, with a leading '/', at the root. Negations and directory patterns are
// not used by this repository's file; they are reported rather than misread.
func gitignorePatterns(t *testing.T, file string) []string {
	t.Helper()
	var pats []string
	for _, l := range strings.Split(string(readFile(t, file)), "\n") {
		l = strings.TrimSpace(l)
		switch {
		case l == "" || strings.HasPrefix(l, "#"):
		case strings.HasPrefix(l, "!") || strings.HasSuffix(l, "/") || strings.Contains(strings.TrimPrefix(l, "/"), "/"):
			t.Errorf(".gitignore: pattern %q is beyond this test's reading of it", l)
		default:
			pats = append(pats, l)
		}
	}
	return pats
}

// ignored reports whether a file name at the repository's root matches one of pats.
func ignored(pats []string, name string) bool {
	for _, p := range pats {
		if ok, _ := path.Match(strings.TrimPrefix(p, "/"), name); ok {
			return true
		}
	}
	return false
}

// readmeCommands returns the lines of the blocks of a Markdown file fenced as lang ("sh"),
// with continuation lines joined and trailing comments removed.
func readmeCommands(t *testing.T, path, lang string) []string {
	t.Helper()
	var cmds []string
	for _, block := range readmeBlocks(t, path, lang) {
		cont := ""
		for _, line := range strings.Split(block, "\n") {
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
	}
	return cmds
}

// readmeBlocks returns the contents of the blocks of a Markdown file fenced as lang, each
// without its fences and with a final newline.
func readmeBlocks(t *testing.T, path, lang string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var blocks []string
	var b strings.Builder
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case !in && line == "```"+lang:
			in = true
			b.Reset()
		case !in:
		case strings.HasPrefix(line, "```"):
			in = false
			blocks = append(blocks, b.String())
		default:
			b.WriteString(line + "\n")
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return blocks
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
	case "tsdescramble", "cp", "cmp", "cat", "head", "mkdir":
		return true
	case "go":
		return strings.HasPrefix(strings.Join(f, " "), "go run ./cmd/tsdescramble")
	}
	return false
}

// TestReadmeInstall runs the README's "go install" from the clone, as written, and checks that
// the binary lands where the README says: in GOBIN, or without it in $(go env GOPATH)/bin.
func TestReadmeInstall(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the command twice")
	}
	const install = "go install ./cmd/tsdescramble"
	if !slices.Contains(readmeCommands(t, filepath.Join("..", "..", "README.md"), "sh"), install) {
		t.Fatalf("the README does not say how to install from the clone (%s)", install)
	}
	readme := string(readFile(t, filepath.Join("..", "..", "README.md")))
	for _, s := range []string{"$(go env GOPATH)/bin", "GOBIN"} {
		if !strings.Contains(readme, s) {
			t.Errorf("the README does not say where the binary lands: no %q", s)
		}
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command:", err)
	}
	// The module cache stays where it is, so that nothing is downloaded.
	modcache, err := exec.Command(goTool, "env", "GOMODCACHE").Output()
	if err != nil {
		t.Fatal(err)
	}
	exe := "tsdescramble"
	if runtime.GOOS == "windows" {
		exe += ".exe"
	}
	gobin, gopath := t.TempDir(), t.TempDir()
	for _, tc := range []struct {
		env  []string
		want string
	}{
		{[]string{"GOBIN=" + gobin}, filepath.Join(gobin, exe)},
		{[]string{"GOBIN=", "GOPATH=" + gopath}, filepath.Join(gopath, "bin", exe)},
	} {
		f := strings.Fields(install)
		cmd := exec.Command(goTool, f[1:]...)
		cmd.Dir = filepath.Join("..", "..")
		cmd.Env = append(os.Environ(), append(tc.env, "GOMODCACHE="+strings.TrimSpace(string(modcache)))...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%v %s: %v\n%s", tc.env, install, err, out)
		}
		if _, err := os.Stat(tc.want); err != nil {
			t.Errorf("%v %s: no binary where the README says: %v", tc.env, install, err)
		}
	}
}

// TestReadmeLibraryExample checks that the README's library section quotes the body of
// pipeline's ExampleRun_keyFile as it is, so that the code a reader copies is code that
// compiles and whose output go test checks.
func TestReadmeLibraryExample(t *testing.T) {
	t.Parallel()
	file := filepath.Join("..", "..", "pipeline", "example_keyfile_test.go")
	src := readFile(t, file)
	fset := token.NewFileSet()
	af, err := parser.ParseFile(fset, file, src, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	var body string
	for _, d := range af.Decls {
		if fn, ok := d.(*ast.FuncDecl); ok && fn.Name.Name == "ExampleRun_keyFile" {
			// The text between the braces, one level of indentation less.
			text := string(src[fset.Position(fn.Body.Lbrace).Offset+1 : fset.Position(fn.Body.Rbrace).Offset])
			var b strings.Builder
			for _, l := range strings.Split(strings.Trim(text, "\n"), "\n") {
				b.WriteString(strings.TrimPrefix(l, "\t") + "\n")
			}
			body = b.String()
		}
	}
	if body == "" {
		t.Fatalf("%s: no ExampleRun_keyFile", file)
	}
	for _, block := range readmeBlocks(t, filepath.Join("..", "..", "README.md"), "go") {
		if block == body {
			return
		}
	}
	t.Errorf("no go block of the README is the body of ExampleRun_keyFile; it should read:\n%s", body)
}

// TestPackageDoc checks that the command's package documentation names every subcommand and
// every exit status of the contract.
func TestPackageDoc(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var doc string
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ParseComments|parser.PackageClauseOnly)
		if err != nil {
			t.Fatal(err)
		}
		if f.Doc != nil {
			doc += f.Doc.Text()
		}
	}
	if doc == "" {
		t.Fatal("the command has no package documentation")
	}
	for _, c := range newApp(Env{}).Commands {
		if !strings.Contains(doc, "tsdescramble "+c.Name) {
			t.Errorf("the package doc does not name the subcommand %q", c.Name)
		}
	}
	// The exit statuses are listed one a line, the status first.
	for _, code := range []string{fmt.Sprint(exitOK), fmt.Sprint(exitFail), fmt.Sprint(exitUsage), fmt.Sprint(exitNoFit), "128+N"} {
		if !regexp.MustCompile(`(?m)^\s+` + regexp.QuoteMeta(code) + `\s+\S`).MatchString(doc) {
			t.Errorf("the package doc does not list exit status %s", code)
		}
	}
}
