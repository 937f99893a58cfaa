// Package cs378x is the wire codec of the cs378x protocol (camd35 over TCP), by which a card
// server such as OSCam answers ECMs with control words. The client in keyserver/cs378x and the
// test server in internal/testsupport/camdouble both speak through it; it is internal because a
// program that embeds the client needs the client, not the messages.
//
// Every message is a 4-byte token, the CRC-32 of the MD5 of the user name (big endian), then
// the message encrypted with AES-128 in ECB mode under the MD5 of the password. The message is
// a 20-byte header, the data, and 0xFF bytes up to a multiple of 16 bytes:
//
//	byte  0      command: 0x00 ECM request, 0x01 CW answer, 0x08 no card, 0x44 not found,
//	             0x05 EMM request (server to client), 0x06 EMM
//	byte  1      length of the data (0-255)
//	bytes 2-3    zero
//	bytes 4-7    CRC-32 of the data, big endian
//	bytes 8-9    service id
//	bytes 10-11  CA system id
//	bytes 12-15  provider id
//	bytes 16-17  message id: the answer repeats the request's
//	bytes 18-19  ECM PID
//	bytes 20-    data: an ECM section in a request, the even then the odd CW (16 bytes) in an
//	             answer
//
// There is no login: a server that does not know the user, or decrypts with another password,
// does not answer or answers garbage. This is the protocol as OSCam's camd35 module and
// tsdecrypt's camd-cs378x.c speak it; Debian's tsdecrypt is the independent client the test
// server is checked against.
package cs378x

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/md5"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
)

// Commands of the messages.
const (
	CmdECM      = 0x00 // ECM request, client to server
	CmdCW       = 0x01 // answer with the CW pair
	CmdEMMReq   = 0x05 // the server asks for EMMs of a kind; a client may ignore it
	CmdEMM      = 0x06 // an EMM, client to server
	CmdNoCard   = 0x08 // no card or reader for the CA system
	CmdNotFound = 0x44 // the server found no CW for the ECM
)

// HeaderSize is the size of a message header.
const HeaderSize = 20

// MaxData is the largest data a message carries: its length is one byte.
const MaxData = 255

// MaxMessage is the largest encrypted message, header and data rounded up to AES blocks.
const MaxMessage = (HeaderSize + MaxData + 15) / 16 * 16

// Message is one cs378x message, decrypted.
type Message struct {
	Cmd        byte
	ServiceID  uint16
	CAID       uint16
	ProviderID uint32
	MsgID      uint16
	ECMPID     uint16
	CRC        uint32 // the header's CRC-32 of the data, as read (Append computes it)
	Data       []byte // at most MaxData bytes
}

// CRCOK reports whether the header's CRC is that of the data.
func (m *Message) CRCOK() bool { return m.CRC == crc32.ChecksumIEEE(m.Data) }

// Codec encrypts and decrypts the messages of one account.
type Codec struct {
	token uint32
	block cipher.Block
}

// NewCodec returns the codec of the account user, password.
func NewCodec(user, password string) *Codec {
	u := md5.Sum([]byte(user))
	p := md5.Sum([]byte(password))
	block, _ := aes.NewCipher(p[:]) // a 16-byte key never fails
	return &Codec{token: crc32.ChecksumIEEE(u[:]), block: block}
}

// Token returns the account's token, which starts every message.
func (c *Codec) Token() uint32 { return c.token }

// Append appends m, token and encrypted message, to dst. m.Data must be at most MaxData bytes.
func (c *Codec) Append(dst []byte, m *Message) ([]byte, error) {
	if len(m.Data) > MaxData {
		return dst, fmt.Errorf("cs378x: %d bytes of data, at most %d fit a message", len(m.Data), MaxData)
	}
	dst = binary.BigEndian.AppendUint32(dst, c.token)
	start := len(dst)
	var h [HeaderSize]byte
	h[0], h[1] = m.Cmd, byte(len(m.Data))
	binary.BigEndian.PutUint32(h[4:], crc32.ChecksumIEEE(m.Data))
	binary.BigEndian.PutUint16(h[8:], m.ServiceID)
	binary.BigEndian.PutUint16(h[10:], m.CAID)
	binary.BigEndian.PutUint32(h[12:], m.ProviderID)
	binary.BigEndian.PutUint16(h[16:], m.MsgID)
	binary.BigEndian.PutUint16(h[18:], m.ECMPID)
	dst = append(dst, h[:]...)
	dst = append(dst, m.Data...)
	for (len(dst)-start)%aes.BlockSize != 0 {
		dst = append(dst, 0xFF)
	}
	for i := start; i < len(dst); i += aes.BlockSize {
		c.block.Encrypt(dst[i:i+aes.BlockSize], dst[i:i+aes.BlockSize])
	}
	return dst, nil
}

// ErrToken is returned for a message whose token is not the account's: another user's, or not
// the cs378x protocol at all.
var ErrToken = errors.New("cs378x: a message with another account's token (wrong user name, or not a cs378x server)")

// Read reads one message from r into buf (which must hold MaxMessage+4 bytes) and decrypts it.
// The returned Message's Data shares buf. It reads exactly the message's bytes: the token, the
// first block, which gives the data length, and the blocks that length needs.
func (c *Codec) Read(r io.Reader, buf []byte) (Message, error) {
	if len(buf) < MaxMessage+4 {
		return Message{}, errors.New("cs378x: read buffer too small")
	}
	if _, err := io.ReadFull(r, buf[:4+aes.BlockSize]); err != nil {
		return Message{}, err
	}
	if binary.BigEndian.Uint32(buf) != c.token {
		return Message{}, ErrToken
	}
	msg := buf[4:]
	c.block.Decrypt(msg[:aes.BlockSize], msg[:aes.BlockSize])
	total := (HeaderSize + int(msg[1]) + 15) / 16 * 16
	if _, err := io.ReadFull(r, msg[aes.BlockSize:total]); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return Message{}, err
	}
	for i := aes.BlockSize; i < total; i += aes.BlockSize {
		c.block.Decrypt(msg[i:i+aes.BlockSize], msg[i:i+aes.BlockSize])
	}
	return Parse(msg[:total])
}

// Parse reads a decrypted message: a header and the data its length says, in whole blocks.
// It checks the lengths, not the data's CRC: servers differ in filling it, and a message under
// a wrong key is told by its command and lengths.
func Parse(b []byte) (Message, error) {
	if len(b) < HeaderSize {
		return Message{}, fmt.Errorf("cs378x: a message of %d bytes, shorter than its %d-byte header", len(b), HeaderSize)
	}
	n := int(b[1])
	if HeaderSize+n > len(b) {
		return Message{}, fmt.Errorf("cs378x: a message says %d bytes of data, it has %d", n, len(b)-HeaderSize)
	}
	return Message{
		Cmd:        b[0],
		ServiceID:  binary.BigEndian.Uint16(b[8:]),
		CAID:       binary.BigEndian.Uint16(b[10:]),
		ProviderID: binary.BigEndian.Uint32(b[12:]),
		MsgID:      binary.BigEndian.Uint16(b[16:]),
		ECMPID:     binary.BigEndian.Uint16(b[18:]),
		CRC:        binary.BigEndian.Uint32(b[4:]),
		Data:       b[HeaderSize : HeaderSize+n],
	}, nil
}
