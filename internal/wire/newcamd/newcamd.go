// Package newcamd is the wire codec of the newcamd protocol (version 525), by which a card
// server such as OSCam answers ECMs with control words. The client in keyserver/newcamd and the
// test server in internal/testsupport/camdouble both speak through it; it is internal because
// a program that embeds the client needs the client, not the messages.
//
// A connection starts with 14 random bytes from the server. Every message after them is a
// 2-byte length (big endian, of what follows) and a triple DES (EDE2) CBC encryption of:
//
//	bytes 0-1    message id: the client counts its messages, the server's answer repeats
//	             the id of the request
//	bytes 2-3    service id (in the login, the client's id)
//	bytes 4-5    CA system id
//	bytes 6-8    provider id
//	byte  9      zero
//	byte  10     command: 0x80/0x81 an ECM (its table_id) and its answer, 0xE0 login, 0xE1
//	             login accepted, 0xE2 refused, 0xE3 card data request, 0xE4 card data,
//	             0xFD keep-alive
//	bytes 11-12  4 bits of flags (an ECM's section_syntax_indicator and the bits after it),
//	             12 bits of length of the data
//	bytes 13-    data: an ECM section's body; an answer's even then odd CW, or none when the
//	             server found no CW
//
// then padding to a multiple of 8 bytes less one, and a checksum byte that makes the XOR of
// all these bytes zero. The 8-byte IV of the CBC encryption follows the encrypted blocks, in
// the clear.
//
// The key is spread from 14 bytes (Spread): during the login, the configured key XORed with
// the server's random bytes (LoginKey); after it, the configured key XORed with the MD5-crypt
// of the password (SessionKey). The login (0xE0) carries the user name and the MD5-crypt of
// the password (Crypt), each NUL-terminated; then the client asks for the card data (0xE3),
// whose answer names the port's CA system, its providers and the card's unique address.
// This is the protocol as OSCam's newcamd module serves it (module-newcamd.c and
// module-newcamd-des.c of OSCam's source describe it) and as tsdecrypt and tvheadend speak
// it; a server serves one CA system per port.
package newcamd

