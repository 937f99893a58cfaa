//go:build linux

package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tsdescramble/tsdescramble/internal/testsupport/proc"
)

// The command's live input and output against real peers from Debian, on loopback: ffmpeg
// sends and receives UDP, multicat sends PCR-paced RTP, socat receives UDP, tsdecrypt
// descrambles our RTP, and a multicast group inside a network namespace the test makes. Each
// test skips, naming the Debian package, when its tool is missing.

// needTool skips the test when a tool is missing, naming the package that has it.
func needTool(t *testing.T, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			pkg := map[string]string{"ingests": "multicat", "unshare": "util-linux", "ip": "iproute2", "srt-live-transmit": "srt-tools"}[tool]
			if pkg == "" {
				pkg = tool
			}
			t.Skipf("%s is not installed (apt-get install -y %s); skipping the test against it", tool, pkg)
		}
	}
}

// waitFile waits until a file holds n bytes.
func waitFile(t *testing.T, path string, n int64, limit time.Duration) {
	t.Helper()
	for end := time.Now().Add(limit); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if st, err := os.Stat(path); err == nil && st.Size() >= n {
			return
		}
	}
	st, _ := os.Stat(path)
	t.Fatalf("%s did not reach %d bytes in %v (%v)", path, n, limit, st)
}

// ffmpeg sends the scrambled sample's exact bytes as UDP (the mpegtsraw demuxer, the data
// muxer); the command receives and descrambles them: the output is the file path's, byte for
// byte (-packets ends the run at the sample's last packet).
func TestPeerFFmpegSendsUDP(t *testing.T) {
	t.Parallel()
	needTool(t, "ffmpeg")
	if testing.Short() {
		t.Skip("ffmpeg sends or receives for seconds")
	}
	bin := buildBinary(t, "")
	port := freeUDPPort(t)
	out := filepath.Join(t.TempDir(), "out.ts")
	tsd := proc.Start(t, time.Minute, bin, "-in", fmt.Sprintf("udp://@127.0.0.1:%d", port), "-out", out,
		"-cw-file", demoKeys, "-packets", fmt.Sprint(demoPackets))
	waitListening(t, port)
	proc.Start(t, time.Minute, "ffmpeg", "-v", "error", "-readrate", "10", "-f", "mpegtsraw", "-i", demoScrambled,
		"-flush_packets", "0", "-map", "0", "-c", "copy", "-f", "data", fmt.Sprintf("udp://127.0.0.1:%d?pkt_size=1316", port))
	if code := tsd.Wait(t, 30*time.Second); code != 0 {
		t.Fatalf("exit %d:\n%s", code, tsd.Output())
	}
	sameBytes(t, "sent by ffmpeg, descrambled", readFile(t, out), readFile(t, demoClear), 188)
}

// ffmpeg receives the command's UDP output and writes its exact bytes: the file path's output.
func TestPeerFFmpegReceivesUDP(t *testing.T) {
	t.Parallel()
	needTool(t, "ffmpeg")
	if testing.Short() {
		t.Skip("ffmpeg sends or receives for seconds")
	}
	bin := buildBinary(t, "")
	port := freeUDPPort(t)
	out := filepath.Join(t.TempDir(), "out.ts")
	ff := proc.Start(t, time.Minute, "ffmpeg", "-v", "error", "-f", "mpegtsraw",
		"-i", fmt.Sprintf("udp://127.0.0.1:%d?timeout=1500000&buffer_size=16777216&fifo_size=100000", port),
		"-map", "0", "-c", "copy", "-f", "data", out)
	waitListening(t, port)
	time.Sleep(300 * time.Millisecond) // ffmpeg binds, then starts reading
	// Paced at the PCR (the default from a file): the first 240 packets, one second of it
	// (with TSD_LONG=1, the whole 20 s).
	want := readFile(t, demoClear)
	pace := []string{"-packets", "240"}
	if longTests() {
		pace = nil
	} else {
		want = want[:240*188]
	}
	res, err := exec.Command(bin, append([]string{"-in", demoScrambled, "-out", fmt.Sprintf("udp://127.0.0.1:%d", port), "-cw-file", demoKeys}, pace...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, res)
	}
	ff.Wait(t, 30*time.Second) // its receive timeout ends it
	sameBytes(t, "received by ffmpeg", readFile(t, out), want, 188)
}

