package scs

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/tsdescramble/tsdescramble/internal/testsupport/fakeecmg"
	"github.com/tsdescramble/tsdescramble/psi"
	"github.com/tsdescramble/tsdescramble/simulcrypt"
	"github.com/tsdescramble/tsdescramble/ts"
)

const (
	esPID  = 0x100
	pmtPID = 0x1000
	ecmPID = 0x1FF0
)

func withCRC(s []byte) []byte {
	s[1], s[2] = s[1]&0xF0|byte((len(s)+1)>>8), byte(len(s)+1)
	c := psi.CRC32(s)
	return append(s, byte(c>>24), byte(c>>16), byte(c>>8), byte(c))
}

func sectionPacket(pid uint16, s []byte) []byte {
	p := bytes.Repeat([]byte{0xFF}, 188)
	p[0], p[1], p[2], p[3], p[4] = 0x47, 0x40|byte(pid>>8), byte(pid), 0x10, 0
	copy(p[5:], s)
	return p
}

// synthStream makes seconds of a stream at rate packets a second: PAT and PMT every 100
// packets, a PCR on the ES PID every 10, a null packet every nullEvery (0: none), and the
// packets in framing fr. pmtFill pads the PMT's program_info loop so that it fills its packet.
func synthStream(seconds float64, rate, nullEvery int, fr ts.Framing, pmtFill bool) []byte {
	pat := sectionPacket(0, withCRC([]byte{0x00, 0xB0, 0, 0x00, 0x01, 0xC1, 0, 0, 0x00, 0x01, 0xE0 | pmtPID>>8, pmtPID & 0xFF}))
	pmt := []byte{0x02, 0xB0, 0, 0x00, 0x01, 0xC1, 0, 0, 0xE1, 0x00, 0xF0, 0x00}
	if pmtFill {
		// A private descriptor that leaves fewer than 6 bytes of stuffing.
		pmt[11] = 2 + 160
		pmt = append(pmt, 0x80, 160)
		pmt = append(pmt, make([]byte, 160)...)
	}
	pmt = append(pmt, 0x1B, 0xE1, 0x00, 0xF0, 0x00)
	pmtPkt := sectionPacket(pmtPID, withCRC(pmt))
	n := int(seconds * float64(rate))
	var out []byte
	cc := 0
	for i := range n {
		var p []byte
		switch {
		case i%100 == 0:
			p = pat
		case i%100 == 1:
			p = pmtPkt
		case nullEvery > 0 && i%nullEvery == 0:
			p = make([]byte, 188)
			p[0], p[1], p[2], p[3] = 0x47, 0x1F, 0xFF, 0x10
		default:
			p = make([]byte, 188)
			p[0], p[1], p[2], p[3] = 0x47, esPID>>8, esPID&0xFF, 0x10|byte(cc&0xF)
			cc++
			for j := 4; j < 188; j++ {
				p[j] = byte(i + j)
			}
			if i%10 == 2 {
				pcr := int64(i) * 27_000_000 / int64(rate)
				base, ext := pcr/300, pcr%300
				p[3] |= 0x20
				p[4], p[5] = 7, 0x10
				p[6], p[7], p[8], p[9] = byte(base>>25), byte(base>>17), byte(base>>9), byte(base>>1)
				p[10], p[11] = byte(base&1)<<7|0x7E|byte(ext>>8), byte(ext)
			}
		}
		u := make([]byte, fr.Size)
		for j := range u {
			u[j] = 0xA5
		}
		copy(u[fr.Prefix:], p)
		out = append(out, u...)
	}
	return out
}

type start struct {
	packet int64
	cw     []byte
}

// drive does what a ts.Source does with a Stage: it frames in, hands s each unit, and ends s
// at the end of the input. It passes each unit s hands on to sink, in order, and returns the
// error that ended the stream: the stage's, else the framer's (io.EOF, the end of the input,
// excepted).
func drive(s *Stage, in io.Reader, sink func(unit []byte)) error {
	fr := ts.NewFramer(in)
	var units ts.Units
	pass := func() {
		for u, ok := units.Take(); ok; u, ok = units.Take() {
			sink(u)
		}
	}
	for {
		unit, err := fr.Next()
		if err != nil {
			if endErr := s.End(&units); endErr != nil {
				err = endErr
			} else if err == io.EOF {
				err = nil
			}
			pass()
			return err
		}
		err = s.Packet(unit, fr.Framing(), &units)
		pass()
		if err != nil {
			return err
		}
	}
}

