package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tsdescramble/tsdescramble/internal/testsupport/camdouble"
	"github.com/tsdescramble/tsdescramble/internal/testsupport/testmedia"
	"github.com/tsdescramble/tsdescramble/multiplex"
	"github.com/tsdescramble/tsdescramble/split"
)

// muxServices is a multiplex of four services, each scrambled by the command's own scrambler
// under a key source of its own (a CW, a BISS word, a CW list changing every 700 packets, and
// none for service 4), and the clear multiplex split by the test: what each service's output
// must be.
type muxServices struct {
	dir, in string
	clear   map[uint16][]byte
}

func makeMuxServices(t *testing.T) *muxServices {
	t.Helper()
	clear := testmedia.Programs(t, 4, 3)
	dir := t.TempDir()
	list := writeFile(t, dir, "three.txt", []byte("0102030405060708\n1112131415161718\n2122232425262728\n"))
	stream := clear
	for _, step := range [][]string{
		{"-service", "1", "-cw", "11223366445566ff"},
		{"-service", "2", "-biss", "a1a2a3b1b2b3"},
		{"-service", "3", "-cw-file", list, "-cp-packets", "700"},
	} {
		r := run(t, stream, append([]string{"scramble", "-q"}, step...)...)
		if r.code != 0 {
			t.Fatal(describe(r))
		}
		stream = []byte(r.stdout)
	}
	m := &muxServices{dir: dir, in: writeFile(t, dir, "mux.ts", stream), clear: map[uint16][]byte{}}
	bufs := map[uint16]*bytes.Buffer{1: {}, 2: {}, 3: {}, 4: {}}
	ws := map[uint16]io.Writer{}
	for n, b := range bufs {
		ws[n] = b
	}
	if _, err := split.New(ws).Write(clear); err != nil {
		t.Fatal(err)
	}
	for n, b := range bufs {
		m.clear[n] = b.Bytes()
	}
	return m
}

// Each service of a multiplex descrambled with its own keys into an output of its own, given
// by flags and by a config file: each output is the split of the clear multiplex, byte for
// byte; service 4, scrambled by nobody, goes out as it came; the summary, the statistics and
// the exit status speak of each service.
func TestMultiplexKeysPerService(t *testing.T) {
	t.Parallel()
	m := makeMuxServices(t)
	out := func(n int) string { return filepath.Join(m.dir, fmt.Sprintf("out%d.ts", n)) }
	check := func(what string, r result) {
		t.Helper()
		if r.code != 0 {
			t.Fatalf("%s: %s", what, describe(r))
		}
		for n := uint16(1); n <= 4; n++ {
			sameBytes(t, fmt.Sprintf("%s: service %d", what, n), readFile(t, out(int(n))), m.clear[n], 188)
			os.Remove(out(int(n)))
		}
	}
	stats := filepath.Join(m.dir, "stats.json")
	r := run(t, nil, "-in", m.in, "-stats", stats,
		"-out-service", fmt.Sprintf("1=%s,2=%s,3=%s,4=%s", out(1), out(2), out(3), out(4)),
		"-keys", "1=cw:11223366445566ff", "-keys", "2=biss:a1a2a3b1b2b3", "-keys", "3=cw-file:"+filepath.Join(m.dir, "three.txt"))
	if strings.Contains(r.stderr, "a1a2a3") || strings.Contains(r.stderr, "11223366") {
		t.Errorf("a key is printed:\n%s", r.stderr)
	}
	for _, want := range []string{"service 1 → " + out(1), "(keys cw:…)", "(keys biss:…)", "service 4 → " + out(4), "(no keys: as it came)"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("the summary lacks %q:\n%s", want, r.stderr)
		}
	}
	check("flags", r)
	var doc struct {
		Services []struct {
			Service      uint16 `json:"service"`
			ExitStatus   int    `json:"exit_status"`
			Packets      int64  `json:"packets"`
			Descrambling *struct {
				Descrambled int64 `json:"descrambled"`
			} `json:"descrambling"`
		} `json:"services"`
	}
	if err := json.Unmarshal(readFile(t, stats), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Services) != 4 {
		t.Fatalf("-stats has %d services, want 4", len(doc.Services))
	}
	for _, s := range doc.Services {
		want := int64(len(m.clear[s.Service]) / 188)
		if s.Packets != want || s.ExitStatus != 0 || (s.Descrambling == nil) != (s.Service == 4) || s.Descrambling != nil && s.Descrambling.Descrambled == 0 {
			t.Errorf("-stats service %+v, want %d packets, status 0, descrambled unless service 4", s, want)
		}
	}

	// probe -config writes the config that splits the stream: every service, a comment naming
	// it and saying whether it needs keys.
	p := run(t, nil, "probe", "-config", m.in)
	if p.code != 0 {
		t.Fatal(describe(p))
	}
	pc, err := multiplex.Read(strings.NewReader(p.stdout))
	if err != nil {
		t.Fatalf("probe -config wrote what -config cannot read: %v\n%s", err, p.stdout)
	}
	if pc.Input != m.in || len(pc.Services) != 4 {
		t.Errorf("probe -config: %+v", pc)
	}
	for i, s := range pc.Services {
		n := i + 1
		need := "scrambled: give its keys"
		if n == 4 {
			need = "clear"
		}
		if s.Number != uint16(n) || s.Output != fmt.Sprintf("%d.ts", n) || !strings.Contains(p.stdout, fmt.Sprintf("# \"svc%d\"; %s", n, need)) {
			t.Errorf("probe -config: service %d is %+v in\n%s", n, s, p.stdout)
		}
	}

	// The same from a config file, service 2 by its SDT name; -keys beside it wins.
	cfg := writeFile(t, m.dir, "mux.yaml", []byte(fmt.Sprintf(`input: %s
services:
  - service: 1
    keys: cw:0000000000000000
    output: %s
  - name: svc2
    keys: biss:a1a2a3b1b2b3
    output: %s
  - service: 3
    keys: cw-file:%s
    output: %s
  - service: 4
    output: %s
`, m.in, out(1), out(2), filepath.Join(m.dir, "three.txt"), out(3), out(4))))
	check("config", run(t, nil, "-config", cfg, "-keys", "1=cw:11223366445566ff"))

	// Without -keys, service 1's key in the file is wrong: exit 3, naming service 1 alone; the
	// others are written right all the same.
	r = run(t, nil, "-config", cfg)
	if r.code != exitNoFit || !strings.Contains(r.stderr, "1 of 4 services failed: service 1:") {
		t.Errorf("a wrong key for service 1: %s", describe(r))
	}
	sameBytes(t, "service 2 beside a failed service 1", readFile(t, out(2)), m.clear[2], 188)

	// -missing-key drop: service 3 without keys goes out without its scrambled packets.
	r = run(t, nil, "-in", m.in, "-missing-key", "drop", "-out-service", "1="+out(1)+",3="+out(3), "-keys", "1=cw:11223366445566ff")
	if r.code != 0 {
		t.Fatal(describe(r))
	}
	for p := range slices.Chunk(readFile(t, out(3)), 188) {
		if p[3]&0xC0 != 0 {
			t.Fatalf("a scrambled packet in a service whose scrambled packets are dropped")
		}
	}
	if !strings.Contains(r.stderr, "scrambled packets dropped") {
		t.Errorf("the summary does not say the packets were dropped:\n%s", r.stderr)
	}
}

