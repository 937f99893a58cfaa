package main

import (
	"bufio"
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/des"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/tsdescramble/tsdescramble/csa"
	"github.com/tsdescramble/tsdescramble/internal/testsupport/camdouble"
	wire "github.com/tsdescramble/tsdescramble/internal/wire/dvbapi"
	"github.com/tsdescramble/tsdescramble/pipeline"
	"github.com/tsdescramble/tsdescramble/ts"
)

// The DVBAPI descrambler modes through the command, on streams scrambled by a scrambler of the
// test's own: Go's crypto/aes and crypto/des under tvheadend's rules (src/descrambler/algo/
// libaes128dec.c and libdesdec.c: the whole blocks of the payload, from its start; the residue
// and payloads under a block clear), CBC restarted from the IV for every payload. It shares no
// code with package scrambling.

// modeCase is a descrambler mode: what the DVBAPI double writes, and how the test scrambles a
// payload in it with an 8-byte CW of the stream.
type modeCase struct {
	name string
	mode camdouble.Mode
}

// aesKeyOf is the 16-byte AES-128 key the tests give an 8-byte CW of the test CA system.
func aesKeyOf(cw []byte) []byte {
	k := bytes.Clone(cw)
	for _, b := range cw {
		k = append(k, ^b)
	}
	return k
}

// tvhEncrypt scrambles payload in place in mode m with CW cw, the inverse of tvheadend's
// descrambling: every whole block from the payload's start, nothing after.
func tvhEncrypt(t testing.TB, m camdouble.Mode, cw, payload []byte) {
	if m.Algo == wire.AlgoCSA {
		if len(payload) >= 8 {
			k, err := csa.NewKey(cw)
			if err != nil {
				t.Fatal(err)
			}
			k.Encrypt(payload)
		}
		return
	}
	var b cipher.Block
	var err error
	if m.Algo == wire.AlgoAES128 {
		b, err = aes.NewCipher(aesKeyOf(cw))
	} else {
		b, err = des.NewCipher(cw)
	}
	if err != nil {
		t.Fatal(err)
	}
	n := len(payload) / b.BlockSize() * b.BlockSize()
	if n == 0 {
		return
	}
	// A DES slot without an IV is ECB whatever its cipher mode, as tvheadend takes every DES
	// slot (capmt.c, capmt_send_key); an AES-128 CBC slot without one is DVB-CISSA's.
	iv := m.IV
	if m.Algo == wire.AlgoAES128 && iv == nil {
		iv = []byte("DVBTMCPTAESCISSA")
	}
	if m.Cipher == wire.ModeCBC && iv != nil {
		cipher.NewCBCEncrypter(b, iv).CryptBlocks(payload[:n], payload[:n])
		return
	}
	for i := 0; i < n; i += b.BlockSize() {
		b.Encrypt(payload[i:], payload[i:])
	}
}

// modesCWs are the CWs of the crypto periods, one per mode of dvbapiModes.
var modesCWs = []string{"11223366445566FF", "A1B2C316D4E5F6AF", "0102030604050610", "7F6E5D4A3C2B1A81",
	"1020306040506010", "99887798665544FF", "13579B052468AC38", "0F1E2D4C3B4A5968"}

// dvbapiModes are the modes of the periods, in turn: a slot's mode changes with every key.
func dvbapiModes() []modeCase {
	return []modeCase{
		{"csa", camdouble.Mode{Algo: wire.AlgoCSA, Cipher: wire.ModeCBC}},
		{"aes-128-cbc, DVB-CISSA IV", camdouble.Mode{Algo: wire.AlgoAES128, Cipher: wire.ModeCBC, IV: []byte("DVBTMCPTAESCISSA"), Key: aesKeyOf}},
		{"des-ecb", camdouble.Mode{Algo: wire.AlgoDES, Cipher: wire.ModeECB}},
		{"aes-128-ecb", camdouble.Mode{Algo: wire.AlgoAES128, Cipher: wire.ModeECB, IV: []byte("0123456789abcdef"), Key: aesKeyOf}},
		{"des-cbc", camdouble.Mode{Algo: wire.AlgoDES, Cipher: wire.ModeCBC, IV: []byte{1, 2, 3, 4, 5, 6, 7, 8}}},
		{"aes-128-cbc", camdouble.Mode{Algo: wire.AlgoAES128, Cipher: wire.ModeCBC, IV: []byte("another 16B IV.."), Key: aesKeyOf}},
		{"des, cbc without an IV", camdouble.Mode{Algo: wire.AlgoDES, Cipher: wire.ModeCBC}},
		{"csa again", camdouble.Mode{Algo: wire.AlgoCSA, Cipher: wire.ModeCBC}},
	}
}