// socat receives the command's UDP output, a datagram at a time: the file path's output.
func TestPeerSocatReceivesUDP(t *testing.T) {
	t.Parallel()
	needTool(t, "socat")
	bin := buildBinary(t, "")
	port := freeUDPPort(t)
	out := filepath.Join(t.TempDir(), "out.ts")
	proc.Start(t, time.Minute, "socat", "-u", fmt.Sprintf("UDP4-RECV:%d,bind=127.0.0.1,rcvbuf=8388608", port), "CREATE:"+out)
	waitListening(t, port)
	want := readFile(t, demoClear)
	res, err := exec.Command(bin, "-in", demoScrambled, "-out", fmt.Sprintf("udp://127.0.0.1:%d", port), "-cw-file", demoKeys, "-pace=false").CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, res)
	}
	waitFile(t, out, int64(len(want)), 10*time.Second)
	sameBytes(t, "received by socat", readFile(t, out), want, 188)
}

// multicat sends the scrambled sample as RTP, paced by its PCR (ingests indexes it); the
// command receives a second of it (all 20 s with TSD_LONG=1): the bytes that came are
// descrambled as the file path does, and the RTP sequence shows no loss.
func TestPeerMulticatSendsRTP(t *testing.T) {
	t.Parallel()
	needTool(t, "multicat", "ingests")
	bin := buildBinary(t, "")
	dir := t.TempDir()
	src := writeFile(t, dir, "in.ts", readFile(t, demoScrambled))
	if b, err := exec.Command("ingests", "-p", "256", src).CombinedOutput(); err != nil {
		t.Fatalf("ingests: %v\n%s", err, b)
	}
	port := freeUDPPort(t)
	out := filepath.Join(dir, "out.ts")
	stats := filepath.Join(dir, "stats.json")
	packets, limit := demoPackets, 40*time.Second
	if !longTests() {
		packets = 240 // a second of the stream
	}
	tsd := proc.Start(t, time.Minute, bin, "-in", fmt.Sprintf("rtp://@127.0.0.1:%d", port), "-out", out,
		"-cw-file", demoKeys, "-packets", fmt.Sprint(packets), "-stats", stats)
	waitListening(t, port)
	proc.Start(t, time.Minute, "multicat", "-p", "256", src, fmt.Sprintf("127.0.0.1:%d", port))
	if code := tsd.Wait(t, limit); code != 0 {
		t.Fatalf("exit %d:\n%s", code, tsd.Output())
	}
	sameBytes(t, "sent by multicat, descrambled", readFile(t, out), readFile(t, demoClear)[:packets*188], 188)
	if s := string(readFile(t, stats)); !strings.Contains(s, `"rtp_lost": 0,`) || strings.Contains(s, `"rtp": 0,`) {
		t.Errorf("RTP figures:\n%s", s)
	}
}

// tsdecrypt, a second live descrambler, receives the command's scrambled RTP output and
// descrambles it with the same control word: the clear stream again.
func TestPeerTsdecryptReceivesRTP(t *testing.T) {
	t.Parallel()
	needTool(t, "tsdecrypt")
	bin := buildBinary(t, "")
	port := freeUDPPort(t)
	out := filepath.Join(t.TempDir(), "out.ts")
	const cw = "11223366445566ff"
	td := proc.Start(t, time.Minute, "tsdecrypt", "-I", fmt.Sprintf("127.0.0.1:%d", port), "-R", "-O", "file://"+out, "-Y", cw+cw, "-p", "-z")
	waitListening(t, port)
	want := readFile(t, demoClear)[:1000*188]
	res, err := exec.Command(bin, "scramble", "-in", demoClear, "-out", fmt.Sprintf("rtp://127.0.0.1:%d", port), "-cw", cw, "-packets", "1000", "-pace=false").CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, res)
	}
	// tsdecrypt descrambles full batches of 128 packets and writes a partial one only now and
	// then when it stops: every packet it wrote must be the clear stream's, and the full
	// batches must all be there.
	waitFile(t, out, 7*128*188, 20*time.Second)
	time.Sleep(200 * time.Millisecond)
	td.Signal(t, syscall.SIGTERM)
	got := readFile(t, out)
	sameBytes(t, "scrambled by us, descrambled by tsdecrypt", got, want[:min(len(got), len(want))], 188)
}

