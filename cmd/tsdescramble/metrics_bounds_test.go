package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// 8,000 idle keep-alive connections to /metrics of a running command (the built binary, so
// that its memory is its own): its RSS stays bounded and a new scrape is still answered at
// once. The connections were kept for ever: 15,000 took the process from 21 MB to 361 MB, so
// 8,000 (31 times the cap) would take it to about 200 MB, twice the bound checked here.
func TestMetricsIdleConnectionsBounded(t *testing.T) {
	t.Parallel()
	const conns, holders = 8000, 4
	bin := buildBinary(t, t.TempDir())
	addr := freeAddr(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-in", "-", "-out", os.DevNull, "-cw-file", sample(t, "demo-keys.txt"), "-cipher", "csa2", "-metrics", addr)
	stdin, _, stderr := startPiped(t, cmd) // the output goes to -out: nothing on stdout
	t.Cleanup(func() {
		stdin.Close()
		cmd.Process.Kill() // this test's own child, by its pid
		cmd.Wait()
	})
	up := false
	for range 200 {
		if _, _, err := tryGet(addr, "/healthz"); err == nil {
			up = true
			break
		}
		time.Sleep(25 * time.Millisecond)
	}
	if !up {
		t.Fatalf("the metrics server did not start: %s", stderr.String())
	}

	// The connections are held by copies of this test binary, a quarter each: one process may
	// not have 20,000 files open (the limit here is often 20,000, and cannot be raised): four
	// holders keep each well under it.
	held := 0
	for range holders {
		h := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestMetricsConnHolder$")
		h.Env = append(os.Environ(), "TSD_HOLD_ADDR="+addr, "TSD_HOLD_CONNS="+strconv.Itoa(conns/holders))
		hin, err := h.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		hout, err := h.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := h.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			hin.Close() // the holder ends when its stdin does
			h.Process.Kill()
			h.Wait()
		})
		sc := bufio.NewScanner(hout)
		for sc.Scan() {
			if n, ok := strings.CutPrefix(sc.Text(), "held "); ok {
				k, _ := strconv.Atoi(strings.Fields(n)[0])
				held += k
				t.Log(sc.Text())
				break
			}
		}
	}
	if held < conns*9/10 {
		t.Logf("only %d of %d connections could be made", held, conns)
	}

	status, err := os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/status")
	if err != nil {
		t.Skip("no /proc to read the RSS from:", err)
	}
	rss := int64(-1)
	sc := bufio.NewScanner(bytes.NewReader(status))
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) >= 2 && f[0] == "VmRSS:" {
			rss, _ = strconv.ParseInt(f[1], 10, 64)
		}
	}
	const boundKB = 100 << 10
	t.Logf("RSS of the command with %d idle connections: %d kB", held, rss)
	if rss < 0 || rss > boundKB {
		t.Errorf("RSS with %d idle connections: %d kB, want at most %d kB", held, rss, boundKB)
	}
	c := http.Client{Timeout: 5 * time.Second}
	start := time.Now()
	// A connection the listener took while it evicted the idle ones may be reset (on a loaded
	// machine): a scraper tries again, and an answer must come within the bound all the same.
	var resp *http.Response
	for try := 0; try < 20; try++ {
		if resp, err = c.Get("http://" + addr + "/metrics"); err == nil || time.Since(start) > 4*time.Second {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("a new scrape after %d idle connections: %v", held, err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), "tsdescramble_read_bytes_total") {
		t.Errorf("a new scrape: %d %s", resp.StatusCode, body)
	}
	// Without the cap the scrape waits in a full backlog until the client gives up (5 s);
	// with it, the answer comes at once on an idle machine and took up to 2.5 s on a loaded
	// one, the 8000 closes of evicted connections going first.
	if d := time.Since(start); d > 4*time.Second {
		t.Errorf("a new scrape took %v", d)
	}
}

// A -stats-interval rewrite that fails is said once per streak, as an error in the chosen
// -log-format; it was dropped without a word.
func TestStatsIntervalFailureLogged(t *testing.T) {
	stream := readFile(t, sample(t, "demo-scrambled.ts"))
	dir := filepath.Join(t.TempDir(), "stats")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	statsPath := filepath.Join(dir, "s.json")
	pw, done, stderr := mainOnPipe(t, "-in", "-", "-out", os.DevNull, "-cw-file", sample(t, "demo-keys.txt"),
		"-cipher", "csa2", "-batch", "16", "-latency", "10ms", "-stats", statsPath, "-stats-interval", "20ms", "-log-format", "json")
	// Packets go on coming while the directory is gone: many rewrites fail.
	pw.Write(stream[:188*100])
	for range 200 {
		if _, err := os.Stat(statsPath); err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	os.RemoveAll(dir)
	for i := 1; i < 20; i++ {
		pw.Write(stream[188*100*i : 188*100*(i+1)])
		time.Sleep(25 * time.Millisecond)
	}
	os.Mkdir(dir, 0o755)
	pw.Write(stream[188*100*20 : 188*100*21])
	time.Sleep(200 * time.Millisecond)
	pw.Close()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("the run did not end")
	}
	out := stderr.String()
	if n := strings.Count(out, `"level":"error","msg":"-stats-interval: cannot rewrite `+statsPath); n != 1 {
		t.Errorf("want the failed rewrites said once, as a JSON error line; said %d times:\n%s", n, out)
	}
	if !strings.Contains(out, "is rewritten again") {
		t.Errorf("the rewrites that succeeded again are not said:\n%s", out)
	}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if !strings.HasPrefix(line, `{"time":"`) {
			t.Errorf("not a JSON line: %q", line)
		}
	}
}

// TestMetricsConnHolder is not a test: TestMetricsIdleConnectionsBounded runs it in processes
// of their own, each to hold TSD_HOLD_CONNS connections to TSD_HOLD_ADDR, each having asked
// for /metrics once and read nothing, until its stdin closes (or two minutes pass).
func TestMetricsConnHolder(t *testing.T) {
	addr := os.Getenv("TSD_HOLD_ADDR")
	n, _ := strconv.Atoi(os.Getenv("TSD_HOLD_CONNS"))
	if addr == "" || n <= 0 {
		t.Skip("a helper of TestMetricsIdleConnectionsBounded")
	}
	var (
		mu     sync.Mutex
		held   []net.Conn
		failed atomic.Int64
		next   atomic.Int64
		wg     sync.WaitGroup
	)
	deadline := time.Now().Add(60 * time.Second)
	req := []byte("GET /metrics HTTP/1.1\r\nHost: t\r\n\r\n")
	for range 16 {
		wg.Go(func() {
			for next.Add(1) <= int64(n) && time.Now().Before(deadline) {
				c, err := net.DialTimeout("tcp", addr, time.Second)
				if err != nil {
					failed.Add(1)
					continue
				}
				c.SetWriteDeadline(time.Now().Add(time.Second))
				c.Write(req)
				mu.Lock()
				held = append(held, c)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	fmt.Printf("held %d connections, %d dials failed\n", len(held), failed.Load())
	done := make(chan struct{})
	go func() { io.Copy(io.Discard, os.Stdin); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
	}
	for _, c := range held {
		c.Close()
	}
}