// driveAll drives s over in and returns the units it hands on, one after the other.
func driveAll(s *Stage, in []byte) ([]byte, error) {
	var out []byte
	err := drive(s, bytes.NewReader(in), func(u []byte) { out = append(out, u...) })
	return out, err
}

func runStage(t *testing.T, in []byte, cfg Config) ([]byte, *Stage, []start) {
	t.Helper()
	var starts []start
	cfg.OnPeriod = func(packet int64, cw []byte) { starts = append(starts, start{packet, cw}) }
	n := 0
	cfg.NextCW = func() ([]byte, error) {
		n++
		return []byte{byte(n), 2, 3, 4, 5, 6, 7, 8}, nil
	}
	var log strings.Builder
	cfg.Log = func(s string) { log.WriteString(s + "\n") }
	s, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	out, err := driveAll(s, in)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("log:\n%s", log.String())
		}
	})
	return out, s, starts
}

// TestStageWithNulls: ECMs take the place of null packets (the first, before any null, is
// inserted), periods start on the clock of the PCRs, the PMT gets the CA_descriptor, and every
// framing keeps its unit size and the input's units in order.
func TestStageWithNulls(t *testing.T) {
	const rate = 1000
	for _, fr := range []ts.Framing{ts.Framing188, ts.Framing192, ts.Framing204} {
		in := synthStream(5.5, rate, 7, fr, false)
		addr := fakeecmg.Start(t, fakeecmg.Config{ErrorAt: -1, CloseAt: -1, LateAt: -1, DelayStart: 200 * time.Millisecond, RepPeriod: 300 * time.Millisecond})
		out, s, starts := runStage(t, in, Config{CPDuration: time.Second, ECMPID: ecmPID,
			ECMG: &simulcrypt.Config{Addr: addr, SuperCASID: 0x4ADC0000}})
		st := s.Stats()
		if len(out)%fr.Size != 0 || st.Inserted != 1 || st.Replaced < 15 || int64(len(out)/fr.Size) != int64(len(in)/fr.Size)+st.Inserted {
			t.Fatalf("framing %d: %d bytes out of %d, stats %+v", fr.Size, len(out), len(in), st)
		}
		if len(starts) != 6 || st.Periods != 6 {
			t.Fatalf("framing %d: starts %v", fr.Size, starts)
		}
		tr := psi.NewTracker()
		ecms, kept := 0, 0
		lastCC := -1
		for i, k := 0, 0; i < len(out); i += fr.Size {
			u := out[i : i+fr.Size]
			p := u[fr.Prefix : fr.Prefix+188]
			tr.Feed(p)
			if ts.PID(p) == ecmPID {
				ecms++
				if cc := int(p[3] & 0xF); lastCC >= 0 && cc != (lastCC+1)&0xF {
					t.Fatalf("ECM continuity_counter %d after %d", cc, lastCC)
				} else {
					lastCC = cc
				}
				continue
			}
			// The input's units, in order, the nulls some ECMs replaced excepted.
			for k < len(in) && !bytes.Equal(u, in[k:k+fr.Size]) && ts.PID(in[k+fr.Prefix:]) == ts.NullPID {
				k += fr.Size
			}
			if k < len(in) && (bytes.Equal(u, in[k:k+fr.Size]) || ts.PID(p) == pmtPID) {
				kept++
				k += fr.Size
			}
		}
		if int64(ecms) != st.ECMPackets || kept+int(st.Replaced) != len(in)/fr.Size {
			t.Fatalf("framing %d: %d ECM packets (stats %d), %d input units kept", fr.Size, ecms, st.ECMPackets, kept)
		}
		svc := tr.Services()
		if len(svc) != 1 || len(svc[0].CA) != 1 || svc[0].CA[0].SystemID != 0x4ADC || svc[0].CA[0].PID != ecmPID {
			t.Fatalf("framing %d: PMT %+v", fr.Size, svc)
		}
		// Period n starts at the first packet at or after n seconds, counted in the output.
		for n, s := range starts[1:] {
			inputIdx := s.packet // among output units; the input packet has a close index
			if d := float64(inputIdx)/rate - float64(n+1); d < -0.01 || d > 0.05 {
				t.Errorf("framing %d: period %d starts at packet %d", fr.Size, n+1, s.packet)
			}
		}
	}
}