// modesStream writes a stream of the test CA system whose crypto period k is scrambled in mode
// k of dvbapiModes with the test's scrambler, its payloads of every length; it returns the clear
// stream and the input's path.
func modesStream(t *testing.T) (clear []byte, in string) {
	modes := dvbapiModes()
	var cws [][]byte
	modeOf := map[string]camdouble.Mode{}
	for i, h := range modesCWs {
		cw := mustCW(t, h)
		cws = append(cws, cw)
		modeOf[string(cw)] = modes[i].mode
	}
	clear, scrambled, _ := camdouble.ECMStream(camdouble.StreamSpec{Packets: 8 * 300, PeriodPackets: 300, CWs: cws,
		Encrypt:  func(cw, payload []byte) { tvhEncrypt(t, modeOf[string(cw)], cw, payload) },
		Stuffing: func(i int) int { return i*37%190 - 7 }, // none, or payloads of 183 to 1 bytes
	})
	return clear, writeFile(t, t.TempDir(), "in.ts", scrambled)
}

// Every descrambler mode of OSCam's DVBAPI, one after the other on one key slot, each as OSCam
// writes it (CA_SET_DESCR_MODE, then CA_SET_DESCR_DATA with the IV and the key for AES-128,
// CA_SET_DESCR for the others): the command descrambles the stream byte for byte, whatever
// -batch, -workers and -group, and says each period's mode with -v, never a key without
// -show-keys.
func TestKeyServerDVBAPIModes(t *testing.T) {
	t.Parallel()
	clear, in := modesStream(t)
	modes := dvbapiModes()
	srv := camdouble.NewDVBAPI(t)
	srv.SetModes(func(ecm []byte) camdouble.Mode {
		seq, _ := camdouble.ECMSeq(ecm)
		return modes[int(seq)%len(modes)].mode
	})
	dir := t.TempDir()
	out, stats := filepath.Join(dir, "out.ts"), filepath.Join(dir, "st.json")
	for _, flags := range [][]string{{"-v"}, {"-batch", "7", "-workers", "1", "-group", "32"}, {"-batch", "300", "-workers", "2", "-group", "256"}} {
		args := append([]string{"-key-server", "dvbapi://" + srv.Addr, "-in", in, "-out", out, "-stats", stats}, flags...)
		r := run(t, nil, args...)
		if r.code != 0 {
			t.Fatalf("%v: exit %d: %s", flags, r.code, r.stderr)
		}
		sameBytes(t, fmt.Sprint(flags), readFile(t, out), clear, ts.PacketSize)
		var st struct {
			PIDs []pipeline.PIDStats `json:"pids"`
		}
		if err := json.Unmarshal(readFile(t, stats), &st); err != nil {
			t.Fatal(err)
		}
		for _, ps := range st.PIDs {
			if ps.PID == camdouble.ESPID && (ps.Periods != len(modes) || ps.PeriodsFit != len(modes)) {
				t.Fatalf("%v: %d periods, %d fit; want %d that fit", flags, ps.Periods, ps.PeriodsFit, len(modes))
			}
		}
		if flags[0] != "-v" {
			continue
		}
		for _, name := range []string{"for dvb-cissa", "for aes-128-ecb", "for des-ecb", "for des-cbc", "for aes-128-cbc"} {
			if !strings.Contains(r.stderr, name) {
				t.Errorf("-v does not say %q: %s", name, r.stderr)
			}
		}
		for _, h := range modesCWs {
			if u := strings.ToUpper(r.stderr); strings.Contains(u, h) || strings.Contains(u, strings.ToUpper(hex.EncodeToString(aesKeyOf(mustCW(t, h))))) {
				t.Fatalf("a key was printed without -show-keys: %s", r.stderr)
			}
		}
		if strings.Contains(r.stderr, "refused") || strings.Contains(r.stderr, "not used") {
			t.Fatalf("keys refused: %s", r.stderr)
		}
		t.Log(strings.TrimSpace(r.stderr))
	}
	r := run(t, nil, "-v", "-show-keys", "-key-server", "dvbapi://"+srv.Addr, "-in", in, "-out", out)
	if aes := strings.ToUpper(hex.EncodeToString(aesKeyOf(mustCW(t, modesCWs[1])))); r.code != 0 || !strings.Contains(r.stderr, aes) {
		t.Fatalf("-v -show-keys does not print the AES-128 key %s: exit %d: %s", aes, r.code, r.stderr)
	}
}

