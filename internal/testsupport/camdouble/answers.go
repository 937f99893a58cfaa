package camdouble

import (
	"github.com/tsdescramble/tsdescramble/internal/wire/cs378x"
)

// The answers of this file make a double answer as real key servers do, where that differs
// from the test CA system's card (TestCAAnswer: the pair an ECM carries, its own period's CW
// and the previous period's). They were checked against OSCam (svn trunk of March 2024,
// oscam-emu/oscam-svn on GitHub) run on loopback with a constcw reader, a cs378x listener and a
// DVBAPI listener: see DVBAPI.SetOSCam for what its DVBAPI module sends.

// ConstantCW answers every ECM, whatever it carries, with the same pair: even then odd. It is
// OSCam's constcw reader (module-constcw.c: constcw_send_ecm answers each ECM with the 16 bytes
// of the line of its file that names the ECM's CAID and service, found by constcw_analyse_file;
// the ECM's bytes are not read), the usual way BISS and fixed-key feeds are served. Through
// cs378x, OSCam answered each of 53 ECMs with the same pair; through newcamd (r11757), each ECM
// too, an ECM sent again from its cache. A key server whose CAS keeps the CW of one parity for
// more than one ECM answers the same way for that parity.
func ConstantCW(even, odd []byte) AnswerFunc {
	var cw [16]byte
	copy(cw[:8], even)
	copy(cw[8:], odd)
	return func([]byte) (byte, [16]byte, bool) { return cs378x.CmdCW, cw, false }
}

// CurrentAndNext answers the ECM of crypto period k (a test ECM of ECMStream, whose sequence
// number is k) with period k's CW for its parity and period k+1's for the other, cws used in
// turn as ECMStream uses them: a card whose ECMs carry the current and the next key. On a
// stream whose ECMs come after their period began (StreamSpec.LagPackets), as such a
// broadcaster sends them, each CW comes twice: first a period ahead as the next key, written to
// the slot of the parity that just went out of use, and again as the current one once its
// period began. (On a stream whose ECMs come before their period, the default, the next key
// would replace the key of the period still running: no real server does that.) Anything else
// is not found.
func CurrentAndNext(cws [][]byte) AnswerFunc {
	return func(ecm []byte) (byte, [16]byte, bool) {
		var cw [16]byte
		seq, err := ECMSeq(ecm)
		if err != nil || len(cws) == 0 {
			return cs378x.CmdNotFound, cw, false
		}
		k := int(seq)
		cur, next := cws[k%len(cws)], cws[(k+1)%len(cws)]
		if k%2 == 0 {
			copy(cw[:8], cur)
			copy(cw[8:], next)
		} else {
			copy(cw[:8], next)
			copy(cw[8:], cur)
		}
		return cs378x.CmdCW, cw, false
	}
}