// TestStageNoECMG: without an ECMG the stage only cuts crypto periods on the PCR clock; a stream
// without PCR is one period; a PMT without room for the descriptor is left and counted.
func TestStageNoECMG(t *testing.T) {
	in := synthStream(3.2, 1000, 0, ts.Framing188, false)
	out, s, starts := runStage(t, in, Config{CPDuration: 500 * time.Millisecond})
	if !bytes.Equal(out, in) || len(starts) != 7 || s.Stats().ECMPackets != 0 {
		t.Fatalf("%d starts, stats %+v", len(starts), s.Stats())
	}
	// No PCR: strip the adaptation fields' PCR flag.
	noPCR := append([]byte(nil), in...)
	for i := 0; i < len(noPCR); i += 188 {
		if noPCR[i+3]&0x20 != 0 {
			noPCR[i+5] = 0
		}
	}
	_, _, starts = runStage(t, noPCR, Config{CPDuration: 500 * time.Millisecond})
	if len(starts) != 1 {
		t.Fatalf("no PCR: %d periods", len(starts))
	}
	full := synthStream(1, 1000, 0, ts.Framing188, true)
	addr := fakeecmg.Start(t, fakeecmg.Config{ErrorAt: -1, CloseAt: -1, LateAt: -1})
	out, s, _ = runStage(t, full, Config{CPDuration: time.Second, ECMPID: ecmPID, ECMG: &simulcrypt.Config{Addr: addr, SuperCASID: 0x4ADC0000}})
	if st := s.Stats(); st.PMTLeft == 0 || st.PMTSignalled != 0 {
		t.Fatalf("full PMT: %+v", st)
	}
	for i := 0; i < len(out); i += 188 {
		if ts.PID(out[i:]) == pmtPID && !bytes.Equal(out[i:i+188], full[188:376]) {
			t.Fatal("a PMT without room was changed")
		}
	}
	// An ECM PID the input already uses is refused, not mixed in.
	s, err := New(context.Background(), Config{CPDuration: time.Second, ECMPID: esPID,
		NextCW: func() ([]byte, error) { return make([]byte, 8), nil },
		ECMG:   &simulcrypt.Config{Addr: fakeecmg.Start(t, fakeecmg.Config{ErrorAt: -1, CloseAt: -1, LateAt: -1}), SuperCASID: 1}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := driveAll(s, full); !errors.Is(err, ErrECMPIDInUse) {
		t.Fatalf("ECM PID in use: %v", err)
	}
}

// TestStageDelayStartSign: TS 103 197's delay_start is the time from the start of a crypto
// period to its ECM going on air; negative, the ECM goes ahead of the period, when it carries
// the CW of the period on air (lead_CW 0, CW_per_msg 2: the CWs of the period before and its
// own). With lead_CW 1 the ECM of the next period carries the CW after it, of the parity on
// air: it waits for its period. Measured here in packets of a stream of 1000 packets a second.
func TestStageDelayStartSign(t *testing.T) {
	for _, tc := range []struct {
		delay, want  time.Duration
		lead, perMsg int
	}{
		{-500 * time.Millisecond, -500 * time.Millisecond, 0, 2},
		{-500 * time.Millisecond, 0, 1, 2},
		{200 * time.Millisecond, 200 * time.Millisecond, 1, 2},
	} {
		delay := tc.delay
		in := synthStream(7, 1000, 7, ts.Framing188, false)
		addr := fakeecmg.Start(t, fakeecmg.Config{ErrorAt: -1, CloseAt: -1, LateAt: -1, DelayStart: delay, RepPeriod: 300 * time.Millisecond,
			LeadCW: tc.lead, CWPerMsg: tc.perMsg})
		out, _, starts := runStage(t, in, Config{CPDuration: 2 * time.Second, ECMPID: ecmPID,
			ECMG: &simulcrypt.Config{Addr: addr, SuperCASID: 0x4ADC0000}})
		var firsts []int64 // output packet number of the first ECM of each period
		lastTable := -1
		for i := 0; i < len(out); i += 188 {
			p := out[i : i+188]
			if ts.PID(p) == ecmPID && int(p[5]) != lastTable {
				lastTable = int(p[5])
				firsts = append(firsts, int64(i/188)+1)
			}
		}
		if len(starts) != 4 || len(firsts) < 4 {
			t.Fatalf("delay %v: %d periods, %d ECM periods", delay, len(starts), len(firsts))
		}
		for n := 1; n < 4; n++ {
			got := firsts[n] - starts[n].packet // packets, that is ms
			if want := tc.want.Milliseconds(); got < want-10 || got > want+10 {
				t.Errorf("delay %v, lead_CW %d: the ECM of period %d goes out %d ms after the period starts, want %d", delay, tc.lead, n, got, want)
			}
		}
	}
}

// TestStageOnlyScrambledServices: the PMT of a service that is not scrambled keeps its bytes.
func TestStageOnlyScrambledServices(t *testing.T) {
	in := synthStream(1, 1000, 0, ts.Framing188, false)
	addr := fakeecmg.Start(t, fakeecmg.Config{ErrorAt: -1, CloseAt: -1, LateAt: -1})
	out, s, _ := runStage(t, in, Config{CPDuration: time.Second, ECMPID: ecmPID,
		ECMG:      &simulcrypt.Config{Addr: addr, SuperCASID: 0x4ADC0000},
		Scrambled: func(svc psi.Service) bool { return svc.Number != 1 }})
	if st := s.Stats(); st.PMTSignalled != 0 || st.PMTLeft != 0 {
		t.Fatalf("%+v", st)
	}
	for i := 0; i < len(out); i += 188 {
		if ts.PID(out[i:]) == pmtPID && !bytes.Equal(out[i:i+188], in[188:376]) {
			t.Fatal("the PMT of a service left clear was changed")
		}
	}
}

// TestStageECMChecks: ECM packets get the SCS's header whatever the ECMG wrote (TSC 00, the ECM
// PID, no transport_error_indicator, continuity); an ECM that cannot go into the stream as it
// came (not whole packets, no sync byte, larger than a section) is refused and counted, never
// put on air.
func TestStageECMChecks(t *testing.T) {
	in := synthStream(4, 1000, 7, ts.Framing188, false)
	for _, tc := range []struct {
		name     string
		packets  bool
		datagram func(cp int, d []byte) []byte
		refused  bool
	}{
		{"bad header bytes", true, func(cp int, d []byte) []byte {
			for i := 0; i < len(d); i += 188 {
				d[i+1], d[i+3] = 0x80|d[i+1]&0x40|0x2A, 0xC0|d[i+3]&0x30|5
			}
			return d
		}, false},
		{"bad sync byte", true, func(cp int, d []byte) []byte {
			if cp >= 2 {
				d[0] = 0x46
			}
			return d
		}, true},
		{"100 bytes", true, func(cp int, d []byte) []byte {
			if cp >= 2 {
				return d[:100]
			}
			return d
		}, true},
		{"65 kB", false, func(cp int, d []byte) []byte {
			if cp >= 2 {
				return append(d, make([]byte, 65000)...)
			}
			return d
		}, true},
	} {
		addr := fakeecmg.Start(t, fakeecmg.Config{ErrorAt: -1, CloseAt: -1, LateAt: -1, Packets: tc.packets, Datagram: tc.datagram})
		out, s, _ := runStage(t, in, Config{CPDuration: time.Second, ECMPID: ecmPID, ECMG: &simulcrypt.Config{Addr: addr, SuperCASID: 0x4ADC0000}})
		st := s.Stats()
		if tc.refused != (st.ECMRefused > 0) || st.ECMPackets == 0 {
			t.Errorf("%s: stats %+v", tc.name, st)
		}
		lastCC := -1
		for i := 0; i < len(out); i += 188 {
			p := out[i : i+188]
			if ts.PID(p) != ecmPID {
				continue
			}
			cc := int(p[3] & 0xF)
			if p[0] != 0x47 || p[1]&0xA0 != 0 || ts.TSC(p) != ts.Clear || !ts.PUSI(p) || lastCC >= 0 && cc != (lastCC+1)&0xF {
				t.Fatalf("%s: ECM packet % X", tc.name, p[:6])
			}
			lastCC = cc
		}
	}
}

// TestStageFirstECM: before the first ECM nothing goes out scrambled. A silent ECMG stops the
// stream after ECMWait (ErrNoECM); with SendClear the stream goes out as it came, PMT included,
// no period begun, every packet counted clear; an ECM that comes late opens the stream with
// the ECM first.
func TestStageFirstECM(t *testing.T) {
	in := synthStream(1, 1000, 0, ts.Framing188, false)
	silent := fakeecmg.Start(t, fakeecmg.Config{ErrorAt: -1, CloseAt: -1, LateAt: -1, Silent: true})
	s, err := New(context.Background(), Config{CPDuration: 100 * time.Millisecond, ECMPID: ecmPID,
		ECMWait: 200 * time.Millisecond, NextCW: func() ([]byte, error) { return make([]byte, 8), nil },
		ECMG: &simulcrypt.Config{Addr: silent, SuperCASID: 0x4ADC0000}})
	if err != nil {
		t.Fatal(err)
	}
	if out, err := driveAll(s, in); !errors.Is(err, ErrNoECM) || len(out) != 0 || s.Stats().Periods != 0 {
		t.Fatalf("hold: %d bytes, %v, %+v", len(out), err, s.Stats())
	}
	s.Close()

	silent = fakeecmg.Start(t, fakeecmg.Config{ErrorAt: -1, CloseAt: -1, LateAt: -1, Silent: true})
	out, s, starts := runStage(t, in, Config{CPDuration: 100 * time.Millisecond, ECMPID: ecmPID, ECMWait: -1, SendClear: true,
		ECMG: &simulcrypt.Config{Addr: silent, SuperCASID: 0x4ADC0000}})
	if st := s.Stats(); !bytes.Equal(out, in) || len(starts) != 0 || st.Clear != int64(len(in)/188) || st.PMTSignalled != 0 {
		t.Fatalf("clear: %d starts, stats %+v", len(starts), st)
	}

	late := fakeecmg.Start(t, fakeecmg.Config{ErrorAt: -1, CloseAt: -1, LateAt: 0, Late: 300 * time.Millisecond})
	out, s, starts = runStage(t, in, Config{CPDuration: 100 * time.Millisecond, ECMPID: ecmPID,
		ECMG: &simulcrypt.Config{Addr: late, SuperCASID: 0x4ADC0000}})
	if st := s.Stats(); len(starts) == 0 || starts[0].packet != 2 || ts.PID(out) != ecmPID || st.Clear != 0 {
		t.Fatalf("late: starts %v, first PID %#x, stats %+v", starts, ts.PID(out), st)
	}
}

// TestCheckCWs: the lead_CW and CW_per_msg a receiver with one even and one odd CW can follow.
func TestCheckCWs(t *testing.T) {
	for lead := range 4 {
		for per := 1; per <= 4; per++ {
			want := lead == 0 && per <= 2 || lead == 1 && per == 2
			if err := CheckCWs(simulcrypt.ChannelParams{LeadCW: lead, CWPerMsg: per}); (err == nil) != want {
				t.Errorf("lead_CW %d, CW_per_msg %d: %v", lead, per, err)
			}
		}
	}
}

// TestStageRunning: Running may be read from another goroutine while the stage runs (the race
// detector watches it), says the channel is up while it is, and ends with the counts of Stats;
// after Close the channel is down.
func TestStageRunning(t *testing.T) {
	in := synthStream(4, 1000, 7, ts.Framing188, false)
	addr := fakeecmg.Start(t, fakeecmg.Config{ErrorAt: -1, CloseAt: -1, LateAt: -1, Packets: true,
		Datagram: func(cp int, d []byte) []byte {
			if cp >= 2 {
				d[0] = 0x46 // refused
			}
			return d
		}})
	cfg := Config{CPDuration: time.Second, ECMPID: ecmPID, ECMG: &simulcrypt.Config{Addr: addr, SuperCASID: 0x4ADC0000},
		OnPeriod: func(int64, []byte) {}, NextCW: func() ([]byte, error) { return []byte{1, 2, 3, 4, 5, 6, 7, 8}, nil }}
	s, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if r := s.Running(); !r.Connected || r.ECMPackets != 0 {
		t.Fatalf("before the first packet: %+v", r)
	}
	done := make(chan error)
	go func() {
		_, err := driveAll(s, in)
		done <- err
	}()
	var seen Running
	for running := true; running; {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			running = false
		default:
			if r := s.Running(); r.ECMPackets > seen.ECMPackets {
				seen = r
			}
		}
	}
	st, r := s.Stats(), s.Running()
	if !r.Connected || r.ECMPackets != st.ECMPackets || r.Replaced != st.Replaced || r.Inserted != st.Inserted ||
		r.ECMRefused != st.ECMRefused || r.ECMRefused == 0 || r.Replaced+r.Inserted != r.ECMPackets || seen.ECMPackets > 0 && !seen.Connected {
		t.Fatalf("Running %+v, seen while running %+v, Stats %+v", r, seen, st)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s.Running().Connected {
		t.Error("connected after Close")
	}
}
