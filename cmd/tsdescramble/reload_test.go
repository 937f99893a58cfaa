package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/tsdescramble/tsdescramble/csa"
	"github.com/tsdescramble/tsdescramble/internal/testsupport/ports"
	"github.com/tsdescramble/tsdescramble/internal/testsupport/proc"
	"github.com/tsdescramble/tsdescramble/psi"
	"github.com/tsdescramble/tsdescramble/ts"
)

// reloadMux makes a multiplex of four services, cycle after cycle: esPerCycle packets of
// each service's one elementary stream (PID 0x200+N, PMT on 0x100+N) with a PAT of the four
// and their PMTs halfway, and before the first cycle. Services 1 and 4 are scrambled with a CW of their own (even parity); 2 and 3 are
// clear. It keeps what each PID carried, clear, in the order sent.
type reloadMux struct {
	keys    map[uint16]string // service to its CW, for the scrambled ones
	key     map[uint16]*csa.Key
	seq     map[uint16]int
	sent    map[uint16][][]byte // PID to its packets as the outputs must carry them (descrambled)
	started bool
}

const esPerCycle = 10

func newReloadMux(t *testing.T) *reloadMux {
	m := &reloadMux{keys: map[uint16]string{1: "1122334455667788", 4: "a1a2a3a4a5a6a7a8"}, key: map[uint16]*csa.Key{}, seq: map[uint16]int{}, sent: map[uint16][][]byte{}}
	for n, cw := range m.keys {
		m.key[n] = mustKey(t, mustCW(t, cw))
	}
	return m
}

// cycle returns the next cycle's packets.
func (m *reloadMux) cycle() []byte {
	var out []byte
	add := func(sent, wire []byte) {
		pid := ts.PID(sent)
		m.sent[pid] = append(m.sent[pid], sent)
		out = append(out, wire...)
	}
	tables := func() {
		pat := []byte{0x00, 0xB0, 0, 0x00, 0x01, 0xC1, 0, 0}
		for n := uint16(1); n <= 4; n++ {
			pat = append(pat, 0, byte(n), 0xE1, byte(n)) // program N on PMT PID 0x100+N
		}
		p := m.psiPacket(psi.PATPID, pat)
		add(p, p)
		for n := uint16(1); n <= 4; n++ {
			es := 0x200 + n
			// A PMT: PCR on the elementary PID, one MPEG-2 video stream.
			pmt := []byte{0x02, 0xB0, 0, 0, byte(n), 0xC1, 0, 0, 0xE0 | byte(es>>8), byte(es), 0xF0, 0,
				0x02, 0xE0 | byte(es>>8), byte(es), 0xF0, 0}
			p := m.psiPacket(0x100+n, pmt)
			add(p, p)
		}
	}
	elementary := func() {
		for range esPerCycle / 2 {
			for n := uint16(1); n <= 4; n++ {
				c := clearPacket(0x200+n, m.seq[n], -1, true)
				m.seq[n]++
				if key, ok := m.key[n]; ok {
					add(c, scramble(c, key, 2))
				} else {
					add(c, c)
				}
			}
		}
	}
	if !m.started {
		tables() // the stream's first tables, that the outputs start with
		m.started = true
	}
	// The tables in the middle of the cycle: a service handled at the end of one, where the
	// input pauses, and started again from the next PAT would lose the packets before it.
	elementary()
	tables()
	elementary()
	return out
}

// psiPacket packetizes one short section with its length and CRC_32 set; each PSI PID counts
// its own continuity counter in seq (by its PID's key there, 0x1000+PID).
func (m *reloadMux) psiPacket(pid uint16, sec []byte) []byte {
	sec = slices.Clone(sec)
	n := len(sec) - 3 + 4
	sec[1], sec[2] = sec[1]&0xF0|byte(n>>8), byte(n)
	crc := psi.CRC32(sec)
	sec = append(sec, byte(crc>>24), byte(crc>>16), byte(crc>>8), byte(crc))
	p := bytes.Repeat([]byte{0xFF}, 188)
	cc := m.seq[0x1000+pid]
	m.seq[0x1000+pid]++
	p[0], p[1], p[2], p[3], p[4] = 0x47, 0x40|byte(pid>>8), byte(pid), 0x10|byte(cc&0x0F), 0
	copy(p[5:], sec)
	return p
}

// byPID lists a stream's packets by PID.
func byPID(b []byte) map[uint16][][]byte {
	m := map[uint16][][]byte{}
	for i := 0; i+188 <= len(b); i += 188 {
		m[ts.PID(b[i:])] = append(m[ts.PID(b[i:])], b[i:i+188])
	}
	return m
}

