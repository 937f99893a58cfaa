//go:build dvbcsa

package streamtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/tsdescramble/tsdescramble/ts"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tsdescramble/tsdescramble/psi"
)

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// runStatus runs the command on stdin and returns stdout, stderr and the exit status.
func runStatus(t *testing.T, in []byte, args ...string) ([]byte, string, int) {
	t.Helper()
	cmd := exec.Command(binary(t), args...)
	cmd.Stdin = bytes.NewReader(in)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.Bytes(), stderr.String(), code
}

// Key files in every format, and lists that do not start at the stream's first crypto period.
func TestKeyFormatsAndSync(t *testing.T) {
	clear, scrambled := scramble(t, clearStreams(t)["h264-aac"], ts.Framing188, testCWs, 600, 11)
	hex := func(i int) string { return fmt.Sprintf("%x", testCWs[i%len(testCWs)]) }
	var cwl, pairs, spaced strings.Builder
	cwl.WriteString("# OSCam cardserver - http://www.streamboard.tv/oscam/\n# control word log file for use with tsdec offline decrypter\n# CAID 0x2600, SID 0x0001, SERVICE \"test\"\n")
	for i := range 8 { // the scrambler's periods: even CW0, odd CW1, even CW2, ...
		cw := testCWs[i%len(testCWs)]
		fmt.Fprintf(&cwl, "%d %02X %02X %02X %02X %02X %02X %02X %02X # 12:00:%02d\n", i%2, cw[0], cw[1], cw[2], cw[3], cw[4], cw[5], cw[6], cw[7], i)
	}
	for i := 0; i < 4; i += 2 {
		fmt.Fprintf(&pairs, "%s %s\n", hex(i), hex(i+1))
	}
	for i := range 4 {
		cw := testCWs[i]
		fmt.Fprintf(&spaced, "%02x:%02x:%02x:%02x:%02x:%02x:%02x:%02x\n", cw[0], cw[1], cw[2], cw[3], cw[4], cw[5], cw[6], cw[7])
	}
	for _, c := range []struct {
		name, file, content, log string
	}{
		{"cwl", "keys.cwl", cwl.String(), ""},
		{"pairs", "pairs.txt", pairs.String(), ""},
		{"separators", "list.txt", spaced.String(), ""},
		// The list starts two crypto periods early: the first PES start finds CW 3.
		{"list starts early", "early.txt", "# extra keys first\n0123456989abcd01\nfedcba9876543210\n" + hex(0) + "\n" + hex(1) + "\n" + hex(2) + "\n" + hex(3) + "\n", "CW 3 of 6 fits the first scrambled PES start"},
		// The list is rotated: the stream's first period uses the list's second CW.
		{"list rotated", "rot.txt", hex(3) + "\n" + hex(0) + "\n" + hex(1) + "\n" + hex(2) + "\n", "CW 2 of 4 fits"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, stderr, code := runStatus(t, scrambled, "-cw-file", writeFile(t, c.file, c.content))
			if code != 0 || !bytes.Equal(out, clear) {
				t.Fatalf("exit %d, output identical: %v\n%s", code, bytes.Equal(out, clear), stderr)
			}
			if c.log != "" && !strings.Contains(stderr, c.log) {
				t.Fatalf("stderr does not say %q:\n%s", c.log, stderr)
			}
			for _, cw := range testCWs {
				if strings.Contains(strings.ToLower(stderr), fmt.Sprintf("%x", cw)) {
					t.Fatalf("a control word appears on stderr without -show-keys:\n%s", stderr)
				}
			}
		})
	}
}

// A list that misses a crypto period in the middle: the period without its key is left as it
// came (still scrambled, exit status 3, said on stderr), the list is realigned at the next
// period, and everything else comes out clear.
func TestKeyListRealigned(t *testing.T) {
	clear, scrambled := scramble(t, clearStreams(t)["h264-aac"], ts.Framing188, testCWs, 600, 12)
	list := fmt.Sprintf("%x\n%x\n%x\n", testCWs[0], testCWs[2], testCWs[3]) // CW 1 of the stream is missing
	out, stderr, code := runStatus(t, scrambled, "-cw-file", writeFile(t, "gap.txt", list))
	if code != 3 || !strings.Contains(stderr, "left scrambled") {
		t.Fatalf("exit %d, want 3 and the periods left scrambled named:\n%s", code, stderr)
	}
	if !strings.Contains(stderr, "realigned") {
		t.Fatalf("no realignment reported:\n%s", stderr)
	}
	// Every packet is either clear or, in the period without key, as it came.
	left := 0
	for i := 0; i < len(out); i += 188 {
		switch {
		case bytes.Equal(out[i:i+188], clear[i:i+188]):
		case bytes.Equal(out[i:i+188], scrambled[i:i+188]):
			left++
		default:
			t.Fatalf("packet %d is neither clear nor as it came", i/188)
		}
	}
	if left < 550 || left > 650 {
		t.Fatalf("%d packets left as they came: want those of the period without key (600 scrambled packets)", left)
	}
}

