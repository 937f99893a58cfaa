package newcamd

import (
	"bytes"
	"errors"
	"fmt"
	"io"
)

// ReadRandom reads the 14 random bytes a server sends first, from which the login key comes.
func ReadRandom(r io.Reader) ([DESKeySize]byte, error) {
	var b [DESKeySize]byte
	_, err := io.ReadFull(r, b[:])
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return b, err
}

// LoginData returns the data of a login message: the user name and the crypted password
// (Crypt), each NUL-terminated.
func LoginData(user, crypted string) []byte {
	b := append([]byte(user), 0)
	b = append(b, crypted...)
	return append(b, 0)
}

// ParseLogin reads the data of a login message.
func ParseLogin(data []byte) (user, crypted string, err error) {
	u, rest, ok := bytes.Cut(data, []byte{0})
	if !ok {
		return "", "", errors.New("newcamd: a login without the end of its user name")
	}
	p, _, ok := bytes.Cut(rest, []byte{0})
	if !ok {
		return "", "", errors.New("newcamd: a login without the end of its password")
	}
	return string(u), string(p), nil
}

// CardData is the answer to a card data request: what the port serves.
type CardData struct {
	UserID    byte // the server's number for the connection
	CAID      uint16
	UA        [6]byte // the card's unique address, zero when the server shares none
	Providers []Provider
}

// Provider is a provider of the card data.
type Provider struct {
	ID uint32  // 24 bits
	SA [4]byte // the card's shared address for the provider
}

// providerSize is the size of a provider's entry: its id, 4 reserved bytes, its SA.
const providerSize = 11

// maxProviders is the most providers a card data message holds.
const maxProviders = (MaxData - 12) / providerSize

// AppendCardData appends the data of a card data message for cd to dst.
func AppendCardData(dst []byte, cd *CardData) ([]byte, error) {
	if len(cd.Providers) > maxProviders {
		return dst, fmt.Errorf("newcamd: %d providers, at most %d fit a message", len(cd.Providers), maxProviders)
	}
	dst = append(dst, cd.UserID, byte(cd.CAID>>8), byte(cd.CAID), 0, 0)
	dst = append(dst, cd.UA[:]...)
	dst = append(dst, byte(len(cd.Providers)))
	for _, p := range cd.Providers {
		dst = append(dst, byte(p.ID>>16), byte(p.ID>>8), byte(p.ID), 0, 0, 0, 0)
		dst = append(dst, p.SA[:]...)
	}
	return dst, nil
}

// ParseCardData reads the data of a card data message.
func ParseCardData(data []byte) (CardData, error) {
	if len(data) < 12 {
		return CardData{}, fmt.Errorf("newcamd: card data of %d bytes, at least 12", len(data))
	}
	cd := CardData{UserID: data[0], CAID: uint16(data[1])<<8 | uint16(data[2])}
	copy(cd.UA[:], data[5:11])
	n := int(data[11])
	if len(data) < 12+n*providerSize {
		return CardData{}, fmt.Errorf("newcamd: card data names %d providers, it holds %d", n, (len(data)-12)/providerSize)
	}
	for i := range n {
		e := data[12+i*providerSize:]
		p := Provider{ID: uint32(e[0])<<16 | uint32(e[1])<<8 | uint32(e[2])}
		copy(p.SA[:], e[7:11])
		cd.Providers = append(cd.Providers, p)
	}
	return cd, nil
}