// Multicast, any-source and source-specific, inside a network namespace the test makes (as
// root, with unshare): the command joins the group, socat sends the scrambled sample to it, and
// the output is the file path's. IPv4 goes over the namespace's loopback, with a route for
// 224.0.0.0/4.
func TestPeerMulticastInNamespace(t *testing.T) {
	t.Parallel()
	needNamespace(t)
	bin := buildBinary(t, "")
	dir := t.TempDir()
	const setup = `ip link set lo up
ip link set lo multicast on
ip route add 224.0.0.0/4 dev lo`
	for _, c := range []struct{ name, in, to string }{
		{"ipv4 any source", "udp://@239.255.1.1:5000", "UDP4-DATAGRAM:239.255.1.1:5000"},
		{"ipv4 source-specific", "udp://127.0.0.1@239.255.1.2:5000", "UDP4-DATAGRAM:239.255.1.2:5000,bind=127.0.0.1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "-")+".ts")
			multicastInNamespace(t, bin, setup, c.in, out, "", c.to)
			sameBytes(t, "received from the group", readFile(t, out), readFile(t, demoClear), 188)
		})
	}
}

// IPv6 multicast, any-source and source-specific, inside a network namespace: a namespace's
// loopback does not carry IPv6 multicast (its only route, ff00::/8 in the local table, is for
// the interfaces that have one), so the test makes a veth pair, tsd0 and tsd1, whose ends send
// and receive it. socat sends from fd00::1 out of tsd0; the command joins on tsd1, named by
// iface= or by its address fd00::2, or on the interface the routing table gives (either end:
// a member on tsd0 gets the datagrams sent out of it looped back). For the source-specific
// group, a second sender at fd00::3 sends null packets first: the command must not hear them.
func TestPeerMulticastIPv6InNamespace(t *testing.T) {
	t.Parallel()
	needNamespace(t)
	bin := buildBinary(t, "")
	dir := t.TempDir()
	const setup = `ip link set lo up
ip link add name tsd0 type veth peer name tsd1
ip link set tsd0 up
ip link set tsd1 up
ip -6 addr add fd00::1/64 dev tsd0 nodad
ip -6 addr add fd00::3/64 dev tsd0 nodad
ip -6 addr add fd00::2/64 dev tsd1 nodad`
	for _, c := range []struct{ name, in, other, to string }{
		{"ipv6 any source", "udp://@[ff3e::1234]:5000", "",
			"UDP6-DATAGRAM:[ff3e::1234]:5000,bind=[fd00::1],so-bindtodevice=tsd0"},
		{"ipv6 any source on an address", "udp://@[ff3e::1236]:5000?iface=fd00::2", "",
			"UDP6-DATAGRAM:[ff3e::1236]:5000,bind=[fd00::1],so-bindtodevice=tsd0"},
		{"ipv6 source-specific", "udp://[fd00::1]@[ff3e::1235]:5000?iface=tsd1",
			"UDP6-DATAGRAM:[ff3e::1235]:5000,bind=[fd00::3],so-bindtodevice=tsd0",
			"UDP6-DATAGRAM:[ff3e::1235]:5000,bind=[fd00::1],so-bindtodevice=tsd0"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "-")+".ts")
			multicastInNamespace(t, bin, setup, c.in, out, c.other, c.to)
			sameBytes(t, "received from the group", readFile(t, out), readFile(t, demoClear), 188)
		})
	}
}

// The command sends IPv6 multicast: it descrambles the sample to udp://[ff3e::1237]:5000 out of
// tsd0 (iface=), and socat, a member of the group on tsd1, receives the file path's output.
func TestPeerMulticastIPv6OutputInNamespace(t *testing.T) {
	t.Parallel()
	needNamespace(t)
	bin := buildBinary(t, "")
	out := filepath.Join(t.TempDir(), "out.ts")
	want := readFile(t, demoClear)
	script := fmt.Sprintf(`set -e
ip link set lo up || exit 8
ip link add name tsd0 type veth peer name tsd1 || exit 8
ip link set tsd0 up || exit 8
ip link set tsd1 up || exit 8
ip -6 addr add fd00::1/64 dev tsd0 nodad || exit 8
ip -6 addr add fd00::2/64 dev tsd1 nodad || exit 8
socat -u 'UDP6-RECV:5000,ipv6-join-group=[ff3e::1237]:tsd1,rcvbuf=8388608' 'CREATE:%s' &
s=$!
i=0; while ! grep -q ':1388 ' /proc/net/udp6; do i=$((i+1)); [ $i -lt 200 ] || exit 9; sleep 0.02; done
%s -in '%s' -out 'udp://[ff3e::1237]:5000?iface=tsd0' -cw-file '%s' -pace=false
i=0; while [ "$(stat -c %%s '%s')" -lt %d ]; do i=$((i+1)); [ $i -lt 250 ] || break; sleep 0.02; done
kill $s`, out, bin, demoScrambled, demoKeys, out, len(want))
	p := proc.Start(t, time.Minute, "unshare", "-n", "sh", "-c", script)
	switch code := p.Wait(t, 30*time.Second); code {
	case 0:
	case 8:
		t.Skipf("this machine cannot set up the namespace's interfaces:\n%s", p.Output())
	default:
		t.Fatalf("exit %d:\n%s", code, p.Output())
	}
	sameBytes(t, "sent to the group, received by socat", readFile(t, out), want, 188)
}

