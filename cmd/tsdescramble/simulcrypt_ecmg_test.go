package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tsdescramble/tsdescramble/internal/testsupport/ecmgtest"
	"github.com/tsdescramble/tsdescramble/internal/testsupport/fakeecmg"
	"github.com/tsdescramble/tsdescramble/ts"
)

// reception is what the receiver model made of a SimulCrypt output.
type reception struct {
	packets     int // packets besides the ECMs
	clear       int // of which sent clear, as the input had them
	descrambled int // scrambled, and the input's bytes again with a CW of the ECMs before them
	lost        int // scrambled, and no ECM before them gave their CW
	firstLost   int // the output packet of the first lost one, -1 when none
	ecms        int // ECM sections read
	ecmPackets  int
	badECM      int  // ECM packets a receiver drops: marked scrambled, or after a continuity gap
	pmtEarly    bool // a PMT claimed a CA_descriptor before any ECM
	flips       []int
}

// receive is the receiver model: a set-top box that reads the ECM sections on the ECM PID as
// they come (clear packets, continuity checked), takes the even and the odd CW of each (the
// example ECMG's ECMs: XORed with ecmgtest.XORKey, a slot of zeros for a CW not sent), and
// descrambles each scrambled packet with the CW of its parity from the last ECM before it,
// with an independent descrambler (oracleDecrypt). Every packet but the ECMs must be the
// input's packet, in order, clear or descrambled, the PMT aside; a scrambled packet no ECM
// before it can descramble is lost. out may stop short of the input's end.
func receive(t *testing.T, out, in []byte, pmtPID uint16) reception {
	t.Helper()
	r := reception{firstLost: -1}
	var keys [2]func([]byte)
	cache := map[string]func([]byte){}
	want := packets(in)
	var sec []byte
	lastCC, lastTSC := -1, ts.Scrambling(0xFF)
	for i, p := range packets(out) {
		if ts.PID(p) == ecmPID {
			r.ecmPackets++
			if ts.TSC(p) != ts.Clear {
				r.badECM++
				sec = nil
				continue
			}
			if p[3]&0x10 != 0 {
				if cc := int(p[3] & 0xF); lastCC >= 0 && cc != (lastCC+1)&0xF {
					r.badECM++
					sec = nil
				}
				lastCC = int(p[3] & 0xF)
			}
			off, ok := ts.PayloadOffset(p)
			if !ok || off >= ts.PacketSize {
				continue
			}
			pl := p[off:]
			switch {
			case ts.PUSI(p) && 1+int(pl[0]) < len(pl):
				sec = append(sec[:0], pl[1+int(pl[0]):]...)
			case !ts.PUSI(p) && sec != nil:
				sec = append(sec, pl...)
			default:
				continue
			}
			if len(sec) < 3 || len(sec) < 3+int(binary.BigEndian.Uint16(sec[1:])&0xFFF) {
				continue
			}
			if (sec[0] == 0x80 || sec[0] == 0x81) && len(sec) >= 19 {
				r.ecms++
				for slot := range 2 {
					raw := sec[3+8*slot : 11+8*slot]
					if bytes.Equal(raw, make([]byte, 8)) {
						continue // no CW of this parity in the ECM
					}
					cw := make([]byte, 8)
					for j := range cw {
						cw[j] = raw[j] ^ ecmgtest.XORKey[j]
					}
					if cache[string(cw)] == nil {
						cache[string(cw)] = oracleDecrypt(t, cw)
					}
					keys[slot] = cache[string(cw)]
				}
			}
			sec = nil
			continue
		}
		if r.packets >= len(want) {
			t.Fatalf("output packet %d: more packets than the input has", i)
		}
		w := want[r.packets]
		r.packets++
		tsc := ts.TSC(p)
		if tsc == ts.Clear {
			switch {
			case bytes.Equal(p, w):
			case ts.PID(p) == pmtPID && ts.PID(w) == pmtPID:
				r.pmtEarly = r.pmtEarly || r.ecms == 0
			default:
				t.Fatalf("output packet %d (PID %#x) is clear and not the input's packet %d (PID %#x): a packet was lost or forged", i, ts.PID(p), r.packets-1, ts.PID(w))
			}
			r.clear++
			continue
		}
		if tsc != lastTSC {
			lastTSC = tsc
			r.flips = append(r.flips, i)
		}
		q := append([]byte(nil), p...)
		if k := keys[tsc&1]; k != nil {
			if off, ok := ts.PayloadOffset(q); ok {
				k(q[off:])
			}
			ts.SetTSC(q, ts.Clear)
		}
		if bytes.Equal(q, w) {
			r.descrambled++
		} else {
			if r.firstLost < 0 {
				r.firstLost = i
			}
			r.lost++
		}
	}
	t.Logf("receiver (%s): %d packets, %d clear, %d descrambled, %d lost; %d ECMs in %d packets, %d dropped",
		oracleName, r.packets, r.clear, r.descrambled, r.lost, r.ecms, r.ecmPackets, r.badECM)
	return r
}

