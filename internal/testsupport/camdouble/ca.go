// Package camdouble holds test doubles of key servers, the server side of the cs378x, DVBAPI
// and newcamd protocols written from their public descriptions, and a test CA system whose ECMs carry
// their control words, so that tests can make streams with ECMs and descramble them through a
// key server. It is for tests only.
package camdouble

import (
	"encoding/binary"
	"errors"

	"github.com/tsdescramble/tsdescramble/psi"
)

// TestCAID is the CA system id the test CA system's CA_descriptors carry: one of Conax's
// (0x0B00-0x0BFF), because tsdecrypt looks for a CA system by name and Conax is its default.
const TestCAID = 0x0B00

// ecmMask hides the control words in a test ECM, so that a test that passed the ECM through as
// if it were the key would fail.
var ecmMask = [16]byte{0x5A, 0xC3, 0x1F, 0x77, 0x90, 0x2E, 0xB4, 0x61, 0x0D, 0xE8, 0x3C, 0x95, 0x47, 0xA9, 0x12, 0xFE}

// ECM returns an ECM section of the test CA system: table_id (0x80 or 0x81), a private section
// without CRC (section_syntax_indicator 0), whose body is the even and odd CW masked, then a
// sequence number so that two ECMs with the same keys still differ.
func ECM(tableID byte, even, odd []byte, seq uint32) []byte {
	body := make([]byte, 0, 24)
	for i := range 8 {
		body = append(body, even[i]^ecmMask[i])
	}
	for i := range 8 {
		body = append(body, odd[i]^ecmMask[8+i])
	}
	body = binary.BigEndian.AppendUint32(body, seq)
	return append([]byte{tableID, 0x70 | byte(len(body)>>8), byte(len(body))}, body...)
}

// ErrNotTestECM is returned by AnswerECM for a section that is not a test ECM.
var ErrNotTestECM = errors.New("not an ECM of the test CA system")

// AnswerECM returns the CW pair, even then odd, that a test ECM carries.
func AnswerECM(ecm []byte) ([16]byte, error) {
	var cw [16]byte
	if len(ecm) != 3+20 || ecm[0]&0xFE != 0x80 || int(ecm[1]&0x0F)<<8|int(ecm[2]) != 20 {
		return cw, ErrNotTestECM
	}
	for i := range 16 {
		cw[i] = ecm[3+i] ^ ecmMask[i]
	}
	return cw, nil
}

// ECMSeq returns the sequence number a test ECM carries: ECMStream numbers its ECMs by their
// crypto period, from 0.
func ECMSeq(ecm []byte) (uint32, error) {
	if _, err := AnswerECM(ecm); err != nil {
		return 0, err
	}
	return binary.BigEndian.Uint32(ecm[3+16:]), nil
}

// CADescriptor returns a CA_descriptor (tag 9) for caid with its ECM PID.
func CADescriptor(caid, ecmPID uint16) []byte {
	return []byte{9, 4, byte(caid >> 8), byte(caid), 0xE0 | byte(ecmPID>>8), byte(ecmPID)}
}

// Section wraps table data (from table_id_extension on) into a long section with its CRC.
func Section(tableID byte, ext uint16, body []byte) []byte {
	n := 5 + len(body) + 4
	s := []byte{tableID, 0xB0 | byte(n>>8), byte(n), byte(ext >> 8), byte(ext), 0xC1, 0, 0}
	s = append(s, body...)
	return binary.BigEndian.AppendUint32(s, psi.CRC32(s))
}