// nullPackets returns n null packets (PID 0x1FFF).
func nullPackets(n int) []byte {
	b := make([]byte, n*188)
	for i := 0; i < len(b); i += 188 {
		b[i], b[i+1], b[i+2], b[i+3] = 0x47, 0x1f, 0xff, 0x10
	}
	return b
}

// needNamespace skips the test unless it can make a network namespace.
func needNamespace(t *testing.T) {
	t.Helper()
	needTool(t, "unshare", "ip", "socat")
	if os.Geteuid() != 0 {
		t.Skip("making a network namespace needs root (.ci/run runs the tests as root)")
	}
	if err := exec.Command("unshare", "-n", "true").Run(); err != nil {
		t.Skipf("this machine does not allow a network namespace (unshare -n: %v)", err)
	}
}

// multicastInNamespace runs, in a new network namespace set up by the shell commands setup
// (one a line), the command receiving the scrambled sample from in into out, then socat
// sending it to the socat address to (port 5000). When other is not empty, socat first sends
// 700 null packets to that address, which the command must not receive. The test skips when
// setup fails (a kernel without veth, for one).
func multicastInNamespace(t *testing.T, bin, setup, in, out, other, to string) {
	t.Helper()
	const setupFailed = 8
	setup = strings.ReplaceAll(setup, "\n", fmt.Sprintf(" || exit %d\n", setupFailed)) + fmt.Sprintf(" || exit %d", setupFailed)
	send := fmt.Sprintf("socat -b 1316 -u 'FILE:%s' '%s'", demoScrambled, to)
	if other != "" {
		null := writeFile(t, t.TempDir(), "null.ts", nullPackets(700))
		send = fmt.Sprintf("socat -b 1316 -u 'FILE:%s' '%s'\n%s", null, other, send)
	}
	script := fmt.Sprintf(`set -e
%s
%s -in '%s' -out '%s' -cw-file '%s' -packets %d -timeout 10s &
tsd=$!
i=0; while ! grep -q ':1388 ' /proc/net/udp /proc/net/udp6; do i=$((i+1)); [ $i -lt 200 ] || exit 9; sleep 0.02; done
sleep 0.1
%s
wait $tsd`, setup, bin, in, out, demoKeys, demoPackets, send)
	p := proc.Start(t, time.Minute, "unshare", "-n", "sh", "-c", script)
	code := p.Wait(t, 30*time.Second)
	if code == setupFailed {
		t.Skipf("this machine cannot set up the namespace's interfaces:\n%s", p.Output())
	}
	if code != 0 {
		if strings.Contains(p.Output(), "cannot join") || strings.Contains(p.Output(), "Cannot") {
			t.Skipf("this kernel does not route the group in a namespace:\n%s", p.Output())
		}
		t.Fatalf("exit %d:\n%s", code, p.Output())
	}
}