// Bad -keys and -config: exit 2, one line naming what is wrong, no key in it, nothing written.
func TestMultiplexUsage(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	in := writeFile(t, dir, "in.ts", bytes.Repeat([]byte{0x47, 0x1f, 0xff, 0x10}, 47))
	good := writeFile(t, dir, "good.yaml", []byte("services:\n  - service: 1\n    output: a.ts\n"))
	bad := writeFile(t, dir, "bad.yaml", []byte("services:\n  - service: 1\n    output: a.ts\n    keyz: biss:a1a2a3b1b2b3\n"))
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-keys", "1=biss:a1a2a3b1b2b3"}, "service 1 has no output"},
		{[]string{"-keys", "x=biss:a1a2a3b1b2b3", "-out-service", "1=a.ts"}, `"x=biss:…" is not`},
		{[]string{"-keys", "1=bis:a1a2a3b1b2b3", "-out-service", "1=a.ts"}, `keys "…": want cw:HEX`},
		{[]string{"-keys", "1=biss:a1a2a3b1b2b3", "-out-service", "1=a.ts", "-cw", "1122334455667788"}, "do not go with them"},
		{[]string{"-keys", "1=biss:a1a2a3b1b2b3", "-out-service", "1=a.ts", "-service", "1"}, "not with -rescramble, -passthrough, -service or -pid"},
		{[]string{"-keys", "1=cs378x://user:secretpw@127.0.0.1:1", "-out-service", "1=a.ts", "-key-wait", "0s"}, "-key-wait"},
		{[]string{"-keys", "1=newcamd://user:secretpw@127.0.0.1:1?key=zz", "-out-service", "1=a.ts"}, "service 1:"},
		{[]string{"-config", bad}, "line 4: field keyz not found"},
		{[]string{"-keys", "1=biss:a1a2a3b1b2b3", "-keys", "1=cw:a1a2a3b1b2b3a1a2", "-out-service", "1=a.ts"}, "service 1 is given keys twice"},
		{[]string{"-config", good, "-out-service", "2=a.ts"}, "service 2 and service 1 go to the same output"},
		{[]string{"-config", filepath.Join(dir, "none.yaml")}, "-config: cannot read"},
		{[]string{"-config", bad, "-out", "x.ts"}, "-config"},
	} {
		r := run(t, nil, append([]string{"-in", in}, tc.args...)...)
		if r.code != exitUsage || !strings.Contains(r.stderr, tc.want) || strings.Count(strings.TrimSpace(r.stderr), "\n") > 0 ||
			strings.Contains(r.stderr, "a1a2a3") || strings.Contains(r.stderr, "secretpw") {
			t.Errorf("%v: want exit 2 and one line with %q: %s", tc.args, tc.want, describe(r))
		}
	}
	if _, err := os.Stat("a.ts"); err == nil {
		t.Errorf("a usage error left an output behind")
	}
}

