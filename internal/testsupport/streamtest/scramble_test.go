//go:build dvbcsa

package streamtest

import (
	"bytes"
	"fmt"
	"github.com/tsdescramble/tsdescramble/ts"
	"testing"

	"github.com/tsdescramble/tsdescramble/internal/testsupport/dvbcsa"
)

// Our scrambler gives exactly libdvbcsa's bytes: same CW list, same crypto periods, every framing.
func TestScrambleMatchesLibdvbcsa(t *testing.T) {
	cwFile := writeCWFile(t, testCWs)
	for name, clear188 := range clearStreams(t) {
		for i, fr := range []ts.Framing{ts.Framing188, ts.Framing192, ts.Framing204} {
			t.Run(fmt.Sprintf("%s/%d", name, fr.Size), func(t *testing.T) {
				cp := 500 + 100*i
				clear, want := scramble(t, clear188, fr, testCWs, cp, uint64(20+i))
				out, stderr, code := runStatus(t, clear, "scramble", "-q", "-cw-file", cwFile, "-cp-packets", fmt.Sprint(cp))
				if code != 0 || !bytes.Equal(out, want) {
					t.Fatalf("exit %d, identical to libdvbcsa's: %v\n%s", code, bytes.Equal(out, want), stderr)
				}
			})
		}
	}
}

// clearPacketsFrom returns a copy of base in which every packet that the scrambled stream s
// carries clear (TSC 00) is taken from src: the scrambler writes a scrambling_descriptor into
// the PMTs of the stage ciphers, which descrambling leaves there and rescrambling does not add.
func clearPacketsFrom(base, src, s []byte, fr ts.Framing) []byte {
	out := append([]byte{}, base...)
	for at := 0; at+fr.Size <= len(s); at += fr.Size {
		if ts.TSC(s[at+fr.Prefix:]) == ts.Clear {
			copy(out[at:at+fr.Size], src[at:at+fr.Size])
		}
	}
	return out
}

// Every stage cipher: scramble, descramble back to the clear stream (the scrambling_descriptor
// the scrambler wrote into the PMTs taken out again by the descrambler); and rescramble a CSA2
// stream into each of them in one pass.
func TestStageCiphersRoundTrip(t *testing.T) {
	keys := map[string]string{
		"dvb-cissa": "00112233445566778899aabbccddeeff",
		"atis-idsa": "0f1e2d3c4b5a69788796a5b4c3d2e1f0",
		"dfc":       "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f",
		"serpent":   "00112233445566778899aabbccddeeff0011223344556677",
		"csa2":      "11223366445566ff",
	}
	clear, scrambled := scramble(t, clearStreams(t)["mpeg2-two-programs"], ts.Framing192, testCWs, 700, 30)
	cwFile := writeCWFile(t, testCWs)
	for name, k := range keys {
		t.Run(name, func(t *testing.T) {
			s, stderr, code := runStatus(t, clear, "scramble", "-q", "-cipher", name, "-cw", k, "-cp-packets", "300")
			if code != 0 || bytes.Equal(s, clear) || len(s) != len(clear) {
				t.Fatalf("scramble: exit %d\n%s", code, stderr)
			}
			want := clearPacketsFrom(clear, s, s, ts.Framing192)
			if name != "csa2" && bytes.Equal(want, clear) {
				t.Fatal("scramble: no PMT signals the system")
			}
			back, stderr, code := runStatus(t, s, "-q", "-cipher", name, "-cw", k)
			if code != 0 || !bytes.Equal(back, clear) {
				t.Fatalf("descramble: exit %d, identical: %v\n%s", code, bytes.Equal(back, clear), stderr)
			}
			if back := runFiles(t, s, "-cw", k); !bytes.Equal(back, clear) {
				t.Fatal("descramble through files, the system read from the PMT: output differs from the clear stream")
			}
			if s2 := runFiles(t, clear, "scramble", "-cipher", name, "-cw", k, "-cp-packets", "300"); !bytes.Equal(s2, s) {
				t.Fatal("scramble through files differs from scrambling through pipes")
			}
			re, stderr, code := runStatus(t, scrambled, "-q", "-cw-file", cwFile, "-rescramble", name, "-rescramble-cw", k, "-rescramble-cp-packets", "300")
			// Rescrambling leaves the PMTs as they were.
			if code != 0 || !bytes.Equal(re, clearPacketsFrom(s, clear, s, ts.Framing192)) {
				t.Fatalf("rescramble: exit %d, identical to scrambling the clear stream: %v\n%s", code, bytes.Equal(re, s), stderr)
			}
			if back, _, code := runStatus(t, re, "-q", "-cipher", name, "-cw", k); code != 0 || !bytes.Equal(back, clear) {
				t.Fatalf("rescrambled stream descrambled: exit %d, identical to the clear stream: %v", code, bytes.Equal(back, clear))
			}
		})
	}
}

// A stream scrambled by tsdescramble with a CW list is descrambled byte-identically by libdvbcsa.
func TestLibdvbcsaDescramblesOurs(t *testing.T) {
	cwFile := writeCWFile(t, testCWs)
	for i, fr := range []ts.Framing{ts.Framing188, ts.Framing192, ts.Framing204} {
		clear, _ := scramble(t, clearStreams(t)["h264-aac"], fr, testCWs, 600, uint64(40+i))
		ours := runFiles(t, clear, "scramble", "-cw-file", cwFile, "-cp-packets", "600")
		back := append([]byte{}, ours...)
		n, err := dvbcsa.DescrambleStream(back, fr, testCWs)
		if err != nil || n < 3 {
			t.Fatalf("%v: %d periods, %v", fr, n, err)
		}
		if !bytes.Equal(back, clear) {
			t.Fatalf("%v: libdvbcsa's descrambling of our stream differs from the clear stream", fr)
		}
	}
}