// -biss and -cw-env, and a key that does not fit: exit 3 with the output written.
func TestOtherKeySources(t *testing.T) {
	biss := [][]byte{{0x11, 0x22, 0x33, 0x66, 0x44, 0x55, 0x66, 0xff}}
	clear, scrambled := scramble(t, clearStreams(t)["h264-aac"], ts.Framing188, [][]byte{biss[0], biss[0], biss[0]}, 900, 13)
	if out, stderr, code := runStatus(t, scrambled, "-biss", "112233445566"); code != 0 || !bytes.Equal(out, clear) {
		t.Fatalf("-biss: exit %d\n%s", code, stderr)
	}
	cmd := exec.Command(binary(t), "-cw-env", "TSD_TEST_CW", "-q")
	cmd.Env = append(os.Environ(), "TSD_TEST_CW=11223366445566ff")
	cmd.Stdin = bytes.NewReader(scrambled)
	if out, err := cmd.Output(); err != nil || !bytes.Equal(out, clear) {
		t.Fatalf("-cw-env: %v", err)
	}
	out, stderr, code := runStatus(t, scrambled, "-cw", "0102030405060708")
	if code != 3 || len(out) != len(scrambled) {
		t.Fatalf("wrong key: exit %d, %d bytes out of %d\n%s", code, len(out), len(scrambled), stderr)
	}
}

// -service and -pid descramble only the PIDs asked for; the rest passes through untouched.
func TestSelection(t *testing.T) {
	clear188 := clearStreams(t)["mpeg2-two-programs"]
	clear, scrambled := scramble(t, clear188, ts.Framing188, testCWs, 800, 14)
	tr := psi.NewTracker()
	for at := 0; at+188 <= len(clear); at += 188 {
		tr.Feed(clear[at : at+188])
	}
	two, ok := tr.ServicePIDs(2)
	if !ok {
		t.Fatal("the test stream has no service 2")
	}
	inTwo := map[uint16]bool{}
	for _, pid := range two {
		inTwo[pid] = true
	}
	want := make([]byte, 0, len(clear))
	for at := 0; at+188 <= len(clear); at += 188 {
		if inTwo[ts.PID(clear[at:])] {
			want = append(want, clear[at:at+188]...)
		} else {
			want = append(want, scrambled[at:at+188]...)
		}
	}
	cwFile := writeCWFile(t, testCWs)
	if out, stderr, code := runStatus(t, scrambled, "-cw-file", cwFile, "-service", "2"); code != 0 || !bytes.Equal(out, want) {
		t.Fatalf("-service 2: exit %d, output as wanted: %v\n%s", code, bytes.Equal(out, want), stderr)
	}
	var list []string
	for _, pid := range two {
		list = append(list, fmt.Sprintf("%#x", pid))
	}
	if out, stderr, code := runStatus(t, scrambled, "-cw-file", cwFile, "-pid", strings.Join(list, ",")); code != 0 || !bytes.Equal(out, want) {
		t.Fatalf("-pid %s: exit %d\n%s", strings.Join(list, ","), code, stderr)
	}
}

// -stats writes counts that match the stream, counted here independently from the input.
func TestStatsJSON(t *testing.T) {
	_, scrambled := scramble(t, clearStreams(t)["mpeg2-two-programs"], ts.Framing204, testCWs, 700, 15)
	type pidCounts struct {
		PID                                        uint16
		Packets, Clear, Reserved, Even, Odd, Descr int64
		Short, NoPayload                           int64
		PESGood                                    [2]int64 `json:"pes_good"`
		PESBad                                     [2]int64 `json:"pes_bad"`
	}
	want := map[uint16]*pidCounts{}
	starts := 0
	for at := 0; at+204 <= len(scrambled); at += 204 {
		p := scrambled[at : at+188]
		pid := ts.PID(p)
		c := want[pid]
		if c == nil {
			c = &pidCounts{PID: pid}
			want[pid] = c
		}
		c.Packets++
		switch p[3] >> 6 {
		case 0:
			c.Clear++
			continue
		case 1:
			c.Reserved++
			continue
		case 2:
			c.Even++
		case 3:
			c.Odd++
		}
		off := 4
		if p[3]&0x20 != 0 {
			off += 1 + int(p[4])
		}
		switch {
		case p[3]&0x10 == 0 || off >= 188:
			c.NoPayload++
		case 188-off < 8:
			c.Short++
		default:
			c.Descr++
			if p[1]&0x40 != 0 && 188-off >= 9 {
				starts++
			}
		}
	}
	path := filepath.Join(t.TempDir(), "stats.json")
	if _, stderr, code := runStatus(t, scrambled, "-cw-file", writeCWFile(t, testCWs), "-stats", path); code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Framing                     int
		Packets, Descrambled, Short int64
		PESGood                     int64 `json:"pes_good"`
		PESBad                      int64 `json:"pes_bad"`
		KeyChanges                  int   `json:"key_changes"`
		PIDs                        []struct {
			PID                                              uint16
			Packets, Clear, Reserved, Even, Odd, Descrambled int64
			Short                                            int64
			NoPayload                                        int64    `json:"no_payload"`
			PESGood                                          [2]int64 `json:"pes_good"`
			PESBad                                           [2]int64 `json:"pes_bad"`
		}
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	if got.Framing != 204 || got.Packets != int64(len(scrambled)/204) || got.PESBad != 0 || got.PESGood != int64(starts) {
		t.Fatalf("totals: framing %d packets %d PES good %d bad %d; want 204, %d, %d, 0", got.Framing, got.Packets, got.PESGood, got.PESBad, len(scrambled)/204, starts)
	}
	if len(got.PIDs) != len(want) {
		t.Fatalf("%d PIDs in the statistics, %d in the stream", len(got.PIDs), len(want))
	}
	for _, g := range got.PIDs {
		w := want[g.PID]
		if w == nil || g.Packets != w.Packets || g.Clear != w.Clear || g.Reserved != w.Reserved || g.Even != w.Even ||
			g.Odd != w.Odd || g.Descrambled != w.Descr || g.Short != w.Short || g.NoPayload != w.NoPayload ||
			g.PESBad != [2]int64{} {
			t.Fatalf("PID %#x: got %+v, want %+v", g.PID, g, w)
		}
	}
}
