package probe

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/tsdescramble/tsdescramble/internal/testsupport/testmedia"
)

// ffmpegTwoPrograms makes a 3-second stream with two programs of MPEG-2 video and MPEG-1
// layer II audio, or skips the test when ffmpeg is not installed.
func ffmpegTwoPrograms(t *testing.T) []byte {
	t.Helper()
	return testmedia.TwoPrograms(t, 3, "352x288", "Zwei Kanäle")
}

// scrambleMarks sets the scrambling bits of the PES packets of ts in place, in a pattern per
// PID, and returns the counts the report must show, found by reading the bits back.
func scrambleMarks(ts []byte) map[uint16]*expected {
	seen := map[uint16]int{}
	for i := 0; i+188 <= len(ts); i += 188 {
		p := ts[i : i+188]
		pid := uint16(p[1]&0x1F)<<8 | uint16(p[2])
		k := seen[pid]
		seen[pid]++
		tsc := byte(0)
		switch pid {
		case 0x100: // periods of 100 packets, even then odd, then clear after 600
			if k < 600 {
				tsc = byte(2 + k/100%2)
			}
		case 0x101: // all odd
			tsc = 3
		case 0x102: // reserved every 7th, even from 50 to 149
			switch {
			case k%7 == 3:
				tsc = 1
			case k >= 50 && k < 150:
				tsc = 2
			}
		default: // 0x103 and the PSI stay clear
			continue
		}
		p[3] = p[3]&0x3F | tsc<<6
	}
	want := map[uint16]*expected{}
	for i := 0; i+188 <= len(ts); i += 188 {
		p := ts[i : i+188]
		pid := uint16(p[1]&0x1F)<<8 | uint16(p[2])
		if want[pid] == nil {
			want[pid] = &expected{}
		}
		want[pid].add(p[3] >> 6)
	}
	return want
}

func TestProbeFFmpegTwoPrograms(t *testing.T) {
	ts := ffmpegTwoPrograms(t)
	want := scrambleMarks(ts)
	for _, pid := range []uint16{0x0000, 0x0011, 0x0100, 0x0101, 0x0102, 0x0103, 0x1000, 0x1001} {
		if want[pid] == nil {
			t.Fatalf("ffmpeg made no PID 0x%04X; PIDs: %v", pid, want)
		}
	}
	if want[0x100].periods < 3 || want[0x102].reserved == 0 || want[0x101].odd == 0 {
		t.Fatalf("the stream is too short for the scrambling pattern: %+v %+v", *want[0x100], *want[0x102])
	}

	rep, err := Probe(bytes.NewReader(ts))
	if err != nil {
		t.Fatal(err)
	}
	checkCounts(t, rep, want)

	// Both programs with their names and streams.
	if len(rep.Services) != 2 {
		t.Fatalf("%d services, want 2", len(rep.Services))
	}
	for i, w := range []struct {
		number, pmt, v, a uint16
		name              string
	}{{1, 0x1000, 0x100, 0x101, "one"}, {2, 0x1001, 0x102, 0x103, "Zwei Kanäle"}} {
		s := rep.Services[i]
		if s.Number != w.number || s.PMTPID != w.pmt || s.Name != w.name || s.Provider != "FFmpeg" || !s.PMTSeen ||
			s.PCRPID == nil || *s.PCRPID != w.v || len(s.CA) != 0 {
			t.Errorf("service %d: %+v", w.number, s)
		}
		if !streamsEqual(s.Streams, []Stream{
			{PID: w.v, StreamType: 0x02, TypeName: "MPEG-2 video", CA: []CA{}},
			{PID: w.a, StreamType: 0x03, TypeName: "MPEG-1 audio", CA: []CA{}},
		}) {
			t.Errorf("service %d streams: %+v", w.number, s.Streams)
		}
	}

	// Three seconds of PCRs, give or take a frame or two.
	if rep.Timing == nil || rep.Timing.DurationSeconds < 2.8 || rep.Timing.DurationSeconds > 3.2 {
		t.Errorf("timing %+v, want about 3 s", rep.Timing)
	} else if rate := float64(len(ts)*8) / 3; float64(rep.Timing.Bitrate) < rate*0.8 || float64(rep.Timing.Bitrate) > rate*1.25 {
		t.Errorf("bitrate %d bit/s, want about %.0f", rep.Timing.Bitrate, rate)
	}

	// Decoded from JSON, as a script would.
	js, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Services []struct {
			Number uint16 `json:"number"`
			Name   string `json:"name"`
		} `json:"services"`
		PIDs []struct {
			PID           uint16 `json:"pid"`
			Description   string `json:"description"`
			Even          int64  `json:"even"`
			Odd           int64  `json:"odd"`
			CryptoPeriods int64  `json:"crypto_periods"`
		} `json:"pids"`
	}
	if err := json.Unmarshal(js, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Services) != 2 || doc.Services[1].Name != "Zwei Kanäle" || len(doc.PIDs) != len(want) {
		t.Errorf("JSON: %s", js)
	}
	for _, p := range doc.PIDs {
		if w := want[p.PID]; w == nil || p.Even != w.even || p.Odd != w.odd || p.CryptoPeriods != w.periods {
			t.Errorf("JSON PID 0x%04X %+v, want %+v", p.PID, p, w)
		}
	}

	var txt bytes.Buffer
	rep.WriteText(&txt)
	for _, s := range []string{`service 1 (0x0001) "one" from "FFmpeg"`, `service 2 (0x0002) "Zwei Kanäle"`, "MPEG-2 video of service 2"} {
		if !strings.Contains(txt.String(), s) {
			t.Errorf("text lacks %q:\n%s", s, txt.String())
		}
	}

	// The same packets in 192 and 204-byte framing give the same report.
	for _, size := range []int{192, 204} {
		r2, err := Probe(bytes.NewReader(reframe(ts, size)))
		if err != nil {
			t.Fatalf("%d: %v", size, err)
		}
		if r2.Framing != size {
			t.Errorf("framing %d, want %d", r2.Framing, size)
		}
		sameButFraming(t, rep, r2)
	}
}

