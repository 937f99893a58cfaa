//go:build dvbcsa

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoadCWs(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	cws, err := loadCWs(write("k.txt", "11223366445566ff\n0102030608090a1b\n"))
	if err != nil || len(cws) != 2 || cws[1][7] != 0x1b {
		t.Fatalf("list: %x, %v", cws, err)
	}
	// A .cwl gives each key a parity, which the crypto periods here do not follow.
	if _, err := loadCWs(write("k.cwl", "0 11 22 33 66 44 55 66 FF\n")); err == nil ||
		!strings.Contains(err.Error(), "not a list of control words") {
		t.Fatalf(".cwl: %v", err)
	}
}