// A multiplex run over UDP whose config gains service 4, gives service 3 other keys, is
// given a file that does not read and one whose key file is not there, and loses service 3 (with a missing-key of its own, refused),
// each by SIGHUP while the packets flow:
// services 1 (descrambled) and 2 (as it came), in the config from start to end, lose nothing:
// their outputs carry every packet sent of their PMT and elementary PIDs, descrambled, in
// order, and a PAT for every PAT of the input with continuity counters that never break.
// /metrics is read on loopback while the stream runs.
// Service 4 starts with a PAT and carries the stream from there on, descrambled; service 3's
// output is finished as a normal end; the summary, -stats and /metrics count the reloads.
func TestReloadLive(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("streams for half a minute at a paced rate, too slow under -race")
	}
	bin := buildBinary(t, "")
	dir := t.TempDir()
	out := func(n int) string { return filepath.Join(dir, fmt.Sprintf("s%d.ts", n)) }
	mux := newReloadMux(t)
	config := filepath.Join(dir, "mux.yaml")
	writeConfig := func(services ...string) {
		t.Helper()
		writeFile(t, dir, "mux.yaml", []byte("services:\n"+strings.Join(services, "")))
	}
	svc := func(n int, keys string) string {
		s := fmt.Sprintf("  - service: %d\n    output: %s\n", n, out(n))
		if keys != "" {
			s += "    keys: " + keys + "\n"
		}
		return s
	}
	s1, s2 := svc(1, "cw:"+mux.keys[1]), svc(2, "")
	writeConfig(s1, s2, svc(3, "cw:0102030405060708"))
	port := freeUDPPort(t)
	stats := filepath.Join(dir, "stats.json")
	metricsAddr := fmt.Sprintf("127.0.0.1:%d", ports.TCP(t))
	tsd := proc.Start(t, 2*time.Minute, bin, "-in", fmt.Sprintf("udp://@127.0.0.1:%d?buffer=8388608", port),
		"-config", config, "-end-on-idle", "2s", "-stats", stats, "-metrics", metricsAddr)
	waitListening(t, port)

	// The sender: a cycle (45 packets) every 2 ms, in datagrams of 7 packets (the last one of
	// a cycle shorter), until stop, or 30 s at most.
	conn := udpSender(t, port)
	var cycles, datagrams atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for end := time.Now().Add(30 * time.Second); time.Now().Before(end); {
			select {
			case <-stop:
				return
			default:
			}
			b := mux.cycle()
			for i := 0; i < len(b); i += 7 * 188 {
				if _, err := conn.Write(b[i:min(i+7*188, len(b))]); err != nil {
					t.Error(err)
					return
				}
				datagrams.Add(1)
			}
			cycles.Add(1)
			time.Sleep(2 * time.Millisecond)
		}
	}()
	stopSending := sync.OnceFunc(func() { close(stop); wg.Wait() })
	defer stopSending()
	// after waits for n more cycles sent.
	after := func(n int64) {
		t.Helper()
		want := cycles.Load() + n
		for end := time.Now().Add(20 * time.Second); cycles.Load() < want; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(end) {
				t.Fatalf("the sender did not send %d cycles within 20 s", n)
			}
		}
	}
	// hangup sends SIGHUP to the command, and waits for its line saying what it made of it.
	hangup := func(want string) {
		t.Helper()
		seen := strings.Count(tsd.Output(), want)
		if err := tsd.Cmd.Process.Signal(syscall.SIGHUP); err != nil { // the process this test started, by its pid
			t.Fatal(err)
		}
		for end := time.Now().Add(15 * time.Second); strings.Count(tsd.Output(), want) <= seen; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(end) || tsd.Exited() {
				t.Fatalf("no %q after SIGHUP:\n%s", want, tsd.Output())
			}
		}
	}
	after(150)
	writeConfig(s1, s2, svc(3, "cw:0102030405060708"), svc(4, "cw:"+mux.keys[4]))
	hangup("applied: ")
	if !strings.Contains(tsd.Output(), "service 4 added") {
		t.Fatalf("reload 1:\n%s", tsd.Output())
	}
	after(150)
	writeConfig(s1, s2, svc(3, "cw:1112131415161718"), svc(4, "cw:"+mux.keys[4]))
	hangup("applied: ")
	if !strings.Contains(tsd.Output(), "service 3 with other keys") {
		t.Fatalf("reload 2:\n%s", tsd.Output())
	}
	after(100)
	writeFile(t, dir, "mux.yaml", []byte("services:\n  - service: 1\n    outptu: x.ts\n"))
	hangup("not applied")
	// A key file that is not there: nothing of the file applied, service 4 kept.
	writeConfig(s1, s2, svc(3, "cw-file:"+filepath.Join(dir, "absent.txt")))
	hangup("not applied")
	after(100)
	// With missing-key changed, which applies to every service and cannot change under the
	// run: refused with a line, the services' change applied. (The file's input would be
	// -in's to win over.)
	writeFile(t, dir, "mux.yaml", []byte("input: udp://@127.0.0.1:9\nmissing-key: drop\nservices:\n"+s1+s2+svc(4, "cw:"+mux.keys[4])))
	hangup("applied: ")
	if !strings.Contains(tsd.Output(), "service 3 removed") || !strings.Contains(tsd.Output(), "missing-key applies to every service and cannot change") {
		t.Fatalf("reload 3:\n%s", tsd.Output())
	}
	// /metrics, while the stream still runs: the reloads, and the services in force.
	client := &http.Client{Timeout: 10 * time.Second}
	resp, err := client.Get("http://" + metricsAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`tsdescramble_config_reloads_total{result="applied"} 3`, `tsdescramble_config_reloads_total{result="refused"} 2`, `tsdescramble_service_packets_total{service="4"}`} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics has no %s:\n%s", want, body)
		}
	}
	if strings.Contains(string(body), `service="3"`) {
		t.Errorf("/metrics still has the removed service 3:\n%s", body)
	}
	after(150)
	stopSending()
	if code := tsd.Wait(t, 30*time.Second); code != 0 {
		t.Fatalf("exit %d:\n%s", code, tsd.Output())
	}
	var st struct {
		Live struct {
			In struct {
				Datagrams int64 `json:"datagrams"`
			} `json:"input"`
		} `json:"live"`
		Reloads  struct{ Applied, Refused int64 }
		Services []struct {
			Service uint16
			Ended   string
			Packets int64
		}
	}
	if err := json.Unmarshal(readFile(t, stats), &st); err != nil {
		t.Fatal(err)
	}
	if got := st.Live.In.Datagrams; got != datagrams.Load() {
		t.Fatalf("the command received %d datagrams of the %d sent: loopback dropped some (a machine too busy), nothing to judge the reloads by", got, datagrams.Load())
	}
	if st.Reloads.Applied != 3 || st.Reloads.Refused != 2 {
		t.Errorf("-stats reloads %+v, want 3 applied, 2 refused", st.Reloads)
	}
	summaryHas(t, tsd.Output(), `reread on SIGHUP: 3 reloads applied, 2 reloads refused`)

	// Services 1 and 2: every packet of their PIDs, the PATs one for one.
	cyclesSent := int(cycles.Load())
	for _, n := range []uint16{1, 2} {
		got := byPID(readFile(t, out(int(n))))
		for _, pid := range []uint16{0x100 + n, 0x200 + n} {
			if want := mux.sent[pid]; !slices.EqualFunc(got[pid], want, bytes.Equal) {
				t.Errorf("service %d PID %#x: %d packets out of %d sent, or not the same", n, pid, len(got[pid]), len(want))
			}
		}
		pats := got[psi.PATPID]
		if len(pats) != cyclesSent+1 {
			t.Errorf("service %d: %d PATs for %d sent", n, len(pats), cyclesSent+1)
		}
		for i := 1; i < len(pats); i++ {
			if pats[i][3]&0x0F != (pats[i-1][3]+1)&0x0F {
				t.Errorf("service %d: the PAT's continuity counter breaks at its %dth packet", n, i)
				break
			}
		}
		for pid := range got {
			if pid != psi.PATPID && pid != 0x100+n && pid != 0x200+n {
				t.Errorf("service %d: %d packets of PID %#x, not its own", n, len(got[pid]), pid)
			}
		}
	}
	// Service 4, added: from a PAT on, the clear packets of its stream, the last ones sent.
	s4 := readFile(t, out(4))
	if len(s4) == 0 || ts.PID(s4) != psi.PATPID {
		t.Fatalf("service 4's output does not start with a PAT (%d bytes)", len(s4))
	}
	got4, sent4 := byPID(s4)[0x204], mux.sent[0x204]
	if len(got4) == 0 || len(got4) > len(sent4) || !slices.EqualFunc(got4, sent4[len(sent4)-len(got4):], bytes.Equal) {
		t.Errorf("service 4: %d packets, not the last of the %d sent, descrambled", len(got4), len(sent4))
	}
	// Service 3, changed then removed: a finished file holding packets of its stream, in the
	// order sent, fewer than were sent.
	got3, sent3 := byPID(readFile(t, out(3)))[0x203], mux.sent[0x203]
	if len(got3) == 0 || len(got3) >= len(sent3) {
		t.Errorf("service 3: %d packets of the %d sent", len(got3), len(sent3))
	}
	for i, j := 0, 0; i < len(got3); i++ {
		for j < len(sent3) && !bytes.Equal(sent3[j], got3[i]) {
			j++
		}
		if j == len(sent3) {
			t.Errorf("service 3: its packet %d is not of the stream sent, in order", i)
			break
		}
	}
	var ended []string
	for _, s := range st.Services {
		if s.Ended != "" {
			ended = append(ended, fmt.Sprintf("%d %s", s.Service, s.Ended))
		}
	}
	if !slices.Equal(ended, []string{"3 changed", "3 removed"}) {
		t.Errorf("-stats services ended: %v, want service 3 changed, then removed", ended)
	}
	// Every output in place, none kept as partial (a removed service ends as at a normal end),
	// and nothing left of what the refused reloads opened.
	if names := dirNames(t, dir); !slices.Equal(names, []string{"mux.yaml", "s1.ts", "s2.ts", "s3.ts", "s4.ts", "stats.json"}) {
		t.Errorf("files left: %v", names)
	}
}
