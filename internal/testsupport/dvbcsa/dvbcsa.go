//go:build dvbcsa

// Package dvbcsa binds Debian's libdvbcsa (VideoLAN), an independent DVB-CSA2 implementation,
// so that tests and tools can check this project's cipher against it. It is built only with the
// dvbcsa build tag and needs the libdvbcsa-dev package: it is never part of the default build.
package dvbcsa

/*
#cgo LDFLAGS: -ldvbcsa
#include <stdlib.h>
#include <dvbcsa/dvbcsa.h>
*/
import "C"

import (
	"errors"
	"unsafe"
)

// Key is a libdvbcsa single-packet key context.
type Key struct{ k *C.struct_dvbcsa_key_s }

// NewKey returns a libdvbcsa key for an 8-byte control word. Call Free when done.
func NewKey(cw []byte) (*Key, error) {
	if len(cw) != 8 {
		return nil, errors.New("dvbcsa: control word must be 8 bytes")
	}
	k := C.dvbcsa_key_alloc()
	if k == nil {
		return nil, errors.New("dvbcsa: out of memory")
	}
	C.dvbcsa_key_set((*C.uchar)(unsafe.Pointer(&cw[0])), k)
	return &Key{k: k}, nil
}

// Free releases the key context.
func (k *Key) Free() { C.dvbcsa_key_free(k.k) }

// Encrypt scrambles one payload in place with libdvbcsa's dvbcsa_encrypt.
func (k *Key) Encrypt(p []byte) {
	if len(p) == 0 {
		return
	}
	C.dvbcsa_encrypt(k.k, (*C.uchar)(unsafe.Pointer(&p[0])), C.uint(len(p)))
}

// Decrypt descrambles one payload in place with libdvbcsa's dvbcsa_decrypt.
func (k *Key) Decrypt(p []byte) {
	if len(p) == 0 {
		return
	}
	C.dvbcsa_decrypt(k.k, (*C.uchar)(unsafe.Pointer(&p[0])), C.uint(len(p)))
}