import (
	"crypto/cipher"
	"crypto/des"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Commands of the messages.
const (
	CmdECMEven     = 0x80 // ECM request (its table_id) and the answer to it
	CmdECMOdd      = 0x81
	CmdLogin       = 0xE0 // client to server: user name and crypted password
	CmdLoginACK    = 0xE1 // the server accepted the login
	CmdLoginNAK    = 0xE2 // the server refused it
	CmdCardDataReq = 0xE3 // client to server, after the login
	CmdCardData    = 0xE4 // the answer: CA system, providers, unique address
	CmdKeepAlive   = 0xFD // either way; the server answers a client's with one of its own
)

// IsECM reports whether cmd is an ECM request or answer: table_id 0x80 or 0x81.
func IsECM(cmd byte) bool { return cmd&0xFE == 0x80 }

// Sizes of the framing.
const (
	// HeaderSize is the header before the command: message id, service id, CA system id,
	// provider id and a zero byte.
	HeaderSize = 10
	// MaxFrame is the largest message on the wire, length prefix and IV included: the size
	// of OSCam's message buffer (CWS_NETMSGSIZE), beyond which it refuses a message.
	MaxFrame = 1024
	// MaxData is the most data one message carries: header, command and length, data,
	// padding and checksum fill whole blocks, which with the length prefix and the IV stay
	// under MaxFrame, as OSCam requires.
	MaxData = (MaxFrame-2-8-1)/8*8 - 1 - HeaderSize - 3
)

// Message is one newcamd message, decrypted.
type Message struct {
	MsgID      uint16
	ServiceID  uint16 // in a login, the client's id
	CAID       uint16
	ProviderID uint32 // 24 bits
	Cmd        byte
	Flags      byte   // the high 4 bits of the byte after Cmd (an ECM section's), low bits zero
	Data       []byte // at most MaxData bytes
}

// ECMRequest returns the message that carries an ECM section (table_id first): its command is
// the table_id, its flags and data those of the section. The section's length must fit its
// bytes.
func ECMRequest(section []byte) (Message, error) {
	if len(section) < 3 || !IsECM(section[0]) {
		return Message{}, errors.New("newcamd: not an ECM section (table_id 0x80 or 0x81)")
	}
	n := int(section[1]&0x0F)<<8 | int(section[2])
	if 3+n > len(section) {
		return Message{}, fmt.Errorf("newcamd: an ECM section says %d bytes, it has %d", n, len(section)-3)
	}
	return Message{Cmd: section[0], Flags: section[1] & 0xF0, Data: section[3 : 3+n]}, nil
}

// Section returns the command, the flags with the data's length, and the data as one section:
// the ECM section an ECM request carries.
func (m *Message) Section() []byte {
	s := []byte{m.Cmd, m.Flags&0xF0 | byte(len(m.Data)>>8)&0x0F, byte(len(m.Data))}
	return append(s, m.Data...)
}

// Codec encrypts and decrypts the messages of one connection under one key: a connection
// needs a codec for its login and another after it.
type Codec struct {
	block cipher.Block
	// Rand gives the padding and the IVs (crypto/rand by default).
	Rand io.Reader
}

// NewCodec returns the codec of key.
func NewCodec(key Key) *Codec {
	var k [24]byte // K1 K2 K1: crypto/des takes three keys
	copy(k[:16], key[:])
	copy(k[16:], key[:8])
	block, _ := des.NewTripleDESCipher(k[:]) // a 24-byte key never fails
	return &Codec{block: block, Rand: rand.Reader}
}

// Append appends m, encrypted and framed, to dst.
func (c *Codec) Append(dst []byte, m *Message) ([]byte, error) {
	if len(m.Data) > MaxData {
		return dst, fmt.Errorf("newcamd: %d bytes of data, at most %d fit a message", len(m.Data), MaxData)
	}
	start := len(dst)
	dst = append(dst, 0, 0) // the length, known at the end
	body := len(dst)
	dst = binary.BigEndian.AppendUint16(dst, m.MsgID)
	dst = binary.BigEndian.AppendUint16(dst, m.ServiceID)
	dst = binary.BigEndian.AppendUint16(dst, m.CAID)
	dst = append(dst, byte(m.ProviderID>>16), byte(m.ProviderID>>8), byte(m.ProviderID), 0)
	dst = append(dst, m.Cmd, m.Flags&0xF0|byte(len(m.Data)>>8)&0x0F, byte(len(m.Data)))
	dst = append(dst, m.Data...)
	// Padding leaves one byte of the last block for the checksum.
	pad := (8 - (len(dst)-body+1)%8) % 8
	var random [8 + 7]byte
	if _, err := io.ReadFull(c.Rand, random[:8+pad]); err != nil {
		return dst[:start], fmt.Errorf("newcamd: no random bytes: %w", err)
	}
	dst = append(dst, random[8:8+pad]...)
	var sum byte
	for _, b := range dst[body:] {
		sum ^= b
	}
	dst = append(dst, sum)
	iv := random[:8]
	cipher.NewCBCEncrypter(c.block, iv).CryptBlocks(dst[body:], dst[body:])
	dst = append(dst, iv...)
	binary.BigEndian.PutUint16(dst[start:], uint16(len(dst)-body))
	return dst, nil
}

// Errors of Read.
var (
	// ErrChecksum is returned for a message whose checksum is wrong once decrypted: it was
	// encrypted under another key (another DES key, or another password after the login).
	ErrChecksum = errors.New("newcamd: a message that does not decrypt under the key (another DES key or password?)")
	// ErrFrame is returned for a length that no message has: not a newcamd server, or out
	// of step.
	ErrFrame = errors.New("newcamd: a message length that is not a whole number of blocks (not a newcamd server?)")
)

// Read reads one message from r into buf (which must hold MaxFrame bytes) and decrypts it.
// The returned Message's Data shares buf. It reads exactly the message's bytes.
func (c *Codec) Read(r io.Reader, buf []byte) (Message, error) {
	if len(buf) < MaxFrame {
		return Message{}, errors.New("newcamd: read buffer too small")
	}
	if _, err := io.ReadFull(r, buf[:2]); err != nil {
		return Message{}, err
	}
	n := int(binary.BigEndian.Uint16(buf))
	if n > MaxFrame-2 || n%8 != 0 || n < 16 {
		return Message{}, ErrFrame
	}
	if _, err := io.ReadFull(r, buf[2:2+n]); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return Message{}, err
	}
	return c.Open(buf[2 : 2+n])
}

// Open decrypts, in place, a message as it follows its length prefix: encrypted blocks, then
// the IV; and parses it.
func (c *Codec) Open(b []byte) (Message, error) {
	if len(b)%8 != 0 || len(b) < 16 {
		return Message{}, ErrFrame
	}
	blocks, iv := b[:len(b)-8], b[len(b)-8:]
	cipher.NewCBCDecrypter(c.block, iv).CryptBlocks(blocks, blocks)
	var sum byte
	for _, x := range blocks {
		sum ^= x
	}
	if sum != 0 {
		return Message{}, ErrChecksum
	}
	return Parse(blocks)
}

// Parse reads a decrypted message: the header, the command, and the data its length says,
// which must end before the checksum byte.
func Parse(b []byte) (Message, error) {
	if len(b) < HeaderSize+3+1 {
		return Message{}, fmt.Errorf("newcamd: a message of %d bytes, shorter than its header", len(b))
	}
	n := int(b[HeaderSize+1]&0x0F)<<8 | int(b[HeaderSize+2])
	if HeaderSize+3+n > len(b)-1 {
		return Message{}, fmt.Errorf("newcamd: a message says %d bytes of data, it has %d", n, len(b)-1-HeaderSize-3)
	}
	return Message{
		MsgID:      binary.BigEndian.Uint16(b),
		ServiceID:  binary.BigEndian.Uint16(b[2:]),
		CAID:       binary.BigEndian.Uint16(b[4:]),
		ProviderID: uint32(b[6])<<16 | uint32(b[7])<<8 | uint32(b[8]),
		Cmd:        b[HeaderSize],
		Flags:      b[HeaderSize+1] & 0xF0,
		Data:       b[HeaderSize+3 : HeaderSize+3+n],
	}, nil
}
