//go:build !dvbcsa

package main

import "testing"

// simulcryptOracle needs libdvbcsa: see simulcrypt_dvbcsa_test.go (go test -tags dvbcsa).
func simulcryptOracle(t *testing.T, scrambled, clear []byte, cws [][]byte, pmtPID uint16) {
	t.Log("libdvbcsa's check of the SimulCrypt output needs -tags dvbcsa and libdvbcsa-dev")
}