// A multiplex run reading a pipe serves each service's counts with a service label while it
// waits for more, and /healthz says its keys fit.
func TestMultiplexMetrics(t *testing.T) {
	t.Parallel()
	m := makeMuxServices(t)
	stream := readFile(t, m.in)
	addr := freeAddr(t)
	pw, done, stderr := mainOnPipe(t, "-in", "-", "-batch", "64", "-metrics", addr, "-out-service", "1="+os.DevNull+",2="+os.DevNull+",4="+os.DevNull,
		"-keys", "1=cw:11223366445566ff", "-keys", "2=biss:a1a2a3b1b2b3")
	half := len(stream) / 188 / 2 * 188
	if _, err := pw.Write(stream[:half]); err != nil {
		t.Fatal(err)
	}
	// The checks of unit starts are published as units are written: the counts of packets
	// descrambled, as they are read, may lag while the input waits.
	good := regexp.MustCompile(`(?m)^tsdescramble_service_unit_start_checks_total\{service="([0-9]+)",result="good"\} ([0-9]+)$`)
	var body, last string
	for range 400 {
		if code, b, err := tryGet(addr, "/metrics"); err == nil && code == 200 {
			last = b
			n := 0
			for _, s := range good.FindAllStringSubmatch(b, -1) {
				if s[2] != "0" {
					n++
				}
			}
			if n == 2 && regexp.MustCompile(`(?m)^tsdescramble_service_packets_total\{service="4"\} [1-9]`).MatchString(b) {
				body = b
				break
			}
		}
		time.Sleep(25 * time.Millisecond)
	}
	if body == "" {
		pw.Close()
		code := <-done // stderr is the run's until it ends
		t.Fatalf("no per-service counts while the run waits for input; the last:\n%s\nexit %d, stderr:\n%s", last, code, stderr.String())
	}
	for _, want := range []string{`tsdescramble_service_packets_total{service="1"}`, `tsdescramble_service_left_scrambled_packets_total{service="2"} 0`,
		`tsdescramble_service_key_failures_total{service="1"} 0`, `tsdescramble_service_descrambled_packets_total{service="4"} 0`, `tsdescramble_service_unit_start_checks_total{service="1",result="bad"} 0`} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s:\n%s", want, body)
		}
	}
	if code, b := get(t, addr, "/healthz"); code != 200 {
		t.Errorf("/healthz while packets come and the services' keys fit: %d %s", code, b)
	}
	pw.Write(stream[half:])
	pw.Close()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("exit %d: %s", code, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the run did not end with its input")
	}
}

// A service whose keys come from a key server through -keys (the double answers the ECMs of its
// stream): its output is the split of the clear stream, and neither the password nor a key is
// printed. Needs no ffmpeg: the stream is the key-server tests' own.
func TestMultiplexKeyServer(t *testing.T) {
	t.Parallel()
	clear, _, in := keyServerStream(t)
	var want bytes.Buffer
	if _, err := split.New(map[uint16]io.Writer{camdouble.ServiceID: &want}).Write(clear); err != nil {
		t.Fatal(err)
	}
	srv := camdouble.NewCS378x(t, "alice", "pa55word")
	out := filepath.Join(t.TempDir(), "one.ts")
	r := run(t, nil, "-in", in, "-out-service", fmt.Sprintf("%d=%s", camdouble.ServiceID, out),
		"-keys", fmt.Sprintf("%d=cs378x://alice:pa55word@%s", camdouble.ServiceID, srv.Addr))
	if r.code != 0 {
		t.Fatal(describe(r))
	}
	sameBytes(t, "the service of a key server", readFile(t, out), want.Bytes(), 188)
	if strings.Contains(r.stderr, "pa55word") || strings.Contains(strings.ToUpper(r.stderr), "11223366445566FF") {
		t.Errorf("a secret is printed:\n%s", r.stderr)
	}
	if !strings.Contains(r.stderr, "key server (cs378x): 4 ECMs sent, 4 answered") || !strings.Contains(r.stderr, "(keys cs378x://"+srv.Addr+")") {
		t.Errorf("the summary does not give the service's key server:\n%s", r.stderr)
	}

	// A service named in the config by a name the SDT does not have: exit 1, naming it.
	cfg := writeFile(t, t.TempDir(), "c.yaml", []byte("services:\n  - name: Nowhere\n    keys: cw:1122334455667788\n    output: "+out+"\n"))
	r = run(t, nil, "-in", in, "-config", cfg)
	if r.code != exitFail || !strings.Contains(r.stderr, `service "Nowhere" is not in the stream's SDT`) {
		t.Errorf("a name not in the SDT: %s", describe(r))
	}
}