// SIGHUP makes a live run reread its key file: a list that lacks the later control words of the
// sample, then the whole list, rewritten while the feed runs: the periods after it come out
// clear.
func TestLiveHangupRereadsKeys(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t, "")
	dir := t.TempDir()
	all := strings.Fields(string(readFile(t, demoKeys)))
	var cws []string
	for _, f := range all {
		if len(f) == 16 {
			cws = append(cws, f)
		}
	}
	if len(cws) != 3 {
		t.Fatalf("the sample's key file: %q", all)
	}
	keyFile := writeFile(t, dir, "keys.txt", []byte(cws[0]+"\n"))
	port := freeUDPPort(t)
	out := filepath.Join(dir, "out.ts")
	tsd := proc.Start(t, time.Minute, bin, "-in", fmt.Sprintf("udp://@127.0.0.1:%d", port), "-out", out,
		"-cw-file", keyFile, "-packets", fmt.Sprint(demoPackets))
	waitListening(t, port)
	stream, clear := readFile(t, demoScrambled), readFile(t, demoClear)
	url := fmt.Sprintf("udp://127.0.0.1:%d", port)
	sendUDP(t, url, stream[:1700*188], time.Millisecond/4)
	writeFile(t, dir, "keys.txt", []byte(strings.Join(cws, "\n")+"\n"))
	tsd.Cmd.Process.Signal(syscall.SIGHUP)
	for end := time.Now().Add(5 * time.Second); !strings.Contains(tsd.Output(), "SIGHUP: "); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("no note of the keys reread:\n%s", tsd.Output())
		}
	}
	sendUDP(t, url, stream[1700*188:], time.Millisecond/4)
	// Some periods were left scrambled before the new keys came: exit status 3.
	if code := tsd.Wait(t, 30*time.Second); code != exitNoFit {
		t.Fatalf("exit %d:\n%s", code, tsd.Output())
	}
	got := readFile(t, out)
	if len(got) != len(clear) {
		t.Fatalf("%d bytes out of %d", len(got), len(clear))
	}
	// From the fourth crypto period on (packet 2400), all of it is clear.
	sameBytes(t, "after SIGHUP", got[2400*188:], clear[2400*188:], 188)
	if !strings.Contains(tsd.Output(), "new keys from packet") || bytes.Equal(got, clear) {
		t.Errorf("the keys were not replaced during the run:\n%s", tsd.Output())
	}
}

// ffmpeg sends the clear sample as RTP (its rtp_mpegts muxer, which muxes the stream anew, so
// the bytes are ffmpeg's own); the command scrambles what it receives, and the file path
// descrambles that: every audio and video frame of the sample is there, in order, but for the
// last ones, which ffmpeg's RTP muxer does not send.
func TestPeerFFmpegSendsRTP(t *testing.T) {
	needTool(t, "ffmpeg")
	needLong(t, "ffmpeg sends for seconds, then its RTP muxer lingers")
	bin := buildBinary(t, "")
	dir := t.TempDir()
	port := freeUDPPort(t)
	scr, clear := filepath.Join(dir, "scr.ts"), filepath.Join(dir, "clear.ts")
	const cw = "11223366445566ff"
	tsd := proc.Start(t, time.Minute, bin, "scramble", "-in", fmt.Sprintf("rtp://@127.0.0.1:%d", port), "-out", scr, "-cw", cw, "-duration", "6s", "-stats", filepath.Join(dir, "stats.json"))
	waitListening(t, port)
	ff := proc.Start(t, time.Minute, "ffmpeg", "-v", "error", "-readrate", "10", "-i", demoClear, "-map", "0", "-c", "copy", "-f", "rtp_mpegts",
		fmt.Sprintf("rtp://127.0.0.1:%d?localrtpport=%d&localrtcpport=%d", port, freeUDPPort(t), freeUDPPort(t)))
	ff.Wait(t, 30*time.Second)
	if code := tsd.Wait(t, 30*time.Second); code != 0 {
		t.Fatalf("exit %d:\n%s", code, tsd.Output())
	}
	if s := string(readFile(t, filepath.Join(dir, "stats.json"))); !strings.Contains(s, `"rtp_lost": 0,`) || strings.Contains(s, `"rtp": 0,`) {
		t.Errorf("RTP figures:\n%s", s)
	}
	if b, err := exec.Command(bin, "-in", scr, "-out", clear, "-cw", cw).CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	got, want := frameHashes(t, clear), frameHashes(t, demoClear)
	for st, w := range want {
		g := got[st]
		if len(g) == 0 || len(g) > len(w) || len(w)-len(g) > 12 || !slices.Equal(g, w[:len(g)]) {
			t.Errorf("stream %s: %d frames of the sample's %d, or not the same", st, len(g), len(w))
		}
	}
}

// frameHashes lists the size and MD5 of every frame of each elementary stream of a file
// (ffmpeg's framemd5).
func frameHashes(t *testing.T, path string) map[string][]string {
	t.Helper()
	cmd := exec.Command("ffmpeg", "-v", "error", "-i", path, "-map", "0", "-c", "copy", "-f", "framemd5", "-")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	if err != nil {
		t.Fatalf("ffmpeg framemd5 %s: %v: %s", path, err, stderr.String())
	}
	m := map[string][]string{}
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Split(l, ",")
		if len(f) >= 6 && !strings.HasPrefix(l, "#") {
			m[strings.TrimSpace(f[0])] = append(m[strings.TrimSpace(f[0])], strings.TrimSpace(f[4])+" "+strings.TrimSpace(f[5]))
		}
	}
	return m
}