// TestSimulCryptMisbehavingECMG: whatever the ECMG does, no packet goes out scrambled with a
// CW that no ECM before it carries. A receiver model reads the output and must recover every
// scrambled packet from the ECMs in it, or find it sent clear (with -ecm-wait clear, and then
// no PMT claims a CA_descriptor before the first ECM); a run in which the stream went out
// without its ECM exits 1, with one line that says so.
func TestSimulCryptMisbehavingECMG(t *testing.T) {
	t.Parallel()
	in := filepath.Join("..", "..", "samples", "demo-clear.ts")
	clear := readFile(t, in)
	all := len(packets(clear))
	sync := func(cp int, d []byte) []byte {
		if cp == 0 {
			d[0] = 0x46
		}
		return d
	}
	badHeaders := func(cp int, d []byte) []byte {
		for i := 0; i < len(d); i += 188 {
			d[i+1] = 0x80 | d[i+1]&0x40 | 0x20 | 0x0A // transport_error_indicator, priority, PID 0x0Axx
			d[i+3] = 0xC0 | d[i+3]&0x30 | 7           // TSC 11, the same continuity_counter each
		}
		return d
	}
	short := func(cp int, d []byte) []byte {
		if cp >= 2 {
			return d[:100]
		}
		return d
	}
	huge := func(cp int, d []byte) []byte {
		if cp >= 2 {
			return append(d, bytes.Repeat([]byte{0x80, 0x70, 16}, 65000/3)...)
		}
		return d
	}
	const (
		scrambledAll = iota // exit 0, every scrambled packet recovered, most packets scrambled
		stopped             // exit 1 before any packet goes out scrambled
		sentClear           // exit 1, every packet clear
	)
	for _, tc := range []struct {
		name string
		fc   fakeecmg.Config
		args []string
		want int
		says string
	}{
		{"silent", fakeecmg.Config{Silent: true}, []string{"-ecm-wait", "hold:1s"}, stopped,
			"no ECM came for crypto period 0 within 1s (the ECMG answered no CW_provision)"},
		{"silent, sent clear", fakeecmg.Config{Silent: true}, []string{"-ecm-wait", "clear:300ms"}, sentClear,
			"no ECM came within -ecm-wait clear:300ms, and the first 4611 packets went out clear"},
		{"3 s late", fakeecmg.Config{LateAt: 0, Late: 3 * time.Second}, nil, scrambledAll, ""},
		{"error to the first CW_provision", fakeecmg.Config{ErrorAt: 0}, nil, scrambledAll,
			"no ECM for crypto period 0: the stream waits for the ECM of crypto period 1"},
		{"wrong CP number", fakeecmg.Config{CPOffset: 100}, []string{"-ecm-wait", "1s"}, stopped,
			"no ECM came for crypto period 0 within 1s (2 ECMs refused)"},
		{"TS packets with bad header bytes", fakeecmg.Config{Packets: true, Datagram: badHeaders}, nil, scrambledAll, ""},
		{"TS packets, a bad sync byte", fakeecmg.Config{Packets: true, Datagram: sync}, nil, scrambledAll,
			"ECM for crypto period 0 refused: TS packet 0 has sync byte 0x46"},
		{"TS packets, 100-byte datagrams", fakeecmg.Config{Packets: true, Datagram: short}, nil, scrambledAll,
			"ECM for crypto period 2 refused: section_TSpkt_flag 1, and 100 bytes are not whole TS packets"},
		{"65 kB ECMs", fakeecmg.Config{Datagram: huge}, nil, scrambledAll,
			"ECM for crypto period 2 refused: 65017 bytes, more than a section may hold (4096)"},
		{"lead_CW 2, CW_per_msg 1", fakeecmg.Config{LeadCW: 2, CWPerMsg: 1}, nil, stopped,
			"lead_CW 2 and CW_per_msg 1: the ECM of a crypto period would not carry the CW of that period"},
		{"lead_CW 1, CW_per_msg 1", fakeecmg.Config{LeadCW: 1, CWPerMsg: 1}, nil, stopped, "lead_CW 1 and CW_per_msg 1"},
		{"lead_CW 1, CW_per_msg 3", fakeecmg.Config{LeadCW: 1, CWPerMsg: 3}, nil, stopped,
			"an ECM would carry two CWs of one parity"},
		{"lead_CW 0, CW_per_msg 1", fakeecmg.Config{LeadCW: 0, CWPerMsg: 1}, nil, scrambledAll, ""},
		{"lead_CW 0, CW_per_msg 2", fakeecmg.Config{LeadCW: 0, CWPerMsg: 2, DelayStart: -300 * time.Millisecond}, nil, scrambledAll, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fc := tc.fc
			if fc.ErrorAt == 0 && tc.name != "error to the first CW_provision" {
				fc.ErrorAt = -1
			}
			if fc.Late == 0 {
				fc.LateAt = -1
			}
			fc.CloseAt = -1
			addr := fakeecmg.Start(t, fc)
			var stdout, stderr bytes.Buffer
			args := append([]string{"scramble", "-i", in, "-o", "-", "-ecmg", addr, "-super-cas-id", "4ADC0000",
				"-ecm-pid", fmt.Sprint(ecmPID), "-cp-duration", "1s"}, tc.args...)
			start := time.Now()
			code := runEnv(t, Env{Stdout: &stdout, Stderr: &stderr, IsTerminal: func(*os.File) bool { return false }}, args...)
			r := result{code: code, stderr: stderr.String()}
			t.Logf("exit %d after %v:\n%s", code, time.Since(start).Round(time.Millisecond), r.stderr)
			got := receive(t, stdout.Bytes(), clear, 0x1000)
			if got.lost > 0 {
				t.Errorf("%d scrambled packets no ECM before them can descramble, the first at output packet %d", got.lost, got.firstLost)
			}
			if got.badECM > 0 {
				t.Errorf("%d ECM packets a receiver drops (scrambled, or a continuity gap)", got.badECM)
			}
			if got.pmtEarly {
				t.Error("a PMT claims a CA_descriptor before any ECM")
			}
			if tc.name == "wrong CP number" && !strings.Contains(r.stderr, "ECM for crypto period 100 refused: a crypto period not asked for") {
				t.Error("the refusal of the ECM is not logged")
			}
			if tc.says != "" && !strings.Contains(r.stderr, tc.says) {
				t.Errorf("stderr lacks %q", tc.says)
			}
			// The run's verdict: the last line of stderr, one line.
			last := strings.TrimSpace(r.stderr)
			last = last[strings.LastIndex(last, "\n")+1:]
			switch tc.want {
			case scrambledAll:
				if code != 0 || got.packets != all || got.descrambled < all/2 || got.clear+got.descrambled != all {
					t.Errorf("want exit 0 and the %d packets, most scrambled and all recovered; exit %d", all, code)
				}
			case stopped:
				if code != exitFail || got.descrambled > 0 || !strings.Contains(last, tc.says) {
					t.Errorf("want exit 1, nothing scrambled and the last line saying why; exit %d", code)
				}
			case sentClear:
				if code != exitFail || got.clear != all || got.ecmPackets > 0 || !strings.Contains(last, "went out clear") {
					t.Errorf("want exit 1, every packet clear and the last line saying so; exit %d", code)
				}
			}
			// A section fits one TS packet: an ECM of more is not in the stream.
			if most := 23 * (got.ecms + 1); got.ecmPackets > most {
				t.Errorf("%d ECM packets for %d ECMs", got.ecmPackets, got.ecms)
			}
		})
	}
}