// ffmpegRun runs ffmpeg with args, writing to a file it returns the content of, or skips the
// test when ffmpeg is not installed or under -short.
func ffmpegRun(t *testing.T, name string, args ...string) []byte {
	t.Helper()
	return testmedia.Make(t, name, args...)
}

// TestProbeFFmpegM2TS reads a Blu-ray transport stream made by ffmpeg's m2ts mode: 192-byte
// packets, an "HDMV" registration in the program loop, and the Blu-ray stream types for
// AC-3, E-AC-3, DTS and LPCM.
func TestProbeFFmpegM2TS(t *testing.T) {
	ts := ffmpegRun(t, "bd.m2ts",
		"-f", "lavfi", "-i", "testsrc=size=160x120:rate=25",
		"-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000",
		"-t", "1", "-map", "0:v", "-map", "1:a", "-map", "1:a", "-map", "1:a", "-map", "1:a",
		"-c:v", "mpeg2video", "-c:a:0", "ac3", "-c:a:1", "eac3", "-c:a:2", "dca", "-c:a:3", "pcm_bluray",
		"-strict", "-2", "-f", "mpegts", "-mpegts_m2ts_mode", "1")
	rep, err := Probe(bytes.NewReader(ts))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Framing != 192 || len(rep.Services) != 1 {
		t.Fatalf("framing %d, services %+v", rep.Framing, rep.Services)
	}
	var got []string
	for _, st := range rep.Services[0].Streams {
		got = append(got, fmt.Sprintf("0x%02X %s", st.StreamType, st.TypeName))
	}
	want := []string{"0x02 MPEG-2 video", "0x81 AC-3 audio", "0x84 E-AC-3 audio", "0x82 DTS audio", "0x80 LPCM audio"}
	if !slices.Equal(got, want) {
		t.Errorf("streams\n got %q\nwant %q", got, want)
	}
	if rep.PSIErrors != 0 {
		t.Errorf("%d PSI errors", rep.PSIErrors)
	}
}

// TestProbeFFmpegPMTFirst cuts an ffmpeg stream so that its PMTs come only before its first
// PAT, as in a recording that starts between a PAT and the PMTs and stops before they repeat.
func TestProbeFFmpegPMTFirst(t *testing.T) {
	ts := ffmpegTwoPrograms(t)
	var cut []byte
	pats := 0
	for i := 0; i+188 <= len(ts); i += 188 {
		p := ts[i : i+188]
		switch pid := uint16(p[1]&0x1F)<<8 | uint16(p[2]); {
		case pid == 0:
			pats++
			if pats == 1 {
				continue // the first PAT is lost
			}
		case (pid == 0x1000 || pid == 0x1001) && pats > 1:
			continue // and the PMTs after the second
		}
		cut = append(cut, p...)
	}
	rep, err := Probe(bytes.NewReader(cut))
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Services) != 2 || !rep.Services[0].PMTSeen || !rep.Services[1].PMTSeen ||
		len(rep.Services[1].Streams) != 2 || rep.Services[1].Streams[0].TypeName != "MPEG-2 video" {
		t.Errorf("services %+v", rep.Services)
	}
}
