//go:build !dvbcsa

package main

import (
	"testing"

	"github.com/tsdescramble/tsdescramble/csa"
)

// simulcryptOracle needs libdvbcsa: see simulcrypt_dvbcsa_test.go (go test -tags dvbcsa).
func simulcryptOracle(t *testing.T, scrambled, clear []byte, cws [][]byte, pmtPID uint16) {
	t.Log("libdvbcsa's check of the SimulCrypt output needs -tags dvbcsa and libdvbcsa-dev")
}

// oracleName names the receiver model's descrambler.
const oracleName = "csa scalar reference"

// oracleDecrypt returns the receiver model's descrambler for cw: without libdvbcsa (-tags
// dvbcsa), the scalar reference cipher of package csa, checked against the published vectors,
// rather than the bitsliced kernels that scrambled the stream.
func oracleDecrypt(t *testing.T, cw []byte) func([]byte) {
	t.Helper()
	k, err := csa.NewKey(cw)
	if err != nil {
		t.Fatal(err)
	}
	return k.Decrypt
}