// TestSimulCryptOutagePacing: an ECMG that goes away for a while and comes back in a run
// paced by the stream's PCRs (stdin, read about ten times as fast as real time, as a file is
// read faster still): the periods held back during the outage are not made up for afterwards
// by periods back to back; none lasts less than -cp-duration of stream time, and every
// scrambled packet is recovered by the receiver model.
func TestSimulCryptOutagePacing(t *testing.T) {
	const cp = time.Second
	addr := fakeecmg.Start(t, fakeecmg.Config{ErrorAt: -1, CloseAt: 4, LateAt: -1, Connections: 2, Outage: 600 * time.Millisecond})
	in := filepath.Join("..", "..", "samples", "demo-clear.ts")
	clear := readFile(t, in)
	var stdout, stderr bytes.Buffer
	code := runEnv(t, Env{Stdin: &pacedReader{data: clear, every: 28 * time.Millisecond}, Stdout: &stdout, Stderr: &stderr,
		IsTerminal: func(*os.File) bool { return false }},
		"scramble", "-i", "-", "-o", "-", "-ecmg", addr, "-super-cas-id", "4ADC0000", "-ecm-pid", fmt.Sprint(ecmPID), "-cp-duration", cp.String())
	t.Logf("exit %d:\n%s", code, stderr.String())
	if code != 0 || !strings.Contains(stderr.String(), "the ECMG is back after") {
		t.Fatalf("want exit 0 and the ECMG back; exit %d", code)
	}
	got := receive(t, stdout.Bytes(), clear, 0x1000)
	if got.lost > 0 || got.packets != len(packets(clear)) {
		t.Fatalf("%d packets lost to the receiver", got.lost)
	}
	// Each flip is placed between the last scrambled packet before it and the first after it,
	// on the clock of the input's PCRs (the ECM packets put in are left out): a period lasts at
	// most from the packet after the last one before its flip to the first one of the next.
	times := pcrTimes(packets(clear))
	type flip struct{ lo, hi int } // input packets
	var flips []flip
	last, lastTSC, i := -1, ts.Scrambling(0xFF), -1
	for _, p := range packets(stdout.Bytes()) {
		if ts.PID(p) == ecmPID {
			continue
		}
		i++
		if tsc := ts.TSC(p); tsc == ts.Even || tsc == ts.Odd {
			if tsc != lastTSC {
				flips = append(flips, flip{last + 1, i})
				lastTSC = tsc
			}
			last = i
		}
	}
	var lengths []time.Duration
	for i := 1; i < len(flips); i++ {
		lengths = append(lengths, times[flips[i].hi]-times[flips[i-1].lo])
	}
	t.Logf("crypto periods of at most %v", lengths)
	if len(lengths) < 6 {
		t.Fatalf("%d periods", len(lengths))
	}
	for i, d := range lengths {
		// A millisecond for the rounding of two clocks, a quarter of the input's packet interval.
		if d < cp-time.Millisecond {
			t.Errorf("crypto period %d lasts %v of stream time at most, less than -cp-duration %v", i, d, cp)
		}
	}
}

// pacedReader hands out data 16 kB at a time, every apart (slowReader's 4 ms is 70 times the
// demo's rate).
type pacedReader struct {
	data  []byte
	every time.Duration
}

func (r *pacedReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	time.Sleep(r.every)
	n := copy(p[:min(len(p), 16<<10)], r.data)
	r.data = r.data[n:]
	return n, nil
}