// ETSI TS 103 127's DVB-CISSA test packets (as TSDuck transcribes them, in package scrambling's
// testdata), behind the test CA system's PAT, PMT and ECM: a DVBAPI server that writes an
// AES-128 CBC key with DVB-CISSA's IV, as OSCam's emulator does for BISS2, has them descrambled
// into the ETSI clear packets byte for byte. Their payload is text, not a PES packet: the PMT
// calls the PID T2-MI, whose starts are not checked, and the key is taken unchecked, the only
// one of its parity.
func TestKeyServerDVBAPICISSAVectors(t *testing.T) {
	t.Parallel()
	f, err := os.Open("../../scrambling/testdata/dvb_cissa.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var key []byte
	var clearPkts, scrPkts []byte
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<16)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		var v [3][]byte
		for i, x := range strings.Fields(line) {
			if v[i], err = hex.DecodeString(x); err != nil {
				t.Fatal(err)
			}
		}
		key = v[0]
		clearPkts = append(clearPkts, v[1]...)
		scrPkts = append(scrPkts, v[2]...)
	}
	if len(scrPkts) != 4*ts.PacketSize {
		t.Fatalf("%d bytes of vectors, want 4 packets", len(scrPkts))
	}
	const pid = 0x80 // the vectors' PID
	packet := func(p uint16, section []byte) []byte {
		b := bytes.Repeat([]byte{0xFF}, ts.PacketSize)
		b[0], b[1], b[2], b[3], b[4] = ts.SyncByte, 0x40|byte(p>>8), byte(p), 0x10, 0
		copy(b[5:], section)
		return b
	}
	cw := mustCW(t, "0102030604050610") // what the ECM carries; the server writes key for it
	pmtBody := []byte{0xE0, pid, 0xF0, 6}
	pmtBody = append(pmtBody, camdouble.CADescriptor(camdouble.TestCAID, camdouble.ECMPID)...)
	pmtBody = append(pmtBody, 0x06, 0xE0, pid, 0xF0, 6, 0x7F, 4, 0x11, 0, 0, 0) // T2MI_descriptor
	head := packet(0, camdouble.Section(0, 1, []byte{0, camdouble.ServiceID, 0xE0 | camdouble.PMTPID>>8, camdouble.PMTPID & 0xFF}))
	head = append(head, packet(camdouble.PMTPID, camdouble.Section(2, camdouble.ServiceID, pmtBody))...)
	head = append(head, packet(camdouble.ECMPID, camdouble.ECM(0x80, cw, make([]byte, 8), 0))...)
	in := writeFile(t, t.TempDir(), "in.ts", append(bytes.Clone(head), scrPkts...))

	srv := camdouble.NewDVBAPI(t)
	srv.SetModes(func([]byte) camdouble.Mode {
		return camdouble.Mode{Algo: wire.AlgoAES128, Cipher: wire.ModeCBC, IV: []byte("DVBTMCPTAESCISSA"),
			Key: func([]byte) []byte { return key }}
	})
	out := filepath.Join(t.TempDir(), "out.ts")
	r := run(t, nil, "-key-server", "dvbapi://"+srv.Addr, "-in", in, "-out", out)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	sameBytes(t, "ETSI CISSA packets", readFile(t, out), append(head, clearPkts...), ts.PacketSize)
}

// A descrambling mode the client does not support (an unknown algorithm, OSCam's CSA-ALT) is
// refused in one line of stderr, whatever the keys that follow, and counted; the periods get no
// key (exit 3), and no key is printed.
func TestKeyServerDVBAPIUnsupportedMode(t *testing.T) {
	t.Parallel()
	_, scrambled, in := keyServerStream(t)
	for _, c := range []struct {
		algo uint32
		line string
	}{{7, "an unknown algorithm, 7"}, {wire.AlgoCSAAlt, "CSA-ALT"}} {
		srv := camdouble.NewDVBAPI(t)
		srv.SetModes(func([]byte) camdouble.Mode { return camdouble.Mode{Algo: c.algo, Cipher: wire.ModeCBC} })
		out := filepath.Join(t.TempDir(), "out.ts")
		r := run(t, nil, "-key-server", "dvbapi://"+srv.Addr, "-key-wait", "1s", "-in", in, "-out", out)
		if r.code != exitNoFit {
			t.Fatalf("algorithm %d: exit %d, want %d: %s", c.algo, r.code, exitNoFit, r.stderr)
		}
		if n := strings.Count(r.stderr, c.line); n != 1 || !strings.Contains(r.stderr, "its keys are not used") {
			t.Fatalf("algorithm %d: %d lines saying %q, want 1: %s", c.algo, n, c.line, r.stderr)
		}
		// The summary counts the modes and keys refused: a mode and a key for each key the
		// server writes (one per ECM; two for an ECM whose filter came after it, on a loaded
		// machine, and the stream's ECMs before it were not sent).
		m := regexp.MustCompile(`key server \(dvbapi\): (\d+) ECMs sent; 0 CWs.*; (\d+) refused`).FindStringSubmatch(r.stderr)
		if m == nil || m[1] == "0" || m[2] == "0" || m[2] == "1" {
			t.Fatalf("algorithm %d: the summary does not count the refusals: %s", c.algo, r.stderr)
		}
		if u := strings.ToUpper(r.stderr); strings.Contains(u, "11223366445566FF") || strings.Contains(u, "11 22 33 66") {
			t.Fatalf("a control word was printed: %s", r.stderr)
		}
		sameBytes(t, "packets without a key", readFile(t, out), scrambled, ts.PacketSize)
	}
}
